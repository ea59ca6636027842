"""The write engine: every request that stores an item carrying a new ID.

``Model.save()`` (:func:`save`), ``Model.save_all()`` and a user's
``TransactWrite`` hand their items to :func:`commit` as one :class:`Write`;
a lone gapless save goes through the threads' group commit (:func:`joined`).
Building a request and reading its answer are kept apart from sending it:

- :meth:`Write.request` builds the request: a PutItem for a lone item whose
  value the counter gave (fast, block), or a TransactWriteItems holding the
  items and one counter swap per chain of gapless claims (see
  :mod:`pynamodb_autoinc.strategies`), with a ClientRequestToken;
- :meth:`Write.verdict` reads a failed answer: applied after all (the answer
  to our own write was lost: told by the token, or by the value only this
  writer claimed, never by equal content), a lost race or a passing failure
  to retry, or the error that names the item;
- :func:`commit` sends it once; a failure goes to :func:`_transport.drive`,
  which retries lost races as the contest (made at the first loss) decides;
  it commits the claims, or releases them on any other exit.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from pynamodb.connection import Connection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import ITEM, PUT_ITEM, TRANSACT_WRITE_ITEMS
from pynamodb.exceptions import CancellationReason
from pynamodb.models import Model

from . import _budget, _contention, _state, _transport, strategies
from ._options import options_for
from .counter import _STAND_IN, _TEMPLATE_LIMIT, NextId, _SwapTemplate
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
from .sequence import SequenceOptions, number
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
        self.claims: List[Claim] = []
        for entry in entries:  # loops rather than comprehensions on a save's path: each of those is a call
            if entry.claim is not None:
                self.claims.append(entry.claim)
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
        self.previous_end: Optional[float] = None
        """With ``grouped``: when (:data:`_budget.clock`, monotonic) the last write of its group ended."""
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
        chains = []
        for chain, group in found.items():
            chains.append((chain, group[0], group[-1]))
        return chains

    def request(self) -> Tuple[str, Dict[str, Any]]:
        """The request to send: (operation name, its arguments)."""
        for entry in self.entries:
            if entry.claim is not None:
                attribute = entry.instance.get_attributes()[entry.claim.opts.attribute]
                value = getattr(entry.instance, entry.claim.opts.attribute)
                self.puts[entry.index][ITEM][attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
        chains = self.chains()
        # only a write on one counter that the library may send again with new values queues
        self.queue = self.retry and len(chains) == 1
        claims = self.claims
        if self.purpose != "transaction" and len(self.puts) == 1 and not chains and (not claims or (
                claims[0].kind == "counter" and not claims[0].opts.sequence.cycle)):
            # a lone item whose value the counter gave this writer alone: that value tells its own write apart
            # (a cycling sequence's values come round to stored items: a transaction's token tells instead)
            self.sent = PUT_ITEM, dict(self.puts[0])
            return self.sent
        items: List[Dict[str, Any]] = []
        for kind, parts in (("ConditionCheck", self.checks), ("Delete", self.deletes), ("Put", self.puts),
                            ("Update", self.updates)):
            for part in parts:
                items.append({kind: part})
        for _, head, last in chains:
            items.append({"Update": swap_kwargs(
                last.opts.counter, last.key, head.expected, last.value, queue=self.queue, ticket=self.ticket,
                standing=self.standing, by_standing=self.by_standing, requeue=self.requeue,
                sequence=last.opts.sequence)})
        # the token tells this write apart: DynamoDB answers a resend of an applied transaction with success
        token = self.token if self.token is not None else uuid.uuid4().hex
        self.sent = TRANSACT_WRITE_ITEMS, {"TransactItems": items, "ClientRequestToken": token, **self.extra}
        return self.sent

    def retake(self, current: Dict[ChainId, Any]) -> None:
        """After a lost race, claim again from the counter values it showed (``current``, by chain)."""
        strategies.retake(self.claims, current)

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """Send one request of this write's through its connection (:func:`_transport.send`); a failure raises
        botocore's error, which :meth:`verdict` reads."""
        return _transport.send(self.connection, operation, kwargs, raw=True)

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


def save(instance: Model, claim: Claim, put: Dict[str, Any], connection: Connection) -> Dict[str, Any]:
    """Write a new instance of ``Model.save()`` (its PutItem arguments ``put``) with its claim: a lone gapless
    save goes with the same counter's saves of other threads of this process (:func:`joined`), any other
    through :func:`commit`."""
    write = Write(connection, [put], [Entry(instance, claim, 0)], purpose="save")
    if claim.kind == "swap" and claim.opts.attribute == type(instance)._hash_keyname:
        return joined(write)
    return commit(write)


