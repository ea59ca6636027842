"""The async driver: ``await instance.asave()`` and the other awaited calls (docs/async.md).

There is one protocol: the engine's calls, its judge's verdicts, its queue and its group commit, written once as
plain calls. An awaited call runs those same calls (the instance's own ``save()``, the class's ``save_all()``,
``NextId.nextval()`` and the rest) in a greenlet of its own, on the event loop's thread; at each point where the
sync driver would block, :mod:`pynamodb_autoinc._bridge` hands an awaitable to the task instead, which awaits it on
the loop and switches back with its answer:

- a request (botocore's ``_make_api_call`` on a model's client, the one place PynamoDB and the library send from)
  is sent by an aiobotocore client made alike (region, endpoint, configuration, credentials; one per loop);
- a sleep (the library's clock) is :func:`asyncio.sleep`;
- a wait for another caller (the group commit's turn, a block's refill) is a future the releasing caller sets.

So the tasks of a loop queue behind one another as threads do, and a group commit gathers tasks as it gathers
threads. Cancellation is an interrupt: :class:`asyncio.CancelledError` is raised where the call awaits, and the
engine reads it as it reads Ctrl-C: cancelled before a try of its write left, the ID goes back to None; with a
try out, the ID is kept with the unknown-outcome rules. Under moto's in-process mock (which answers inside
botocore, with nothing on the wire) a request is answered in place, as the sync driver's is.

It needs aiobotocore and greenlet (``pip install 'pynamodb-autoinc[async]'``); nothing of it is imported until a
call is awaited.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import weakref
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Dict, Iterable, List, Optional, Type, TypeVar, cast

from . import _bridge
from .exceptions import ConfigurationError

if TYPE_CHECKING:
    from pynamodb.connection import Connection
    from pynamodb.expressions.condition import Condition
    from pynamodb.models import Model

    from .sequence import SequenceOptions

_T = TypeVar("_T")
_Tx = TypeVar("_Tx", bound="AsyncTransaction")

INSTALL = "pip install 'pynamodb-autoinc[async]'"


def _activate() -> Any:
    """Import the driver's dependencies once and install its greenlet class in the bridge; returns greenlet."""
    try:
        import aiobotocore.session  # noqa: F401 - checked here, used on the first request
        import greenlet
    except ImportError as error:
        raise ConfigurationError(
            f"awaited calls (asave() and the others) need aiobotocore and greenlet, and {error.name} is not "
            f"installed: {INSTALL}") from error
    if _bridge.runner is None:
        class AwaitedCall(greenlet.greenlet):
            """The greenlet an awaited call runs in."""

        _bridge.current, _bridge.runner, _bridge.epoch = greenlet.getcurrent, AwaitedCall, 1
    return greenlet


