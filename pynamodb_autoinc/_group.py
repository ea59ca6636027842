"""Group commit: the lone gapless saves of one process's threads, sent together.

Threads of one process saving gapless items on one counter do not race each
other: the first becomes the leader and sends, in one TransactWriteItems,
its own item and those of the threads queued behind it, with one counter
swap (:func:`joined`). A thread whose item fails (its key exists, its
condition failed) gets its own error; the others are sent again. Near the
sequence's end bound the group saves the items that fit; the others get
:class:`~pynamodb_autoinc.exceptions.SequenceExhaustedError` and keep no ID.
A failure that names no item (an item too large) sends each item on its
own, so that it fails alone.

This sits above the commit engine (:mod:`pynamodb_autoinc._engine`), which
sends each group as one write.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _engine, _state, strategies
from ._engine import Write

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
    groups = _groups()
    with groups.guard:
        group = groups.by_place.setdefault((claim.chain, id(write.connection)), _Group())
    member = _Member(write)
    with group.guard:
        group.queue.append(member)
    try:
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
    except BaseException:
        # interrupted (KeyboardInterrupt) while still waiting in the queue: leave it, so that no later leader
        # stores the item, and give the claim back (a write a leader already took ends as that leader sends it)
        with group.guard:
            waiting = member in group.queue
            if waiting:
                group.queue.remove(member)
        if waiting:
            for taken in write.claims:
                taken.release()
        raise
    if member.error is not None:
        raise member.error
    return member.response


def _lead(batch: List[_Member], commit: Callable[[Write], Dict[str, Any]]) -> None:
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
