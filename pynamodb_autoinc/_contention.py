"""Who goes next on a busy counter, and how long a save keeps trying.

A gapless save moves its counter with a swap conditional on the value it
last saw. The writer that just won knows the new value and swaps again at
once; a writer that lost must first learn the new value, and by then the
winner may be past it again. Left alone, one process wins over and over
while the others wait.

A queue between processes
    The counter item keeps a ticket queue: ``NextTicket``, the last ticket
    handed out, and ``NextServed``, the last ticket served. A writer that
    loses a race while nobody is queued tries once more at once, with the
    value the refusal showed; one that loses again, or finds writers queued,
    takes a ticket (one UpdateItem, answered with the whole
    counter item) and waits its turn: while tickets are waiting, a swap
    without a ticket is refused, and a ticket's swap goes only when the
    ticket before it was served, and serves its own. A waiter sleeps a
    little over one transaction round trip per writer ahead of it, then
    sends its swap with the value it expects by then (a transaction
    answers nothing, so there is no way to be told when the writer ahead
    is done); a refused swap's answer shows the queue and
    the counter as they are. A writer that saw the queue busy a moment ago
    takes a ticket at once rather than send a swap bound to be refused.
    Writers are served in the order they queued, so none is starved.

    A process saving on the counter in a loop keeps its place: when its
    swap serves its ticket while others are queued behind it, and it began
    this save right after its previous one, the same swap takes a standing
    ticket for its next save (recorded under the process's own attribute of
    the counter item, since a transaction answers with nothing). Its next
    save sends its swap after about one turn per writer that was
    behind it, with the value expected by then, and no ticket request; a
    refusal shows its ticket's number, and it waits as any ticket holder.
    So a busy queue costs about one request per item, not two. A standing
    ticket whose process does not come back is passed over after
    :data:`STANDING_TURN`, as a dead writer's ticket after :data:`TURN`.

    Only the swap's value condition keeps values unique and gapless; the
    queue decides who goes first. A ticket whose turn does not come for
    :data:`TURN` seconds (its writer died, or gave up) is passed over by the
    writer behind it, measured on that writer's own clock: no clocks are
    compared. A writer passed over takes a new ticket.

Group commit within a process
    Threads of one process saving gapless items on one counter do not race
    each other: the first becomes the leader and sends, in one
    TransactWriteItems, its own item and those of the threads queued behind
    it, with one counter swap (:func:`joined`). A thread whose item fails
    (its key exists, its condition failed) gets its own error; the others
    are sent again. Near the sequence's end bound the group saves the items
    that fit; the others get :class:`~pynamodb_autoinc.SequenceExhaustedError`
    and keep no ID. A failure that names no item (an item too large) sends
    each item on its own, so that it fails alone.

A time budget
    Lost races are retried for up to ``Meta.autoinc_timeout`` seconds (and at
    most ``Meta.autoinc_retries`` times, when set), as PostgreSQL's
    ``lock_timeout`` bounds a wait for a lock; then
    :class:`~pynamodb_autoinc.ContentionError` is raised.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import UPDATE_ITEM

from . import strategies
from .exceptions import AutoIncrementError
from .strategies import _UNKNOWN, ChainId, Claim

if TYPE_CHECKING:
    from ._engine import Write
    from ._options import Options

#: Seconds a queued ticket may keep the queue waiting before the writer behind passes over it.
TURN = 0.25

#: Seconds after seeing the queue busy during which a save takes a ticket at once.
BUSY = 0.5

#: Seconds a standing ticket may keep the queue waiting (or four round trips, if longer, up to
#: :data:`TURN`) before the writer behind passes over it.
STANDING_TURN = 0.05

#: A lone save beginning within this many seconds of the process's previous one on the same counter
#: keeps the process's place in a busy queue (takes a standing ticket).
HOT = 0.05

#: What the counter attribute holding a process's standing ticket is called, before the process's id.
STANDING_PREFIX = "NextStanding_"

#: The most items one group commit sends (with the counter swap, well inside TransactWriteItems' 100).
GROUP_LIMIT = 25

#: The most bytes of items one group commit sends (TransactWriteItems takes 4 MB).
GROUP_BYTES = 2_000_000


class Clock:
    """The time the engine reads and sleeps by; the simulation replaces it with a virtual one."""

    def now(self) -> float:
        """Seconds since the epoch: what turns are written in."""
        return time.time()

    def monotonic(self) -> float:
        """Seconds, for measuring how long a save has tried."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


clock = Clock()
"""The engine's clock (see :class:`Clock`)."""


class _Standing:
    """A standing ticket this process holds on a counter, taken by the swap of its last save."""

    def __init__(self, value: int, behind: int, at: float) -> None:
        self.value = value
        """The counter value that swap stored."""
        self.behind = behind
        """How many other writers were queued during that save: they go before the standing ticket."""
        self.at = at
        """When that save ended (monotonic seconds)."""


