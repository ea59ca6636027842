"""A pure-Python model of the sequences the README documents, for the property tests.

It is written from the README's semantics (Options, Two modes, Sequences,
Throughput, Other write paths), not from the library's code. It holds what
DynamoDB would hold (each counter's value) and what one process keeps (its
reserved blocks), and says which value the next new item must receive, or
that the sequence is exhausted.

- Fast mode: a counter request for ``n`` values moves the counter from ``c``
  to ``c + n*step`` (from nothing: to ``start + (n-1)*step``) and hands them
  out, all of them or none, never past ``autoinc_max``. A failed put spends
  its value.
- Blocks: a process takes values from its own block; an empty block is
  refilled by one request for ``autoinc_block`` values, or, when that many no
  longer fit before ``autoinc_max``, for exactly the values left.
- Gapless mode: the next value is ``counter + step``; the counter moves only
  with its item.
- Query strategy: one step past the partition's last value in the step's
  direction (its largest range key for a positive step, its smallest for a
  negative one), or ``start`` in an empty partition.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional

#: The label of each period: always with the year (README, Periods).
PERIOD_FORMATS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}


class Exhausted(Exception):
    """The next value would pass the end bound of a sequence that does not cycle: SequenceExhaustedError."""


#: PostgreSQL's bigint bounds: the default bounds of a sequence (README, Coming from PostgreSQL).
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Sequence:
    """The numbers of one sequence: ``Meta.autoinc_start``, ``_step``, ``_min``, ``_max``, ``_cycle``, ``_block``."""

    start: int = 1
    step: int = 1
    minimum: int = 1
    maximum: int = BIGINT_MAX
    cycle: bool = False
    block: int = 1

    @property
    def restart_value(self) -> int:
        """Where a cycle starts again: the minimum going up, the maximum going down."""
        return self.minimum if self.step > 0 else self.maximum

    @property
    def size(self) -> int:
        """How many values one pass from the restart value to the end bound holds."""
        return (self.maximum - self.minimum) // abs(self.step) + 1  # len(range(...)) overflows past 2**63 - 1

    def fits(self, value: int) -> bool:
        """Whether ``value`` lies within the bounds."""
        return self.minimum <= value <= self.maximum

    def after(self, last: Optional[int], count: int = 1) -> List[int]:
        """The ``count`` values that follow ``last`` (``None``: nothing handed out yet), bounds aside."""
        first = self.start if last is None else last + self.step
        return [first + i * self.step for i in range(count)]

    def left(self, last: Optional[int]) -> int:
        """How many values fit after ``last`` before the end bound."""
        first = self.after(last)[0]
        if not self.fits(first):
            return 0
        end = self.maximum if self.step > 0 else self.minimum
        return (end - first) // self.step + 1

    def following(self, last: Optional[int]) -> int:
        """The next value after ``last``: wrapping to the restart value with CYCLE, else Exhausted at the end."""
        value = self.after(last)[0]
        if self.fits(value):
            return value
        if self.cycle:
            return self.restart_value
        raise Exhausted

    def chain(self, last: Optional[int], count: int) -> List[int]:
        """``count`` values one after another (gapless, the query strategy): each one ``following`` the last."""
        if count > self.size:
            raise Exhausted  # one request cannot number more items than one pass of a cycle holds
        values: List[int] = []
        for _ in range(count):
            last = self.following(last if not values else values[-1])
            values.append(last)
        return values

    def query_next(self, stored: Iterable[int]) -> int:
        """The query strategy's next range key for a partition that holds ``stored``; keys outside the bounds
        (stored before the bounds were set) are not the sequence's."""
        values = [v for v in stored if self.minimum <= v <= self.maximum]
        last = None if not values else max(values) if self.step > 0 else min(values)
        return self.following(last)


