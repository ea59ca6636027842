"""A sequence (start, step, bounds, cycle) as PostgreSQL's ``CREATE SEQUENCE``; the one parser of stored numbers;
the checks of the numbers and sequences given to a counter's operations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any, Dict, List, Optional, Tuple, Type

from .exceptions import AutoIncrementError, ConfigurationError, OutOfBoundsError, SequenceExhaustedError

#: The bounds of PostgreSQL's bigint sequences, the defaults here too.
BIGINT_MIN = -(2**63)
BIGINT_MAX = 2**63 - 1
#: Integers up to 38 digits are stored exactly by DynamoDB.
NUMBER_LIMIT = 10**38
_EXACT = Context(prec=100)  # DynamoDB keeps 38 digits; the default context's 28 would round two numbers into one


def number_text(value: Any) -> Optional[str]:
    """A finite number as DynamoDB stores it (``7.0``: ``"7"``, ``1e2``: ``"100"``); None for others and bools."""
    if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
        number = Decimal(str(value))
        if number.is_finite():
            return "0" if number == 0 else format(number.normalize(_EXACT), "f")
    return None


def is_int(value: Any) -> bool:
    """Whether ``value`` is an int (a bool is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def number(text: Any) -> Optional[Decimal]:
    """The number a DynamoDB number's text holds (``"2.50"``, ``"1E+2"``), exactly; None for no finite number."""
    try:
        value = Decimal(text)
    except (ArithmeticError, TypeError, ValueError):
        return None
    return value if value.is_finite() else None


def integer(text: Any) -> Optional[int]:
    """The integer a DynamoDB number's text holds (``"7.0"``, ``"7E+2"``); None for a fraction or no number."""
    value = number(text)
    return int(value) if value is not None and value == value.to_integral_value() else None


#: How errors name each option: as a model's ``Meta`` spells it (:meth:`SequenceOptions.of`), or as a field.
_META_NAMES = {"start": "Meta.autoinc_start", "step": "Meta.autoinc_step", "minimum": "Meta.autoinc_min",
               "maximum": "Meta.autoinc_max", "cycle": "Meta.autoinc_cycle"}
_FIELD_NAMES = {name: f"SequenceOptions.{name}" for name in _META_NAMES}
_LEFT_OUT = "a bound left out defaults to 1..2**63-1 going up and to -2**63..-1 going down"


def _check(names: Dict[str, str], start: Any, step: Any, minimum: Any, maximum: Any, cycle: Any, *,
           defaults: bool) -> Tuple[int, int, int]:
    """``(start, minimum, maximum)`` (``defaults`` for None), or a ConfigurationError naming the option and fix."""
    _check_types(names, start, step, minimum, maximum, cycle, defaults=defaults)
    low = minimum if minimum is not None else 1 if step > 0 else BIGINT_MIN
    high = maximum if maximum is not None else BIGINT_MAX if step > 0 else -1
    if low >= high:
        raise ConfigurationError(f"{names['minimum']} = {low} must be less than {names['maximum']} = {high}"
                                 + ("" if minimum is not None and maximum is not None else f"; {_LEFT_OUT}"))
    first = start if start is not None else low if step > 0 else high
    if not low <= first <= high:
        raise _start_outside(names, first, low, high, defaults=defaults)
    return first, low, high


def _check_types(names: Dict[str, str], start: Any, step: Any, minimum: Any, maximum: Any, cycle: Any, *,
                 defaults: bool) -> None:
    """Refuse a number that is no int (None only for a bound or start with ``defaults``) or past 38 digits, a
    ``cycle`` that is no bool, and ``step`` 0."""
    for name, value in (("step", step), ("start", start), ("minimum", minimum), ("maximum", maximum)):
        optional = defaults and name != "step"
        if not is_int(value) and not (optional and value is None):
            raise ConfigurationError(f"{names[name]} must be {'an int or None' if optional else 'an int'}, not "
                                     f"{value!r}")
        if value is not None and abs(value) >= NUMBER_LIMIT:
            raise ConfigurationError(f"{names[name]} = {value} has more digits than a DynamoDB number holds "
                                     "exactly (38); choose a smaller value")
    if not isinstance(cycle, bool):
        raise ConfigurationError(f"{names['cycle']} must be True or False, not {cycle!r}")
    if step == 0:
        raise ConfigurationError(f"{names['step']} must not be 0")


def _start_outside(names: Dict[str, str], first: int, low: int, high: int, *, defaults: bool) -> ConfigurationError:
    """The error for a start ``first`` outside the bounds ``low..high``, naming the bound it passes."""
    side, bound, name = ("below", low, "minimum") if first < low else ("above", high, "maximum")
    fix = _LEFT_OUT if defaults else "or use SequenceOptions.of, with PostgreSQL's defaults"
    return ConfigurationError(f"{names['start']} = {first} lies {side} the {name} {names[name]} = {bound}; move "
                              f"the start into {low}..{high}, or set {names[name]} ({fix})")


@dataclass(frozen=True)
class SequenceOptions:
    """A sequence: ``start``, ``step``, bounds ``minimum``, ``maximum`` (included), ``cycle``; see also :meth:`of`."""

    start: int = 1
    step: int = 1
    minimum: int = 1
    maximum: int = BIGINT_MAX
    cycle: bool = False

    def __post_init__(self) -> None:
        _check(_FIELD_NAMES, self.start, self.step, self.minimum, self.maximum, self.cycle, defaults=False)

    @classmethod
    def of(cls, start: Optional[int] = None, step: int = 1, minimum: Optional[int] = None,
           maximum: Optional[int] = None, cycle: bool = False) -> SequenceOptions:
        """A sequence with PostgreSQL's defaults (up: 1..2**63-1 from the minimum; down: -2**63..-1 from the maximum);
        :class:`ConfigurationError` for a value no int, ``step`` 0, crossed bounds or a start outside them."""
        first, low, high = _check(_META_NAMES, start, step, minimum, maximum, cycle, defaults=True)
        return cls(first, step, low, high, cycle)

    @property
    def ascending(self) -> bool:
        return self.step > 0

    @property
    def end(self) -> int:
        """The bound the sequence runs towards: ``maximum`` going up, ``minimum`` going down."""
        return self.maximum if self.step > 0 else self.minimum

    @property
    def restart_value(self) -> int:
        """Where a cycle starts again: ``minimum`` going up, ``maximum`` going down."""
        return self.minimum if self.step > 0 else self.maximum

    @property
    def size(self) -> int:
        """How many values one pass from the restart value to the end holds."""
        return (self.maximum - self.minimum) // abs(self.step) + 1

    def contains(self, value: int) -> bool:
        """Whether ``value`` lies within the bounds."""
        return self.minimum <= value <= self.maximum

    def remaining(self, last: Optional[int]) -> int:
        """How many values are left before the end bound after ``last`` (None: the counter is new)."""
        following = self.start if last is None else last + self.step
        return (self.end - following) // self.step + 1 if self.contains(following) else 0

    def following(self, key: str, last: Optional[int]) -> int:
        """The value after ``last`` (None: the start), wrapping with ``cycle``; raises past the bounds."""
        if last is None:
            return self.start
        value = last + self.step
        if self.contains(value):
            return value
        if (value < self.minimum) == (self.step > 0):
            self.check_counter(key, last)  # behind the start bound: raises
        if self.cycle:
            return self.restart_value
        raise self.exhausted(key, last)

    def after(self, key: str, last: Optional[int], count: int) -> Optional[int]:
        """The value ``count`` values after ``last`` (None: a new counter); None past the end without a cycle."""
        if count <= 0:
            return last
        value, count = (self.start, count - 1) if last is None else (last, count)
        left = self.remaining(value)
        if count <= left:
            return value + count * self.step
        if not self.cycle:
            return None
        count -= left + 1  # up to the end, then the wrap to the restart value
        return self.restart_value + (count % self.size) * self.step

    def values(self, first: int, count: int) -> List[int]:
        """``count`` consecutive values from ``first``."""
        return [first + self.step * i for i in range(count)]

    def on_sequence(self, value: int) -> bool:
        """Whether the sequence hands out ``value``: in the bounds, whole steps from the start or the restart value."""
        return self.contains(value) and ((value - self.start) % self.step == 0 or (
            self.cycle and (value - self.restart_value) % self.step == 0))

    def position(self, value: int) -> Optional[int]:
        """Where ``value`` stands (0: the start, 1: ``start + step``); None when it is no whole step from the start."""
        position, rest = divmod(value - self.start, self.step)
        return None if rest or position < 0 else position

    def at(self, position: int) -> int:
        """The value at ``position`` (see :meth:`position`), bounds aside."""
        return self.start + position * self.step

    def first_beyond(self, bound: Optional[int]) -> int:
        """The first value of the sequence past ``bound`` in its direction (the start when None or not reached)."""
        return self.start if bound is None else self.at(max(0, (bound - self.start) // self.step + 1))

    def subsequence(self, index: int, count: int) -> SequenceOptions:
        """Region ``index`` of ``count``: every ``count``-th value from ``start + index*step``, no cycle."""
        start = self.at(index)
        if not self.contains(start):
            raise ConfigurationError(f"region {index} of {count} would start at {start}, outside the bounds "
                                     f"{self.minimum}..{self.maximum}; widen the bounds or list fewer regions")
        return SequenceOptions(start, self.step * count, self.minimum, self.maximum, False)

    def check_counter(self, key: str, last: int) -> None:
        """Raise :class:`OutOfBoundsError` if a counter holding ``last`` is past the end, or its next value outside."""
        past = last > self.maximum if self.step > 0 else last < self.minimum
        behind = last + self.step < self.minimum if self.step > 0 else last + self.step > self.maximum
        if past or behind:
            where = f"past the {'maximum' if self.step > 0 else 'minimum'} {self.end}" if past else \
                f"so its next value {last + self.step} lies outside the bounds {self.minimum}..{self.maximum}"
            raise OutOfBoundsError(f"counter {key!r} holds {last}, {where}; restart it within the bounds "
                                   "(`pynamodb-autoinc restart`, or NextId.restart(key, sequence, value))")

    def exhausted(self, key: str, last: Optional[int]) -> SequenceExhaustedError:
        """The error for a sequence whose next value would pass its end bound."""
        bound = "maximum (Meta.autoinc_max)" if self.step > 0 else "minimum (Meta.autoinc_min)"
        after = f"{last} + {self.step}" if last is not None else f"starting at {self.start}"
        return SequenceExhaustedError(f"sequence {key!r} has reached its limit: {after} would pass its {bound} "
                                      f"{self.end}; nothing was spent. Move the bound (then `pynamodb-autoinc alter`), "
                                      "set Meta.autoinc_cycle = True, or restart it", last=last)

    def too_many(self, key: str, count: int) -> SequenceExhaustedError:
        """The error for one request numbering more items than one pass of the sequence holds."""
        return SequenceExhaustedError(f"sequence {key!r} cannot number {count} items in one request: it holds "
                                      f"{self.size} values ({self.minimum}..{self.maximum}, step {self.step}), so one "
                                      "would repeat; nothing was spent. Save fewer at once, or widen the bounds")

    def check(self, key: str, value: int) -> None:
        """Raise :class:`OutOfBoundsError` if ``value`` lies outside the bounds."""
        if not self.contains(value):
            raise OutOfBoundsError(f"value {value} is out of bounds for sequence {key!r} ({self.minimum}.."
                                   f"{self.maximum}); choose a value within them, or move the bounds first")

    def check_member(self, key: str, value: int, *, last: bool) -> None:
        """Raise :class:`OutOfBoundsError` if ``value`` (``last``: the last handed out, else the next) is off it."""
        start, step = self.start, self.step
        if self.position(value + step if last else value) is not None:
            return
        region, position = key.rpartition("@")[2], (value - start) // step
        if position < (-1 if last else 0):
            nearby = f"{self.at(-1 if last else 0)}, the {'value before its start' if last else 'start'}"
        else:
            nearby = f"{self.at(position + 1)} (or {self.at(position)})"
        raise OutOfBoundsError(
            f"{value} is off the subsequence of region {region!r} (counter {key!r}): it hands out only {start}, "
            f"{start + step}, {start + 2 * step}, ...; the others are other regions' IDs. Nothing was changed; give "
            f"as {'the last value handed out' if last else 'the next value'} one on it, such as {nearby}")

    def encode(self) -> str:
        """The form recorded on the counter item: ``start=1 step=1 min=1 max=9223372036854775807 no cycle``."""
        return (f"start={self.start} step={self.step} min={self.minimum} max={self.maximum} "
                f"{'cycle' if self.cycle else 'no cycle'}")

    @classmethod
    def decode(cls, text: str) -> Optional[SequenceOptions]:
        """The sequence :meth:`encode` wrote, or None if ``text`` is not one."""
        words = text.split()
        try:
            fields = {name: int(digits) for name, _, digits in (word.partition("=") for word in words[:4])}
            cycle = {"cycle": True, "no cycle": False}[" ".join(words[4:])]
            return cls(fields["start"], fields["step"], fields["min"], fields["max"], cycle)
        except (KeyError, ValueError):
            return None

    def differences(self, other: SequenceOptions) -> List[str]:
        """What differs from ``other``: ``"max 100 (here 200)"`` where ``other`` has 100."""
        names = (("start", "start"), ("step", "step"), ("minimum", "min"), ("maximum", "max"), ("cycle", "cycle"))
        return [f"{label} {getattr(other, name)} (here {getattr(self, name)})"
                for name, label in names if getattr(self, name) != getattr(other, name)]


#: The sequence a counter follows when none is given: 1, 2, 3, ... up to 2**63 - 1.
DEFAULT = SequenceOptions()


#: The region at the end of a region counter's key (``base@us-east-1``): a name as AWS spells its regions.
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]+")


def check_region_value(key: str, sequence: SequenceOptions, value: int, *, last: bool) -> None:
    """Refuse another region's value for a region counter (``base@us-east-1``, not ``x@example.com``)."""
    base, at, region = key.rpartition("@")
    if at and base and _REGION_NAME.fullmatch(region) and abs(sequence.step) > 1:
        sequence.check_member(key, value, last=last)


def setval_value(key: str, value: int, is_called: bool, seq: Optional[SequenceOptions]) -> int:
    """What :meth:`NextId.setval` writes on counter ``key`` under ``seq``: ``value``, or ``value - step``."""
    if seq is None:
        if not is_called:
            raise ConfigurationError(f"counter {key!r} records no sequence options, so is_called=False cannot tell its "
                                     "step; pass sequence=Model.autoinc_options().sequence (or --model)")
        return value
    seq.check(key, value)
    check_region_value(key, seq, value, last=is_called)
    return value if is_called else value - seq.step


def check_int(call: str, value: Any, *, optional: bool = False, rule: str = "the value must be an int",
              error: Type[AutoIncrementError] = OutOfBoundsError) -> None:
    """Refuse with ``error`` what is no int (None too unless ``optional``), and an int past 38 digits."""
    if optional and value is None:
        return
    if not is_int(value):
        raise error(f"{call}: {rule}, not {type(value).__name__} {value!r}; nothing was changed (convert it "
                    "yourself, e.g. int(...), if rounding is what you mean)")
    if abs(value) >= NUMBER_LIMIT:
        raise OutOfBoundsError(f"{call}: {value} has more digits than a DynamoDB number holds exactly (38); "
                               "nothing was changed")


def check_sequence(call: str, sequence: Any, *, optional: bool) -> None:
    """Refuse a ``sequence`` that is no :class:`SequenceOptions` (None allowed if ``optional``)."""
    if not isinstance(sequence, SequenceOptions) and not (optional and sequence is None):
        raise ConfigurationError(f"{call}: sequence must be a SequenceOptions{' (or None)' if optional else ''}, not "
                                 f"{sequence!r}: Model.autoinc_options().sequence, or SequenceOptions.of(start, ...)")


def storable(number: int) -> bool:
    """Whether DynamoDB holds ``number`` exactly, so that a request may carry it: 38 significant digits."""
    return abs(number) < NUMBER_LIMIT or len(str(abs(number)).rstrip("0")) <= 38 and abs(number) < 10**126