class _Process:
    """This process's measure of one round trip, when it last saw each counter's queue busy, and the
    standing tickets its lone saves hold."""

    def __init__(self) -> None:
        self.round_trip = 0.01
        self.busy: Dict[ChainId, float] = {}
        self.standing_name = STANDING_PREFIX + uuid.uuid4().hex[:12]
        """The counter attribute holding this process's standing tickets (one per counter item)."""
        self.standing: Dict[Tuple[ChainId, int], _Standing] = {}
        """By (counter, connection): the standing ticket held there."""
        self.last_end: Dict[Tuple[ChainId, int], float] = {}
        """By (counter, connection): when the last lone save there ended."""
        self.groups: Dict[Tuple[Any, ...], _Group] = {}
        self.groups_guard = threading.Lock()

    def observe(self, seconds: float) -> None:
        """Fold one measured transaction round trip into the estimate."""
        self.round_trip = 0.8 * self.round_trip + 0.2 * min(seconds, 1.0)

    def turn(self) -> float:
        """About how long a busy queue takes to serve one ticket: a little over one transaction round
        trip, with some jitter so that waiters do not wake in step."""
        return self.round_trip * random.uniform(1.0, 1.3)


_process = _Process()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: _process.__init__())  # type: ignore[misc]


def timed(write: Write, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """Send a request of ``write``; a transaction's duration, answered or not, counts as a round trip."""
    began = clock.monotonic()
    try:
        return write.send(operation, kwargs)
    finally:
        if operation == "TransactWriteItems":
            _process.observe(clock.monotonic() - began)


class Contest:
    """One write's struggle for its counter: the races it lost, its time budget, its place in the queue."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.began = clock.monotonic()
        self.losses = 0
        self.ticket = None
        self.waited: Optional[Tuple[int, float]] = None  # (ticket served, since when), while it does not move
        swaps = {c.chain for c in write.claims if c.kind == "swap"}
        # Only a write on one counter that the library may send again with new values queues.
        self.chain: Optional[ChainId] = next(iter(swaps)) if len(swaps) == 1 and write.retry else None
        write.queue = self.chain is not None
        self.behind = 0
        """How many other writers were queued when the counter was last seen."""
        # A lone save (sent by its process's group commit, one at a time per counter and connection)
        # may hold the process's standing ticket, and take one.
        self.place: Optional[Tuple[ChainId, int]] = None
        self.hot = False
        if self.chain is not None and write.grouped:
            self.place = (self.chain, id(write.connection))
            write.standing = _process.standing_name
            self.hot = self.began - _process.last_end.get(self.place, self.began - HOT) < HOT

    def start(self) -> Optional[Dict[ChainId, Any]]:
        """Before the first send: come back on a standing ticket, or take a ticket if the queue was busy a
        moment ago (the values to claim from)."""
        if self.place is not None:
            held = _process.standing.pop(self.place, None)
            if held is not None:
                return self._come_back(held)
        if self.chain is None or clock.monotonic() - _process.busy.get(self.chain, -BUSY) >= BUSY:
            return None
        return self._queue()

    def _come_back(self, held: _Standing) -> Dict[ChainId, Any]:
        """Sleep until about the standing ticket's turn; return the value the counter should hold by then."""
        self.write.by_standing = True
        self.behind = held.behind
        self.write.requeue = self.hot and held.behind > 0
        wait = held.behind * _process.turn() - (clock.monotonic() - held.at)
        if wait > 0:
            clock.sleep(min(wait, TURN))
        return self._expect(held.value, held.behind)

    def done(self) -> None:
        """After the write was applied: remember when, and the standing ticket its swap took."""
        if self.place is None:
            return
        now = clock.monotonic()
        _process.last_end[self.place] = now
        if self.write.requeue and (self.ticket is not None or self.write.by_standing):
            last = next(last for chain, _, last in self.write.chains() if chain == self.chain)
            _process.standing[self.place] = _Standing(last.value, self.behind, now)

    def lost(self, exc: Exception, current: Dict[ChainId, Any]) -> Dict[ChainId, Any]:
        """After a lost race: wait as the queue asks, and return the counter values to claim from.

        Raises the write's contention error once the budget is spent.
        """
        self.losses += 1
        self.check(exc)
        if self.chain is None:
            clock.sleep(strategies.backoff_delay(self.write.claims[0].opts.backoff, self.losses))
            return current
        item = self.write.counter_items.get(self.chain)
        if self.write.by_standing:
            return self._standing_refused(item)
        if self.ticket is None:
            if self.losses == 1 and item is not None and _number(item, "NextTicket") == _number(item, "NextServed"):
                return current  # a first loss with nobody queued: the refusal showed the value, try it at once
            return self._queue()
        return self._wait(item, exc)

    def _standing_refused(self, item: Optional[Dict[str, Any]]) -> Dict[ChainId, Any]:
        """A swap on the standing ticket was refused: learn the ticket's number from the counter item, and
        wait as any ticket holder; take a new ticket if it was passed over."""
        if item is None:  # a conflict, which shows nothing: try the standing ticket again shortly
            clock.sleep(max(_process.round_trip, 0.001) * random.uniform(0.5, 1.0))
            return {}
        self.write.by_standing = False
        mine = _number(item, _process.standing_name)
        if mine is None:
            return self._queue()
        self.ticket = mine + 1
        return self._wait(item, None)

    def _queue(self) -> Dict[ChainId, Any]:
        """Take a ticket (dropping the process's standing ticket, if any), and wait for its turn."""
        assert self.chain is not None
        head = self._head()
        self.write.by_standing = False
        try:
            item = self.write.send(UPDATE_ITEM, head.opts.counter.ticket_kwargs(
                head.key, self.write.standing)).get("Attributes")
        except BOTOCORE_EXCEPTIONS:
            clock.sleep(strategies.backoff_delay(head.opts.backoff, self.losses))
            return {}
        self.ticket = _number(item, "NextTicket")
        self.waited = None
        return self._wait(item, None)

    def _wait(self, item: Optional[Dict[str, Any]], exc: Optional[Exception]) -> Dict[ChainId, Any]:
        """Sleep until about the ticket's turn; return the value the counter should hold by then."""
        assert self.chain is not None and self.ticket is not None
        head = self._head()
        _process.busy[self.chain] = clock.monotonic()
        served, value = _number(item, "NextServed"), item_value(item, head.opts.counter)
        if served is None or value is _UNKNOWN:
            return {}  # the answer did not show the queue: the next refusal will
        ahead = self.ticket - served - 1
        if ahead < 0:  # passed over: queue again
            self.ticket = None
            return self._queue()
        # those ahead of it now take standing tickets behind it before it is served, if they keep saving
        self.behind = max((_number(item, "NextTicket") or self.ticket) - served - 1, 0)
        self.write.requeue = self.hot and self.behind > 0
        if ahead == 0:
            return {self.chain: value}
        now = clock.monotonic()
        owner = _standing_owner(item, served)
        patience = min(max(STANDING_TURN, 4 * _process.round_trip), TURN) if owner else TURN
        if self.waited is None or self.waited[0] != served:
            self.waited = (served, now)
        elif now - self.waited[1] >= patience:
            self._skip(served, owner)
        # about one transaction per writer ahead: an early swap is refused and shows the queue again
        clock.sleep(min(max(ahead * _process.turn(), 0.001), TURN))
        if exc is not None:
            self.check(exc)
        # the value expected once the writers ahead have each stored one item
        return self._expect(value, ahead)

    def _skip(self, served: int, owner: Optional[str]) -> None:
        """Pass over ticket ``served + 1``, which has kept the queue waiting a whole turn (a standing ticket,
        recorded in ``owner``: a shorter one)."""
        head = self._head()
        with contextlib.suppress(*BOTOCORE_EXCEPTIONS):  # it moved after all: the next answer shows the queue
            self.write.send(UPDATE_ITEM, head.opts.counter.skip_kwargs(head.key, served, owner))
        self.waited = None

    def _expect(self, value: Optional[int], writers: int) -> Dict[ChainId, Any]:
        """The counter value to claim from once ``writers`` more have each stored one item after ``value``
        (None: no value yet); nothing if that lies outside the sequence."""
        assert self.chain is not None
        opts = self._head().opts
        last = opts.start - opts.step if value is None else value
        expected = last + writers * opts.step
        return {self.chain: expected} if opts.sequence.contains(expected) else {}

    def _head(self) -> Claim:
        return next(c for c in self.write.claims if c.chain == self.chain)

    def check(self, exc: Exception) -> None:
        """Raise the contention error if the retries or the time are used up."""
        opts = self.write.claims[0].opts if self.write.claims else None
        if opts is None or not self.write.retry or spent(opts, self.losses, self.began):
            self.give_back()
            raise self.write.contention(exc, self.losses, clock.monotonic() - self.began) from exc

    def give_back(self) -> None:
        """Serve this write's ticket if it is next, so that the queue need not wait for it to be passed over."""
        if self.chain is None or (self.ticket is None and not self.write.by_standing):
            return
        ticket, self.ticket = self.ticket, None
        head = self._head()
        counter, standing = head.opts.counter, self.write.standing
        kwargs = (counter.skip_kwargs(head.key, ticket - 1, standing) if ticket is not None
                  else counter.give_back_kwargs(head.key, standing))  # type: ignore[arg-type]
        self.write.by_standing = False
        with contextlib.suppress(*BOTOCORE_EXCEPTIONS):  # not next yet: the writer behind passes over it later
            self.write.send(UPDATE_ITEM, kwargs)

    @property
    def ticket(self) -> Optional[int]:
        """This write's ticket in the counter's queue (None: it has none); its swap serves it."""
        return self.write.ticket

    @ticket.setter
    def ticket(self, value: Optional[int]) -> None:
        self.write.ticket = value


def spent(opts: Options, losses: int, began: float) -> bool:
    """Whether a request that lost ``losses`` races since ``began`` (monotonic) has used up its model's
    budget: ``Meta.autoinc_retries`` tries, or ``Meta.autoinc_timeout`` seconds."""
    return (opts.retries is not None and losses > opts.retries) or (
        opts.timeout is not None and clock.monotonic() - began >= opts.timeout)


def _standing_owner(item: Optional[Dict[str, Any]], served: int) -> Optional[str]:
    """The attribute of the standing ticket that is next in the queue ``item`` shows, if it is one."""
    return next((name for name in (item or {}) if name.startswith(STANDING_PREFIX)
                 and _number(item, name) == served), None)


def _number(item: Optional[Dict[str, Any]], name: str) -> Optional[int]:
    raw = (item or {}).get(name, {}).get("N")
    return None if raw is None else int(Decimal(raw))


def item_value(item: Optional[Dict[str, Any]], counter: Any) -> Any:
    """The counter value a counter item shows: None (no value yet), an int, or unknown (no item, or no
    integer)."""
    if item is None:
        return _UNKNOWN
    raw = item.get(counter.next_id.attr_name)
    if raw is None:
        return None
    try:
        return counter._integer("", raw["N"])
    except (AutoIncrementError, KeyError):
        return _UNKNOWN


# -- group commit --------------------------------------------------------------

class _Member:
    """A thread's write waiting in a group."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.done = False
        self.response: Dict[str, Any] = {}
        self.error: Optional[BaseException] = None


class _Group:
    def __init__(self) -> None:
        self.lead = threading.Lock()  # held by the thread sending the group's request
        self.guard = threading.Lock()  # guards the queue
        self.queue: List[_Member] = []


def joins_group(write: Write) -> bool:
    """Whether ``write`` is a lone gapless save that threads of this process may send together."""
    if write.purpose != "save" or not write.retry or write.token is not None or len(write.entries) != 1:
        return False
    claim = write.entries[0].claim
    return (claim is not None and claim.kind == "swap"
            and claim.opts.attribute == type(claim.instance)._hash_keyname)


def joined(write: Write, commit: Callable[[Write], Dict[str, Any]]) -> Dict[str, Any]:
    """Commit ``write`` together with the same counter's writes of other threads of this process."""
    claim = write.claims[0]
    process = _process
    with process.groups_guard:
        group = process.groups.setdefault((claim.chain, id(write.connection)), _Group())
    member = _Member(write)
    with group.guard:
        group.queue.append(member)
    while not member.done:
        with group.lead:
            if member.done:
                break
            with group.guard:
                batch: List[_Member] = []
                size = 0
                for other in list(group.queue):
                    bytes_ = len(repr(other.write.puts[0]))
                    if other is member or (len(batch) < GROUP_LIMIT and size + bytes_ <= GROUP_BYTES):
                        batch.append(other)
                        size += bytes_
                        group.queue.remove(other)
                batch.sort(key=lambda m: m is not member)  # the leader's own write first
            _lead(batch, commit)
    if member.error is not None:
        raise member.error
    return member.response


def _lead(batch: List[_Member], commit: Callable[[Write], Dict[str, Any]]) -> None:
    from . import _engine

    group: Optional[_engine.GroupWrite] = None
    try:
        if len(batch) == 1:
            batch[0].write.grouped = True
            batch[0].response = commit(batch[0].write)
        else:
            group = _engine.GroupWrite([m.write for m in batch])
            group.grouped = True
            try:
                with strategies.held(list(group.claims)):
                    group.rechain()  # the members past the sequence's end bound are taken out
                    response = commit(group)
            except _engine.Split:  # a failure that names no item: each item on its own
                for m in batch:
                    if id(m.write) not in group.failures:
                        try:
                            m.response = commit(_engine.alone(m.write))
                        except Exception as error:
                            m.error = error
                response = {}
            for m in batch:
                m.error = group.failures.get(id(m.write), m.error)
                if m.error is None:
                    m.response = m.response or response
    except BaseException as error:  # every member learns how the request ended: its own error, if it has one
        for m in batch:
            if m.error is None:
                m.error = group.failures.get(id(m.write), error) if group is not None else error
        if not isinstance(error, Exception):
            raise  # KeyboardInterrupt and the like stop the leader's thread too
    finally:
        for m in batch:
            m.done = True