async def run(call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Await ``call(*args, **kwargs)``: run it in a greenlet of its own, in a copy of the caller's context,
    awaiting what it waits for; its result or its error is this coroutine's."""
    greenlet = _activate()
    state: Dict[Any, Any] = {}
    token = _bridge.CALL.set(state)
    try:
        runner = cast(Any, _bridge.runner)(functools.partial(call, *args, **kwargs), greenlet.getcurrent())
        runner.gr_context = contextvars.copy_context()
        step = runner.switch()
        while not runner.dead:
            try:
                answer = await step
            except BaseException as error:  # noqa: B036 - a cancellation goes into the call, as an interrupt
                step = runner.throw(type(error), error, error.__traceback__)
            else:
                step = runner.switch(answer)
        return cast(_T, step)
    finally:
        _bridge.CALL.reset(token)
        _bridge.call_ended(state)


def hook(connection: Connection, client: Any, watch: Callable[[Any], None]) -> None:
    """Make ``client`` (the botocore client of ``connection``, a model's) send from an awaited call through an
    aiobotocore client made alike, whose tries ``watch`` follows as the sync client's; elsewhere it sends as it
    always did. Only that client is changed."""
    original = client._make_api_call

    def make_api_call(operation_name: str, api_params: Dict[str, Any]) -> Any:
        if _bridge.awaiting() and not _answered_in_place():
            return _bridge.wait(_send(connection, client, watch, operation_name, api_params))
        return original(operation_name, api_params)

    client._make_api_call = make_api_call


def _answered_in_place() -> bool:
    """Whether moto's in-process mock is on: it answers within botocore, so the request has no wire to await."""
    models = sys.modules.get("moto.core.models")
    stubber = getattr(models, "botocore_stubber", None)
    return bool(getattr(stubber, "enabled", False))


class _LoopClients:
    """The aiobotocore clients of one event loop, by the botocore client each mirrors; closed with the loop."""

    def __init__(self) -> None:
        self.made: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()  # client -> future of its twin
        self.closer: Optional[AsyncIterator[None]] = None


_loops: weakref.WeakKeyDictionary[Any, _LoopClients] = weakref.WeakKeyDictionary()
_session: Any = None


async def _send(connection: Connection, client: Any, watch: Callable[[Any], None], operation_name: str,
                api_params: Dict[str, Any]) -> Any:
    twin = await _twin(connection, client, watch)
    return await twin._make_api_call(operation_name, api_params)


async def _twin(connection: Connection, client: Any, watch: Callable[[Any], None]) -> Any:
    """The aiobotocore client of this loop made like ``client`` (made on first use, by one task)."""
    import asyncio

    loop = asyncio.get_running_loop()
    clients = _loops.get(loop)
    if clients is None:
        clients = _loops[loop] = _LoopClients()
        clients.closer = _closed_with_loop(clients)
        await clients.closer.__anext__()  # the loop holds it until it shuts down its async generators
    made = clients.made.get(client)
    if made is None:
        made = clients.made[client] = loop.create_task(_make_twin(connection, client, watch))
    try:
        return await asyncio.shield(made)
    except BaseException:
        if made.done() and made.exception() is not None:
            clients.made.pop(client, None)  # a later call tries again
        raise


async def _make_twin(connection: Connection, client: Any, watch: Callable[[Any], None]) -> Any:
    global _session
    from aiobotocore.config import AioConfig
    from aiobotocore.session import get_session

    if _session is None:
        _session = get_session()
    meta = client.meta
    keys = {name: getattr(connection, f"_{name}", None)
            for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")}
    options = dict(meta.config._user_provided_options)
    twin = await _session.create_client(
        "dynamodb", region_name=meta.region_name, endpoint_url=connection.host,
        config=AioConfig(**options), **{k: v for k, v in keys.items() if v}).__aenter__()
    twin.meta.events.register_first("before-send.*.*", connection._before_send)
    watch(twin)
    return twin


async def _closed_with_loop(clients: _LoopClients) -> AsyncIterator[None]:
    """Held open by the loop (as an async generator) until it shuts down: then its clients are closed."""
    try:
        yield
    finally:
        for made in list(clients.made.values()):
            if made.done() and not made.cancelled() and made.exception() is None:
                await made.result().close()


class AsyncSaves:
    """The awaitable saves of a model that uses the mixin."""

    async def asave(self, condition: Optional[Condition] = None, *,
                    add_version_condition: bool = True) -> Dict[str, Any]:
        """``await instance.asave()``: the instance's own :meth:`save` (every mixin's), awaited.

        Raises what ``save()`` raises. Cancelled before a try of its write left, nothing is stored and its ID is
        back to None; once one may have, its ID is kept as an unknown outcome is (docs/async.md, "Cancellation")."""
        model: Any = self
        return cast(Dict[str, Any], await run(model.save, condition, add_version_condition=add_version_condition))

    @classmethod
    async def asave_all(cls, instances: Iterable[Model]) -> None:
        """``await Model.asave_all(instances)``: the class's own :meth:`save_all`, awaited."""
        model: Any = cls
        await run(model.save_all, list(instances))


class AsyncCounter:
    """The awaitable operations of a counter model (:class:`~pynamodb_autoinc.NextId`), each its synchronous
    namesake awaited."""

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
    committed on exit, awaited. ``await tx.asave(instance)`` claims a new instance's ID awaited (and awaits a
    coroutine receiver of ``before_save``); ``tx.save()`` claims it with the loop blocked while a claim's request
    lasts (in fast and block mode, or a gapless counter's first use)."""

    async def asave(self, model: Model, condition: Optional[Condition] = None,
                    return_values: Optional[str] = None) -> None:
        """``await tx.asave(instance)``: ``tx.save(instance)``, awaited."""
        transaction: Any = self
        await run(transaction.save, model, condition, return_values)

    async def __aenter__(self: _Tx) -> _Tx:
        transaction: Any = self
        return cast(_Tx, transaction.__enter__())

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Any) -> Any:
        transaction: Any = self
        if exc_type is not None:  # nothing is sent: the claims go back (no request)
            return transaction.__exit__(exc_type, exc, tb)
        return await run(transaction.__exit__, None, None, None)

