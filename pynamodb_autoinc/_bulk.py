"""What ``save_all()`` decides before and after it writes: the checks of the items given, how they are split
into transactions within DynamoDB's limits, and the errors that say what landed (see docs/transactions.md,
"Bulk saves")."""

from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Type

from pynamodb.exceptions import AttributeNullError
from pynamodb.models import Model

from . import _engine, strategies
from ._engine import TRANSACTION_LIMIT
from ._item import check_explicit, item_key
from ._options import Options, options_for
from .exceptions import (
    AutoIncrementError,
    BulkItemExistsError,
    BulkSaveError,
    BulkSequenceExhaustedError,
    BulkWriteOutcomeUnknownError,
    ItemExistsError,
    SequenceExhaustedError,
    WriteOutcomeUnknownError,
)
from .strategies import Claim

Chunk = Tuple[bool, List[Model]]
"""A transaction of a bulk save: whether its items claim new IDs, and the items."""

TRANSACTION_BYTES = 4 * 1024 * 1024
"""DynamoDB's limit on the items of one TransactWriteItems, all together (4 MB)."""

ITEM_BYTES = 400 * 1024
"""DynamoDB's limit on one item, attribute names and values (400 KB)."""

KEY_BYTES = {"partition": 2048, "sort": 1024}
"""DynamoDB's limits on the value of a partition key and of a sort key."""

SWAP_ROOM = 4 * 1024
"""What a gapless transaction keeps of :data:`TRANSACTION_BYTES` for its counter's swap."""

ID_ROOM = 21
"""The most bytes a DynamoDB number takes (38 digits): the room a new numeric ID takes before it is claimed."""

BULK_ITEM: contextvars.ContextVar[Optional[Model]] = contextvars.ContextVar("autoinc_bulk_item", default=None)
"""The instance ``save_all()`` is writing on its own (``HistoryMixin``, a stored ``CounterMixin`` item): its
signals say ``operation="bulk"``, not ``"save"``."""


def refuse_unsendable(cls: Type[Model], items: List[Model], opts: Optional[Options]) -> Set[int]:
    """Refuse another model's instance, an instance given twice, a bad explicit ID and two items with one key;
    return the ``id()`` of the new instances."""
    for item in items:
        if not isinstance(item, cls):
            raise TypeError(f"save_all() of {cls.__name__} was given a {type(item).__name__}; save each model's "
                            "instances with its own save_all()")
    new = {id(item) for item in items if opts is not None and getattr(item, opts.attribute) is None}
    given: Set[int] = set()
    keys: Dict[Any, Model] = {}
    for item in items:
        if id(item) in given:
            raise bulk_error(BulkSaveError, f"{cls.__name__}.save_all(): 0 of {len(items)} saved; the same "
                             f"instance ({_engine.describe(item)}) was given twice; pass each one once", items)
        given.add(id(item))
        if opts is not None and id(item) not in new:
            check_explicit(item, opts)
        distinct(cls, item, keys, items, [], new)
    return new


def alone_writes(cls: Type[Any], items: List[Model]) -> Dict[int, Callable[[], Any]]:
    """The items of ``items`` that a mixin writes itself (``_autoinc_alone``), by ``id()``, with their writes."""
    alone: Dict[int, Callable[[], Any]] = {}
    for item in items:
        with _bulk_item(item):
            write = cls._autoinc_alone(item)
        if write is not None:
            alone[id(item)] = write
    return alone


def write_alone(cls: Type[Model], items: List[Model], alone: Dict[int, Callable[[], Any]], saved: List[Model],
                 new: Set[int]) -> None:
    """Write the items that a mixin writes itself, in order, after the transactions' items."""
    keys = {item_key(item): item for item in saved}
    for item in items:
        if id(item) in alone:  # after the items of the transactions, whose new keys it must not take
            distinct(cls, item, keys, items, saved, new, "it was not sent, nor the items after it")
            with _bulk_item(item):
                alone[id(item)]()
            saved.append(item)
            keys.setdefault(item_key(item), item)


@contextlib.contextmanager
def _bulk_item(item: Model) -> Iterator[None]:
    token = BULK_ITEM.set(item)
    try:
        yield
    finally:
        BULK_ITEM.reset(token)


