"""The write engine: every request storing items with new IDs is one :class:`Write`, sent by :func:`commit`, the one
driver: it sends, sleeps and spends the budget, and does what the judge (:mod:`pynamodb_autoinc._judge`) says each
answer means. The threads' group commit sits above it (:mod:`pynamodb_autoinc._group`). See docs/architecture.md."""

from __future__ import annotations

import functools
import logging
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Type, TypeVar, cast

from pynamodb.connection import Connection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import ITEM, PUT_ITEM, TRANSACT_WRITE_ITEMS
from pynamodb.exceptions import CancellationReason
from pynamodb.models import Model

from . import _budget, _contention, _judge, _state, _transport, strategies
from ._options import options_for
from .counter import STAND_IN, TEMPLATE_LIMIT, NextId, SwapTemplate
from .exceptions import (
    CONDITION_FAILED,
    TRANSIENT_REASONS,
    AutoIncrementError,
    ConditionFailedError,
    ContentionError,
    ItemExistsError,
    ItemWriteError,
    TransactionCanceledError,
    WriteOutcomeUnknownError,
    error_code,
    error_responses,
    reasons_of,
    returned_item,
)
from .sequence import SequenceOptions
from .signals import notify
from .strategies import UNREAD, ChainId, Claim

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: A write that takes longer than this (seconds) to commit is logged as a WARNING.
SLOW_SAVE = 1.0

#: The most items one TransactWriteItems may hold.
TRANSACTION_LIMIT = 100

#: Verdicts: applied (though its answer said otherwise or never came); nothing applied nor learned (throttled,
#: a concurrent transaction): the same request may pass if sent again as it is; and may or may not be applied.
APPLIED: Any = object()
PASSING: Any = object()
UNKNOWN: Any = object()

