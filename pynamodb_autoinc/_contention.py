"""Who goes next on a busy counter, and how long a save keeps trying: the queue, which runs only after a
write lost a race (docs/architecture.md, "The queue", tells how it works and which of its rules paid)."""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Generator,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
    Type,
    TypeVar,
    Union,
)

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import UPDATE_ITEM
from pynamodb.expressions.operand import Path

from . import _budget, _state
from .exceptions import TRANSIENT_REASONS, AutoIncrementError, ContentionError, reasons_of
from .sequence import integer
from .signals import contention_failed, race_lost
from .strategies import UNREAD, ChainId, Claim

log = logging.getLogger(__name__)
_T = TypeVar("_T")

if TYPE_CHECKING:
    from .counter import NextId


class Write(Protocol):
    """What the queue reads and sets on the engine's write (``_engine.Write``; named here so that the queue,
    a layer below the engine, does not import it)."""

    connection: Any
    claims: List[Claim]
    retry: bool
    grouped: bool
    previous_end: Optional[float]
    queue: bool
    ticket: Optional[int]
    standing: Optional[str]
    by_standing: bool
    requeue: bool
    counter_items: Dict[ChainId, Dict[str, Any]]

    def chains(self) -> List[Tuple[ChainId, Claim, Claim]]: ...

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]: ...

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError: ...

#: How long a write claiming no value (a transaction of explicit items) resends a request that met a busy item.
DEFAULT_BUDGET = _budget.Budget(attempts=5, seconds=2.0, backoff=0.02)

#: Seconds a queued ticket may keep the queue waiting before the writer behind passes over it.
TURN = 0.25

#: Seconds a standing ticket may keep the queue waiting (or four round trips, if longer, up to
#: :data:`TURN`) before the writer behind passes over it.
STANDING_TURN = 0.05

#: A lone save beginning within this many seconds of the process's previous one on the same counter
#: keeps the process's place in a busy queue (takes a standing ticket).
HOT = 0.05

#: What the counter attribute holding a place's standing ticket is called, before the place's id.
STANDING_PREFIX = "NextStanding_"

#: A writer whose requests take longer than this (seconds, on average) is slow: its ticket records its pace,
#: and the writers behind it wait :func:`patience` for it, longer than :data:`TURN`.
SLOW = 0.1

#: The longest a ticket holder that declared itself slow may keep the queue waiting (seconds).
SLOW_TURN_LIMIT = 2.0


class _Standing(NamedTuple):
    """A standing ticket this process holds on a counter, taken by the swap of its last save: the counter
    ``value`` that swap stored, how many other writers were queued then (``behind``: they go first), and when
    (``at``, monotonic) that save ended."""

    value: int
    behind: int
    at: float


# -- a write's place in the counter's queue, as a state machine (h11-style: every move in one table)

#: Holds no ticket: it sends its swap as soon as it has values (first, or after being passed over).
UNQUEUED = "unqueued"
#: Comes back on its process's standing ticket, whose number it does not know yet (only a lone gapless save).
STANDING = "standing"
#: Holds a ticket (``write.ticket``): it waits for its turn, then sends its swap for that ticket.
QUEUED = "queued"

#: (place, event) -> place: the only moves a write's place makes. An event not listed for a place is a bug, and
#: raises naming both.
TRANSITIONS: Dict[Tuple[str, str], str] = {
    (UNQUEUED, "come back"): STANDING,  # a lone save of a process holding a standing ticket, before its first send
    (UNQUEUED, "ticket"): QUEUED,  # took a ticket after a lost race
    (UNQUEUED, "counter gone"): UNQUEUED,
    (STANDING, "served as standing"): QUEUED,  # the refusal showed its standing ticket's number: the next is its
    (STANDING, "passed over"): UNQUEUED,  # its standing ticket was passed over (not in the counter item)
    (STANDING, "ticket"): QUEUED,
    (STANDING, "counter gone"): UNQUEUED,
    (STANDING, "given back"): UNQUEUED,
    (QUEUED, "ticket"): QUEUED,  # its ticket's own answer did not show the queue: a new one
    (QUEUED, "passed over"): UNQUEUED,
    (QUEUED, "counter gone"): UNQUEUED,  # the counter item was deleted (reset), and its queue with it
    (QUEUED, "given back"): UNQUEUED,
}


