"""The threads' group commit: lone gapless saves of one process on one counter, sent together as one transaction
(one place of the counter's queue). It sits above the engine (:mod:`pynamodb_autoinc._engine`), whose
:func:`~pynamodb_autoinc._engine.commit` sends each group. See docs/architecture.md, "Group commit"."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from pynamodb.exceptions import CancellationReason

from . import _bridge, _budget, _state, _transport, strategies
from ._engine import Entry, Resend, Write, commit, describe, settle_kept
from .exceptions import AutoIncrementError, ItemWriteError, SequenceExhaustedError, WriteOutcomeUnknownError
from .strategies import ChainId

#: The most items (and bytes of items) one group commit sends: well inside TransactWriteItems' 100 items and 4 MB.
GROUP_LIMIT = 25
GROUP_BYTES = 2_000_000


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

    def each(self, error: Callable[[Write], AutoIncrementError]) -> AutoIncrementError:
        """Each member its own error, naming its own instance."""
        for member in self.members[1:]:
            self.failures[id(member)] = error(member)
        return error(self.members[0])

    def unknown(self, exc: BaseException) -> AutoIncrementError:
        """Each member its own error, naming its own instance and the ID it keeps."""
        return self.each(lambda member: member.unknown(exc))


class _Member:
    def __init__(self, write: Write) -> None:
        self.write = write
        self.claim = write.claims[0]  # a new one when a split group sends it alone
        self.taken = False  # a leader took it from the queue: it ends as that leader sends it
        self.finished: Any = None  # its group's kind of event, set when its write ended, whoever sent it
        self.response: Dict[str, Any] = {}
        self.error: Optional[BaseException] = None
        self.since = 0  # how many writes the group had ended when it joined the queue
        self.in_doubt: Optional[GroupWrite] = None  # the group's write, kept in doubt when its leader was interrupted


class _Group:
    """The lone gapless saves of one counter and connection in this process (a place of the queue)."""

    def __init__(self) -> None:
        # a thread's lock and events, or, once a call was awaited in this process, ones an awaited call awaits
        self.epoch = _bridge.epoch
        awaited = _bridge.runner is not None
        self.lead: Any = _bridge.Lock() if awaited else threading.Lock()  # held by the caller sending the request
        self.event: Any = _bridge.Event if awaited else threading.Event
        self.guard = threading.Lock()  # guards the queue
        self.queue: List[_Member] = []
        self.ended: Optional[float] = None  # when its last write was applied (a race lost soon after keeps its place)
        self.done = 0  # how many of its writes were applied


def joined(write: Write) -> Dict[str, Any]:
    """Commit ``write`` together with other threads' writes on its counter; an interrupt leaves each as it ended."""
    member, state = _Member(write), _state.state
    group: Optional[_Group] = None
    try:
        groups: Dict[Tuple[Any, ...], _Group] = state.parts.get("groups") or state.part("groups", dict)  # by place
        place = (member.claim.chain, id(write.connection))
        group = groups.get(place) or groups.setdefault(place, _Group())
        if group.epoch != _bridge.epoch:  # made before the first awaited call: its waits would block the loop
            group = groups[place] = _Group()
        member.finished = group.event()
        with group.guard:
            member.since = group.done
            group.queue.append(member)
        while not member.finished.is_set():
            with group.lead:
                if not member.finished.is_set():
                    _lead(group, member)
    except BaseException as exc:
        _leave(group, member, exc)
        raise
    if member.in_doubt is not None and group is not None:
        _settled_by_member(group, member, member.in_doubt)
    if member.error is not None:
        raise member.error
    return member.response


def _settled_by_member(group: _Group, member: _Member, sent: GroupWrite) -> None:
    """The leader was interrupted while the group's write was out; this member's caller was not: it finds out
    what became of the write (resent as it was, with its token) before it answers. Applied: its save succeeded;
    not applied: its ID is back to None; still unknown (or another caller settled it as undecidable): the
    WriteOutcomeUnknownError stands. Only what the resend's answer proves changes it."""
    with group.lead:  # one caller settles the group's write for every member
        if member.claim.state == "held":
            settle_kept(sent)  # a failed resend leaves it unknown (it raises no error of its own)
    if member.claim.state == "committed":
        member.error, member.response = None, {}
    elif member.claim.state == "released":
        member.error = ItemWriteError(
            f"{describe(member.write.entries[0].instance)}: the caller sending it with other saves was interrupted "
            "while the request was out; resent, it proved not applied: it was not written, its ID is back to None. "
            "Save it again")


def _leave(group: Optional[_Group], member: _Member, exc: BaseException) -> None:
    """An interrupted member leaves the queue and gives its claim back (unless its request may have applied), or
    waits for the leader that took it."""
    waiting = False
    if group is not None:
        with group.guard:
            waiting = member in group.queue
            if waiting:
                group.queue.remove(member)
    if member.taken and not waiting:
        member.finished.wait()
    else:
        strategies.abandoned([member.claim], exc)