#: How many times a write whose outcome is unknown is sent again (unchanged, with its token) to find out.
PROBES = 3


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
        self.record: List[str] = []  # what each try of this write's own requests came to (_judge's answer kinds)
        self.refusal: Tuple[List[Optional[CancellationReason]], List[int]] = ([], [])  # the last busy answer's

    @property
    def maybe_applied(self) -> bool:
        """Whether a try of this write may have applied, as its record shows (it is then resent unchanged)."""
        return bool(self.record) and _judge.in_doubt(
            self.record, _judge.TRANSACT if self.sent[0] == TRANSACT_WRITE_ITEMS else _judge.PUT)

    def chains(self) -> List[Tuple[ChainId, Claim, Claim]]:
        """Each chain of swap claims as (chain, head, last): its counter moves from head.expected to last.value."""
        found: Dict[ChainId, List[Claim]] = {}
        for claim in self.claims:
            if claim.kind == "swap":
                found.setdefault(claim.chain, []).append(claim)
        return [(chain, group[0], group[-1]) for chain, group in found.items()]

    def request(self) -> Tuple[str, Dict[str, Any]]:
        if self.maybe_applied:
            return self.sent  # the same values and token: DynamoDB tells an applied transaction by its token
        for entry in self.entries:
            if entry.claim is not None:
                attribute = entry.instance.get_attributes()[entry.claim.opts.attribute]
                value = getattr(entry.instance, entry.claim.opts.attribute)
                self.puts[entry.index][ITEM][attribute.attr_name] = {attribute.attr_type: attribute.serialize(value)}
        chains = self.chains()
        self.queue = self.retry and len(chains) == 1
        if self.purpose != "transaction" and len(self.puts) == 1 and not chains:
            # one PutItem (fast, block, the query strategy): the value the counter gave this writer alone tells its
            # write apart; where another may hold it (a cycle, a partition's next value), the judge cannot tell
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

    def plan(self) -> _judge.Plan:
        """What this write claimed, as the judge reads it (for the request last built)."""
        operation = self.sent[0]
        if operation == PUT_ITEM:
            entry = self.entries[0]
            model = type(entry.instance)
            attributes = model.get_attributes()
            claimed = attributes[entry.claim.opts.attribute].attr_name if entry.claim is not None else None
            keys = tuple(attributes[n].attr_name for n in (model._hash_keyname, model._range_keyname) if n)
            kind = entry.claim.kind if entry.claim is not None else None
            unique = kind == "counter" and not entry.claim.opts.sequence.cycle  # type: ignore[union-attr]
            return _judge.Plan(_judge.PUT, item=self.puts[0][ITEM], claimed=claimed, keys=keys,
                               maybe_applied=self.maybe_applied, unique=unique or kind is None,
                               contested=kind == "query" and self.retry)
        new = {e.index: e.claim for e in self.entries if e.claim is not None}
        chains = [chain for chain, _, _ in self.chains()]
        roles = [_judge.OTHER] * (len(self.checks) + len(self.deletes))
        links: List[Optional[int]] = [None] * len(roles)
        query = [False] * len(roles)
        for index in range(len(self.puts)):
            claim = new.get(index)
            roles.append(_judge.PUT_ITEM if claim is None else _judge.NEW)
            links.append(chains.index(claim.chain) if claim is not None and claim.chain in chains else None)
            query.append(claim is not None and claim.kind == "query")
        extra = len(self.updates) + len(chains)
        roles += [_judge.OTHER] * len(self.updates) + [_judge.SWAP] * len(chains)
        return _judge.Plan(_judge.TRANSACT, tuple(roles), tuple(links + [None] * extra),
                           tuple(query + [False] * extra), maybe_applied=self.maybe_applied)

    def verdict(self, exc: Exception) -> Any:
        """What a failed request means, as the judge says: APPLIED, UNKNOWN (probe), PASSING (send it again as it
        is), a lost race ({chain: counter value}), or it raises the error naming what failed."""
        answer = _transport.read_answer(exc)
        verdict = _judge.judge(self.plan(), answer)
        self.record.extend(answer.tries)
        if verdict.outcome == _judge.NOT_APPLIED:
            self.record.append(_judge.SETTLED)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s answered %s: %s (%s)", self.sent[0], answer.code or answer.kind, verdict.outcome,
                      verdict.why)
        if verdict.outcome == _judge.APPLIED:
            return APPLIED
        if verdict.outcome == _judge.UNKNOWN:
            return UNKNOWN
        if verdict.outcome == _judge.UNDECIDABLE:
            raise self.unknown(exc)
        reasons = self._reasons(exc, answer)
        if verdict.outcome == _judge.NOT_APPLIED:
            return self.blocked(exc, reasons, list(verdict.positions), self._current(reasons))
        if verdict.outcome == _judge.RETAKE or (answer.kind == _judge.CANCELLED and self.retry and self.claims):
            current = self._current(reasons)  # a lost race (or a busy counter): take values after the counter's
            return {chain: value for chain, value in current.items() if value is not UNREAD}
        self.refusal = (reasons, list(verdict.positions))  # named in the error if resending never passes
        return PASSING

    def _reasons(self, exc: Exception, answer: _judge.Answer) -> List[Optional[CancellationReason]]:
        """The reasons of a failed request, one per item as sent (a failed put's condition as its only one)."""
        if answer.kind == _judge.CONDITION_FAILED:
            return [CancellationReason(code=CONDITION_FAILED, raw_item=returned_item(exc))]
        if answer.kind != _judge.CANCELLED:
            return []
        reasons = reasons_of(exc)
        return reasons + [None] * (self.first_swap() + len(self.chains()) - len(reasons))

    def first_swap(self) -> int:
        return len(self.checks) + len(self.deletes) + len(self.puts) + len(self.updates)

    def _current(self, reasons: List[Optional[CancellationReason]]) -> Dict[ChainId, Any]:
        """The counter values the refused swaps showed, by chain (unknown for a swap that was only busy)."""
        current: Dict[ChainId, Any] = {}
        first_swap = self.first_swap()
        for n, (chain, _, last) in enumerate(self.chains()):
            reason = reasons[first_swap + n] if first_swap + n < len(reasons) else None
            if reason is None:
                continue
            if reason.code in TRANSIENT_REASONS or reason.raw_item is None:
                current[chain] = UNREAD
                continue
            self.counter_items[chain] = reason.raw_item  # raises SequenceMismatchError for other sequence options
            last.opts.counter.check_options(last.key, reason.raw_item, last.opts.sequence)
            current[chain] = _contention.item_value(reason.raw_item, last.opts.counter)
        return current

    def blocked(self, exc: Exception, reasons: List[Optional[CancellationReason]], blocking: List[int],
                current: Dict[ChainId, Any]) -> Any:
        """A failure no retry can mend: raise the error that names what failed."""
        raise self.failure(exc, reasons, blocking)

    def each(self, error: Callable[[Write], AutoIncrementError]) -> AutoIncrementError:
        """The error ``error`` makes for this write (a group: one for each member's own write)."""
        return error(self)

    def unknown(self, exc: BaseException) -> AutoIncrementError:
        """The error when even the probe could not tell whether this write is stored: it names each instance and
        the ID it keeps."""
        named = [describe(e.instance) for e in self.entries] or ["the transaction"]
        what = named[0] if len(named) == 1 else f"{len(named)} items ({'; '.join(named)})"
        code = error_code(exc) or type(exc).__name__
        return WriteOutcomeUnknownError(
            f"{what}: the write may or may not be stored ({code}, and sending it again could not tell); the "
            "instance keeps its ID: read the item before saving again, or the record may be stored twice",
            exc if isinstance(exc, Exception) else None)

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
        """The error once lost races used up the retries or the time (or may not be retried); a write claiming no
        value (explicit items alone) names the items that were busy."""
        if not self.claims:
            return self.failure(exc, *self.refusal)
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


