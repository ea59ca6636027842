"""Saving many instances at once, with one counter request per batch.

``User.save_all(users)`` assigns the IDs of all new instances first, then
writes the items in TransactWriteItems of up to 100 items each:

- fast mode reserves all the values a counter key needs with one UpdateItem;
- gapless mode puts a counter swap into each transaction (99 items and the
  swap), so each transaction is contiguous and either lands whole or not at
  all;
- the query strategy has no counter to batch: its instances are saved one by one.

Why transactions and not BatchWriteItem: a batch write cannot carry a
condition, so it could overwrite an existing item with a new ID (a counter set
below the stored IDs, say). Every new item here is written with
``attribute_not_exists`` on its key, as by ``save()``. A transaction costs two
write units per item instead of one.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

from pynamodb.constants import ITEM
from pynamodb.exceptions import TransactWriteError
from pynamodb.models import Model

from . import strategies
from ._options import Options, options_for
from .counter import new_request_token
from .exceptions import AutoIncrementError, ContentionError, ItemWriteError, error_code
from .signals import before_save, send_after_save
from .strategies import CONDITION_FAILED, CONFLICT, code_of, landed, reasons_of, was_retried

#: The most items one TransactWriteItems may hold.
TRANSACTION_LIMIT = 100


class BulkSaveError(ItemWriteError):
    """Part of a ``save_all()`` failed; ``saved`` and ``unsaved`` say which instances landed."""

    saved: List[Model]
    unsaved: List[Model]


def save_all(model: type, instances: Iterable[Model]) -> None:
    """Save ``instances`` of ``model``: new ones get IDs with one counter request per counter key.

    :raises BulkSaveError: a transaction was cancelled; the instances of the
        transactions before it are saved, the others are not (and new ones
        are left without IDs)
    """
    items = list(instances)
    opts = options_for(model)
    for item in items:
        if not isinstance(item, model):
            raise TypeError(f"save_all() of {model.__name__} was given a {type(item).__name__}")
    if opts.strategy == "query":
        for item in items:
            item.save()
        return

    is_new = [getattr(item, opts.attribute) is None for item in items]
    for item, new in zip(items, is_new):
        before_save.send(type(item), instance=item, is_new=new, operation="bulk")
    groups: Dict[str, List[Tuple[Model, Optional[str]]]] = {}
    existing: List[Model] = []
    for item in items:
        if getattr(item, opts.attribute) is None:
            period = opts.current_period()
            groups.setdefault(opts.counter_key(item, period), []).append((item, period))
        else:
            existing.append(item)

    saved: List[Model] = []
    try:
        for key, group in groups.items():
            if opts.gapless:
                _save_gapless(opts, key, group, saved)
            else:
                values = strategies.nextvals(opts, key, len(group))
                for (item, period), value in zip(group, values):
                    setattr(item, opts.attribute, opts.to_python(value, period))
                for start in range(0, len(group), TRANSACTION_LIMIT):
                    chunk = [item for item, _ in group[start:start + TRANSACTION_LIMIT]]
                    _commit(opts, chunk, [], new=True)
                    saved.extend(chunk)
        for start in range(0, len(existing), TRANSACTION_LIMIT):
            chunk = existing[start:start + TRANSACTION_LIMIT]
            _commit(opts, chunk, [], new=False)
            saved.extend(chunk)
    except AutoIncrementError as exc:
        unsaved = [item for item in items if not any(item is s for s in saved)]
        for item, new in zip(items, is_new):
            if new and any(item is u for u in unsaved):
                setattr(item, opts.attribute, None)
        error = BulkSaveError(f"{model.__name__}.save_all(): {len(saved)} of {len(items)} saved; {exc}",
                              exc.cause, cancellation_reasons=exc.cancellation_reasons)
        error.saved, error.unsaved = saved, unsaved
        _after(saved, items, is_new)
        raise error from exc
    _after(saved, items, is_new)


def _after(saved: List[Model], items: List[Model], is_new: List[bool]) -> None:
    for item, new in zip(items, is_new):
        if any(item is s for s in saved):
            item.update_local_version_attribute()
            send_after_save(type(item), instance=item, is_new=new, operation="bulk")


def _save_gapless(opts: Options, key: str, group: List[Tuple[Model, Optional[str]]], saved: List[Model]) -> None:
    """Write ``group`` in transactions of 99 items and one counter swap each."""
    size = TRANSACTION_LIMIT - 1
    position, attempt = 0, 0
    expected: Any = strategies._UNKNOWN
    while position < len(group):
        chunk = group[position:position + size]
        claim = strategies.reserve(chunk[0][0], opts, expected)
        values = [claim.value + opts.step * i for i in range(len(chunk))]
        opts.check_limit(key, values[-1])
        for (item, period), value in zip(chunk, values):
            setattr(item, opts.attribute, opts.to_python(value, period))
        swap = opts.counter.swap_kwargs(key, claim.expected, values[-1])
        try:
            _commit(opts, [item for item, _ in chunk], [swap], new=True)
        except _LostRace as lost:
            attempt += 1
            if attempt > opts.retries:
                raise ContentionError(f"counter {key!r} changed under concurrent writers {attempt} times in a "
                                      "row; raise Meta.autoinc_retries", lost.cause) from lost
            strategies.remember(opts, key, None)
            expected = strategies.counter_value(opts, lost.reason)
            time.sleep(strategies.backoff_delay(opts.backoff, attempt))
            continue
        strategies.remember(opts, key, values[-1])
        saved.extend(item for item, _ in chunk)
        position, attempt, expected = position + len(chunk), 0, values[-1]


class _LostRace(Exception):
    def __init__(self, cause: TransactWriteError, reason: Any) -> None:
        super().__init__("lost the counter race")
        self.cause, self.reason = cause, reason


def _commit(opts: Options, chunk: List[Model], swaps: List[Dict[str, Any]], *, new: bool) -> None:
    """One TransactWriteItems: the chunk's puts (new ones with attribute_not_exists) and the swaps."""
    puts = [strategies.put_kwargs(item, strategies.key_absent(item) if new else None, True) for item in chunk]
    try:
        opts.model._get_connection().connection.transact_write_items(
            condition_check_items=(), delete_items=(), put_items=puts, update_items=swaps,
            client_request_token=new_request_token(),
        )
    except TransactWriteError as exc:
        reasons = reasons_of(exc)
        # A transaction lands whole: if its first item is stored as we wrote it, all of it is.
        if reasons and reasons[0] is not None and reasons[0].raw_item == puts[0][ITEM] and was_retried(exc):
            return  # applied before its answer was lost; the resend found it
        if error_code(exc) != "TransactionCanceledException" and landed(chunk[0], opts, puts[0][ITEM], exc):
            return  # applied, though no answer said so
        swap_reasons = reasons[len(puts):]
        lost = any(code_of(r) in (CONDITION_FAILED, CONFLICT) for r in swap_reasons) or \
            any(code_of(r) == CONFLICT for r in reasons[:len(puts)])
        if lost and swaps:
            raise _LostRace(exc, swap_reasons[0] if swap_reasons else None) from exc
        failed = [f"{type(item).__name__} {opts.attribute}={getattr(item, opts.attribute)!r}: "
                  + ("an item with this key already exists" if code_of(r) == CONDITION_FAILED else str(code_of(r)))
                  for item, r in zip(chunk, reasons) if r is not None]
        raise ItemWriteError("transaction cancelled: " + ("; ".join(failed) or str(exc.cause or exc))
                             + "; nothing of it was written", exc, cancellation_reasons=reasons) from exc
