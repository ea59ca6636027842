"""The write engine: every request storing items with new IDs is one :class:`Write`, sent by :func:`commit`; a lone
gapless save goes through the threads' group commit (:func:`joined`). See docs/architecture.md."""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from dataclasses import dataclass
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

#: Verdicts: applied (though its answer said otherwise or never came); and nothing applied nor learned (throttled,
#: a concurrent transaction): the same request may pass if sent again as it is.
APPLIED: Any = object()
PASSING: Any = object()


class Resend(Dict[ChainId, Any]):
    """A verdict: send again with these counter values; no race was lost (a group dropped a failed item)."""


@dataclass(eq=False)
class Entry:
    """One item of a write: the instance, its claim (None: no new ID), and its put's position."""
    instance: Model
    claim: Optional[Claim]
    index: int


class Write:
    """One request storing ``puts`` (``entries``: the library's), perhaps in a user's transaction; ``purpose``
    (save, bulk, transaction) picks the error a failure raises; ``retry``: lost races are resent with new values."""

    def __init__(self, connection: Connection, puts: List[Dict[str, Any]], entries: List[Entry], *, purpose: str,
                 checks: Sequence[Dict[str, Any]] = (), deletes: Sequence[Dict[str, Any]] = (),
                 updates: Sequence[Dict[str, Any]] = (), token: Optional[str] = None, retry: bool = True,
                 extra: Optional[Dict[str, Any]] = None) -> None:
        self.connection, self.puts, self.entries, self.purpose = connection, puts, entries, purpose
        self.checks, self.deletes, self.updates = checks, deletes, updates
        self.token, self.retry, self.extra = token, retry, dict(extra or {})
        self.claims: List[Claim] = [entry.claim for entry in entries if entry.claim is not None]
        self.queue = False  # swaps wait their turn in their counter's queue (see _contention)
        self.ticket: Optional[int] = None  # the queue ticket the swap serves
        self.standing: Optional[str] = None  # the counter attribute of this process's standing ticket (lone saves)
        self.by_standing = False  # the swap serves the standing ticket, whose number is not known yet
        self.requeue = False  # the swap takes a standing ticket for the process's next save
        self.grouped = False  # sent by its process's group commit: its only write on the counter in flight
        self.previous_end: Optional[float] = None  # with grouped: when (_budget.clock) its group's last write ended
        self.counter_items: Dict[ChainId, Dict[str, Any]] = {}  # the counter items refused swaps showed, by chain
        self.sent: Tuple[str, Dict[str, Any]] = ("", {})  # the request last built (an unknown outcome resends it)

    def chains(self) -> List[Tuple[ChainId, Claim, Claim]]:
        """Each chain of swap claims as (chain, head, last): its counter moves from head.expected to last.value."""
        found: Dict[ChainId, List[Claim]] = {}
        for claim in self.claims:
            if claim.kind == "swap":
                found.setdefault(claim.chain, []).append(claim)
        return [(chain, group[0], group[-1]) for chain, group in found.items()]

    def request(self) -> Tuple[str, Dict[str, Any]]:
        for entry in self.entries:
            if entry.claim is not None:
                attribute = entry.instance.get_attributes()[entry.claim.opts.attribute]
                value = getattr(entry.instance, entry.claim.opts.attribute)
                self.puts[entry.index][ITEM][attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
        chains = self.chains()
        self.queue = self.retry and len(chains) == 1
        claims = self.claims
        if self.purpose != "transaction" and len(self.puts) == 1 and not chains and (not claims or (
                claims[0].kind == "counter" and not claims[0].opts.sequence.cycle)):
            # the value the counter gave this writer alone tells its write apart (a cycling one's token instead)
            self.sent = PUT_ITEM, dict(self.puts[0])
            return self.sent
        items = [{kind: part} for kind, parts in (("ConditionCheck", self.checks), ("Delete", self.deletes),
                                                  ("Put", self.puts), ("Update", self.updates)) for part in parts]
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
        strategies.retake(self.claims, current)

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """A failure raises botocore's error, which :meth:`verdict` reads."""
        return _transport.send(self.connection, operation, kwargs, raw=True)

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
        if was_retried(exc) and self.sent[0] == PUT_ITEM and getattr(reasons[first_put], "raw_item", None) is not None:
            return APPLIED  # a resent put of a value only this writer claimed: ours, applied before its answer was lost
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
                if reason.raw_item is not None:  # raises SequenceMismatchError for other sequence options
                    self.counter_items[chain] = reason.raw_item
                    last.opts.counter.check_options(last.key, reason.raw_item, last.opts.sequence)
                current[chain] = _contention.item_value(reason.raw_item, last.opts.counter)
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
        """A failure no retry can mend: raise the error that names what failed."""
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
        try:  # the item may be another writer's: resent with its token, the transaction succeeds only if it is ours
            self.send(operation, kwargs)
        except BOTOCORE_EXCEPTIONS as again:
            if error_code(again) in ("TransactionCanceledException", REPLICATED_WRITE_CONFLICT):
                return self.verdict(again)
            raise self._unknown(entry, exc, again) from again
        return APPLIED

    def _unknown(self, entry: Entry, exc: Exception, check: Exception) -> WriteOutcomeUnknownError:
        return WriteOutcomeUnknownError(
            f"{describe(entry.instance)}: the write got no answer ({error_code(exc) or type(exc).__name__}), nor did "
            f"the check whether it landed ({error_code(check) or type(check).__name__}); it may be stored: read it "
            "before saving again, or the record may be stored twice", exc)

    def spent(self) -> str:
        """What an error adds when a counter value the unapplied write claimed is spent."""
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
                return ConditionFailedError(f"{describe(entry.instance)}: the condition passed to save() failed; "
                                            f"nothing was written{spent}", exc, cancellation_reasons=reasons)
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
                f"transaction cancelled: {what} since it was read (it has its own client_request_token, so it is "
                "not resent with other values); run the transaction again", exc, cancellation_reasons=reasons_of(exc))
        message = (f"{describe(claim.instance)}: {what} {attempts} times in a row in {elapsed:.2f} s; nothing was "
                   "written. Retry later, or raise Meta.autoinc_timeout (and Meta.autoinc_retries, if set)")
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
    """Several threads' lone gapless saves in one transaction: an item failing on its own is taken out into
    :attr:`failures`; a failure naming no item raises :class:`Split`."""

    def __init__(self, members: List[Write]) -> None:
        super().__init__(members[0].connection, [m.puts[0] for m in members],
                         [Entry(m.entries[0].instance, m.entries[0].claim, i) for i, m in enumerate(members)],
                         purpose="group")
        self.members = list(members)
        self.failures: Dict[int, AutoIncrementError] = {}  # by id() of the member write

    def retake(self, current: Dict[ChainId, Any]) -> None:
        """Members past the end bound are taken out."""
        n = 0
        try:
            strategies.retake(self.claims[:1], current)
            for n in range(1, len(self.claims)):
                claim, before = self.claims[n], self.claims[n - 1]
                claim.assign(claim.opts.sequence.following(claim.key, before.value))
        except SequenceExhaustedError as error:
            message, cause, last = str(error), error.cause, error.last  # each member its own copy
            self._drop(list(range(n, len(self.members))),
                       lambda i, member: SequenceExhaustedError(message, cause, last=last))
            if n == 0:
                raise

    def blocked(self, exc: Exception, reasons: List[Optional[CancellationReason]], blocking: List[int],
                current: Dict[ChainId, Any]) -> Any:
        if not blocking or any(i >= len(self.puts) for i in blocking):
            raise self.failure(exc, reasons, blocking)
        (chain, head, _), = self.chains()
        first_put = len(self.checks) + len(self.deletes)
        self._drop([i - first_put for i in blocking],
                   lambda i, member: member.failure(exc, [reasons[first_put + i]], [0]))
        if not self.members:
            raise self.failures[next(iter(self.failures))]
        return Resend({chain: current.get(chain, head.expected)})

    def _drop(self, indexes: List[int], error: Callable[[int, Write], AutoIncrementError]) -> None:
        """Take the members at ``indexes`` out, each with ``error(index, member)``; release their claims."""
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


