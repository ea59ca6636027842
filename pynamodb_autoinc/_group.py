"""Group commit: the lone gapless saves of one process's threads, sent together.

Threads of one process saving gapless items on one counter do not race each
other: the first becomes the leader and sends, in one TransactWriteItems,
its own item and those of the threads queued behind it, with one counter
swap (:func:`joined`). A thread whose item fails (its key exists, its
condition failed) gets its own error; the others are sent again. Near the
sequence's end bound the group saves the items that fit; the others get
:class:`~pynamodb_autoinc.exceptions.SequenceExhaustedError` and keep no ID.
A failure that names no item (an item too large) sends each item on its
own, so that it fails alone. An interrupt (``KeyboardInterrupt``) in one of
the threads leaves every item as its write ended (see :func:`joined`).

This sits above the commit engine (:mod:`pynamodb_autoinc._engine`), which
sends each group as one write.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _engine, _state, strategies
from ._engine import Write
from .exceptions import ItemWriteError

#: The most items one group commit sends (with the counter swap, well inside TransactWriteItems' 100).
GROUP_LIMIT = 25

#: The most bytes of items one group commit sends (TransactWriteItems takes 4 MB).
GROUP_BYTES = 2_000_000


def commit(write: Write) -> Dict[str, Any]:
    """Commit ``write`` with the engine; a lone gapless save goes together with other threads' saves on the
    same counter."""
    if joins_group(write):
        return joined(write, _engine.commit)
    return _engine.commit(write)


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
        groups = _groups()
        with groups.guard:
            group = groups.by_place.setdefault((member.claim.chain, id(write.connection)), _Group())
        with group.guard:
            group.queue.append(member)
        while not member.done:
            with group.lead:
                if not member.done:
                    _lead(group, member, commit)
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


def _lead(group: _Group, leader: _Member, commit: Callable[[Write], Dict[str, Any]]) -> None:
    """Send the queue's writes (the leader's first) as one transaction; every member taken ends done, with its
    response or its own error, whatever ends the request, an interrupt included."""
    batch: List[_Member] = []
    sent: Optional[_engine.GroupWrite] = None
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
            batch[0].write.grouped = True
            batch[0].response = commit(batch[0].write)
            return
        sent = _engine.GroupWrite([m.write for m in batch])
        sent.grouped = True
        try:
            with strategies.held(list(sent.claims)):
                sent.rechain()  # the members past the sequence's end bound are taken out
                response = commit(sent)
        except _engine.Split:  # a failure that names no item: each item on its own
            for m in batch:
                if id(m.write) not in sent.failures:
                    try:
                        single = _engine.alone(m.write)
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
                    f"{_engine.describe(m.write.entries[0].instance)}: the thread sending it with other threads' "
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