def partly_saved(cls: Type[Model], items: List[Model], saved: List[Model], exc: Exception) -> BulkSaveError:
    """The error of a ``save_all()`` stopped by ``exc`` after ``saved`` landed (or by a library error)."""
    error = exc if isinstance(exc, AutoIncrementError) else None
    kind = (BulkSequenceExhaustedError if isinstance(exc, SequenceExhaustedError)
            else BulkItemExistsError if isinstance(exc, ItemExistsError)
            else BulkWriteOutcomeUnknownError if isinstance(exc, WriteOutcomeUnknownError) else BulkSaveError)
    return bulk_error(kind, f"{cls.__name__}.save_all(): {len(saved)} of {len(items)} saved; "
                      f"{exc if error else f'{type(exc).__name__}: {exc}'}", items, saved, error)


def groups(opts: Options, fresh: List[Model]) -> Dict[str, List[Model]]:
    """The new instances by counter when gapless, else all in one; a scope value missing is refused as save()
    refuses it, in every mode."""
    period = opts.current_period()
    found: Dict[str, List[Model]] = {}
    for item in fresh:
        key = opts.counter_key(item, period) if opts.scope or opts.gapless else ""
        found.setdefault(key if opts.gapless else "", []).append(item)
    return found


def chunks(opts: Options, batch: List[Model], explicit: List[Model], new: Dict[str, List[Model]],
           sizes: Dict[int, int]) -> List[Chunk]:
    """The transactions: the ``new`` instances first, then the ``explicit`` ones, each within DynamoDB's limits
    (100 items, and 4 MB by the ``sizes`` of their items, by ``id()``); gapless ones one counter per chunk, with
    room left for its swap. The query strategy keeps no counter to batch: each item's number is read from its
    partition in turn."""
    if opts.strategy == "query":
        return [(getattr(item, opts.attribute) is None, [item]) for item in batch]
    room = TRANSACTION_BYTES - SWAP_ROOM if opts.gapless else TRANSACTION_BYTES
    count = TRANSACTION_LIMIT - 1 if opts.gapless else TRANSACTION_LIMIT
    parts = [(True, group, count, room) for group in new.values()]
    parts.append((False, explicit, TRANSACTION_LIMIT, TRANSACTION_BYTES))
    return [(claiming, chunk) for claiming, part, most, space in parts for chunk in _split(part, most, space, sizes)]


def _split(part: List[Model], most: int, space: int, sizes: Dict[int, int]) -> Iterator[List[Model]]:
    """``part`` in order, in chunks of at most ``most`` items and ``space`` bytes."""
    chunk: List[Model] = []
    used = 0
    for item in part:
        size = sizes[id(item)]
        if chunk and (len(chunk) == most or used + size > space):
            yield chunk
            chunk, used = [], 0
        chunk.append(item)
        used += size
    if chunk:
        yield chunk


def measure(cls: Type[Model], opts: Options, batch: List[Model], items: List[Model]) -> Dict[int, int]:
    """Each item's size as DynamoDB counts it (a new ID counted at its largest), by ``id()``; raise BulkSaveError,
    before anything is claimed or sent, for an item past DynamoDB's limit on an item or on a key value."""
    sizes: Dict[int, int] = {}
    position = {id(item): n for n, item in enumerate(items, 1)}
    for item in batch:
        fields = {name: value_size(value) for name, value in item.serialize(null_check=False).items()}
        auto = type(item).get_attributes()[opts.attribute].attr_name
        if getattr(item, opts.attribute) is None:
            fields[auto] = _id_room(opts)
        sizes[id(item)] = sum(len(name.encode()) + size for name, size in fields.items())
        what = f"{_engine.describe(item)} (item {position[id(item)]} of {len(items)})"
        _refuse_past(cls, items, what, "an item, attribute names and values", sizes[id(item)], ITEM_BYTES)
        model = type(item)
        for kind, name in (("partition", model._hash_keyname), ("sort", model._range_keyname)):
            if name:
                attr_name = model.get_attributes()[name].attr_name
                _refuse_past(cls, items, f"the {kind} key value of {what}", f"a {kind} key value",
                             fields.get(attr_name, 0), KEY_BYTES[kind])
    return sizes


def _refuse_past(cls: Type[Model], items: List[Model], what: str, limit: str, size: int, most: int) -> None:
    if size > most:
        raise bulk_error(BulkSaveError, f"{cls.__name__}.save_all(): 0 of {len(items)} saved; {what} is "
                         f"{size:,} bytes, past DynamoDB's limit on {limit} ({most:,} bytes); it cannot be "
                         "stored: nothing was sent and no ID claimed", items)


