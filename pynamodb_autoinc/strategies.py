"""Where an ID is born: allocation and the writes that carry a new ID.

Fast mode
    :func:`allocate` advances the counter with one atomic UpdateItem (or one
    per block of ``Meta.autoinc_block`` values, handed out by this process)
    and takes the value it returns; :func:`put_new` then writes the item with
    ``attribute_not_exists`` on its key. A failed put spends the value (a gap),
    as PostgreSQL's ``nextval`` does.

Gapless mode
    :func:`reserve` takes the value after the counter's: the value this
    process last wrote, or a consistent read. :func:`transact_new` writes the
    counter swap (conditional on that value) and the item put
    (``attribute_not_exists``) in one TransactWriteItems. Either both happen
    or neither does, so no value is spent without its item. Losing the race
    for the counter is retried, from the value the cancelled swap returned,
    with exponential backoff and full jitter; a failed item condition is not.

Query strategy
    :func:`query_last` reads the largest range key in the partition;
    :func:`put_next_in_partition` puts the next one and re-reads on a collision.
"""

from __future__ import annotations

import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import ITEM, PUT_ITEM
from pynamodb.exceptions import CancellationReason, PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from ._options import Options
from .counter import new_request_token
from .exceptions import (
    AutoIncrementError,
    ConditionFailedError,
    ContentionError,
    CounterError,
    ItemExistsError,
    ItemWriteError,
    SequenceExhaustedError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
    error_code,
    error_responses,
)

CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"
_UNKNOWN: Any = object()  # "the counter's value is not known here"


@dataclass
class Claim:
    """A value taken for one instance: its counter key, and the counter value it was taken from.

    ``swap`` is set on gapless claims, whose counter write is still to come:
    from ``expected`` (the value read; ``None``: no counter value yet) to
    ``value``. Fast claims are already on the counter; query claims need none.
    """

    value: int
    key: str
    period: Optional[str] = None
    expected: Optional[int] = None
    swap: bool = False


# -- per-process state -------------------------------------------------------

class _ProcessState:
    """What this process remembers about counters: reserved blocks and the last values seen.

    Both are per process: a forked child starts empty, so it never hands out
    a value from its parent's block.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blocks: Dict[Tuple[Any, ...], List[int]] = {}  # counter -> [next value, last value]
        self.seen: Dict[Tuple[Any, ...], Optional[int]] = {}  # counter -> its value after our last write

    def reset(self) -> None:
        self.lock = threading.Lock()
        self.blocks.clear()
        self.seen.clear()


_state = _ProcessState()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_state.reset)


def counter_id(opts: Options, key: str) -> Tuple[Any, ...]:
    """Identifies one counter item across models: endpoint, table, key."""
    meta = opts.counter.Meta
    return getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name, key


def remember(opts: Options, key: str, value: Optional[int]) -> None:
    """Record the counter's value as last written or seen by this process (None: forget it)."""
    with _state.lock:
        if value is None:
            _state.seen.pop(counter_id(opts, key), None)
        else:
            _state.seen[counter_id(opts, key)] = value


# -- allocation (called from the library's before_save receiver) -------------

def allocate(instance: Model, opts: Options) -> Claim:
    """Fast mode: advance the counter (one UpdateItem, or one per block) and assign the new value."""
    period = opts.current_period()
    key = opts.counter_key(instance, period)
    value = _from_block(opts, key) if opts.block > 1 else opts.counter.nextval(
        key, step=opts.step, start=opts.start, limit=opts.limit)
    return _assign(instance, opts, Claim(value, key, period))


def nextvals(opts: Options, key: str, count: int) -> List[int]:
    """Reserve ``count`` values of counter ``key`` with one UpdateItem; they are this caller's alone."""
    step = opts.step
    top = opts.counter.nextval(key, step=step * count, start=opts.start + step * (count - 1), limit=opts.limit)
    return [top - step * (count - 1 - i) for i in range(count)]