def configured_sequence(options: Mapping[str, Any]) -> Sequence:
    """The sequence of valid Meta options, with PostgreSQL's defaults for what they leave out."""
    step = options.get("autoinc_step", 1)
    low = options.get("autoinc_min")
    high = options.get("autoinc_max")
    low = low if low is not None else 1 if step > 0 else BIGINT_MIN
    high = high if high is not None else BIGINT_MAX if step > 0 else -1
    start = options.get("autoinc_start")
    start = start if start is not None else low if step > 0 else high
    return Sequence(start, step, low, high, options.get("autoinc_cycle", False), options.get("autoinc_block", 1))


@dataclass
class Counters:
    """The counter items of one model (by sequence key) and this process's state about them."""

    sequence: Sequence
    values: Dict[Hashable, Optional[int]] = field(default_factory=dict)
    """What each counter item holds: the last value handed out (fast) or stored (gapless)."""
    blocks: Dict[Hashable, List[int]] = field(default_factory=dict)
    """The values this process reserved and has not handed out yet."""

    def copy(self) -> Counters:
        return copy.deepcopy(self)

    def value(self, key: Hashable) -> Optional[int]:
        return self.values.get(key)

    def nextval(self, key: Hashable, count: int = 1, *, partial: bool = False) -> List[int]:
        """One counter request for ``count`` values.

        All of them, or Exhausted with nothing spent; with ``partial``, fewer
        when fewer are left. A cycling sequence, without ``partial``: the
        values left before the end, then on from the restart value.
        """
        seq = self.sequence
        last = self.values.get(key)
        left = seq.left(last)
        if left >= count:
            values = seq.after(last, count)
        elif left and partial:
            values = seq.after(last, left)
        elif seq.cycle:  # the values before the end, then on from the restart value ([49, 50, 1, 2] of 1..50)
            values = (seq.after(last, left) if left else []) + \
                [seq.restart_value + i * seq.step for i in range(count - left)]
            values = [v for v in values if seq.fits(v)]
        else:
            raise Exhausted
        self.values[key] = values[-1]
        return values

    def spend(self, key: Hashable, count: int, *, drop_block: bool = False) -> List[int]:
        """Fast mode's save_all() (and ``reserve()``): ``count`` values of one counter; a cycling sequence wraps
        between requests. ``drop_block``: a block model's save_all(), whose values lie past this process's block,
        which it drops (docs/modes.md)."""
        if not self.sequence.cycle:
            values = self.nextval(key, count)
        elif count > self.sequence.size:
            raise Exhausted  # one request cannot number more items than one pass of a cycle holds
        else:
            values = []
            while len(values) < count:
                values += self.nextval(key, count - len(values), partial=True)
        if drop_block:
            self.blocks.pop(key, None)
        return values

    def take(self, key: Hashable, block: Optional[int] = None) -> int:
        """Fast mode: the value a new item gets, from this process's block or one counter request. ``block``: the
        taking model's ``autoinc_block`` (models of other modes may share the counter; default: the sequence's)."""
        block = self.sequence.block if block is None else block
        if block == 1:
            return self.nextval(key, partial=self.sequence.cycle)[0]
        taken = self.blocks.get(key)
        if not taken:
            # near the end bound: what is left before it, in one request
            taken = self.blocks[key] = self.nextval(key, block, partial=True)
        value = taken.pop(0)
        if not taken:
            del self.blocks[key]
        return value

    def peek(self, key: Hashable, count: int = 1) -> List[int]:
        """Gapless mode: the next ``count`` values, nothing written; Exhausted if one passes the end."""
        return self.sequence.chain(self.values.get(key), count)

    def commit(self, key: Hashable, last: int) -> None:
        """Gapless mode: items up to ``last`` were stored with their counter swap."""
        self.values[key] = last

    def setval(self, key: Hashable, value: int, *, is_called: bool) -> None:
        """``NextId.setval``: the next value is ``value + step`` (``value`` itself when not called); this
        process's block of the counter is dropped."""
        self.values[key] = value if is_called else value - self.sequence.step
        self.blocks.pop(key, None)

    def restart(self) -> None:
        """A new process: no blocks; nothing remembered about counters."""
        self.blocks.clear()