def place_of(write: Write) -> str:
    """Where ``write`` stands in its counter's queue."""
    if write.ticket is not None:
        return QUEUED
    return STANDING if write.by_standing else UNQUEUED


def transition(place: str, event: str) -> str:
    """The place ``event`` moves a write at ``place`` to (pure: it reads the table only)."""
    try:
        return TRANSITIONS[place, event]
    except KeyError:
        raise AssertionError(f"the queue has no move {event!r} from {place!r}") from None


def move(write: Write, event: str, ticket: Optional[int] = None) -> None:
    """Move ``write``'s place by ``event`` (to :data:`QUEUED` with ``ticket``)."""
    place = transition(place_of(write), event)
    write.by_standing = place == STANDING
    write.ticket = ticket if place == QUEUED else None
    if place == QUEUED and ticket is None:
        raise AssertionError(f"the queue's move {event!r} to {QUEUED!r} needs the ticket")


class _Process:
    """This process's measure of one round trip and of its requests' pace, and the standing tickets its lone
    saves hold."""

    def __init__(self) -> None:
        self.round_trip = 0.01  # of a transaction (seconds)
        self.pace = 0.0  # the average request of a queued save (seconds)
        # by place (counter, connection: each has its own lone save): its standing ticket's attribute, and the ticket
        self.standing_names: Dict[Tuple[ChainId, int], str] = {}
        self.standing: Dict[Tuple[ChainId, int], _Standing] = {}

    def standing_name(self, place: Tuple[ChainId, int]) -> str:
        """The counter attribute holding the standing ticket of ``place`` (made up on first use)."""
        return self.standing_names.setdefault(place, STANDING_PREFIX + uuid.uuid4().hex[:12])

    def slow(self) -> bool:
        """Whether this process's requests are slow enough that the queue must wait longer for its turns."""
        return self.pace > SLOW


def _queue() -> _Process:
    """This process's queue state (a part of :mod:`pynamodb_autoinc._state`)."""
    state = _state.state
    return state.parts.get("queue") or state.part("queue", _Process)


