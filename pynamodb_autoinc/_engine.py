"""The write engine: every request that stores an item carrying a new ID.

``Model.save()``, ``Model.save_all()`` and a user's ``TransactWrite`` hand
their items to :func:`commit` as one :class:`Write`. Building a request and
reading its answer are kept apart from sending it:

- :meth:`Write.request` builds the request: a PutItem for a lone item whose
  value the counter gave (fast, block), or a TransactWriteItems holding the
  items and one counter swap per chain of gapless claims (see
  :mod:`pynamodb_autoinc.strategies`), with a ClientRequestToken;
- :meth:`Write.verdict` reads a failed answer: applied after all (the answer
  to our own write was lost: told by the token, or by the value only this
  writer claimed, never by equal content), a lost race or a passing failure
  to retry, or the error that names the item;
- :func:`commit` has :func:`_transport.drive` send it, retrying lost races
  as the contest decides, and commits the claims, or releases them on any
  other exit.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from pynamodb.connection import Connection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import ITEM, PUT_ITEM, TRANSACT_WRITE_ITEMS
from pynamodb.exceptions import CancellationReason
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from . import _budget, _contention, _transport, strategies
from ._options import options_for
from .counter import NextId
from .exceptions import (
    CONDITION_FAILED,
    REPLICATED_WRITE_CONFLICT,
    TRANSIENT_REASONS,
    AutoIncrementError,
    ConditionFailedError,
    ContentionError,
    ItemExistsError,
    ItemWriteError,
    SequenceExhaustedError,
    TransactionCanceledError,
    WriteOutcomeUnknownError,
    error_code,
    error_responses,
    reasons_of,
    returned_item,
)
from .sequence import SequenceOptions, integer, number
from .strategies import _UNKNOWN, ChainId, Claim

log = logging.getLogger(__name__)

#: A write that takes longer than this (seconds) to commit is logged as a WARNING.
SLOW_SAVE = 1.0

#: The most items one TransactWriteItems may hold.
TRANSACTION_LIMIT = 100

APPLIED: Any = object()
"""A verdict: the request was applied, though its answer said otherwise or never came."""

PASSING: Any = object()
"""A verdict: nothing was applied and nothing learned (throttled, or a concurrent transaction touched an item):
the same request may pass if sent again, with the same values."""


class Resend(Dict[ChainId, Any]):
    """A verdict: send again with these counter values; no race was lost (a group dropped a failed item)."""


class Entry:
    """One item of a write: the instance, its claim (None: no new ID), and its put's position."""

    def __init__(self, instance: Model, claim: Optional[Claim], index: int) -> None:
        self.instance, self.claim, self.index = instance, claim, index