def period_label(period: Optional[str], now: datetime) -> Optional[str]:
    """The label of the UTC ``period`` containing ``now`` (``"2026"``, ``"2026-11"``, ``"2026-11-22"``)."""
    return None if period is None else now.strftime(PERIOD_FORMATS[period])


def stored_id(value: int, *, fmt: Optional[str], as_string: bool, label: Optional[str]) -> Any:
    """What the auto attribute holds for ``value``: the formatted string, the decimal string, or the number."""
    if fmt is not None:
        return fmt.format(value=value, period=label or "")
    return str(value) if as_string else value


def scope_text(value: Any) -> str:
    """A scope value as it appears in a counter key; numbers that DynamoDB stores alike read alike."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def counter_key(key: str, scope: Iterable[Any], label: Optional[str]) -> str:
    """The counter's ``NextKey``: the data-type key, then the scope values, then the period label."""
    parts = [key, *(scope_text(v) for v in scope)]
    if label is not None:
        parts.append(label)
    return "#".join(parts)


# -- which configurations are refused ----------------------------------------

#: Every option a model's Meta may set (README, Options; autoinc_block in Throughput).
OPTIONS = frozenset({
    "autoinc_attribute", "autoinc_key", "autoinc_gapless", "autoinc_counter", "autoinc_start", "autoinc_step",
    "autoinc_max", "autoinc_scope", "autoinc_strategy", "autoinc_period", "autoinc_format",
    "autoinc_counter_in_table", "autoinc_retries", "autoinc_backoff", "autoinc_timeout", "autoinc_block",
    "autoinc_min", "autoinc_cycle", "autoinc_track_explicit",
})

#: Formats the generators use, and whether each is usable (the value appears; only value and period fields).
FORMATS: Mapping[Any, bool] = {
    "X{value}": True,
    "{period}-{value:04d}": True,
    "INV-{period}-{value:06d}": True,
    "{period}-{value}": True,
    "T{value}": True,
    "{value:05d}": True,
    "{nope}": False,
    "{0}": False,
    "constant": False,
    "{period}": False,
    "{value": False,
    5: False,
}

#: Integers up to 38 digits are stored exactly by DynamoDB.
DIGITS_LIMIT = 10**38