def _from_block(opts: Options, key: str) -> int:
    """The next value of this process's block for ``key``, reserving a new block when it is used up."""
    ident = counter_id(opts, key)
    with _state.lock:
        block = _state.blocks.get(ident)
        if block is None:
            try:
                values = nextvals(opts, key, opts.block)
            except SequenceExhaustedError:
                if opts.limit is None:
                    raise
                # fewer than a block's worth is left before autoinc_max: one value at a time
                values = nextvals(opts, key, 1)
            block = _state.blocks[ident] = [values[0], values[-1]]
        value = block[0]
        if value == block[1]:
            del _state.blocks[ident]
        else:
            block[0] = value + opts.step
        return value


def reserve(instance: Model, opts: Options, expected: Any = _UNKNOWN) -> Claim:
    """Gapless mode: take the value after the counter's (nothing is written).

    The counter's value is ``expected`` if the caller knows it, else the value
    this process last wrote or saw, else a consistent read.
    """
    period = opts.current_period()
    key = opts.counter_key(instance, period)
    if expected is _UNKNOWN:
        with _state.lock:
            expected = _state.seen.get(counter_id(opts, key), _UNKNOWN)
    if expected is _UNKNOWN:
        expected = opts.counter.currval(key)
    value = opts.start if expected is None else expected + opts.step
    opts.check_limit(key, value)
    return _assign(instance, opts, Claim(value, key, period, expected, swap=True))


def query_last(instance: Model, opts: Options) -> Claim:
    """Query strategy: read the largest range key in the instance's partition and assign the next one."""
    model = type(instance)
    hash_value = getattr(instance, str(model._hash_keyname))
    if hash_value is None:
        raise UnassignedIdError(
            f"{model.__name__}.{model._hash_keyname} is None: the query strategy numbers {opts.attribute} "
            f"within each {model._hash_keyname}; set it before saving"
        )
    try:
        last = next(iter(model.query(hash_value, scan_index_forward=False, limit=1, consistent_read=True,
                                     attributes_to_get=[model._range_key_attribute().attr_name])), None)
    except PynamoDBException as exc:
        raise CounterError(f"{model.__name__}: could not read the largest {opts.attribute} in partition "
                           f"{hash_value!r} ({error_code(exc) or exc}); nothing was written", exc) from exc
    value = opts.start if last is None else getattr(last, opts.attribute) + opts.step
    key = f"{model.Meta.table_name}#{hash_value}"
    opts.check_limit(key, value)
    return _assign(instance, opts, Claim(value, key))


def _assign(instance: Model, opts: Options, claim: Claim) -> Claim:
    setattr(instance, opts.attribute, opts.to_python(claim.value, claim.period))
    return claim


def key_absent(instance: Model, condition: Optional[Condition] = None) -> Condition:
    """The condition that no item with ``instance``'s key exists, ANDed with ``condition``."""
    absent: Condition = type(instance)._hash_key_attribute().does_not_exist()
    return absent if condition is None else absent & condition


def put_kwargs(instance: Model, condition: Optional[Condition], add_version_condition: bool) -> Dict[str, Any]:
    """The PutItem arguments for ``instance``, asking for the old item if a condition fails."""
    model = type(instance)
    args, kwargs = Model._get_save_args(instance, condition=condition, add_version_condition=add_version_condition)
    kwargs.update(key=ITEM, return_values_on_condition_failure="ALL_OLD")
    return dict(model._get_connection().get_operation_kwargs(*args, **kwargs))


# -- fast mode ---------------------------------------------------------------

def put_new(
    instance: Model, opts: Options, condition: Optional[Condition], add_version_condition: bool
) -> Dict[str, Any]:
    """Write a new item with ``attribute_not_exists`` on its key (ANDed with ``condition``)."""
    kwargs = put_kwargs(instance, key_absent(instance, condition), add_version_condition)
    try:
        return dict(type(instance)._get_connection().connection.dispatch(PUT_ITEM, kwargs))
    except BOTOCORE_EXCEPTIONS as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            old = _returned_item(exc)
            if old == kwargs[ITEM] and was_retried(exc):
                return {}  # our own write, applied before its response was lost
            raise _condition_error(instance, opts, old, exc) from exc
        if landed(instance, opts, kwargs[ITEM], exc):
            return {}  # applied, though no answer said so
        raise _write_error(instance, opts, exc, spent=True) from exc