def _take_batch(group: _Group, leader: _Member) -> List[_Member]:
    """Take the leader and as many queued members as one transaction holds off the queue, the leader first."""
    batch: List[_Member] = []
    with group.guard:
        size = 0
        for other in list(group.queue):
            bytes_ = len(repr(other.write.puts[0]))
            if other is leader or (len(batch) < GROUP_LIMIT and size + bytes_ <= GROUP_BYTES):
                other.taken = True
                batch.append(other)
                group.queue.remove(other)
                size += bytes_
    batch.sort(key=lambda m: m is not leader)
    return batch


def _lead(group: _Group, leader: _Member) -> None:
    """Send the queue's writes (the leader's first) as one transaction; each member taken ends with its response
    or its own error, whatever ends the request."""
    batch: List[_Member] = []
    sent: Optional[GroupWrite] = None
    try:
        batch = _take_batch(group, leader)
        if len(batch) == 1:
            alone = batch[0].write
            alone.grouped, alone.previous_end = True, group.ended
            if group.done != batch[0].since:  # a write of the group was applied since it queued: its claim may be stale
                head = alone.claims[0]
                last = strategies.remembered(head)
                if last is not strategies.UNREAD and head.value == last:
                    # claimed while that write was in flight, it holds the value that write stored: it takes the
                    # next (a try on the stored value cannot apply, and lost, it would leave the save in doubt on
                    # another item's ID)
                    with strategies.held(list(alone.claims)):
                        alone.retake({head.chain: last})
            batch[0].response = commit(alone)
            group.ended, group.done = _budget.clock.monotonic(), group.done + 1
            return
        sent = GroupWrite([m.write for m in batch])
        _send_group(group, sent, batch)
    except BaseException as error:
        _ended_by(error, batch, sent, leader)
        if not isinstance(error, Exception):
            raise  # KeyboardInterrupt and the like stop the leader's thread too
    finally:
        with group.guard:
            for m in batch:
                if m in group.queue:
                    group.queue.remove(m)
        for m in batch:
            m.finished.set()


def _send_group(group: _Group, sent: GroupWrite, batch: List[_Member]) -> None:
    """Commit the group's transaction; a failure that named no item (and applied nothing) sends each alone."""
    sent.grouped, sent.previous_end = True, group.ended
    response: Dict[str, Any] = {}
    try:
        with strategies.held(list(sent.claims)):
            head = sent.claims[0]  # the claims, taken one by one, one chain from the value remembered
            sent.retake({head.chain: strategies.remembered(head)})  # those past the end bound are taken out
            response = commit(sent)
            group.ended, group.done = _budget.clock.monotonic(), group.done + 1
    except Split:
        for m in batch:
            if id(m.write) not in sent.failures:
                _send_alone(m)
    for m in batch:
        m.error = sent.failures.get(id(m.write), m.error)
        if m.error is None:
            m.response = m.response or response


def _send_alone(member: _Member) -> None:
    """Send a member of a group that failed as a whole (nothing of it applied) on its own, with a new claim."""
    try:
        entry = member.write.entries[0]
        member.claim = strategies.take(entry.instance, member.claim.opts)
        single = Write(member.write.connection, member.write.puts, [Entry(entry.instance, member.claim, 0)],
                       purpose=member.write.purpose)
        single.grouped = True
        member.response = commit(single)
    except Exception as error:
        member.error = error


def _ended_by(error: BaseException, batch: List[_Member], sent: Optional[GroupWrite], leader: _Member) -> None:
    """Every member learns how the request ended: its own error if it has one; otherwise the leader's error, or,
    interrupted, an error of its own (its ID kept if the request may have applied, else given back)."""
    maybe = _transport.may_have_applied(error)
    for m in batch:
        if m.error is None and sent is not None:
            m.error = sent.failures.get(id(m.write))
        if m.error is not None or m.claim.state == "committed":
            continue  # its own error, or stored before the request ended
        if isinstance(error, Exception):
            m.error = error
            continue
        if m is leader:
            strategies.abandoned([m.claim], error)
            continue
        what = describe(m.write.entries[0].instance)
        if maybe:
            m.in_doubt = sent
            m.error = WriteOutcomeUnknownError(
                f"{what}: the thread sending it with other threads' saves was interrupted ({type(error).__name__}) "
                "while the request was in flight; it may be stored under the ID it keeps: read it before saving again")
            continue
        m.error = ItemWriteError(
            f"{what}: the thread sending it with other threads' saves was interrupted ({type(error).__name__}); "
            "it was not written, its ID is back to None. Save it again")
        m.claim.release()