def timed(write: Write, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Send a request of ``write``, which lost a race (an uncontested write is not timed: the queue learns
    round trips from the writes it serves); a transaction's duration, answered or not, counts as a round trip,
    and every request of a queued save counts towards the process's pace."""
    began = _budget.clock.monotonic()
    try:
        return write.send(operation, kwargs)
    finally:
        seconds, queue = _budget.clock.monotonic() - began, _queue()
        if operation == "TransactWriteItems":
            queue.round_trip = 0.8 * queue.round_trip + 0.2 * min(seconds, 1.0)
        if write.queue:
            queue.pace = 0.5 * queue.pace + 0.5 * min(seconds, SLOW_TURN_LIMIT)


def patience(item: Optional[Dict[str, Any]], owner: Optional[str]) -> float:
    """How long the ticket next in the queue ``item`` shows may keep it waiting before the writer behind
    passes over it: :data:`TURN`; a standing ticket (recorded in ``owner``) less; a ticket whose holder
    declared itself slow (see :data:`SLOW`) one turn plus four of its requests, up to
    :data:`SLOW_TURN_LIMIT`, so that a slow writer alive is served and a dead one costs one such turn."""
    pace = _number(item, pace_name(owner)) if owner else None
    if pace is not None:
        return min(TURN + 4 * pace / 1000, SLOW_TURN_LIMIT)
    if owner is not None:
        return min(max(STANDING_TURN, 4 * _queue().round_trip), TURN)
    return TURN


class Sleep(NamedTuple):
    """A step of the queue: wait ``seconds`` on the library's clock."""

    seconds: float


class Send(NamedTuple):
    """A step of the queue: send this request of the write; its answer (``Attributes`` and all) comes back to the
    step. ``timed``: it counts towards the process's round trip and pace (:func:`timed`). A failure is thrown into
    the step, which may catch it."""

    operation: str
    kwargs: Dict[str, Any]
    timed: bool = False


class Signal(NamedTuple):
    """A step of the queue: send the library's ``signal`` for ``model`` with ``details``."""

    signal: Any
    model: type
    details: Dict[str, Any]


#: What a :class:`Contest` hands the engine's driver to do: its answer to a Send is sent back into the steps.
Steps = Generator[Union[Sleep, Send, Signal], Any, _T]


class Contest:
    """One write's struggle for its counter: the races it lost, its time budget, its place in the queue (its
    ticket is ``write.ticket``). The engine makes one at the write's first lost race (``lost``), whose time its
    budget counts from, or before its first request when this process holds a standing ticket.

    It decides and does no I/O: each of its steps (:meth:`start`, :meth:`lost`, :meth:`passing`,
    :meth:`give_back`) is a generator of :class:`Sleep`, :class:`Send` and :class:`Signal` that the engine's driver
    carries out (``_engine.carry_out``), as tenacity's ``iter()`` hands its loop DoSleep and DoAttempt."""

    def __init__(self, write: Write, *, lost: bool = False) -> None:
        self.write = write
        self.began = _budget.clock.monotonic()
        self.losses = 0
        write.ticket = None
        self.waited: Optional[Tuple[int, float]] = None  # (ticket served, since when), while it does not move
        swaps = {c.chain for c in write.claims if c.kind == "swap"}
        # Only a write on one counter that the library may send again with new values queues.
        self.chain: Optional[ChainId] = next(iter(swaps)) if len(swaps) == 1 and write.retry else None
        write.queue = self.chain is not None
        self.behind = 0  # how many other writers were queued when the counter was last seen
        # a lone save (its group commit sends one at a time per place) may hold a standing ticket, and take one
        self.place: Optional[Tuple[ChainId, int]] = None
        self.hot = False
        if self.chain is not None and write.grouped:
            self.place = (self.chain, id(write.connection))
            write.standing = _queue().standing_name(self.place)
            # the save began about one round trip before its first loss
            began = self.began - _queue().round_trip if lost else self.began
            self.hot = write.previous_end is not None and began - write.previous_end < HOT

    def start(self) -> Steps[Optional[Dict[ChainId, Any]]]:
        """Before the first send: come back on this process's standing ticket, if it holds one (the values to
        claim from)."""
        held = _queue().standing.pop(self.place, None) if self.place is not None else None
        if held is None:
            return None
        return (yield from self._come_back(held))

    def _come_back(self, held: _Standing) -> Steps[Dict[ChainId, Any]]:
        """Sleep until about the standing ticket's turn; return the value the counter should hold by then."""
        assert self.chain is not None
        move(self.write, "come back")
        self.behind = held.behind
        self.write.requeue = self._keeps_place(held.behind)
        wait = self._until(held.behind) - (_budget.clock.monotonic() - held.at)
        if wait > 0:
            yield self._sleep(min(wait, TURN))
        return self._expect(held.value, held.behind)

    def done(self) -> None:
        """After the write was applied: remember the standing ticket its swap took."""
        if self.place is not None and self.write.requeue and (self.write.ticket is not None or self.write.by_standing):
            last = next(last for chain, _, last in self.write.chains() if chain == self.chain)
            _queue().standing[self.place] = _Standing(last.value, self.behind, _budget.clock.monotonic())

    def lost(self, exc: Exception, current: Dict[ChainId, Any]) -> Steps[Dict[ChainId, Any]]:
        """After a lost race: wait as the queue asks, and return the counter values to claim from (raises the
        write's contention error once the budget is spent)."""
        self.losses += 1
        yield from self.check(exc)
        claim = self.write.claims[0]
        elapsed = _budget.clock.monotonic() - self.began
        log.debug("%s lost race %d on counter %r after %.3f s; trying again", type(claim.instance).__name__,
                  self.losses, claim.key, elapsed)
        yield Signal(race_lost, type(claim.instance),
                     {"instance": claim.instance, "attempts": self.losses, "elapsed": elapsed})
        if self.chain is None:
            yield self._sleep(claim.opts.budget.wait(self.losses))
            return current
        item = self.write.counter_items.pop(self.chain, None)
        if item is None and not _conflict(exc):  # no counter item: deleted (reset), and its queue with it
            if place_of(self.write) != UNQUEUED:
                move(self.write, "counter gone")
            self.write.requeue = False
            self.waited = None
            return {self.chain: None}  # claim from a counter with no value
        if place_of(self.write) == STANDING:  # its ticket's number is in the counter item (not there: passed over)
            mine = _number(item, self.write.standing or "")
            if mine is None:
                move(self.write, "passed over")
            else:
                move(self.write, "served as standing", mine + 1)
        elif self.write.ticket is None and self.losses == 1 and item is not None and \
                _number(item, "NextTicket") == _number(item, "NextServed"):
            return current  # a first loss with nobody queued: the refusal showed the value, try it at once
        return (yield from (self._queue() if self.write.ticket is None else self._wait(item, exc)))

    def _queue(self) -> Steps[Dict[ChainId, Any]]:
        """Take a ticket (dropping the process's standing ticket, if any), and wait for its turn."""
        assert self.chain is not None
        head = self._head()
        pace = round(_queue().pace * 1000) if self.write.standing is not None and _queue().slow() else None
        try:
            answer = yield Send(UPDATE_ITEM, ticket_kwargs(head.opts.counter, head.key, self.write.standing, pace),
                                timed=True)
        except BOTOCORE_EXCEPTIONS:
            if place_of(self.write) == STANDING:  # it asked for a ticket: its standing one is dropped either way
                move(self.write, "given back")
            yield self._sleep(head.opts.budget.wait(self.losses))
            return {}
        item = answer.get("Attributes")
        ticket = _number(item, "NextTicket")
        if ticket is None:  # no ticket in the answer (cannot be): queue afresh at the next loss
            if place_of(self.write) != UNQUEUED:
                move(self.write, "given back")
            return {}
        move(self.write, "ticket", ticket)
        self.waited = None
        return (yield from self._wait(item, None))

    def _wait(self, item: Optional[Dict[str, Any]], exc: Optional[Exception]) -> Steps[Dict[ChainId, Any]]:
        """Sleep until about the ticket's turn; return the value the counter should hold by then."""
        assert self.chain is not None and self.write.ticket is not None
        head = self._head()
        served, value = _number(item, "NextServed"), item_value(item, head.opts.counter)
        if served is None or value is UNREAD:  # a refusal that did not show the queue: a new ticket's does
            # a ticket's own answer: once, not a ticket per ticket
            return (yield from self._queue()) if exc is not None else {}
        ahead = self.write.ticket - served - 1
        if ahead < 0:  # passed over: queue again
            move(self.write, "passed over")
            return (yield from self._queue())
        # those ahead of it now take standing tickets behind it before it is served, if they keep saving
        self.behind = max((_number(item, "NextTicket") or self.write.ticket) - served - 1, 0)
        self.write.requeue = self._keeps_place(self.behind)
        if ahead == 0:
            return {self.chain: value}
        now = _budget.clock.monotonic()
        owner = _standing_owner(item, served)
        if self.waited is None or self.waited[0] != served:
            self.waited = (served, now)
        elif now - self.waited[1] >= patience(item, owner):
            yield from self._skip(served, owner)
        # until the writers ahead are about done: an early swap is refused and shows the queue again
        yield self._sleep(min(max(self._until(ahead), min(_queue().round_trip, TURN) / 2), TURN))
        if exc is not None:
            yield from self.check(exc)
        # the value expected once the writers ahead have each stored one item
        return self._expect(value, ahead)

    def _until(self, writers: int) -> float:
        """How long to wait after seeing the counter before sending a swap that should go once ``writers``
        more have each stored an item: a round trip each, less half a round trip (the counter was seen half a
        round trip ago). Early rather than late: a swap sent too early costs one refused request, a counter
        left idle costs every waiter."""
        queue = _queue()
        return writers * min(queue.round_trip, TURN) - queue.round_trip / 2

    def _keeps_place(self, behind: int) -> bool:
        """Whether this save's swap takes a standing ticket: the process saves in a loop, others are queued
        behind it, and its requests are not slow (a slow writer's standing ticket would only be passed over;
        its ticket requests declare its pace instead)."""
        return self.hot and behind > 0 and not _queue().slow()

    def _skip(self, served: int, owner: Optional[str]) -> Steps[None]:
        """Pass over ticket ``served + 1``, which has kept the queue waiting a whole turn (a standing ticket,
        recorded in ``owner``: a shorter one)."""
        head = self._head()
        self.waited = None
        with contextlib.suppress(*BOTOCORE_EXCEPTIONS):  # it moved after all: the next answer shows the queue
            yield Send(UPDATE_ITEM, skip_kwargs(head.opts.counter, head.key, served, owner))

    def _expect(self, value: Optional[int], writers: int) -> Dict[ChainId, Any]:
        """The counter value to claim from once ``writers`` more have each stored one item after ``value``
        (None: no value yet); nothing if that lies outside the sequence."""
        assert self.chain is not None
        head = self._head()
        expected = head.opts.sequence.after(head.key, value, writers)
        return {} if expected is None else {self.chain: expected}

    def _head(self) -> Claim:
        return next(c for c in self.write.claims if c.chain == self.chain)

    def _sleep(self, seconds: float) -> Sleep:
        """The step waiting ``seconds``, said in the log."""
        claim = self.write.claims[0] if self.write.claims else None
        log.debug("%s waits %.4f s (races lost: %d, ticket: %s, counter %r)",
                  claim and type(claim.instance).__name__, seconds, self.losses, self.write.ticket, claim and claim.key)
        return Sleep(seconds)

    def passing(self, exc: Exception) -> Steps[None]:
        """After a failure that passes (throttled, or a conflict on an item; nothing applied), for a write that
        may not claim other values: wait the budget's backoff before it is sent again as it was (raises the
        write's contention error once the budget is spent)."""
        self.losses += 1
        yield from self.check(exc, same_values=True)
        budget = self.write.claims[0].opts.budget if self.write.claims else DEFAULT_BUDGET
        yield self._sleep(budget.wait(self.losses))

    def check(self, exc: Exception, *, same_values: bool = False) -> Steps[None]:
        """Raise the contention error if the retries or the time are used up (or the write may not be sent
        again with other values, unless ``same_values``)."""
        budget = self.write.claims[0].opts.budget if self.write.claims else DEFAULT_BUDGET
        if (self.write.retry or same_values) and not budget.spent(self.losses, self.began):
            return
        yield from self.give_back()
        elapsed = _budget.clock.monotonic() - self.began
        error = self.write.contention(exc, self.losses, elapsed)
        claim = self.write.claims[0] if self.write.claims else None
        if claim is not None and isinstance(error, ContentionError):
            log.warning("%s gave up after losing %d races in %.2f s on counter %r", type(claim.instance).__name__,
                        self.losses, elapsed, claim.key)
            yield Signal(contention_failed, type(claim.instance),
                         {"instance": claim.instance, "attempts": self.losses, "elapsed": elapsed})
        raise error from exc

    def give_back(self) -> Steps[None]:
        """Serve this write's ticket if it is next, so that the queue need not wait for it to be passed over."""
        if self.chain is None or place_of(self.write) == UNQUEUED:
            return
        ticket = self.write.ticket
        move(self.write, "given back")
        head = self._head()
        counter, standing = head.opts.counter, self.write.standing
        kwargs = (skip_kwargs(counter, head.key, ticket - 1, standing) if ticket is not None
                  else give_back_kwargs(counter, head.key, standing))  # type: ignore[arg-type]
        with contextlib.suppress(*BOTOCORE_EXCEPTIONS):  # not next yet: the writer behind passes over it later
            yield Send(UPDATE_ITEM, kwargs)


def _conflict(exc: Exception) -> bool:
    """Whether a write was refused for the moment (a concurrent write, throttling: no item), not by a condition."""
    reasons = [r for r in reasons_of(exc) if r is not None]
    return not reasons or any(r.code in TRANSIENT_REASONS for r in reasons)


def _standing_owner(item: Optional[Dict[str, Any]], served: int) -> Optional[str]:
    """The attribute of the standing ticket that is next in the queue ``item`` shows, if it is one."""
    return next((name for name in (item or {}) if name.startswith(STANDING_PREFIX)
                 and _number(item, name) == served), None)


def _number(item: Optional[Dict[str, Any]], name: str) -> Optional[int]:
    return integer((item or {}).get(name, {}).get("N"))


def item_value(item: Optional[Dict[str, Any]], counter: Any) -> Any:
    """The value a counter item shows: None (no value yet), an int, or unknown (no item, or no integer)."""
    if item is None:
        return UNREAD
    raw = item.get(counter.next_id.attr_name)
    if raw is None:
        return None
    value = integer(raw.get("N"))
    return UNREAD if value is None else value


# -- the queue's requests -------------------------------------------------------

def pace_name(standing: str) -> str:
    """The attribute beside a standing-ticket attribute (``NextStanding_<id>``) that records a slow writer's
    pace: ``NextPace_<id>``."""
    return "NextPace_" + standing.split("_", 1)[1]


def swap_terms(counter: Type[NextId], ticket: Optional[int], standing: Optional[str], by_standing: bool,
               requeue: bool) -> Tuple[List[Any], Any]:
    """The actions and the condition the queue adds to a gapless swap on ``counter``: without a ticket, it goes
    only while nobody is queued; with one (``ticket``, or with ``by_standing`` the standing ticket recorded in
    attribute ``standing``), only when the ticket is next, and it serves it; with ``standing`` too, it takes a
    standing ticket for the writer's next save (``requeue``) or drops the one it had."""
    served, tickets = counter.served, counter.ticket
    if ticket is None and not by_standing:
        return [], tickets.does_not_exist() | (tickets == served)
    if ticket is None:
        assert standing is not None
        condition, actions = served == Path(standing), [served.set(served + 1)]
    else:
        condition, actions = served == ticket - 1, [served.set(ticket)]
    if standing is not None:
        actions += [Path(standing).set(tickets), tickets.set(tickets + 1)] if requeue else [Path(standing).remove()]
        actions.append(Path(pace_name(standing)).remove())
    return actions, condition


def ticket_kwargs(counter: Type[NextId], key: str, standing: Optional[str] = None,
                  pace: Optional[int] = None) -> Dict[str, Any]:
    """The UpdateItem that takes the next ticket of ``key``'s queue, dropping the writer's ``standing`` ticket if
    given; it answers with the whole item. With ``pace`` (a slow writer's milliseconds per request) and
    ``standing``, the ticket is recorded in ``standing`` as a standing ticket is, with the pace beside it."""
    actions = [counter.ticket.add(1), counter.served.set(counter.served | 0)]
    if standing is not None and pace is not None:
        actions += [Path(standing).set(counter.ticket | 0), Path(pace_name(standing)).set(pace)]
    elif standing is not None:
        actions += [Path(standing).remove(), Path(pace_name(standing)).remove()]
    return counter._update_kwargs(key, actions, None, "ALL_NEW")


def skip_kwargs(counter: Type[NextId], key: str, served: int, standing: Optional[str] = None) -> Dict[str, Any]:
    """The UpdateItem that passes over ticket ``served + 1``, whose holder kept the queue waiting; with
    ``standing``, that ticket is the standing ticket recorded there, which goes too."""
    actions = [counter.served.set(served + 1)]
    if standing is not None:
        actions += [Path(standing).remove(), Path(pace_name(standing)).remove()]
    return counter._update_kwargs(
        key, actions, (counter.served == served) & (counter.ticket > served), "ALL_NEW")


def give_back_kwargs(counter: Type[NextId], key: str, standing: str) -> Dict[str, Any]:
    """The UpdateItem that serves the standing ticket recorded in ``standing`` unused, if it is next."""
    return counter._update_kwargs(
        key, [counter.served.set(counter.served + 1), Path(standing).remove(), Path(pace_name(standing)).remove()],
        counter.served == Path(standing), "ALL_NEW")