class Write:
    """One request storing items, some carrying new IDs; perhaps inside a user's transaction.

    ``puts`` are PutItem arguments; ``entries`` say which of them are this
    library's. ``checks``, ``deletes`` and ``updates`` are the other parts of
    a user's transaction. ``purpose`` (``"save"``, ``"bulk"`` or
    ``"transaction"``) decides the error a failure raises. ``retry``: lost
    races are retried by sending the request again with new values.
    """

    def __init__(
        self,
        connection: Connection,
        puts: List[Dict[str, Any]],
        entries: List[Entry],
        *,
        purpose: str,
        checks: Sequence[Dict[str, Any]] = (),
        deletes: Sequence[Dict[str, Any]] = (),
        updates: Sequence[Dict[str, Any]] = (),
        token: Optional[str] = None,
        retry: bool = True,
        extra: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.connection, self.puts, self.entries, self.purpose = connection, puts, entries, purpose
        self.checks, self.deletes, self.updates = checks, deletes, updates
        self.token, self.retry, self.extra = token, retry, dict(extra or {})
        self.claims = [e.claim for e in entries if e.claim is not None]
        self.queue = False
        """Swaps wait their turn in their counter's queue (see :mod:`pynamodb_autoinc._contention`)."""
        self.ticket: Optional[int] = None
        """The queue ticket the swap serves."""
        self.standing: Optional[str] = None
        """The counter attribute holding this process's standing ticket, for a lone save that may keep its
        place in the queue."""
        self.by_standing = False
        """The swap serves the standing ticket, whose number is not known yet."""
        self.requeue = False
        """The swap takes a standing ticket for the process's next save."""
        self.grouped = False
        """Sent by its process's group commit: the only write of the process on its counter in flight."""
        self.counter_items: Dict[ChainId, Dict[str, Any]] = {}
        """The counter items that refused swaps showed, by chain."""
        self.sent: Tuple[str, Dict[str, Any]] = ("", {})
        """The request last built: a failure whose outcome is unknown sends it again, with its token."""

    # -- building ---------------------------------------------------------

    def chains(self) -> List[Tuple[ChainId, Claim, Claim]]:
        """Each chain of swap claims as (chain, head, last): its counter moves from head.expected to last.value."""
        found: Dict[ChainId, List[Claim]] = {}
        for claim in self.claims:
            if claim.kind == "swap":
                found.setdefault(claim.chain, []).append(claim)
        return [(chain, group[0], group[-1]) for chain, group in found.items()]

    def request(self) -> Tuple[str, Dict[str, Any]]:
        """The request to send: (operation name, its arguments)."""
        for entry in self.entries:
            if entry.claim is not None:
                attribute = entry.instance.get_attributes()[entry.claim.opts.attribute]
                value = getattr(entry.instance, entry.claim.opts.attribute)
                self.puts[entry.index][ITEM][attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
        swaps = [swap_kwargs(last.opts.counter, last.key, head.expected, last.value, queue=self.queue,
                             ticket=self.ticket, standing=self.standing, by_standing=self.by_standing,
                             requeue=self.requeue, sequence=last.opts.sequence)
                 for _, head, last in self.chains()]
        if self.purpose != "transaction" and len(self.puts) == 1 and not swaps \
                and all(c.kind == "counter" and not c.opts.sequence.cycle for c in self.claims):
            # a lone item whose value the counter gave this writer alone: that value tells its own write apart
            # (a cycling sequence's values come round to stored items: a transaction's token tells instead)
            self.sent = PUT_ITEM, dict(self.puts[0])
            return self.sent
        items = ([{"ConditionCheck": c} for c in self.checks] + [{"Delete": d} for d in self.deletes]
                 + [{"Put": p} for p in self.puts] + [{"Update": u} for u in [*self.updates, *swaps]])
        # the token tells this write apart: DynamoDB answers a resend of an applied transaction with success
        token = self.token if self.token is not None else uuid.uuid4().hex
        self.sent = TRANSACT_WRITE_ITEMS, {"TransactItems": items, "ClientRequestToken": token, **self.extra}
        return self.sent

    def retake(self, current: Dict[ChainId, Any]) -> None:
        """After a lost race, claim again from the counter values it showed (``current``, by chain)."""
        strategies.retake(self.claims, current)

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """Send one request of this write's through its connection."""
        return send(self.connection, operation, kwargs)

    # -- reading answers ----------------------------------------------------

    def verdict(self, exc: Exception) -> Any:
        """What a failed request means: APPLIED, a lost race ({chain: counter value}), or it raises."""
        code = error_code(exc)
        if code == REPLICATED_WRITE_CONFLICT and self.claims:
            return {}  # another region wrote one of the items at the same time; nothing was applied: a lost race
        if code == "ConditionalCheckFailedException":
            reasons: List[Optional[CancellationReason]] = [
                CancellationReason(code=CONDITION_FAILED, raw_item=returned_item(exc))]
        elif code == "TransactionCanceledException":
            reasons = reasons_of(exc)
        else:
            return self._settle(exc)
        chains = self.chains()
        first_put = len(self.checks) + len(self.deletes)
        first_swap = first_put + len(self.puts) + len(self.updates)
        reasons += [None] * (first_swap + len(chains) - len(reasons))
        ours = {first_put + e.index: e.claim for e in self.entries if e.claim is not None}
        if was_retried(exc) and self.sent[0] == PUT_ITEM and reasons[first_put] is not None \
                and reasons[first_put].raw_item is not None:  # type: ignore[union-attr]
            # a lone put of a value the counter gave this writer alone, resent: the item under it is ours,
            # applied before its answer was lost (and perhaps changed since). A transaction is told apart by
            # its token instead: DynamoDB answers a resend of an applied one with success, never a refusal.
            return APPLIED
        current: Dict[ChainId, Any] = {}
        lost, blocking, taken = False, [], []
        for i, reason in enumerate(reasons):
            if reason is None:
                continue
            if reason.code in TRANSIENT_REASONS:
                lost = True  # throttled, or a concurrent transaction touched an item: nothing applied, send again
                if i >= first_swap:
                    current[chains[i - first_swap][0]] = _UNKNOWN
            elif i >= first_swap and reason.code == CONDITION_FAILED:
                chain, _, last = chains[i - first_swap]  # another writer moved the counter, or queued
                if reason.raw_item is not None:
                    self.counter_items[chain] = reason.raw_item
                current[chain] = counter_value(last, reason)
            elif i in ours and reason.code == CONDITION_FAILED and reason.raw_item is not None:
                taken.append(i)  # the value is stored already
            else:
                blocking.append(i)
        for i in taken:
            # taken by a racing writer; unless it is a swap whose counter held: the counter is behind the items
            claim = ours[i]
            if claim.kind == "query" or claim.chain in current:
                lost = True
            else:
                blocking.append(i)
        if lost and not taken and not blocking and not self.retry and self.claims \
                and all(value is _UNKNOWN for value in current.values()):
            return PASSING  # a write that may not claim other values: no counter moved, send it as it is
        if (lost or current) and not blocking and self.claims:
            return {chain: value for chain, value in current.items() if value is not _UNKNOWN}
        return self.blocked(exc, reasons, sorted(blocking), current)

    def blocked(self, exc: Exception, reasons: List[Optional[CancellationReason]], blocking: List[int],
                current: Dict[ChainId, Any]) -> Any:
        """A failure that no retry can mend: raise the error that names what failed."""
        raise self.failure(exc, reasons, blocking)

    def _settle(self, exc: Exception) -> Any:
        """A failure with no verdict: find out with one consistent read whether the write landed."""
        entry = next((e for e in self.entries if e.claim is not None), None)
        if entry is None or (error_code(exc) is not None and not was_retried(exc)):
            raise self.failure(exc, [], [])  # answered, and so not applied
        model = type(entry.instance)
        hash_key, range_key = model._get_hash_range_key_serialized_values(entry.instance)
        try:  # read where the write went (in gapless mode with a home region, the home region's endpoint)
            stored = _transport.get(self.connection, model.Meta.table_name, hash_key, range_key)
        except Exception as read_error:
            raise self._unknown(entry, exc, read_error) from read_error
        if stored is None:
            raise self.failure(exc, [], [])  # not stored: not applied
        operation, kwargs = self.sent
        if operation == PUT_ITEM:
            return APPLIED  # stored under the value the counter gave this writer alone: ours
        try:  # the item may be another writer's: the transaction's token tells. Resent with it, DynamoDB
            # answers success if it was applied (or applies it now), and refuses it if it was not
            self.send(operation, kwargs)
        except BOTOCORE_EXCEPTIONS as again:
            if error_code(again) in ("TransactionCanceledException", REPLICATED_WRITE_CONFLICT):
                return self.verdict(again)
            raise self._unknown(entry, exc, again) from again
        return APPLIED

    def _unknown(self, entry: Entry, exc: Exception, check: Exception) -> WriteOutcomeUnknownError:
        """The error for a write that got no answer, when checking whether it landed failed too."""
        return WriteOutcomeUnknownError(
            f"{describe(entry.instance)}: the write got no answer ({error_code(exc) or type(exc).__name__}) "
            f"and checking whether it landed failed too ({error_code(check) or type(check).__name__})"
            "; it may be stored: read it before saving again, or the record may be stored twice",
            exc,
        )

    # -- errors ---------------------------------------------------------------

    def spent(self) -> str:
        """What an error adds when the write was not applied: that a counter value it claimed is spent."""
        return " (the value is spent)" if any(c.kind == "counter" for c in self.claims) else ""

    def failure(self, exc: Exception, reasons: List[Optional[CancellationReason]],
                blocking: List[int]) -> AutoIncrementError:
        """The error for a request that was not applied; ``blocking``: the positions that failed it."""
        first_put = len(self.checks) + len(self.deletes)
        spent = self.spent()
        if self.purpose == "save":
            entry = self.entries[0]
            reason = reasons[first_put] if reasons else None
            if reason is not None and reason.code == CONDITION_FAILED:
                if reason.raw_item is not None:
                    return ItemExistsError(f"{describe(entry.instance)}: {exists_advice(entry)}; nothing was "
                                           f"written{spent}", exc, cancellation_reasons=reasons)
                return ConditionFailedError(f"{describe(entry.instance)}: the condition passed to save() did not "
                                            f"hold; nothing was written{spent}", exc, cancellation_reasons=reasons)
            return ItemWriteError(f"{describe(entry.instance)}: {_failed_with(exc, entry.instance)}; nothing was "
                                  f"written{spent}", exc, cancellation_reasons=reasons)
        if not reasons:
            what = _failed_with(exc, self.entries[0].instance if self.entries else None)
        else:
            names = self._names(reasons)
            what = "; ".join(f"item {i}: {reasons[i].code} on {names.get(i, 'your item')}"  # type: ignore[union-attr]
                             for i in blocking)
        error = TransactionCanceledError if self.purpose == "transaction" else ItemWriteError
        return error(f"transaction cancelled: {what}; nothing of it was written{spent}", exc,
                     cancellation_reasons=reasons)

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        """The error once lost races used up the retries or the time (or may not be retried)."""
        claim = self.claims[0]
        what = (f"another writer took the next {claim.opts.attribute} in partition {claim.key!r}"
                if claim.kind == "query" else f"counter {claim.key!r} changed under concurrent writers")
        if self.purpose == "transaction" and not self.retry:
            return TransactionCanceledError(
                f"transaction cancelled: {what} since it was read (the transaction has its own "
                "client_request_token, so it is not sent again with other values); run the transaction again",
                exc, cancellation_reasons=reasons_of(exc))
        message = (f"{describe(claim.instance)}: {what} {attempts} times in a row in {elapsed:.2f} s; nothing "
                   "was written. Retry the save later, or raise Meta.autoinc_timeout (and Meta.autoinc_retries, "
                   "if set)")
        error = TransactionCanceledError if self.purpose == "transaction" else ContentionError
        return error(message, exc, cancellation_reasons=reasons_of(exc))

    def _names(self, reasons: List[Optional[CancellationReason]]) -> Dict[int, str]:
        first_put = len(self.checks) + len(self.deletes)
        first_swap = first_put + len(self.puts) + len(self.updates)
        names = {}
        for entry in self.entries:
            i = first_put + entry.index
            names[i] = describe(entry.instance)
            reason = reasons[i]
            if entry.claim is not None and reason is not None and reason.code == CONDITION_FAILED:
                names[i] += (f" (new: {exists_advice(entry)})" if reason.raw_item is not None
                             else " (new: your condition failed)")
        for n, (_, _, last) in enumerate(self.chains()):
            names[first_swap + n] = f"counter {last.key!r}"
        return names


class Split(AutoIncrementError):
    """A group commit failed for a reason no item is named in: its members are sent one by one instead."""


class GroupWrite(Write):
    """The lone gapless saves of several threads, sent as one transaction with one counter swap.

    An item that fails for a reason of its own is taken out, with its own
    error in :attr:`failures`, and the rest are sent again; so are the items
    past the sequence's end bound, each with its own
    :class:`~pynamodb_autoinc.SequenceExhaustedError`. A failure that names
    no item (a ``ValidationException``: an item too large, say) raises
    :class:`Split`: each item is then sent on its own (:func:`alone`), so
    that an item that fails alone fails alone.
    """

    def __init__(self, members: List[Write]) -> None:
        super().__init__(members[0].connection, [m.puts[0] for m in members],
                         [Entry(m.entries[0].instance, m.entries[0].claim, i) for i, m in enumerate(members)],
                         purpose="group")
        self.members = list(members)
        self.failures: Dict[int, AutoIncrementError] = {}
        """The error of each member write that failed on its own, by ``id()`` of the member."""

    def rechain(self) -> None:
        """Make the members' claims, taken one by one, one chain from the value this process remembers."""
        head = self.claims[0]
        self.retake({head.chain: strategies.remembered(head)})

    def retake(self, current: Dict[ChainId, Any]) -> None:
        """Claim again from ``current``, one value after another; the members whose value would pass the
        sequence's end bound fail with :class:`SequenceExhaustedError` and are taken out."""
        head = self.claims[0]
        try:
            strategies.retake([head], current)
        except SequenceExhaustedError as error:
            self._drop(list(range(len(self.members))), _exhausted(error))
            raise
        for n in range(1, len(self.claims)):
            claim, before = self.claims[n], self.claims[n - 1]
            try:
                claim.assign(claim.opts.sequence.following(claim.key, before.value))
            except SequenceExhaustedError as error:
                self._drop(list(range(n, len(self.members))), _exhausted(error))
                break

    def blocked(self, exc: Exception, reasons: List[Optional[CancellationReason]], blocking: List[int],
                current: Dict[ChainId, Any]) -> Any:
        if not blocking or any(i >= len(self.puts) for i in blocking):
            raise self.failure(exc, reasons, blocking)
        (chain, head, _), = self.chains()
        expected = head.expected
        first_put = len(self.checks) + len(self.deletes)
        self._drop([i - first_put for i in blocking],
                   lambda i, member: member.failure(exc, [reasons[first_put + i]], [0]))
        if not self.members:
            raise self.failures[next(iter(self.failures))]
        return Resend({chain: current.get(chain, expected)})

    def _drop(self, indexes: List[int], error: Callable[[int, Write], AutoIncrementError]) -> None:
        """Take the members at ``indexes`` out, each with the error ``error(index, member)``; release their
        claims."""
        for i in indexes:
            member = self.members[i]
            self.failures[id(member)] = error(i, member)
            self.entries[i].claim.release()  # type: ignore[union-attr]
        kept = [i for i in range(len(self.members)) if i not in indexes]
        self.members = [self.members[i] for i in kept]
        self.puts = [m.puts[0] for m in self.members]
        self.entries = [Entry(self.entries[i].instance, self.entries[i].claim, n) for n, i in enumerate(kept)]
        self.claims = [e.claim for e in self.entries if e.claim is not None]

    def failure(self, exc: Exception, reasons: List[Optional[CancellationReason]],
                blocking: List[int]) -> AutoIncrementError:
        if not reasons or not blocking:
            if len(self.members) > 1:
                return Split("a group commit failed for a reason that names no item", exc)
            return self.members[0].failure(exc, [], [])
        return super().failure(exc, reasons, blocking)

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        for member in self.members[1:]:
            self.failures[id(member)] = member.contention(exc, attempts, elapsed)
        return self.members[0].contention(exc, attempts, elapsed)


def _exhausted(error: SequenceExhaustedError) -> Callable[[int, Write], AutoIncrementError]:
    """Each member's own copy of the error for a value past the end bound."""
    return lambda i, member: SequenceExhaustedError(str(error), error.cause, last=error.last)


def alone(write: Write) -> Write:
    """A member of a split group commit, with a new claim, to be sent on its own."""
    entry = write.entries[0]
    claim = strategies.take(entry.instance, entry.claim.opts)  # type: ignore[union-attr]
    single = Write(write.connection, write.puts, [Entry(entry.instance, claim, 0)], purpose=write.purpose)
    single.grouped = True
    return single


def commit(write: Write) -> Dict[str, Any]:
    """Send ``write`` until it is applied, retrying lost races; commit its claims, or release them on failure."""
    contest = _contention.Contest(write)
    try:
        with strategies.held(write.claims):
            queued = contest.start()
            if queued is not None:
                write.retake(queued)
            response = _transport.drive(_Commit(write, contest))
            for claim in write.claims:
                claim.commit()
            for _, _, last in write.chains():
                strategies.remember(last.opts, last.key, last.value)
            contest.done()
            waited = _budget.clock.monotonic() - contest.began
            if waited > SLOW_SAVE and write.entries:
                log.warning("%s took %.2f s to commit (%d races lost); the counter is busy", describe(
                    write.entries[0].instance), waited, contest.losses)
    except BaseException:
        contest.give_back()
        raise
    return response


class _Commit(_transport.Exchange[Dict[str, Any]]):
    """A write as :func:`_transport.drive` sends it: a lost race is retried as ``contest`` decides."""

    errors = BOTOCORE_EXCEPTIONS

    def __init__(self, write: Write, contest: _contention.Contest) -> None:
        self.write, self.contest = write, contest

    def request(self) -> Tuple[str, Dict[str, Any]]:
        return self.write.request()

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        return _contention.timed(self.write, operation, kwargs)

    def failed(self, exc: Exception) -> Optional[Dict[str, Any]]:
        """Applied after all ({}), or claim again as the verdict (or the contest, after a lost race) says."""
        outcome = self.write.verdict(exc)
        if outcome is APPLIED:
            return {}
        if outcome is PASSING:
            self.contest.passing(exc)
            return None
        if not isinstance(outcome, Resend):
            outcome = self.contest.lost(exc, outcome)
        self.write.retake(outcome)
        return None


def send(connection: Connection, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Send one request (:func:`_transport.send`); a failure raises botocore's error, which
    :meth:`Write.verdict` reads."""
    return _transport.send(connection, operation, kwargs, raw=True)


# -- helpers -------------------------------------------------------------------

def key_absent(instance: Model, condition: Optional[Condition] = None) -> Condition:
    """The condition that no item with ``instance``'s key exists, ANDed with ``condition``."""
    absent: Condition = type(instance)._hash_key_attribute().does_not_exist()
    return absent if condition is None else absent & condition


def put_kwargs(instance: Model, condition: Optional[Condition], add_version_condition: bool = True) -> Dict[str, Any]:
    """The PutItem arguments for ``instance``, asking for the old item if a condition fails."""
    args, kwargs = Model._get_save_args(instance, condition=condition, add_version_condition=add_version_condition)
    kwargs.update(key=ITEM, return_values_on_condition_failure="ALL_OLD")
    return dict(type(instance)._get_connection().get_operation_kwargs(*args, **kwargs))


def counter_value(claim: Claim, reason: CancellationReason) -> Any:
    """The counter value a failed swap's ALL_OLD item shows (None: no value), or unknown.

    :raises SequenceMismatchError: the counter records other sequence options
    """
    if reason.raw_item is not None:
        claim.opts.counter.check_options(claim.key, reason.raw_item, claim.opts.sequence)
    return _contention.item_value(reason.raw_item, claim.opts.counter)


def stored_form(value: Any) -> Any:
    """An attribute value in a form equal for every way of writing what DynamoDB stores the same."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (kind, inner), = value.items()
    if kind == "N":
        return kind, number(inner)
    if kind == "NS":
        return kind, frozenset(number(n) for n in inner)
    if kind == "SS":
        return kind, frozenset(inner)
    if kind == "B":
        return kind, _binary(inner)
    if kind == "BS":
        return kind, frozenset(_binary(b) for b in inner)
    if kind == "M":
        return kind, tuple(sorted((name, stored_form(v)) for name, v in inner.items()))
    if kind == "L":
        return kind, tuple(stored_form(v) for v in inner)
    return kind, inner


def _binary(value: Any) -> Any:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def was_retried(exc: BaseException) -> bool:
    """Whether botocore sent the failed request more than once (an earlier try may have applied)."""
    for response in error_responses(exc):
        attempts = response.get("ResponseMetadata", {}).get("RetryAttempts")
        if attempts is not None:
            return bool(attempts)
    return False



def describe(instance: Model) -> str:
    """How errors name an instance: its key and its auto-increment attribute (``User with id=5``,
    ``Member with pk='User#Alex', num=4``)."""
    model = type(instance)
    keys = [name for name in (model._hash_keyname, model._range_keyname) if name]
    attribute = options_for(model).attribute if hasattr(model, "autoinc_options") else keys[0]
    names = keys if attribute in keys else [*keys, attribute]
    return f"{model.__name__} with " + ", ".join(f"{name}={getattr(instance, name)!r}" for name in names)


def exists_advice(entry: Entry) -> str:
    """Why a new item's key can already be in use, and what to do."""
    claim = entry.claim
    if claim is None or claim.opts.attribute != type(entry.instance)._hash_keyname:
        return "an item with this key already exists and was not overwritten; choose a key that is not in use, " \
               "or update the existing item instead"
    if claim.opts.sequence.cycle:
        return (f"an item with this key already exists and was not overwritten: sequence {claim.key!r} cycles "
                "(Meta.autoinc_cycle) and has come round to a value whose item is still stored; delete old items "
                "before the sequence reaches them again, or widen its bounds")
    return (f"an item with this key already exists and was not overwritten; the counter {claim.key!r} is behind "
            f"the IDs already stored: raise it to the largest stored ID with "
            f"{claim.opts.counter._reached_as()}.setval({claim.key!r}, N)")


def _failed_with(exc: Exception, instance: Optional[Model]) -> str:
    code = error_code(exc)
    if code == "ResourceNotFoundException" and instance is not None:
        model = type(instance)
        return (f"table {model.Meta.table_name!r} (or counter table "
                f"{options_for(model).counter.Meta.table_name!r}) does not exist; create it with "
                f"{model.__name__}.create_table(...)")
    message = next((r["Error"].get("Message") for r in error_responses(exc) if r.get("Error")), None)
    return f"the write failed with {code or type(exc).__name__}: {message or exc}"


# -- the counter swap of a gapless write -------------------------------------------

def swap_kwargs(counter: Type[NextId], key: str, expected: Optional[int], value: int, *, queue: bool = False,
                ticket: Optional[int] = None, standing: Optional[str] = None, by_standing: bool = False,
                requeue: bool = False, sequence: Optional[SequenceOptions] = None) -> Dict[str, Any]:
    """The TransactWriteItems ``Update`` that moves counter ``key`` from ``expected`` to ``value`` (see
    :func:`build_swap_kwargs`, which says what each argument does).

    Every gapless save sends one, so it is built from a template: the request of the same shape (the same
    counter, key, options and queue arguments) built once by PynamoDB with stand-in numbers, whose
    numbers are then replaced by this call's. The result is the request :func:`build_swap_kwargs`
    builds, made in a fraction of its time.
    """
    shape = (key, counter.Meta.table_name, expected is None, queue, ticket is None, standing, by_standing, requeue,
             sequence)
    templates = _TEMPLATES.setdefault(counter, {})  # by class: a subclass has its own table
    template = templates.get(shape)
    if template is None:
        if len(templates) >= _TEMPLATE_LIMIT:
            templates.clear()  # many keys (a counter per period): keep the memory bounded
        template = templates[shape] = _SwapTemplate(build_swap_kwargs(
            counter, key, None if expected is None else _STAND_IN[0], _STAND_IN[1], queue=queue,
            ticket=None if ticket is None else _STAND_IN[2], standing=standing, by_standing=by_standing,
            requeue=requeue, sequence=sequence))
    return template.fill((expected, value, ticket))


def build_swap_kwargs(counter: Type[NextId], key: str, expected: Optional[int], value: int, *, queue: bool = False,
                      ticket: Optional[int] = None, standing: Optional[str] = None, by_standing: bool = False,
                      requeue: bool = False, sequence: Optional[SequenceOptions] = None) -> Dict[str, Any]:
    """The swap :func:`swap_kwargs` makes, built by PynamoDB.

    ``expected=None`` means the counter must not hold a value yet. With ``queue``, a ``ticket`` or
    ``by_standing``, the swap also waits its turn among the writers queued on the counter
    (:func:`_contention.swap_terms`). With ``sequence``, the counter must record those options (or none),
    and records them.
    """
    actions, condition = counter._swap(expected, value, sequence)
    if queue or ticket is not None or by_standing:
        more, also = _contention.swap_terms(counter, ticket, standing, by_standing, requeue)
        actions, condition = actions + more, condition & also
    return counter._update_kwargs(key, actions, condition)


#: The numbers a swap template is built with, for (expected, value, ticket): far apart, and far from any
#: counter value, so that each number in the built request (a ticket's neighbour ``ticket - 1`` too) is
#: known by what it stands for.
_STAND_IN = (7 * 10**40, 8 * 10**40, 9 * 10**40)

#: The most swap templates one counter class keeps.
_TEMPLATE_LIMIT = 256

#: Each counter class's swap templates, by shape.
_TEMPLATES: weakref.WeakKeyDictionary[type, Dict[Any, _SwapTemplate]] = weakref.WeakKeyDictionary()


class _SwapTemplate:
    """A swap request built with :data:`_STAND_IN` numbers, and where each stands in it."""

    def __init__(self, kwargs: Dict[str, Any]) -> None:
        self.kwargs = kwargs
        self.slots: Dict[str, Tuple[int, int]] = {}
        """By expression value name: (which stand-in, the offset from it)."""
        for name, value in kwargs.get("ExpressionAttributeValues", {}).items():
            whole = integer(value.get("N")) if isinstance(value, dict) and len(value) == 1 else None
            for which, stand_in in enumerate(_STAND_IN):
                if whole is not None and abs(whole - stand_in) < 10**6:
                    self.slots[name] = (which, whole - stand_in)

    def fill(self, numbers: Tuple[Optional[int], int, Optional[int]]) -> Dict[str, Any]:
        """The request with this call's numbers; a new dict at every level a caller or a botocore hook might
        change."""
        kwargs = dict(self.kwargs)
        values = dict(kwargs.get("ExpressionAttributeValues", {}))
        for name, (which, offset) in self.slots.items():
            values[name] = {"N": str(numbers[which] + offset)}  # type: ignore[operator]
        if values:
            kwargs["ExpressionAttributeValues"] = values
        if "ExpressionAttributeNames" in kwargs:
            kwargs["ExpressionAttributeNames"] = dict(kwargs["ExpressionAttributeNames"])
        kwargs["Key"] = {name: dict(part) for name, part in kwargs["Key"].items()}
        return kwargs