# -- gapless mode --------------------------------------------------------------

def transact_new(
    instance: Model,
    opts: Options,
    claim: Claim,
    condition: Optional[Condition],
    add_version_condition: bool,
) -> Dict[str, Any]:
    """Write the counter swap and the new item in one transaction, retrying lost races."""
    connection = type(instance)._get_connection().connection
    attempt = 0
    while True:
        put = put_kwargs(instance, key_absent(instance, condition), add_version_condition)
        swap = opts.counter.swap_kwargs(claim.key, claim.expected, claim.value)
        try:
            data = dict(connection.transact_write_items(
                condition_check_items=(),
                delete_items=(),
                put_items=[put],
                update_items=[swap],
                client_request_token=new_request_token(),
            ))
            remember(opts, claim.key, claim.value)
            return data
        except TransactWriteError as exc:
            reasons = reasons_of(exc)
            put_reason, swap_reason = (reasons + [None, None])[:2]
            if error_code(exc) != "TransactionCanceledException":
                if landed(instance, opts, put[ITEM], exc):
                    remember(opts, claim.key, claim.value)
                    return {}  # applied (counter and item together), though no answer said so
                raise _write_error(instance, opts, exc, spent=False) from exc
            if put_reason is not None and put_reason.raw_item == put[ITEM] and was_retried(exc):
                remember(opts, claim.key, claim.value)
                return {}  # our own transaction, applied before its response was lost
            lost_race = code_of(swap_reason) in (CONDITION_FAILED, CONFLICT) or code_of(put_reason) == CONFLICT
            if not lost_race:
                if code_of(put_reason) == CONDITION_FAILED:
                    raise _condition_error(instance, opts, put_reason.raw_item if put_reason else None,
                                           exc, reasons) from exc
                raise _write_error(instance, opts, exc, spent=False, reasons=reasons) from exc
            attempt += 1
            if attempt > opts.retries:
                raise ContentionError(
                    f"{type(instance).__name__}: counter {claim.key!r} changed under concurrent writers "
                    f"{attempt} times in a row; nothing was written. Retry the save later, or raise "
                    "Meta.autoinc_retries",
                    exc,
                    cancellation_reasons=reasons,
                ) from exc
            # The failed swap returned the counter item as it is now: retry from there, with no read.
            current = counter_value(opts, swap_reason)
            remember(opts, claim.key, None)
            time.sleep(backoff_delay(opts.backoff, attempt))
            claim = reserve(instance, opts, current)


def landed(instance: Model, opts: Options, item: Dict[str, Any], cause: Exception) -> bool:
    """After a write failed without a verdict, whether ``item`` is stored after all (a consistent read).

    A request can be applied and its answer lost, and its resends then fail
    (throttled, or no answer again): the outcome is unknown to the client.
    One read settles it; if that fails too, :class:`WriteOutcomeUnknownError`.
    """
    if error_code(cause) is not None and not was_retried(cause):
        return False  # the only attempt was answered: it was not applied
    model = type(instance)
    hash_key, range_key = model._get_hash_range_key_serialized_values(instance)
    try:
        stored = model._get_connection().get_item(hash_key, range_key=range_key, consistent_read=True).get(ITEM)
    except Exception as exc:
        raise WriteOutcomeUnknownError(
            f"{_describe(instance, opts)}: the write got no answer ({error_code(cause) or type(cause).__name__}) "
            f"and checking whether it landed failed too ({error_code(exc) or type(exc).__name__}); it may be "
            f"stored: read it before saving again, or the record may be stored twice",
            cause,
        ) from exc
    return bool(stored == item)


def _returned_item(exc: BaseException) -> Optional[Dict[str, Any]]:
    """The old item a failed condition returned (ALL_OLD)."""
    return next((dict(r["Item"]) for r in error_responses(exc) if "Item" in r), None)


def was_retried(exc: BaseException) -> bool:
    """Whether botocore sent the failed request more than once (an earlier try may have applied)."""
    for response in error_responses(exc):
        attempts = response.get("ResponseMetadata", {}).get("RetryAttempts")
        if attempts is not None:
            return bool(attempts)
    return False