def commit(write: Write) -> Dict[str, Any]:
    """Send ``write`` until applied, retrying lost races; commit its claims, or release them on failure. A contest
    starts before the first request only for a lone save (grouped) while this process holds a standing ticket.
    Every exit keeps what the write's tries showed: after a try that may have applied, the claims stay, an error
    becomes WriteOutcomeUnknownError and an interrupt is marked so (``autoinc_in_doubt``)."""
    exchange = _Commit(write)
    try:
        settle_doubts(write)
        queue = _state.state.parts.get("queue")
        if write.grouped and queue is not None and queue.standing:
            exchange.contest = _contention.Contest(write)
            queued = carry_out(write, exchange.contest.start())
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
        error = _ended(write, exchange, exc)
        if error is not None:
            raise error from exc
        raise
    return response


def _ended(write: Write, exchange: _Commit, exc: BaseException) -> Optional[AutoIncrementError]:
    """A write left by ``exc``: release its claims unless its record is in doubt (then keep them, remember the
    doubt, and mark an interrupt so); the error to raise instead of ``exc``, if any: WriteOutcomeUnknownError for
    any other error after a try that may have applied (the budget ran out while probing, ...)."""
    doubt = write.maybe_applied or isinstance(exc, WriteOutcomeUnknownError)
    if not doubt:
        for claim in write.claims:
            claim.release()
    if exchange.contest is not None:
        carry_out(write, exchange.contest.give_back())
    if doubt:  # an interrupt in flight too: the next write on its counter settles it before taking a value
        keep_doubt(write)
    if not isinstance(exc, Exception):
        exc.autoinc_in_doubt = doubt  # type: ignore[attr-defined]  # read by the callers' own exits
        return None
    if doubt and not isinstance(exc, WriteOutcomeUnknownError):
        return write.unknown(exc)
    return None


#: How long DynamoDB keeps a transaction's ClientRequestToken (10 minutes), less a margin: within it, a resend of
#: a transaction in doubt answers success if it applied.
TOKEN_LIFE = 540.0


def _sources(write: Write) -> List[Tuple[ChainId, Claim]]:
    """Where ``write``'s values come from: each counter its swaps move (the chain's last claim), and each
    partition the query strategy numbers (its claims)."""
    return [(chain, last) for chain, _, last in write.chains()] + [(c.chain, c) for c in write.claims
                                                                    if c.kind == "query"]


def keep_doubt(write: Write) -> None:
    """Remember a write whose outcome stayed unknown, by each counter it swaps and each partition it numbers: the
    next write there settles it first (:func:`settle_doubts`), so that its values are not handed to another save
    of this process meanwhile."""
    sources = _sources(write)
    if not sources or (write.sent[0] != TRANSACT_WRITE_ITEMS and not any(c.kind == "query" for _, c in sources)):
        return
    state = _state.state
    doubts: Dict[ChainId, Tuple[Write, float]] = state.parts.get("doubts") or state.part("doubts", dict)
    for chain, _ in sources:
        doubts[chain] = (write, _budget.clock.monotonic())


