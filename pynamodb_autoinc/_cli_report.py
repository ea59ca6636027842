"""What the command line reports: ``check``'s audit of stored IDs, ``describe``'s rows, and the plain-text table
both print."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Type

from . import regions
from ._options import Options
from .counter import NextId
from .exceptions import ConfigurationError, CounterValueError
from .sequence import SequenceOptions, integer

#: How many duplicates, hole ranges and off-sequence values a check report names.
FIRST = 10


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """``rows`` under ``header`` in left-aligned columns, two spaces apart."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in (header, *rows):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def shown(stored: Optional[Dict[str, Any]]) -> str:
    """A stored DynamoDB attribute as a person reads it: ``7``, ``1.5``, ``{"S": "x"}``, or ``none``."""
    if stored is None:
        return "none"
    value = integer(stored.get("N"))
    return json.dumps(stored) if "N" not in stored else str(stored["N"] if value is None else value)


# -- check ----------------------------------------------------------------------------------------------------------


def by_counter(opts: Options, ids: Dict[str, List[int]]) -> Dict[str, Tuple[SequenceOptions, List[int]]]:
    """The stored IDs of each counter with its sequence: with Meta.autoinc_regions, each under ``key@region`` on
    that region's subsequence (IDs on none: under ``key``)."""
    layout = regions.regions_of(opts) if opts.regions else []
    groups: Dict[str, Tuple[SequenceOptions, List[int]]] = {}
    for key, values in ids.items():
        for value in values:
            position = opts.sequence.position(value) if layout else None
            region, sequence = ("", opts.sequence) if position is None else layout[position % len(layout)]
            groups.setdefault(f"{key}@{region}" if region else key, (sequence, []))[1].append(value)
    return groups