def commit(write: Write) -> Dict[str, Any]:
    """Send ``write`` until it is applied, retrying lost races; commit its claims, or release them on failure.

    The first request goes straight to :func:`send`; only a failure enters the retry loop
    (:func:`_transport.drive`), and only a lost race the queue (:mod:`pynamodb_autoinc._contention`), whose
    contest starts then. A contest starts before the first request only when this process holds a standing
    ticket.
    """
    exchange = _Commit(write)
    try:
        queue = _state.state.parts.get("queue")
        if queue is not None and queue.standing:
            exchange.contest = _contention.Contest(write)
            queued = exchange.contest.start()
            if queued is not None:
                write.retake(queued)
        operation, kwargs = write.request()
        try:
            response = write.send(operation, kwargs) if exchange.contest is None else exchange.send(operation, kwargs)
        except BOTOCORE_EXCEPTIONS as exc:
            response = _transport.drive(exchange, exc)
        strategies.commit(write.claims)
        contest = exchange.contest
        if contest is not None:
            contest.done()
            waited = _budget.clock.monotonic() - contest.began
            if waited > SLOW_SAVE and write.entries:
                log.warning("%s took %.2f s to commit after losing a race (%d races lost); the counter is busy",
                            describe(write.entries[0].instance), waited, contest.losses)
    except BaseException as exc:
        strategies.abandoned(write.claims, exc)
        if exchange.contest is not None:
            exchange.contest.give_back()
        raise
    return response


class _Commit(_transport.Exchange[Dict[str, Any]]):
    """A write as :func:`_transport.drive` sends it once its first request failed: a lost race is retried as
    its contest decides, made at the first loss."""

    errors = BOTOCORE_EXCEPTIONS

    def __init__(self, write: Write) -> None:
        self.write = write
        self.contest: Optional[_contention.Contest] = None

    def request(self) -> Tuple[str, Dict[str, Any]]:
        return self.write.request()

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        if self.contest is None:
            return self.write.send(operation, kwargs)
        return _contention.timed(self.write, operation, kwargs)

    def failed(self, exc: Exception) -> Optional[Dict[str, Any]]:
        """Applied after all ({}), or claim again as the verdict (or the contest, after a lost race) says."""
        outcome = self.write.verdict(exc)
        if outcome is APPLIED:
            return {}
        if outcome is not PASSING and isinstance(outcome, Resend):
            self.write.retake(outcome)
            return None
        if self.contest is None:
            self.contest = _contention.Contest(self.write, lost=True)
        if outcome is PASSING:
            self.contest.passing(exc)
            return None
        self.write.retake(self.contest.lost(exc, outcome))
        return None


# -- group commit ----------------------------------------------------------------
#
# Threads of one process saving gapless items on one counter do not race each
# other: the first becomes the leader and sends, in one TransactWriteItems,
# its own item and those of the threads queued behind it, with one counter
# swap (:class:`GroupWrite`). A thread whose item fails (its key exists, its
# condition failed) gets its own error; the others are sent again. Near the
# sequence's end bound the group saves the items that fit; the others get
# :class:`~pynamodb_autoinc.exceptions.SequenceExhaustedError` and keep no ID.
# A failure that names no item (an item too large) sends each item on its
# own, so that it fails alone. An interrupt (``KeyboardInterrupt``) in one of
# the threads leaves every item as its write ended (see :func:`joined`).
# A lone save with no other thread waiting is sent as it is.

#: The most items one group commit sends (with the counter swap, well inside TransactWriteItems' 100).
GROUP_LIMIT = 25

#: The most bytes of items one group commit sends (TransactWriteItems takes 4 MB).
GROUP_BYTES = 2_000_000


class _Groups:
    """This process's groups, one per counter and connection (a part of :mod:`pynamodb_autoinc._state`)."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.by_place: Dict[Tuple[Any, ...], _Group] = {}


def _groups() -> _Groups:
    state = _state.state
    return state.parts.get("groups") or state.part("groups", _Groups)


class _Member:
    """A thread's write waiting in a group."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.claim = write.claims[0]
        """The claim its item is sent with (a new one when a split group sends it alone)."""
        self.taken = False
        """A leader took it from the queue: it ends as that leader sends it."""
        self.done = False
        self.finished = threading.Event()
        self.response: Dict[str, Any] = {}
        self.error: Optional[BaseException] = None


class _Group:
    """The lone gapless saves of one counter and connection in this process (a place of the queue)."""

    def __init__(self) -> None:
        self.lead = threading.Lock()  # held by the thread sending the group's request
        self.guard = threading.Lock()  # guards the queue
        self.queue: List[_Member] = []
        self.ended: Optional[float] = None
        """When (:data:`_budget.clock`, monotonic) its last write was applied: a save that loses a race soon
        after is in a loop, and may keep its place in the counter's queue (one clock reading a save)."""


