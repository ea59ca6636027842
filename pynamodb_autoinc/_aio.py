"""Awaitable saves and counter operations (``await instance.asave()``): see docs/async.md.

The library's engine is synchronous (botocore). An awaited call runs the synchronous call it mirrors, the
instance's own ``save()``, the class's own ``save_all()``, ``NextId.nextval()`` and the rest, on a worker thread
of a bounded pool this module owns (:func:`executor`), in a copy of the caller's context. Every decision (the
judge's verdicts, the queue, the threads' group commit, the retries and their sleeps on the library's clock) is
the one the synchronous path makes: nothing here builds a request or reads an answer.

Cancellation is an interrupt. A call cancelled before its worker started is never run: nothing was claimed or
sent. A call cancelled once its worker started cannot stop botocore: the worker finishes, and the instance ends
as that save ends (stored: its ID kept; not stored: its ID back to None; unknown: kept); the awaiting task raises
:class:`asyncio.CancelledError` at once, without waiting for it.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Type, TypeVar, cast

if TYPE_CHECKING:
    import asyncio

    from pynamodb.expressions.condition import Condition
    from pynamodb.models import Model

    from .sequence import SequenceOptions

_T = TypeVar("_T")
_Tx = TypeVar("_Tx", bound="AsyncTransaction")

log = logging.getLogger(__name__)

#: How many worker threads run awaited calls at once; calls beyond them wait, unstarted, for a free one.
WORKERS = 32

#: The event loop whose awaited call a worker runs; :mod:`pynamodb_autoinc.signals` finds it by this name (the two
#: modules import nothing of each other) to await a coroutine receiver on that loop.
EVENT_LOOP: contextvars.ContextVar[Optional[asyncio.AbstractEventLoop]] = contextvars.ContextVar(
    "pynamodb_autoinc.event_loop", default=None)

_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The pool of :data:`WORKERS` threads that runs this process's awaited calls (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="pynamodb-autoinc-aio")
        return _pool


def _forget_pool() -> None:
    """After a fork: the parent's worker threads are not in the child, which makes its own pool."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


async def run(call: Callable[..., _T], *args: Any, unstarted: Optional[Callable[[], None]] = None,
              **kwargs: Any) -> _T:
    """Await ``call(*args, **kwargs)`` run on a worker thread, in a copy of the caller's context.

    Cancelled before the worker started, it never runs (``unstarted`` is called, on the event loop's thread);
    cancelled once it started, it runs to its end, unawaited, and :class:`asyncio.CancelledError` is raised now.
    """
    import asyncio  # here, not at the top: a process that never awaits a save does not import asyncio

    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(EVENT_LOOP.set, loop)
    future = executor().submit(context.run, functools.partial(call, *args, **kwargs))
    try:
        return await asyncio.wrap_future(future, loop=loop)
    except asyncio.CancelledError:
        if future.cancel():  # still queued: it will never run
            if unstarted is not None:
                unstarted()
        else:
            future.add_done_callback(functools.partial(_ended_unawaited, getattr(call, "__qualname__", call)))
        raise


def _ended_unawaited(what: Any, future: Future) -> None:
    """Log how a call whose awaiting task was cancelled while it ran ended."""
    error = future.exception()
    if error is None:
        log.info("%s, cancelled while it ran, ended: done", what)
    else:
        log.info("%s, cancelled while it ran, ended: %s: %s", what, type(error).__name__, error)


class AsyncSaves:
    """The awaitable saves of a model that uses the mixin."""

    async def asave(self, condition: Optional[Condition] = None, *,
                    add_version_condition: bool = True) -> Dict[str, Any]:
        """``await instance.asave()``: the instance's own :meth:`save` (every mixin's), run on a worker thread.

        Raises what ``save()`` raises. Cancelled before its worker started: nothing was sent and the ID is as it
        was; once it started: the save ends as it would have (see docs/async.md, "Cancellation").
        """
        model: Any = self
        return cast(Dict[str, Any], await run(model.save, condition, add_version_condition=add_version_condition))

    @classmethod
    async def asave_all(cls, instances: Iterable[Model]) -> None:
        """``await Model.asave_all(instances)``: the class's own :meth:`save_all`, run on a worker thread."""
        model: Any = cls
        await run(model.save_all, list(instances))


class AsyncCounter:
    """The awaitable operations of a counter model (:class:`~pynamodb_autoinc.NextId`), each its synchronous
    namesake run on a worker thread."""

    @classmethod
    async def anextval(cls, key: str, sequence: Optional[SequenceOptions] = None) -> int:
        """``await NextId.anextval(key)``: :meth:`nextval`."""
        counter: Any = cls
        return cast(int, await run(counter.nextval, key, sequence))

    @classmethod
    async def areserve(cls, key: str, count: int, sequence: Optional[SequenceOptions] = None, *,
                       partial: bool = False) -> List[int]:
        """``await NextId.areserve(key, count)``: :meth:`reserve`."""
        counter: Any = cls
        return cast(List[int], await run(counter.reserve, key, count, sequence, partial=partial))

    @classmethod
    async def asetval(cls, key: str, value: int, *, is_called: bool = True,
                      sequence: Optional[SequenceOptions] = None) -> int:
        """``await NextId.asetval(key, value)``: :meth:`setval`."""
        counter: Any = cls
        return cast(int, await run(counter.setval, key, value, is_called=is_called, sequence=sequence))

    @classmethod
    async def acompare_and_set(cls, key: str, expected: Optional[int], value: int,
                               sequence: Optional[SequenceOptions] = None) -> bool:
        """``await NextId.acompare_and_set(key, expected, value)``: :meth:`compare_and_set`."""
        counter: Any = cls
        return cast(bool, await run(counter.compare_and_set, key, expected, value, sequence))


class AsyncTransaction:
    """``async with TransactWrite(...) as tx``: the operations as in a ``with`` block, and the transaction
    committed on exit, on a worker thread. Cancelled before that worker started, nothing is sent and the claimed
    IDs go back to None. ``tx.save()`` claims a new instance's ID on the loop's thread (in fast and block mode, or
    a gapless counter's first use, one request that blocks the loop while it lasts); ``await tx.asave()`` claims it
    on a worker thread, and awaits a coroutine receiver of ``before_save``."""

    async def asave(self, model: Model, condition: Optional[Condition] = None,
                    return_values: Optional[str] = None) -> None:
        """``await tx.asave(instance)``: ``tx.save(instance)`` on a worker thread (await each in turn)."""
        transaction: Any = self
        await run(transaction.save, model, condition, return_values)

    async def __aenter__(self: _Tx) -> _Tx:
        transaction: Any = self
        return cast(_Tx, transaction.__enter__())

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Any) -> Any:
        import asyncio

        transaction: Any = self
        if exc_type is not None:  # nothing is sent: the claims go back, on this thread (no request)
            return transaction.__exit__(exc_type, exc, tb)
        cancelled = asyncio.CancelledError()
        return await run(transaction.__exit__, None, None, None,
                         unstarted=lambda: transaction.__exit__(asyncio.CancelledError, cancelled, None))
