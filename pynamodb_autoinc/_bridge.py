"""Where the one protocol meets its two drivers: the points at which a call waits.

The library's engine is written once, as plain calls. The sync driver runs it on the caller's thread, where a
request blocks in botocore, a sleep in :func:`time.sleep` and a wait on a :class:`threading.Lock`. The async driver
(:mod:`pynamodb_autoinc._aio`, ``await instance.asave()``) runs the same calls in a greenlet of its own per awaited
call, and each of those waits is awaited instead: :func:`wait` hands an awaitable to the task that runs the
greenlet, which awaits it on the event loop and switches back with its result (or raises into it what it raised).
Nothing here decides anything: every verdict, request and retry is the engine's, whichever driver runs it.

The waits are :func:`wait` itself, :class:`Lock` and :class:`Event` (a thread blocks on them, a greenlet awaits
them: both kinds may share one), and :class:`Local` (state of one call: a thread's, or an awaited call's). This
module imports nothing beyond the standard library; the async driver installs :data:`runner` when first used.
"""

from __future__ import annotations

import collections
import contextvars
import threading
from typing import Any, Callable, Deque, Dict, Generic, List, Optional, Tuple, TypeVar

_T = TypeVar("_T")

#: The greenlet class of the async driver's calls, and greenlet's ``getcurrent`` (set by :mod:`._aio` when it is
#: first used; until then no call is awaited and every wait blocks).
runner: Optional[type] = None


def _no_greenlet() -> Any:
    return None


current: Callable[[], Any] = _no_greenlet

#: 0 until the async driver is first used, then 1: what a caller made before then (a thread's lock) is made anew.
epoch = 0

#: The state of the awaited call running now, by :class:`Local` (set by the async driver for each call, in the
#: context of the task awaiting it, which botocore's event handlers run in too).
CALL: contextvars.ContextVar[Optional[Dict[Local[Any], Any]]] = contextvars.ContextVar(
    "pynamodb_autoinc.call", default=None)


def awaiting() -> bool:
    """Whether this code runs in an awaited call (a greenlet of the async driver), where a wait is awaited."""
    return runner is not None and isinstance(current(), runner)


def wait(awaitable: Any) -> Any:
    """Await ``awaitable`` in the task that runs this awaited call, and return its result (or raise its error: a
    :class:`asyncio.CancelledError` of a cancelled task among them). Only in an awaited call (:func:`awaiting`)."""
    return current().parent.switch(awaitable)


def _loop() -> Any:
    import asyncio  # only in an awaited call, which has a running loop

    return asyncio.get_running_loop()


def _wake(future: Any) -> None:
    if not future.done():
        future.set_result(None)


class Event:
    """:class:`threading.Event` that an awaited call awaits (its task yields to the loop) instead of blocking."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._guard = threading.Lock()
        self._waiters: List[Tuple[Any, Any]] = []  # (loop, future) of the awaited calls waiting

    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()
        with self._guard:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            loop.call_soon_threadsafe(_wake, future)

    def wait(self) -> None:
        if self._event.is_set():
            return
        if not awaiting():
            self._event.wait()
            return
        loop = _loop()
        future = loop.create_future()
        with self._guard:
            self._waiters.append((loop, future))
        if not self._event.is_set():
            wait(future)


class _Waiter:
    """An awaited call waiting for a :class:`Lock`: its loop, its future, and whether the lock was handed to it."""

    __slots__ = ("loop", "future", "handed")

    def __init__(self, loop: Any) -> None:
        self.loop, self.future, self.handed = loop, loop.create_future(), False


class Lock:
    """:class:`threading.Lock` that an awaited call awaits instead of blocking: held across a request by one call,
    it makes the others wait, whether they are threads or tasks. Awaiting calls are served in turn: a release hands
    the lock, still held, to the first of them (a call arriving meanwhile waits behind), so that the tasks of one
    loop cannot take it from one another without end. A thread waits in the lock itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._guard = threading.Lock()
        self._waiters: Deque[_Waiter] = collections.deque()

    def acquire(self) -> bool:
        if self._lock.acquire(blocking=False):
            return True
        if not awaiting():
            return self._lock.acquire()
        waiter = _Waiter(_loop())
        with self._guard:
            if self._lock.acquire(blocking=False):
                return True
            self._waiters.append(waiter)
        try:
            wait(waiter.future)
        except BaseException:
            with self._guard:
                handed = waiter.handed
                if not handed:
                    self._waiters.remove(waiter)
            if handed:  # cancelled once it was its turn: the turn goes on
                self.release()
            raise
        return True

    def release(self) -> None:
        with self._guard:
            if self._waiters:
                waiter = self._waiters.popleft()
                waiter.handed = True  # the lock stays held: it is that waiter's now
                waiter.loop.call_soon_threadsafe(_wake, waiter.future)
                return
            self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *_: Any) -> None:
        self.release()


class Local(Generic[_T]):
    """State of one caller: each thread's own, as :class:`threading.local` keeps it, and each awaited call's own
    (the tasks of one loop share a thread). ``made`` makes it; ``ended`` (if given) takes back an awaited call's
    once the call ends."""

    def __init__(self, made: Callable[[], _T], ended: Optional[Callable[[_T], None]] = None) -> None:
        self.made, self.ended = made, ended
        self._thread = threading.local()

    def get(self) -> _T:
        call = CALL.get()
        if call is not None:
            found = call.get(self)
            if found is None:
                found = call[self] = self.made()
            return found
        value: Optional[_T] = getattr(self._thread, "value", None)
        if value is None:
            value = self._thread.value = self.made()
        return value


def call_ended(call: Dict[Local[Any], Any]) -> None:
    """An awaited call ended: each :class:`Local` that takes its state back gets it."""
    for local, value in call.items():
        if local.ended is not None:
            local.ended(value)