def save(instance: Model, claim: Claim, put: Dict[str, Any], connection: Connection) -> Dict[str, Any]:
    """Write a new instance of ``Model.save()``: a lone gapless one through :func:`joined`, any other :func:`commit`."""
    write = Write(connection, [put], [Entry(instance, claim, 0)], purpose="save")
    if claim.kind == "swap" and claim.opts.attribute == type(instance)._hash_keyname:
        return joined(write)
    return commit(write)


def commit(write: Write) -> Dict[str, Any]:
    """Send ``write`` until applied, retrying lost races; commit its claims, or release them on failure. A contest
    starts before the first request only for a lone save (grouped) while this process holds a standing ticket."""
    exchange = _Commit(write)
    try:
        queue = _state.state.parts.get("queue")
        if write.grouped and queue is not None and queue.standing:
            exchange.contest = _contention.Contest(write)
            queued = exchange.contest.start()
            if queued is not None:
                write.retake(queued)
        operation, kwargs = write.request()
        try:
            response = exchange.send(operation, kwargs)
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
    """A write as :func:`_transport.drive` sends it: a lost race is retried as its contest (made then) decides."""

    errors = BOTOCORE_EXCEPTIONS

    def __init__(self, write: Write) -> None:
        self.write = write
        self.contest: Optional[_contention.Contest] = None

    def request(self) -> Tuple[str, Dict[str, Any]]:
        return self.write.request()

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        if self.contest is None:
            return _transport.send(self.write.connection, operation, kwargs, raw=True)
        return _contention.timed(self.write, operation, kwargs)

    def failed(self, exc: Exception) -> Optional[Dict[str, Any]]:
        outcome = self.write.verdict(exc)
        if outcome is APPLIED:
            return {}
        if isinstance(outcome, Resend):
            self.write.retake(outcome)
            return None
        if self.contest is None:
            self.contest = _contention.Contest(self.write, lost=True)
        if outcome is PASSING:
            self.contest.passing(exc)
            return None
        self.write.retake(self.contest.lost(exc, outcome))
        return None


