"""Plans of the command line's writes: ``set``, ``restart``, ``alter`` and ``seed`` first decide, from the counter
as read, what they write (refusing here what they refuse); ``--dry-run`` prints the plan and stops, the command
writes it. One code path, so a dry run cannot accept what the command refuses, nor show another outcome."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Type

from . import regions
from ._cli_report import behind, ring_end, shown
from ._options import Options
from .counter import NextId, check_int, setval_value, storable
from .exceptions import OutOfBoundsError
from .sequence import SequenceOptions, integer, number


@dataclass(frozen=True)
class CounterPlan:
    """What ``set``, ``restart`` or ``alter`` writes on counter ``key``: ``value`` (None: no value) and
    ``sequence`` (None: no options), decided from ``item`` as read; :meth:`write` writes it."""

    counter: Type[NextId]
    key: str
    verb: str
    item: Dict[str, Any]
    value: Optional[int]
    sequence: Optional[SequenceOptions]
    write: Callable[[], Any]

    def following(self) -> str:
        """``; the next value would be N``, from the sequence as a save follows it (a cycle wraps)."""
        if self.sequence is None:
            return ""
        after = self.sequence.after(self.key, self.value, 1)
        return "; the sequence would then be exhausted" if after is None else f"; the next value would be {after}"

    def preview(self) -> str:
        """The dry run's line: the counter now and as the command leaves it."""
        counter = self.counter
        before = self.item.get(counter.options.attr_name)
        after = before if self.sequence is None else {"S": self.sequence.encode()}
        was, now = ["none recorded" if s is None else s["S"] if "S" in s else json.dumps(s) for s in (before, after)]
        return (f"dry run: counter {self.key!r} would be {self.verb}: value "
                f"{shown(self.item.get(counter.next_id.attr_name))} -> "
                f"{shown(None if self.value is None else {'N': str(self.value)})}, options {was} -> {now}"
                f"{self.following()}. Nothing was written")


def planned(counter: Type[NextId], key: str, verb: str, item: Dict[str, Any], value: Optional[int],
            sequence: Optional[SequenceOptions], write: Callable[[], Any]) -> CounterPlan:
    """The plan writing ``value``, which DynamoDB must hold exactly (38 digits): the value before a start that far
    out is written as none, as NextId does; any other is refused."""
    if value is not None and not storable(value):
        if sequence is None or value != sequence.start - sequence.step:
            raise OutOfBoundsError(f"counter {key!r} would hold {value} (the value before the next), over 38 "
                                   "digits; nothing was changed. Choose a next value further from the bound")
        value = None
    return CounterPlan(counter, key, verb, item, value, sequence, write)


def plan_set(counter: Type[NextId], key: str, value: int, is_called: bool,
             sequence: Optional[SequenceOptions]) -> CounterPlan:
    """``set``: ``value`` (``value - step`` if not ``is_called``) under ``sequence`` or the recorded options; a
    counter recording other options than ``sequence`` is refused, as ``NextId.setval`` refuses it."""
    check_int(f"setval({key!r}, {value!r})", value)
    item = counter._item(key)
    recorded = counter._recorded(item)
    if sequence is not None and recorded is not None and recorded != sequence:
        raise counter._mismatch(key, sequence, recorded.encode())
    options = sequence or recorded
    return planned(counter, key, "set", item, setval_value(key, value, is_called, options), options,
                   lambda: counter.setval(key, value, is_called=is_called, sequence=options))


def plan_restart(counter: Type[NextId], key: str, sequence: SequenceOptions, value: int) -> CounterPlan:
    """``restart``: the next value is ``value``, under ``sequence``, whatever the counter held."""
    return planned(counter, key, "restarted", counter._item(key), setval_value(key, value, False, sequence),
                   sequence, lambda: counter.restart(key, sequence, value))


def plan_alter(counter: Type[NextId], key: str, sequence: SequenceOptions) -> CounterPlan:
    """``alter``: record ``sequence``, keeping the value (refused when it holds no integer, or one outside)."""
    item = counter._item(key)
    return planned(counter, key, "altered", item, counter.kept_value(key, item, sequence), sequence,
                   lambda: counter.alter(key, sequence))