def placing(sequence: SequenceOptions, last: Optional[int]) -> Tuple[Callable[[int], Optional[int]],
                                                                      Callable[[int], int], bool]:
    """How ``audit`` places values on ``sequence``: (value to position, position to value, read as a ring). A
    cycling sequence whose counter holds ``last`` is a ring whose place 0 is the value after ``last``."""
    ring = last is not None and sequence.cycle and sequence.on_sequence(last) and \
        (sequence.start - sequence.restart_value) % sequence.step == 0
    if not ring or last is None:
        return sequence.position, sequence.at, False
    base = (last - sequence.restart_value) // sequence.step + 1  # the ring's place 0: the value after last

    def place(value: int) -> Optional[int]:
        if not sequence.on_sequence(value):
            return None
        return ((value - sequence.restart_value) // sequence.step - base) % sequence.size

    def value_at(position: int) -> int:
        return sequence.restart_value + (position + base) % sequence.size * sequence.step

    return place, value_at, True


def holes_in(positions: List[int], value_at: Callable[[int], int], ring: bool) -> Tuple[int, List[List[int]]]:
    """How many positions the sorted ``positions`` skip, and the first runs skipped as ``[first, last]`` values."""
    holes, previous = 0, (positions[0] - 1 if ring and positions else -1)
    ranges: List[List[int]] = []
    for position in positions:
        if position > previous + 1:
            holes += position - previous - 1
            if len(ranges) < FIRST:
                ranges.append([value_at(previous + 1), value_at(position - 1)])
        previous = position
    return holes, ranges


def audit(values: List[int], sequence: SequenceOptions, last: Optional[int] = None) -> Dict[str, Any]:
    """Duplicates, holes (the first runs in ``hole_ranges``, as ``[first, last]`` in sequence order) and off-sequence
    values among the stored IDs of one counter; a cycling one at ``last`` is read as a ring (docs/architecture.md)."""
    values = sorted(values)
    place, value_at, ring = placing(sequence, last)
    placed = [(value, place(value)) for value in values]
    positions = sorted({position for _, position in placed if position is not None})
    off = sorted({value for value, position in placed if position is None})
    holes, ranges = holes_in(positions, value_at, ring)
    stored_twice = sorted({a for a, b in zip(values, values[1:]) if a == b})
    # a cycling sequence hands each value out once per pass: a value stored again after a wrap is no duplicate
    duplicates, repeats = ([], stored_twice) if sequence.cycle else (stored_twice, [])
    return {"items": len(values), "min": values[0], "max": values[-1], "holes": holes, "hole_ranges": ranges,
            "duplicates": duplicates, "repeats": repeats,
            "off_sequence": sum(p is None for _, p in placed), "first_off_sequence": off[:FIRST]}


def ring_end(values: List[int], sequence: SequenceOptions) -> int:
    """Where the stored ``values`` of a cycling sequence end: the value its longest run of values left free
    follows (after a wrap, not the largest), as a counter handing out that run next takes no stored value;
    the furthest value for a sequence that does not cycle (or whose start is off its restart's steps)."""
    return ring(values, sequence)[1]


def ring(values: List[int], sequence: SequenceOptions) -> Tuple[int, int]:
    """(the longest run of values left free, the value it follows) of a cycling sequence's stored ``values``;
    (0, the furthest value) for one that does not cycle."""
    step, restart = sequence.step, sequence.restart_value
    places = sorted({(v - restart) // step for v in values
                     if sequence.on_sequence(v) and (v - restart) % step == 0})
    if not sequence.cycle or not places or (sequence.start - restart) % step:
        return 0, max(values) if step > 0 else min(values)
    count = len(places)
    free, place = max(((places[(i + 1) % count] - places[i] - 1) % sequence.size, places[i]) for i in range(count))
    return free, restart + place * step


def behind(values: List[int], sequence: SequenceOptions, last: Optional[int]) -> Optional[str]:
    """How a counter at ``last`` (None: none) stands behind the stored ``values``, so that a save it numbers
    takes a stored value and is refused (``"the next value it hands out, 4, is stored"``); None when it is not.
    A cycling counter is behind when its next value is stored and it is not where the stored values end (a
    counter that came round onto a full ring is not behind: no place is)."""
    if sequence.cycle:
        following = sequence.after("", last, 1)
        free, end = ring(values, sequence)
        if following not in set(values) or (last is not None and (end == last or not free)):
            return None
        return f"the next value it hands out, {following}, is stored"
    after = sequence.start - sequence.step if last is None else last
    ahead = [v for v in values if sequence.on_sequence(v) and (v > after if sequence.step > 0 else v < after)]
    if not ahead:
        return None
    return f"the stored IDs go on to {max(ahead) if sequence.step > 0 else min(ahead)}"


def check_row(key: str, values: List[int], sequence: SequenceOptions, last: Optional[int],
              repair: Optional[Callable[[str, List[int], SequenceOptions, Optional[int]], str]]) -> Dict[str, Any]:
    """``check``'s row of counter ``key`` at ``last``: the :func:`audit` of its stored ``values`` (a cycling one
    read as a ring ending at ``last``, or where the values end when it is behind them or holds none), and, when
    it is behind them, ``problem``, naming what ``repair`` says to run (``repair`` None: there is no counter, as in
    the query strategy)."""
    lagging = behind(values, sequence, last) if repair is not None else None
    end = ring_end(values, sequence) if sequence.cycle and (lagging or last is None) else last
    row = {"key": key, **audit(values, sequence, end), "last_value": last, "behind": lagging is not None,
           "problem": None}
    if repair is not None and lagging is not None:
        at = "holds no value" if last is None else f"is at {last}"
        row["problem"] = (f"counter {key!r} {at}, behind its stored IDs: {lagging}, so saves that take stored IDs are "
                      f"refused; move it past them with `{repair(key, values, sequence, last)}`")
    return row


def print_check(report: List[Dict[str, Any]]) -> None:
    """``check``'s report as a table."""
    rows = []
    for r in report:
        holes = ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in r["hole_ranges"])
        off = ", ".join(map(str, r["first_off_sequence"]))
        duplicates = ", ".join(map(str, r["duplicates"][:FIRST])) or "0"
        repeats = f" ({len(r['repeats'])} repeated after a wrap)" if r["repeats"] else ""
        last = ("none" if r["last_value"] is None else str(r["last_value"])) + (" (behind)" if r["behind"] else "")
        rows.append((r["key"], r["items"], r["min"], r["max"], duplicates + repeats,
                     f"{r['holes']} (first: {holes})" if r["holes"] else "0",
                     f"{r['off_sequence']} ({off})" if r["off_sequence"] else "0", last))
    print_table(("COUNTER", "ITEMS", "MIN", "MAX", "DUPLICATES", "HOLES", "OFF-SEQUENCE", "LAST"), rows)