# -- group commit: threads of one process saving gapless items on one counter send them together

#: The most items (and bytes of items) one group commit sends: well inside TransactWriteItems' 100 items and 4 MB.
GROUP_LIMIT = 25
GROUP_BYTES = 2_000_000


class _Member:
    def __init__(self, write: Write) -> None:
        self.write = write
        self.claim = write.claims[0]  # a new one when a split group sends it alone
        self.taken = False  # a leader took it from the queue: it ends as that leader sends it
        self.finished = threading.Event()  # set when its write ended, whoever sent it
        self.response: Dict[str, Any] = {}
        self.error: Optional[BaseException] = None


class _Group:
    """The lone gapless saves of one counter and connection in this process (a place of the queue)."""

    def __init__(self) -> None:
        self.lead = threading.Lock()  # held by the thread sending the group's request
        self.guard = threading.Lock()  # guards the queue
        self.queue: List[_Member] = []
        self.ended: Optional[float] = None  # when its last write was applied (a race lost soon after keeps its place)


def joined(write: Write) -> Dict[str, Any]:
    """Commit ``write`` together with other threads' writes on its counter; an interrupt leaves each as it ended."""
    member, state = _Member(write), _state.state
    group: Optional[_Group] = None
    try:
        groups: Dict[Tuple[Any, ...], _Group] = state.parts.get("groups") or state.part("groups", dict)  # by place
        place = (member.claim.chain, id(write.connection))
        group = groups.get(place) or groups.setdefault(place, _Group())
        with group.guard:
            group.queue.append(member)
        while not member.finished.is_set():
            with group.lead:
                if not member.finished.is_set():
                    _lead(group, member)
    except BaseException:
        _leave(group, member)
        raise
    if member.error is not None:
        raise member.error
    return member.response


