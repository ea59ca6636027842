"""What ``save_all()`` decides before and after it writes: the checks of the items given, how they are split
into transactions, and the errors that say what landed (see docs/transactions.md, "Bulk saves")."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Type

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


def write_alone(cls: Type[Model], items: List[Model], alone: Dict[int, Callable[[], Any]], saved: List[Model],
                 new: Set[int]) -> None:
    """Write the items that a mixin writes itself, in order, after the transactions' items."""
    keys = {item_key(item): item for item in saved}
    for item in items:
        if id(item) in alone:  # after the items of the transactions, whose new keys it must not take
            distinct(cls, item, keys, items, saved, new, "it was not sent, nor the items after it")
            alone[id(item)]()
            saved.append(item)
            keys.setdefault(item_key(item), item)


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


def chunks(opts: Options, batch: List[Model], explicit: List[Model], new: Dict[str, List[Model]]) -> List[Chunk]:
    """The transactions: the ``new`` instances first, then the ``explicit`` ones; gapless ones one counter per
    chunk, with room left for its swap. The query strategy keeps no counter to batch: each item's number is
    read from its partition in turn."""
    if opts.strategy == "query":
        return [(getattr(item, opts.attribute) is None, [item]) for item in batch]
    size = TRANSACTION_LIMIT - 1 if opts.gapless else TRANSACTION_LIMIT
    parts = [(True, group, size) for group in new.values()] + [(False, explicit, TRANSACTION_LIMIT)]
    return [(claiming, part[i:i + n]) for claiming, part, n in parts for i in range(0, len(part), n)]


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