# -- describe -------------------------------------------------------------------------------------------------------


def columns(sequence: Optional[SequenceOptions], last: Optional[int]) -> Dict[str, Any]:
    """The columns START to LEFT of a counter at ``last`` under ``sequence`` (None: unknown)."""
    if sequence is None:
        return {**dict.fromkeys(("start", "step", "min", "max", "cycle")), "last_value": last, "left": None}
    return {"start": sequence.start, "step": sequence.step, "min": sequence.minimum, "max": sequence.maximum,
            "cycle": sequence.cycle, "last_value": last, "left": sequence.remaining(last)}


class Description:
    """``describe``'s rows, one per counter (by table and key), and the problems found on the way."""

    def __init__(self) -> None:
        self.rows: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.problems: List[str] = []

    def add(self, counter: Type[NextId], items: Iterable[Dict[str, Any]], owner: Optional[Options],
            spec: str) -> None:
        """The counters among ``items`` (as stored in ``counter``'s table): ``owner``'s (named ``spec``), or all."""
        for raw in items:
            key = self.key_of(counter, raw, owner)
            row = None if key is None else self.row(counter, key, raw)
            if row is not None and owner is not None:
                self.compare(row, owner, spec)

    @staticmethod
    def key_of(counter: Type[NextId], raw: Dict[str, Any], owner: Optional[Options]) -> Optional[str]:
        """The counter key of ``raw``; None for an item of no counter of ``owner``'s."""
        prefix = counter._autoinc_prefix
        hash_key = raw.get(counter.next_key.attr_name, {}).get("S", "")
        key = hash_key[len(prefix):]
        # only the model's keys: not another model's starting with this one's (orders#eu), nor a pre-region counter
        if not hash_key.startswith(prefix) or (owner is not None and not owner.owns(key, any_region=True)):
            return None
        return key

    def row(self, counter: Type[NextId], key: str, raw: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The row of counter ``key``, made on first sight; None, a problem noted, for one holding no integer."""
        table = counter.Meta.table_name
        if (table, key) not in self.rows:
            try:
                last, recorded = counter._value_in(key, raw), counter._recorded(raw, key)
            except CounterValueError as exc:  # one broken counter: the others are still described
                self.problems.append(str(exc))
                return None
            self.rows[table, key] = {"key": key, "table": table, **columns(recorded, last), "models": [],
                                     "recorded": recorded}
        return self.rows[table, key]

    def compare(self, row: Dict[str, Any], owner: Options, spec: str) -> None:
        """Name ``owner``'s model on ``row``, noting options that disagree with what the counter records."""
        key, name = row["key"], owner.model.__name__
        row["models"].append(name)
        try:
            expected = regions.sequence_of(owner, key)
        except ConfigurationError as exc:
            self.problems.append(f"{exc}; it is left over from another list of regions")
            return
        if row["recorded"] is not None and row["recorded"] != expected:
            self.problems.append(
                f"counter {key!r} records other sequence options than {name}: "
                f"{', '.join(expected.differences(row['recorded']))}, so one of them has its saves refused. If the "
                f"model's Meta changed on purpose, record its options with `pynamodb-autoinc alter --model {spec} "
                f"--key {key}`; otherwise make them agree"
                + (f" (after appending a region, run `pynamodb-autoinc seed --model {spec}`)" if owner.regions else ""))
        row.update(columns(row["recorded"] or expected, row["last_value"]))

    def print(self, as_json: bool) -> None:
        report = [{k: v for k, v in row.items() if k != "recorded"} for _, row in sorted(self.rows.items())]
        if as_json:
            print(json.dumps(report))
            return
        shown_columns = ("key", "table", "start", "step", "min", "max", "cycle", "last_value", "left")
        print_table(("KEY", "TABLE", "START", "STEP", "MIN", "MAX", "CYCLE", "LAST", "LEFT", "MODELS"), [
            tuple("" if r[c] is None else "yes" if r[c] is True else "no" if r[c] is False else str(r[c])
                  for c in shown_columns) + (", ".join(r["models"]),) for r in report])