def settle_doubts(write: Write) -> None:
    """Before ``write`` takes a value where a write in doubt took one, find out what became of that one: resend
    it as it was (a transaction with its token). Applied: its claims are committed and ``write`` takes the values
    after them. Not applied: its instances' IDs go back to None. Its put's key now holds an item it cannot tell
    from its own (the query strategy): that value is taken either way, and ``write`` takes another. Past a token's
    life, the counter tells: a transaction does not apply minutes late, so a counter still at the value it
    expected means it did not. Still unknown: ``write`` is not sent (ItemWriteError), as it would take a value
    another instance holds. A partition's value is settled only when ``write`` claims that very value."""
    doubts: Optional[Dict[ChainId, Tuple[Write, float]]] = _state.state.parts.get("doubts")
    if not doubts:
        return
    for chain, claim in _sources(write):
        found = doubts.get(chain)
        if found is None:
            continue
        old, _ = found
        if claim.kind == "query" and all(c.value != claim.value for c in old.claims if c.chain == chain):
            continue
        outcome = settle_kept(old)
        if outcome == _judge.APPLIED:
            write.retake({c: s.value for c, _, s in old.chains() if c in {ch for ch, _, _ in write.chains()}})
        elif outcome == _judge.UNKNOWN:
            held = describe(old.entries[0].instance)
            why = (f"{claim.key!r} has a write whose outcome is still unknown ({held}), and this save would take "
                   "its ID; nothing was written. Save again later")
            raise write.each(functools.partial(_refused_in_doubt, why))


def settle_kept(old: Write) -> Optional[str]:
    """Find out what became of ``old``, a write this process keeps in doubt (:func:`keep_doubt`): resent as it
    was. Applied: its claims are committed; not applied: released (its instances' IDs back to None); still
    unknown: kept in doubt. The outcome, or None when it is no longer kept (settled meanwhile). An interrupt
    leaves the doubt as it was."""
    doubts: Optional[Dict[ChainId, Tuple[Write, float]]] = _state.state.parts.get("doubts")
    since = next((at for kept, at in (doubts or {}).values() if kept is old), None)
    if doubts is None or since is None:
        return None
    outcome = _settle(old, _budget.clock.monotonic() - since)
    for chain, _ in _sources(old):
        if doubts.get(chain, (None,))[0] is old:
            doubts.pop(chain, None)
    if outcome == _judge.APPLIED:
        strategies.commit(old.claims)
    elif outcome == _judge.NOT_APPLIED:
        for taken in old.claims:
            taken.release()
    elif outcome == _judge.UNKNOWN:
        keep_doubt(old)
    return outcome


def _refused_in_doubt(why: str, one: Write) -> AutoIncrementError:
    return ItemWriteError(f"{describe(one.entries[0].instance)}: {why}")


def _settle(old: Write, age: float) -> str:
    """Whether the write in doubt ``old`` is stored: applied, not applied, undecidable (its put's key holds an
    item it cannot tell from its own: taken either way), or unknown (one request)."""
    try:
        if age < TOKEN_LIFE or old.sent[0] != TRANSACT_WRITE_ITEMS:
            _transport.send(old.connection, *old.sent, raw=True)
            return _judge.APPLIED
        (_, head, _), = old.chains()[:1]
        stored = head.opts.counter.currval(head.key)
        return _judge.NOT_APPLIED if stored == head.expected else _judge.UNKNOWN
    except BOTOCORE_EXCEPTIONS as exc:
        answer = _transport.read_answer(exc)
        if answer.kind == _judge.CONDITION_FAILED:  # a put: the item under its key is another's, or cannot tell
            verdict = _judge.judge(old.plan(), answer)
            return _judge.NOT_APPLIED if verdict.outcome == _judge.NOT_APPLIED else _judge.UNDECIDABLE
        return _judge.NOT_APPLIED if answer.kind == _judge.CANCELLED else _judge.UNKNOWN
    except (AutoIncrementError, ValueError):
        return _judge.UNKNOWN