# -- query strategy --------------------------------------------------------------

def put_next_in_partition(
    instance: Model, opts: Options, condition: Optional[Condition], add_version_condition: bool
) -> Dict[str, Any]:
    """Put the instance with the value already assigned; on a collision re-read the partition and retry."""
    attempt = 0
    while True:
        try:
            return put_new(instance, opts, condition, add_version_condition)
        except ItemExistsError as exc:
            attempt += 1
            if attempt > opts.retries:
                raise ContentionError(
                    f"{_describe(instance, opts)}: another writer took the next {opts.attribute} in this "
                    f"partition {attempt} times in a row; nothing was written. Retry the save later, or raise "
                    "Meta.autoinc_retries",
                    exc.cause,
                ) from exc
            time.sleep(backoff_delay(opts.backoff, attempt))
            query_last(instance, opts)


def counter_value(opts: Options, reason: Optional[CancellationReason]) -> Any:
    """The counter value a failed swap's ALL_OLD item shows (None: no value), or _UNKNOWN."""
    if code_of(reason) != CONDITION_FAILED or reason is None or reason.raw_item is None:
        return _UNKNOWN  # a conflict, or no item returned: read it
    raw = reason.raw_item.get(opts.counter.next_id.attr_name)
    if raw is None:
        return None
    return int(raw["N"]) if "N" in raw else _UNKNOWN


def backoff_delay(base: float, attempt: int) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(1s, base * 2**(attempt-1))]."""
    return random.uniform(0.0, min(1.0, base * 2 ** (attempt - 1)))


def reasons_of(exc: Exception) -> List[Optional[CancellationReason]]:
    """The cancellation reasons of a failed transaction, or [] when there are none."""
    return list(getattr(getattr(exc, "cause", None), "cancellation_reasons", None) or [])


def code_of(reason: Optional[CancellationReason]) -> Optional[str]:
    return reason.code if reason is not None else None


# -- errors ------------------------------------------------------------------

def _describe(instance: Model, opts: Options) -> str:
    return f"{type(instance).__name__} with {opts.attribute}={getattr(instance, opts.attribute)!r}"


def _condition_error(
    instance: Model,
    opts: Options,
    old_item: Optional[Dict[str, Any]],
    cause: Exception,
    reasons: Sequence[Optional[CancellationReason]] = (),
) -> AutoIncrementError:
    spent = "the value is spent" if not opts.gapless else "the counter is unchanged"
    if old_item is not None:
        key = repr(opts.key) if not (opts.scope or opts.period) else "key"
        fix = (f"the counter {opts.key!r} is behind the IDs already stored: raise it to the largest stored ID "
               f"with {opts.counter.__name__}.setval({key}, N)")
        if opts.attribute != type(instance)._hash_keyname:
            fix = "choose a key that is not in use, or update the existing item instead"
        return ItemExistsError(
            f"{_describe(instance, opts)}: an item with this key already exists and was not overwritten "
            f"({spent}); {fix}",
            cause,
            cancellation_reasons=reasons,
        )
    return ConditionFailedError(
        f"{_describe(instance, opts)}: the condition passed to save() did not hold; nothing was written ({spent})",
        cause,
        cancellation_reasons=reasons,
    )


def _write_error(
    instance: Model,
    opts: Options,
    cause: Exception,
    *,
    spent: bool,
    reasons: Sequence[Optional[CancellationReason]] = (),
) -> AutoIncrementError:
    error = ItemWriteError("", cause)
    model = type(instance)
    if error.cause_response_code == "ResourceNotFoundException":
        what = (f"table {model.Meta.table_name!r} (or counter table {opts.counter.Meta.table_name!r}) does not "
                f"exist; create it with {model.__name__}.create_table(...)")
    else:
        what = f"the write failed with {error.cause_response_code or type(error.cause).__name__}: " \
               f"{error.cause_response_message or error.cause}"
    note = "the value is spent (a gap)" if spent else "nothing was written"
    return ItemWriteError(f"{_describe(instance, opts)}: {what}; {note}", cause, cancellation_reasons=reasons)