def _id_room(opts: Options) -> int:
    """The most bytes a new ID can take: a number's most, or the longest string at the sequence's bounds."""
    if not opts.as_string:
        return ID_ROOM
    period = opts.current_period()
    bounds = (opts.sequence.minimum, opts.sequence.maximum, opts.sequence.start)
    return max(len(str(opts.to_python(value, period)).encode()) for value in bounds)


def _number_size(text: str) -> int:
    """A number's size as DynamoDB counts it: a byte per two significant digits, and one more."""
    digits = re.sub(r"[^0-9]", "", text.lower().split("e")[0]).strip("0")
    return (len(digits) + 1) // 2 + 1


#: the size of a serialized value of each DynamoDB type, as DynamoDB counts it (binary: the bytes, or the
#: base64 text PynamoDB's legacy encoding sends, which is longer)
_SIZES: Dict[str, Callable[[Any], int]] = {
    "S": lambda v: len(v.encode()),
    "N": _number_size,
    "B": len,
    "SS": lambda v: sum(len(s.encode()) for s in v),
    "NS": lambda v: sum(_number_size(n) for n in v),
    "BS": lambda v: sum(len(b) for b in v),
    "BOOL": lambda v: 1,
    "NULL": lambda v: 1,
    "L": lambda v: 3 + sum(1 + value_size(e) for e in v),
    "M": lambda v: 3 + sum(1 + len(k.encode()) + value_size(e) for k, e in v.items()),
}


def value_size(value: Dict[str, Any]) -> int:
    """The size of one serialized attribute value (``{"S": "abc"}``) as DynamoDB counts it."""
    ((kind, data),) = value.items()
    return _SIZES[kind](data)


def refuse_nulls(item: Model, opts: Options) -> None:
    """Raise PynamoDB's AttributeNullError for a required attribute (other than the ID) that ``item`` lacks."""
    for name, attribute in type(item).get_attributes().items():
        if name != opts.attribute and not attribute.null and getattr(item, name) is None:
            raise AttributeNullError(name)


def exhausted(opts: Options, chain: List[Claim], asked: int, exc: SequenceExhaustedError,
               item: Model) -> SequenceExhaustedError:
    """``save_all()``'s error when a chunk's claims on one counter met the end bound: asked, left and ``last``."""
    if asked <= 1 or asked > opts.sequence.size:
        return exc  # one value asked for, or more than the whole sequence holds: the error says so already
    # a gapless chunk's swaps: fast and block values are all taken before the first chunk, a query chunk asks one
    head = chain[0] if chain else None  # none yet when the chunk's first claim met the bound
    key, last = (head.key, head.expected) if head else (opts.counter_key(item, opts.current_period()), exc.last)
    error = strategies.too_few(opts, key, asked, opts.sequence.remaining(last), exc)
    error.last = last
    return error


def bulk_error(kind: Type[BulkSaveError], message: str, items: List[Model], saved: Sequence[Model] = (),
               exc: Optional[AutoIncrementError] = None) -> BulkSaveError:
    """A ``save_all()`` error of class ``kind``; ``saved`` landed, the rest of ``items`` did not."""
    extra: Dict[str, Any] = {"last": exc.last} if isinstance(exc, SequenceExhaustedError) else {}
    unsaved = [item for item in items if not any(item is s for s in saved)]
    return kind(message, exc.cause if exc is not None else None, saved=list(saved), unsaved=unsaved,
                cancellation_reasons=exc.cancellation_reasons if exc is not None else (), **extra)


def distinct(cls: Type[Model], item: Model, keys: Dict[Any, Model], items: List[Model], saved: List[Model],
             new: Set[int], tail: str = "nothing of the transaction holding it was sent") -> None:
    """Record ``item``'s key in ``keys``; raise BulkItemExistsError if another item of the call has it."""
    key = item_key(item)
    other = keys.setdefault(key, item) if key is not None else item
    if other is item:
        return
    named = [i for i in (other, item) if id(i) not in new]  # the explicit one(s)
    what = (f"the explicit {_engine.describe(named[0])} has the key that a new instance of the same call was "
            "given (an explicit ID is an ordinary put and would overwrite it); save it on its own, raise the counter "
            f"past it first ({options_for(cls).counter._reached_as()}.setval), or set Meta.autoinc_track_explicit"
            if len(named) == 1 else
            f"{_engine.describe(other)} and {_engine.describe(item)} have the same key and one would overwrite "
            "the other; save each key once")
    raise bulk_error(BulkItemExistsError, f"{cls.__name__}.save_all(): {len(saved)} of {len(items)} saved; "
                     f"{what}; {tail}", items, saved)