class _Commit(_transport.Exchange[Dict[str, Any]]):
    """A write as :func:`_transport.drive` sends it: a lost race is retried as its contest (made then) decides."""

    errors = BOTOCORE_EXCEPTIONS

    def __init__(self, write: Write) -> None:
        self.write = write
        self.contest: Optional[_contention.Contest] = None
        self.probes = 0

    def request(self) -> Tuple[str, Dict[str, Any]]:
        return self.write.request()

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """Send the write's own request; an interrupt is entered in the write's record (a failure is, when judged)."""
        try:
            if self.contest is None:
                return _transport.send(self.write.connection, operation, kwargs, raw=True)
            return _contention.timed(self.write, operation, kwargs)
        except BaseException as stop:
            if not isinstance(stop, Exception):
                self.write.record.extend(_transport.read_answer(stop).tries)
            raise

    def failed(self, exc: Exception) -> Optional[Dict[str, Any]]:
        write = self.write
        outcome = write.verdict(exc)
        if outcome is APPLIED:
            return {}
        if outcome is UNKNOWN:  # probe: the same request again; its answer tells, or the probes run out
            self.probes += 1
            if self.probes > PROBES:
                raise write.unknown(exc)
            _budget.clock.sleep(_budget.backoff_delay(0.02, self.probes))
            return None
        if isinstance(outcome, Resend):
            write.retake(outcome)
            return None
        if self.contest is None:
            self.contest = _contention.Contest(write, lost=True)
        if outcome is PASSING or write.maybe_applied:
            carry_out(write, self.contest.passing(exc))
            return None
        write.retake(carry_out(write, self.contest.lost(exc, outcome)))
        return None


def carry_out(write: Write, steps: _contention.Steps[_T]) -> _T:
    """The driver of the queue's steps: it sleeps on the library's clock, sends the write's requests and the
    library's signals, and hands each answer (or failure) back to the steps, whose result is its own."""
    answer: Any = None
    failure: Optional[Exception] = None
    while True:
        try:
            action = steps.send(answer) if failure is None else steps.throw(failure)
        except StopIteration as done:
            return cast(_T, done.value)
        answer, failure = None, None
        if isinstance(action, _contention.Sleep):
            _budget.clock.sleep(action.seconds)
        elif isinstance(action, _contention.Signal):
            notify(action.signal, action.model, **action.details)
        else:
            try:
                answer = (_contention.timed(write, action.operation, action.kwargs) if action.timed
                          else write.send(action.operation, action.kwargs))
            except BOTOCORE_EXCEPTIONS as exc:
                failure = exc


def explicit_failure(instance: Model, exc: Exception) -> AutoIncrementError:
    """The error for PynamoDB's failed save of an instance whose ID was given (an ordinary put): what the judge
    makes of its answer, named as this library's errors name a write."""
    answer = _transport.read_answer(exc)
    verdict = _judge.judge(_judge.Plan(_judge.PUT), answer)
    what = describe(instance)
    if answer.kind == _judge.CONDITION_FAILED and not answer.earlier_may_have_applied:
        return ConditionFailedError(f"{what}: the condition passed to save() failed; nothing was written", exc)
    if answer.kind == _judge.CONDITION_FAILED:  # botocore's resend of a try that may have applied (its version)
        return WriteOutcomeUnknownError(f"{what}: a try of the save may have applied (its answer was lost) and its "
                                        "resend failed the condition (a version, the one passed to save()), which "
                                        "the first try may have changed; read the item before saving again", exc)
    if verdict.outcome in (_judge.UNKNOWN, _judge.UNDECIDABLE):
        return WriteOutcomeUnknownError(f"{what}: the save may or may not be stored ({answer.code or answer.kind}); "
                                        "read the item before saving again", exc)
    return ItemWriteError(f"{what}: {_failed_with(exc, instance)}; nothing was written", exc)


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
    state = _state.state  # by class (a subclass has its own table), forgotten with the process's other state
    by_counter: weakref.WeakKeyDictionary[type, Dict[Any, SwapTemplate]] = (
        state.parts.get("swap templates") or state.part("swap templates", weakref.WeakKeyDictionary))
    templates = by_counter.setdefault(counter, {})
    template = templates.get(shape)
    if template is None:
        if len(templates) >= TEMPLATE_LIMIT:
            templates.clear()  # many keys (a counter per period): keep the memory bounded
        template = templates[shape] = SwapTemplate(build_swap_kwargs(
            counter, key, None if expected is None else STAND_IN[0], STAND_IN[1], queue=queue,
            ticket=None if ticket is None else STAND_IN[2], standing=standing, by_standing=by_standing,
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