@dataclass(frozen=True)
class SeedStep:
    """What ``seed`` does to counter ``key`` whose stored IDs end at ``furthest``: leave a cycling counter holding
    ``kept`` where it is (``lagging``: how it is behind them), or move it there (``moves``: it is behind, or unset;
    ``sequence``: the options it then records, as ``set`` does, when it records none) or let it stay at ``now``."""

    key: str
    furthest: int
    step: int
    kept: Optional[int] = None
    moves: bool = False
    stored: Optional[Dict[str, Any]] = None
    now: Optional[int] = None
    sequence: Optional[SequenceOptions] = None
    lagging: Optional[str] = None

    def verbs(self) -> List[str]:
        return ["raised to", "already at or above"] if self.step > 0 else ["lowered to", "already at or below"]

    def recording(self) -> str:
        return "" if self.sequence is None else f", recording its options {self.sequence.encode()}"

    def preview(self, spec: str, *, dry_run: bool) -> Optional[str]:
        """The line of a step that writes nothing (a dry run's, or a cycling counter's); None for a move."""
        moved, already = self.verbs()
        if self.kept is not None:
            # after a wrap the furthest stored ID is behind the counter, not ahead: only a new counter is seeded
            fix = f"`pynamodb-autoinc set {self.furthest} --model {spec} --key {self.key}`"
            return (f"{'dry run: ' if dry_run else ''}{self.key}: left at {self.kept}: " + (
                f"the sequence cycles, so the furthest stored ID, {self.furthest}, need not be the last one handed "
                f"out; if it is behind, move it with `pynamodb-autoinc set N --model {spec}`" if self.lagging is None
                else f"it is behind its stored IDs ({self.lagging}), and the sequence cycles, so seed does not move "
                     f"it; the stored IDs end at {self.furthest}: move it there with {fix}"))
        if not dry_run:
            return None
        if self.moves:
            return (f"dry run: {self.key}: would be {moved} {self.furthest} (from {shown(self.stored)})"
                    f"{self.recording()}")
        return f"dry run: {self.key}: would stay at {self.now}, {already} {self.furthest}"

    def apply(self, counter: Type[NextId]) -> str:
        """Move the counter, never back (a conditional update: safe while others allocate), recording its options
        if it records none; the line to print."""
        moved, already = self.verbs()
        if self.moves and self.sequence is not None and self.swap(counter):
            return f"{self.key}: {moved} {self.furthest}{self.recording()}"
        return f"{self.key}: {moved if counter.raise_to(self.key, self.furthest, step=self.step) else already} " \
               f"{self.furthest}"

    def swap(self, counter: Type[NextId]) -> bool:
        """Move the counter from the value read (none, or an integer) with its options, in one conditional update;
        False when it changed since (then :meth:`apply` moves it as ``raise_to`` does, never back)."""
        held = None if self.stored is None else integer(self.stored.get("N"))
        if self.stored is not None and held is None:
            return False  # a fraction: raise_to moves it
        return counter.compare_and_set(self.key, held, self.furthest, self.sequence)


def plan_seed(counter: Type[NextId], opts: Options, ids: Dict[str, List[int]]) -> List[SeedStep]:
    """One step per counter key of ``ids`` (its stored IDs), in key order, each read once: a counter holding no
    integer is refused here, before any counter moves."""
    return [seed_step(counter, opts, key, values) for key, values in sorted(ids.items()) if values]


def seed_step(counter: Type[NextId], opts: Options, key: str, values: List[int]) -> SeedStep:
    """The step of counter ``key``, from its item as read: the furthest ID, or where a cycle's stored IDs end."""
    value, item, sequence = ring_end(values, opts.sequence), counter._item(key), regions.sequence_of(opts, key)
    held = counter._value_in(key, item) if opts.sequence.cycle else None
    if held is not None:
        return SeedStep(key, value, opts.step, kept=held, lagging=behind(values, sequence, held))
    stored = item.get(counter.next_id.attr_name)
    current = None if stored is None else number(stored.get("N"))
    # as raise_to does: a fraction behind value is moved, a counter staying with no integer is refused
    moves = stored is None or (current is not None and (current < value if opts.step > 0 else current > value))
    now = None if moves else counter._value_in(key, item)
    records = sequence if moves and item.get(counter.options.attr_name) is None else None
    return SeedStep(key, value, opts.step, moves=moves, stored=stored, now=now, sequence=records)