def joined(write: Write) -> Dict[str, Any]:
    """Commit ``write`` together with the same counter's writes of other threads of this process.

    A thread interrupted (``KeyboardInterrupt``, any ``BaseException``) while
    its write waits in the queue leaves the queue and gives its claim back;
    one whose write a leader already took waits for that leader's request
    to end, so that its ID says whether the item was stored. A leader
    interrupted while it sends gives back every claim not committed: those
    members get :class:`~pynamodb_autoinc.exceptions.ItemWriteError`, their
    IDs back to None, and the leader's thread the interrupt.
    """
    member = _Member(write)
    group: Optional[_Group] = None
    try:
        groups, place = _groups(), (member.claim.chain, id(write.connection))
        group = groups.by_place.get(place)
        if group is None:
            with groups.guard:
                group = groups.by_place.setdefault(place, _Group())
        with group.guard:
            group.queue.append(member)
        while not member.done:
            with group.lead:
                if not member.done:
                    _lead(group, member)
    except BaseException:
        _leave(group, member)
        raise
    if member.error is not None:
        raise member.error
    return member.response


def _leave(group: Optional[_Group], member: _Member) -> None:
    """``member``'s thread was interrupted: take its write out of the queue and give its claim back, or, if a
    leader took it, wait until that leader's request ended (its claim then says whether the item is stored)."""
    waiting = False
    if group is not None:
        with group.guard:
            waiting = member in group.queue
            if waiting:
                group.queue.remove(member)
    if member.taken and not waiting:
        member.finished.wait()
    else:
        member.claim.release()


def _lead(group: _Group, leader: _Member) -> None:
    """Send the queue's writes (the leader's first) as one transaction; every member taken ends done, with its
    response or its own error, whatever ends the request, an interrupt included."""
    batch: List[_Member] = []
    sent: Optional[GroupWrite] = None
    try:
        with group.guard:
            size = 0
            for other in list(group.queue):
                bytes_ = len(repr(other.write.puts[0]))
                if other is leader or (len(batch) < GROUP_LIMIT and size + bytes_ <= GROUP_BYTES):
                    other.taken = True
                    batch.append(other)
                    group.queue.remove(other)
                    size += bytes_
        if len(batch) > 1:
            batch.sort(key=lambda m: m is not leader)  # the leader's own write first
        if len(batch) == 1:
            batch[0].write.grouped, batch[0].write.previous_end = True, group.ended
            batch[0].response = commit(batch[0].write)
            group.ended = _budget.clock.monotonic()
            return
        sent = GroupWrite([m.write for m in batch])
        sent.grouped, sent.previous_end = True, group.ended
        try:
            with strategies.held(list(sent.claims)):
                sent.rechain()  # the members past the sequence's end bound are taken out
                response = commit(sent)
                group.ended = _budget.clock.monotonic()
        except Split:  # a failure that names no item: each item on its own
            for m in batch:
                if id(m.write) not in sent.failures:
                    try:
                        single = alone(m.write)
                        m.claim = single.claims[0]
                        m.response = commit(single)
                    except Exception as error:
                        m.error = error
            response = {}
        for m in batch:
            m.error = sent.failures.get(id(m.write), m.error)
            if m.error is None:
                m.response = m.response or response
    except BaseException as error:  # every member learns how the request ended: its own error, if it has one
        for m in batch:
            if m.error is None and sent is not None:
                m.error = sent.failures.get(id(m.write))
            if m.error is not None or m.claim.state == "committed":
                continue  # its own error, or stored before the request ended
            if isinstance(error, Exception):
                m.error = error
            elif m is not leader:
                # interrupted: nothing of it counts as written (as a save's own interrupt), so its ID is given back
                m.error = ItemWriteError(
                    f"{describe(m.write.entries[0].instance)}: the thread sending it with other threads' "
                    f"saves in one transaction was interrupted ({type(error).__name__}); it was not written and "
                    "its ID is back to None. Save it again")
                m.claim.release()
            else:
                m.claim.release()
        if not isinstance(error, Exception):
            raise  # KeyboardInterrupt and the like stop the leader's thread too
    finally:
        with group.guard:
            for m in batch:
                if m in group.queue:
                    group.queue.remove(m)
        for m in batch:
            m.done = True
            m.finished.set()


# -- helpers -------------------------------------------------------------------

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


#: Each counter class's swap templates, by shape.
_TEMPLATES: weakref.WeakKeyDictionary[type, Dict[Any, _SwapTemplate]] = weakref.WeakKeyDictionary()