@dataclass(frozen=True)
class Schema:
    """The attributes of a model, as the configuration rules see them."""

    kinds: Mapping[str, str]
    """Each attribute's kind: "number", "unicode", "boolean" or "version"."""
    hash_key: str
    range_key: Optional[str]
    nullable: frozenset


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def configuration_problem(schema: Schema, options: Mapping[str, Any], *, counter_ok: bool = True,
                          history: bool = False) -> Optional[str]:
    """Why a model with ``schema`` and these ``Meta`` options is refused (README), or None if it is usable.

    ``counter_ok``: ``autoinc_counter`` names NextId or a subclass of it. ``history``: the model takes
    ``HistoryMixin``.
    """
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        return f"unknown option {unknown[0]}"
    attribute = options.get("autoinc_attribute") or schema.hash_key
    kind = schema.kinds.get(attribute) if isinstance(attribute, str) else None
    if kind is None:
        return "autoinc_attribute is not an attribute"
    if kind not in ("number", "unicode"):
        return "auto attribute is neither a NumberAttribute nor a UnicodeAttribute"
    is_key = attribute in (schema.hash_key, schema.range_key)
    if not is_key and attribute not in schema.nullable:
        return "auto attribute outside the key without null=True"
    key = options.get("autoinc_key", "table")
    if not isinstance(key, str) or not key:
        return "autoinc_key is not a non-empty string"
    if not counter_ok:
        return "autoinc_counter is not NextId"
    for flag in ("autoinc_gapless", "autoinc_counter_in_table", "autoinc_cycle", "autoinc_track_explicit"):
        if not isinstance(options.get(flag, False), bool):
            return f"{flag} is not True or False"
    start, step = options.get("autoinc_start"), options.get("autoinc_step", 1)
    low, high, block = options.get("autoinc_min"), options.get("autoinc_max"), options.get("autoinc_block", 1)
    retries, backoff = options.get("autoinc_retries"), options.get("autoinc_backoff", 0.01)
    numbers_ok = _is_int(step) and _is_int(block) and (retries is None or _is_int(retries))
    if not numbers_ok or not all(v is None or _is_int(v) for v in (start, low, high)):
        return "a number option is not an int"
    if any(v is not None and abs(v) >= DIGITS_LIMIT for v in (start, step, low, high)):
        return "more than 38 digits"
    if step == 0:
        return "step 0"
    sequence = configured_sequence(options)
    if sequence.minimum >= sequence.maximum:
        return "min not below max"
    if not sequence.fits(sequence.start):
        return "start outside the bounds"
    if not 1 <= block <= 1_000_000:
        return "block out of range"
    gapless = options.get("autoinc_gapless", False)
    strategy = options.get("autoinc_strategy", "counter")
    if block > 1 and (gapless or strategy == "query"):
        return "blocks with gapless mode or the query strategy"
    if retries is not None and retries < 0:
        return "negative retries"
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        return "backoff is not a number of seconds >= 0"
    timeout = options.get("autoinc_timeout", 10.0)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout < float("inf")):
        return "timeout is not a number of seconds > 0"
    scope = options.get("autoinc_scope")
    names = () if scope is None else (scope,) if isinstance(scope, str) else scope
    if not isinstance(names, tuple) or not all(isinstance(n, str) and n in schema.kinds for n in names):
        return "scope names no attribute"
    if attribute in names:
        return "scope contains the auto attribute"
    if names and is_key:
        other = schema.range_key if attribute == schema.hash_key else schema.hash_key
        if other is None or set(names) != {other}:
            return "a scope the item's key does not hold, on a key attribute (scopes would share keys)"
    period = options.get("autoinc_period")
    if period is not None and period not in PERIOD_FORMATS:
        return "unknown period"
    fmt = options.get("autoinc_format")
    if fmt is not None and (kind != "unicode" or not FORMATS[fmt]):
        return "unusable format"
    if fmt is not None and "{period" in fmt and period is None:
        return "a format naming {period}, without a period (it would always be empty)"
    if period is not None and is_key and "{period" not in (fmt or ""):
        return "a sequence restarting each period in a key, without the period in its format"
    if strategy not in ("counter", "query"):
        return "unknown strategy"
    if options.get("autoinc_cycle", False) and (strategy == "query" or not is_key):
        return "cycle on the query strategy, or on an ID outside the key"
    if options.get("autoinc_track_explicit", False) and (strategy == "query" or fmt is not None):
        return "tracking explicit IDs with the query strategy or a format"
    if options.get("autoinc_track_explicit", False) and options.get("autoinc_cycle", False):
        return "tracking explicit IDs on a cycling sequence (no move keeps a new ID off an explicit one)"
    if strategy == "query":
        if attribute != schema.range_key or kind != "number":
            return "query strategy on an attribute that is not a number range key"
        if names or period is not None or options.get("autoinc_counter_in_table", False):
            return "query strategy with a scope, a period or an in-table counter"
        if options.get("autoinc_key") is not None or options.get("autoinc_gapless", False):
            return "query strategy with an option it ignores (a counter key, gapless mode)"
    if options.get("autoinc_counter_in_table", False) and schema.kinds[schema.hash_key] != "unicode":
        return "in-table counter without a string hash key"
    if history and (options.get("autoinc_gapless", False) or strategy == "query"):
        return "HistoryMixin with an ID that a resent transaction may change (gapless, the query strategy)"
    if history and options.get("autoinc_cycle", False):
        return "HistoryMixin on a cycling sequence (a new item would reuse a deleted item's key, whose history " \
            "already holds version 1)"
    if period is not None and attribute == schema.range_key and "{period" not in (fmt or ""):
        return "a sequence restarting each period in the range key, without the period in its format (the " \
            "keys of two periods would collide)"
    return None