def _leave(group: Optional[_Group], member: _Member) -> None:
    """An interrupted member leaves the queue and gives its claim back, or waits for the leader that took it."""
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
    """Send the queue's writes (the leader's first) as one transaction; each member taken ends with its response
    or its own error, whatever ends the request."""
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
                head = sent.claims[0]  # the claims, taken one by one, one chain from the value remembered
                sent.retake({head.chain: strategies.remembered(head)})  # those past the end bound are taken out
                response = commit(sent)
                group.ended = _budget.clock.monotonic()
        except Split:  # a failure that names no item: each item on its own
            for m in batch:
                if id(m.write) not in sent.failures:
                    try:  # with a new claim
                        entry = m.write.entries[0]
                        m.claim = strategies.take(entry.instance, m.claim.opts)
                        single = Write(m.write.connection, m.write.puts, [Entry(entry.instance, m.claim, 0)],
                                       purpose=m.write.purpose)
                        single.grouped = True
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
                continue
            if m is not leader:  # interrupted: nothing of it counts as written, so its ID is given back
                m.error = ItemWriteError(
                    f"{describe(m.write.entries[0].instance)}: the thread sending it with other threads' saves was "
                    f"interrupted ({type(error).__name__}); it was not written, its ID is back to None. Save it again")
            m.claim.release()
        if not isinstance(error, Exception):
            raise  # KeyboardInterrupt and the like stop the leader's thread too
    finally:
        with group.guard:
            for m in batch:
                if m in group.queue:
                    group.queue.remove(m)
        for m in batch:
            m.finished.set()


def stored_form(value: Any) -> Any:
    """An attribute value in a form equal for every way of writing what DynamoDB stores the same."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (kind, inner), = value.items()
    if kind in ("N", "B"):
        return kind, (number if kind == "N" else _binary)(inner)
    if kind in ("NS", "SS", "BS"):
        return kind, frozenset(number(v) if kind == "NS" else _binary(v) if kind == "BS" else v for v in inner)
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
    """How errors name an instance: ``Member with pk='User#Alex', num=4``."""
    model = type(instance)
    keys = [name for name in (model._hash_keyname, model._range_keyname) if name]
    attribute = options_for(model).attribute if hasattr(model, "autoinc_options") else keys[0]
    names = keys if attribute in keys else [*keys, attribute]
    return f"{model.__name__} with " + ", ".join(f"{name}={getattr(instance, name)!r}" for name in names)


def exists_advice(entry: Entry) -> str:
    """Why a new item's key can already be in use, and what to do."""
    claim = entry.claim
    exists = "an item with this key already exists and was not overwritten"
    if claim is None or claim.opts.attribute != type(entry.instance)._hash_keyname:
        return f"{exists}; choose a key that is not in use, or update the existing item instead"
    if claim.opts.sequence.cycle:
        return (f"{exists}: sequence {claim.key!r} cycles (Meta.autoinc_cycle) and has come round to a stored "
                "item; delete old items before the sequence reaches them again, or widen its bounds")
    return (f"{exists}; the counter {claim.key!r} is behind the stored IDs: raise it to the largest with "
            f"{claim.opts.counter._reached_as()}.setval({claim.key!r}, N)")


def _failed_with(exc: Exception, instance: Optional[Model]) -> str:
    code = error_code(exc)
    if code == "ResourceNotFoundException" and instance is not None:
        model = type(instance)
        return (f"table {model.Meta.table_name!r} (or counter table {options_for(model).counter.Meta.table_name!r}) "
                f"does not exist; create it with {model.__name__}.create_table(...)")
    message = next((r["Error"].get("Message") for r in error_responses(exc) if r.get("Error")), None)
    return f"the write failed with {code or type(exc).__name__}: {message or exc}"


def swap_kwargs(counter: Type[NextId], key: str, expected: Optional[int], value: int, *, queue: bool = False,
                ticket: Optional[int] = None, standing: Optional[str] = None, by_standing: bool = False,
                requeue: bool = False, sequence: Optional[SequenceOptions] = None) -> Dict[str, Any]:
    """The ``Update`` moving counter ``key`` from ``expected`` to ``value``, filled in a cached template."""
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
    """The swap, built by PynamoDB (``expected=None``: no value yet); ``queue``, ``ticket``, ``by_standing``: it
    waits its turn in the queue; ``sequence``: the counter must record those options (or none)."""
    actions, condition = counter._swap(expected, value, sequence)
    if queue or ticket is not None or by_standing:
        more, also = _contention.swap_terms(counter, ticket, standing, by_standing, requeue)
        actions, condition = actions + more, condition & also
    return counter._update_kwargs(key, actions, condition)


_TEMPLATES: weakref.WeakKeyDictionary[type, Dict[Any, _SwapTemplate]] = weakref.WeakKeyDictionary()
