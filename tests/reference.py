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
from typing import Any, Dict, Hashable, Iterable, List, Mapping, Optional, Set

#: The label of each period: always with the year (README, Periods).
PERIOD_FORMATS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}


class Exhausted(Exception):
    """The next value would pass ``autoinc_max``: SequenceExhaustedError, and nothing is spent."""


@dataclass(frozen=True)
class Sequence:
    """The numbers of one sequence: ``Meta.autoinc_start``, ``_step``, ``_max`` and ``_block``."""

    start: int = 1
    step: int = 1
    limit: Optional[int] = None
    block: int = 1

    def fits(self, value: int) -> bool:
        """Whether ``value`` may be handed out: not past ``autoinc_max`` in the step's direction."""
        if self.limit is None:
            return True
        return value <= self.limit if self.step > 0 else value >= self.limit

    def after(self, last: Optional[int], count: int = 1) -> List[int]:
        """The ``count`` values that follow ``last`` (``None``: nothing handed out yet)."""
        first = self.start if last is None else last + self.step
        return [first + i * self.step for i in range(count)]

    def query_next(self, stored: Iterable[int]) -> int:
        """The query strategy's next range key for a partition that holds ``stored``."""
        values = list(stored)
        last = None if not values else max(values) if self.step > 0 else min(values)
        value = self.after(last)[0]
        if not self.fits(value):
            raise Exhausted
        return value


@dataclass
class Counters:
    """The counter items of one model (by sequence key) and this process's state about them."""

    sequence: Sequence
    values: Dict[Hashable, Optional[int]] = field(default_factory=dict)
    """What each counter item holds: the last value handed out (fast) or stored (gapless)."""
    blocks: Dict[Hashable, List[int]] = field(default_factory=dict)
    """The values this process reserved and has not handed out yet."""
    maybe_stale: Set[Hashable] = field(default_factory=set)
    """Gapless counters moved by ``setval`` since this process last wrote them."""

    def copy(self) -> Counters:
        return copy.deepcopy(self)

    def value(self, key: Hashable) -> Optional[int]:
        return self.values.get(key)

    def nextval(self, key: Hashable, count: int = 1) -> List[int]:
        """One counter request for ``count`` values: all of them, or Exhausted with nothing spent."""
        values = self.sequence.after(self.values.get(key), count)
        if not self.sequence.fits(values[-1]):
            raise Exhausted
        self.values[key] = values[-1]
        return values

    def take(self, key: Hashable) -> int:
        """Fast mode: the value a new item gets, from this process's block or one counter request."""
        if self.sequence.block == 1:
            return self.nextval(key)[0]
        block = self.blocks.get(key)
        if not block:
            try:
                block = self.nextval(key, self.sequence.block)
            except Exhausted:
                # near autoinc_max: what is left before the bound, in one request
                left = 0
                while left < self.sequence.block and self.sequence.fits(
                        self.sequence.after(self.values.get(key), left + 1)[-1]):
                    left += 1
                if left == 0:
                    raise
                block = self.nextval(key, left)
            self.blocks[key] = block
        value = block.pop(0)
        if not block:
            del self.blocks[key]
        return value

    def peek(self, key: Hashable, count: int = 1) -> List[int]:
        """Gapless mode: the next ``count`` values, nothing written; Exhausted if the last passes the max."""
        values = self.sequence.after(self.values.get(key), count)
        if not self.sequence.fits(values[-1]):
            raise Exhausted
        return values

    def commit(self, key: Hashable, last: int) -> None:
        """Gapless mode: items up to ``last`` were stored with their counter swap."""
        self.values[key] = last
        self.maybe_stale.discard(key)

    def setval(self, key: Hashable, value: int, *, gapless: bool) -> None:
        """``NextId.setval``: the counter holds ``value``; this process's blocks are kept until used up."""
        self.values[key] = value
        if gapless:
            self.maybe_stale.add(key)

    def restart(self) -> None:
        """A new process: no blocks; nothing remembered about counters."""
        self.blocks.clear()
        self.maybe_stale.clear()


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
})

#: Formats the generators use, and whether each is usable (the value appears; only value and period fields).
FORMATS: Mapping[Any, bool] = {
    "X{value}": True,
    "{period}-{value:04d}": True,
    "INV-{period}-{value:06d}": True,
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


def configuration_problem(schema: Schema, options: Mapping[str, Any], *, counter_ok: bool = True) -> Optional[str]:
    """Why a model with ``schema`` and these ``Meta`` options is refused (README), or None if it is usable.

    ``counter_ok``: ``autoinc_counter`` names NextId or a subclass of it.
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
    for flag in ("autoinc_gapless", "autoinc_counter_in_table"):
        if not isinstance(options.get(flag, False), bool):
            return f"{flag} is not True or False"
    start, step = options.get("autoinc_start", 1), options.get("autoinc_step", 1)
    limit, block = options.get("autoinc_max"), options.get("autoinc_block", 1)
    retries, backoff = options.get("autoinc_retries"), options.get("autoinc_backoff", 0.01)
    numbers_ok = all(_is_int(v) for v in (start, step, block)) and (retries is None or _is_int(retries))
    if not numbers_ok or not (limit is None or _is_int(limit)):
        return "a number option is not an int"
    if any(v is not None and abs(v) >= DIGITS_LIMIT for v in (start, step, limit)):
        return "more than 38 digits"
    if step == 0:
        return "step 0"
    if limit is not None and (start > limit if step > 0 else start < limit):
        return "start past max"
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
    period = options.get("autoinc_period")
    if period is not None and period not in PERIOD_FORMATS:
        return "unknown period"
    fmt = options.get("autoinc_format")
    if fmt is not None and (kind != "unicode" or not FORMATS[fmt]):
        return "unusable format"
    if period is not None and attribute == schema.hash_key and "{period" not in (fmt or ""):
        return "a sequence restarting each period in the hash key, without the period in its format"
    if strategy not in ("counter", "query"):
        return "unknown strategy"
    if strategy == "query":
        if attribute != schema.range_key or kind != "number":
            return "query strategy on an attribute that is not a number range key"
        if names or period is not None or options.get("autoinc_counter_in_table", False):
            return "query strategy with a scope, a period or an in-table counter"
    if options.get("autoinc_counter_in_table", False) and schema.kinds[schema.hash_key] != "unicode":
        return "in-table counter without a string hash key"
    return None
