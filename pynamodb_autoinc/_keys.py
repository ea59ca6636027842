"""Values as text in keys: one encoding from an attribute's value to its text in a counter key (a
``Meta.autoinc_scope`` value) or a history key (an item's key), DynamoDB's limit on a key's length, and the proof
that ``Meta.autoinc_format`` writes every value of a sequence as an ID of its own.

The encoding starts from the attribute's own serialized form, as DynamoDB stores it, so that values stored alike
give one key: a naive datetime and the same instant read back from the table (timezone-aware), 1 and 1.0, ``True``
and ``1`` for a boolean. Per DynamoDB type:

- ``S`` (``UnicodeAttribute``, ``UTCDateTimeAttribute``, ``DiscriminatorAttribute``, ...): the stored string;
- ``N`` (``NumberAttribute``, ``TTLAttribute``, ...): the number in DynamoDB's normal form (``7.0``: ``7``);
- ``B`` (``BinaryAttribute``): the stored bytes in base64, as DynamoDB's JSON shows them;
- ``BOOL`` (``BooleanAttribute``): ``True`` or ``False`` (given ``True``, ``False``, ``1`` or ``0``).

A scope refuses the others when the class is created (sets, maps, lists, null: no one text; JSON: its text follows
the order of its keys; a ``VersionAttribute``: it changes on every save).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Type

from pynamodb.attributes import (
    Attribute,
    BinaryAttribute,
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)

from .exceptions import InvalidKeyError
from .sequence import SequenceOptions, is_int, number, number_text

#: DynamoDB's limit on the value of a partition key, in bytes of UTF-8.
PARTITION_KEY_BYTES = 2048

#: The DynamoDB types a scope value may have (a key's own types, and booleans).
SCOPE_TYPES = ("S", "N", "B", "BOOL")

#: The DynamoDB types of a key attribute.
KEY_TYPES = ("S", "N", "B")


def scope_refusal(attribute: Attribute) -> Optional[str]:
    """Why a scope on ``attribute`` could give one parent two counters, or None when its values have one text."""
    if isinstance(attribute, JSONAttribute):
        return "whose text follows the order of its keys, so equal values could get two counters"
    if isinstance(attribute, VersionAttribute):
        return "which changes on every save"
    if attribute.attr_type not in SCOPE_TYPES:
        return "which has no single text form"
    return None


def key_text(attribute: Attribute, value: Any) -> str:
    """``value``'s text in a key, from ``attribute``'s serialized form; ``ValueError`` saying why for a value the
    attribute would not store as given (a string for a number, ``"yes"`` for a boolean, a naive TTL datetime)."""
    kind = attribute.attr_type
    if kind == "N":
        return _number(attribute, value)
    if kind == "BOOL":
        if not (isinstance(value, bool) or is_int(value) and value in (0, 1)):
            raise ValueError("a BooleanAttribute holds True or False")
        return "True" if attribute.serialize(value) else "False"
    try:
        stored = attribute.serialize(value)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        raise ValueError(f"a {type(attribute).__name__} does not store it ({type(exc).__name__}: {exc})") from None
    if kind == "S" and isinstance(stored, str):
        return stored
    if kind == "B" and isinstance(stored, (str, bytes, bytearray, memoryview)):
        raw = stored.encode() if isinstance(stored, str) else bytes(stored)  # botocore sends a str as UTF-8
        return base64.b64encode(raw).decode("ascii")
    expected = {"S": "str", "B": "bytes"}.get(kind)
    raise ValueError(f"a {type(attribute).__name__} stores {expected}" if expected else
                     f"a {type(attribute).__name__} (DynamoDB type {kind}) has no text in a key")


def _number(attribute: Attribute, value: Any) -> str:
    """A number's text, as DynamoDB stores it; a TTL's datetime through the attribute's own serialization."""
    text = number_text(value)
    if text is None and not isinstance(value, (bool, int, float, Decimal, str)):
        try:
            text = number_text(number(attribute.serialize(value)))
        except (TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ValueError(f"a {type(attribute).__name__} does not store it ({exc})") from None
    if text is None:
        raise ValueError(f"a {type(attribute).__name__} holds a finite number")
    return text


def text_in(model: Type[Any], name: str, value: Any, where: str) -> str:
    """``model.name``'s ``value`` as text in ``where`` (a key); :class:`InvalidKeyError` naming them if it has none."""
    try:
        return key_text(model.get_attributes()[name], value)
    except ValueError as exc:
        raise InvalidKeyError(f"{model.__name__}.{name} is {value!r}, a {type(value).__name__}, which cannot go "
                              f"into {where}: {exc}; set a value the attribute stores. Nothing was sent") from None


def item_text(parts: Sequence[Tuple[Attribute, Any]]) -> str:
    """The text of an item's key: its hash key's text, or ``[hash, range]`` in JSON (a number unquoted)."""
    texts = [key_text(attribute, value) for attribute, value in parts]
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(text if attribute.attr_type == "N" else json.dumps(text)
                           for (attribute, _), text in zip(parts, texts)) + "]"


def attribute_for(value: Any) -> Attribute:
    """The attribute a key value of this Python type is stored by, for a key given without its model."""
    if number_text(value) is not None:
        return NumberAttribute()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return BinaryAttribute(legacy_encoding=False)
    return UTCDateTimeAttribute() if isinstance(value, datetime) else UnicodeAttribute()


def check_length(key: str, what: str, fix: str) -> None:
    """Refuse, before it is sent, a partition key ``key`` past DynamoDB's 2,048 bytes (``what`` names it)."""
    size = len(key.encode("utf-8"))
    if size > PARTITION_KEY_BYTES:
        raise InvalidKeyError(f"{what} {key[:40]!r}... is {size:,} bytes, past DynamoDB's limit of "
                              f"{PARTITION_KEY_BYTES:,} bytes for a partition key; {fix}. Nothing was sent")


# -- formats -------------------------------------------------------------------------------------------------------

#: The digits each integer presentation type of a format's value field writes, and their base.
_BASES = {"": (10, "0-9"), "d": (10, "0-9"), "n": (10, "0-9"), "x": (16, "0-9a-f"), "X": (16, "0-9A-F"),
          "o": (8, "0-7"), "b": (2, "01")}
#: The presentation types that show a number in fixed or exponent form (read back as a decimal).
_FLOATS = ("e", "E", "f", "F", "g", "G")
_CONVERSIONS: Dict[str, Callable[[Any], str]] = {"s": str, "r": repr, "a": ascii}


def format_refusal(fmt: Any, sequence: SequenceOptions, period: Optional[str], label: str) -> Optional[str]:
    """Why ``Meta.autoinc_format`` ``fmt`` is refused for ``sequence`` numbering per ``period`` (None: no period;
    ``label`` stands for it), or None: no str, no value shown, ``{period}`` without a period, two values of the
    sequence given one ID, or an ID that does not read back as its value."""
    try:
        if not isinstance(fmt, str) or fmt.format(value=1, period=label) == fmt.format(value=2, period=label):
            raise ValueError("the value does not appear in it")
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        return (f"Meta.autoinc_format {fmt!r} is not usable ({exc}); use a format string with the fields value "
                "and period, e.g. 'INV-{period}-{value:06d}'")
    if period is None and period_fields(fmt):
        return (f"Meta.autoinc_format {fmt!r} shows {{period}}, but the model sets no Meta.autoinc_period, so the "
                "period is always empty; set autoinc_period, or drop {period} from the format")
    problem = format_problem(fmt, sequence, label)
    if problem is None:
        return None
    return (f"Meta.autoinc_format {fmt!r} does not give each value of the sequence {sequence.minimum}.."
            f"{sequence.maximum} (step {sequence.step}) an ID of its own: {problem}; show the whole number as an "
            "integer, e.g. 'INV-{value:06d}' or '{value:x}'")


def format_problem(fmt: str, sequence: SequenceOptions, label: str) -> Optional[str]:
    """Why ``fmt`` does not write each value of ``sequence`` as an ID of its own that reads back as that value
    (checked on its first and last values, on both sides of each change in its count of digits and on a sample),
    or None. ``label`` stands for the period."""
    fields = [(spec or "", conversion) for _, name, spec, conversion in string.Formatter().parse(fmt)
              if name == "value"]
    seen: Dict[str, int] = {}
    unread: List[Optional[Tuple[int, str]]] = [None] * len(fields)  # per value field, a value it cuts
    for value in sorted(samples(sequence)):
        try:
            text = fmt.format(value=value, period=label)
            unread = [cut or (None if _reads_back(field, value) else (value, text))
                      for cut, field in zip(unread, fields)]
        except (ValueError, TypeError, OverflowError, KeyError, IndexError, AttributeError) as exc:
            return f"it cannot write {value} ({exc})"
        if text in seen:
            return f"{seen[text]} and {value} both give {text!r}"
        seen[text] = value
    if all(unread):
        value, text = unread[0] if unread and unread[0] else (1, fmt.format(value=1, period=label))
        return f"no field shows the whole value, so an ID does not read back as its number ({value} gives {text!r})"
    return None


def _reads_back(field: Tuple[str, Optional[str]], value: int) -> bool:
    """Whether the value field ``field`` (spec, conversion) shows ``value`` whole: its digits read back as it (an
    integer in its base, or a fixed or exponent form whose digits hold the whole number)."""
    spec, conversion = field
    kind = spec[-1:] if spec[-1:].isalpha() else ""
    if conversion is not None:
        kind = "" if kind in ("", "s") else "?"
    shown = format(_CONVERSIONS[conversion](value) if conversion else value, spec)
    try:
        if kind in _FLOATS:
            return Decimal(re.sub(r"[^0-9.eE+-]", "", shown)) == value
        base, digits = _BASES[kind]
        return int(re.sub(f"[^{digits}-]", "", shown), base) == value
    except (KeyError, ValueError, ArithmeticError):
        return False


def samples(sequence: SequenceOptions) -> Set[int]:
    """Values of ``sequence`` that a format must keep apart: the first and last, the two on each side of every
    change in the count of digits (9 and 10, -99 and -100, ...), of 0 and of each bound, and a fixed sample."""
    low, high, step = sequence.minimum, sequence.maximum, abs(sequence.step)
    targets = {low, high, 0, *_powers(38)}
    sample = random.Random(f"{low} {high} {step}")  # the same sample for the same sequence, in every process
    targets.update(low + sample.randrange(high - low + 1) for _ in range(64))
    targets.update(sample.choice((1, -1)) * sample.randrange(10 ** k, 10 ** (k + 1)) for k in range(38))
    anchors = {sequence.start, sequence.restart_value} if sequence.cycle else {sequence.start}
    values: Set[int] = set()
    for anchor in anchors:  # the values a step apart from the start (and from where a cycle restarts)
        for target in targets:
            below = anchor + (min(max(target, low), high) - anchor) // step * step
            values.update(v for v in range(below - step, below + 3 * step, step) if low <= v <= high)
    return values


def _powers(digits: int) -> Iterable[int]:
    """``±10**k`` and ``±(10**k - 1)`` for every ``k`` up to ``digits``."""
    for k in range(digits + 1):
        for value in (10 ** k, 10 ** k - 1):
            yield value
            yield -value


def period_fields(fmt: str) -> List[str]:
    """The fields of ``fmt`` that show the period (``{period}``, ``{period:>8}``, ``{period.upper}``)."""
    return [name for _, name, _, _ in string.Formatter().parse(fmt)
            if name is not None and name.split(".")[0].split("[")[0] == "period"]
