"""The one place a DynamoDB request goes on the wire (:func:`send`, through PynamoDB's ``dispatch``: its signals and
botocore's retries apply), and the one retry loop (:func:`drive`)."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, ClassVar, Dict, Iterator, List, Optional, Protocol, Tuple, Type, TypeVar

from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, NoRegionError
from pynamodb.connection import Connection
from pynamodb.connection.base import BOTOCORE_EXCEPTIONS
from pynamodb.constants import DELETE_ITEM, GET_ITEM, ITEM, QUERY, SCAN, UPDATE_ITEM
from pynamodb.exceptions import DeleteError, GetError, PynamoDBException, QueryError, ScanError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.operand import Path
from pynamodb.expressions.projection import create_projection_expression

from . import _aio, _bridge, _endpoint, _judge
from ._budget import Budget
from .exceptions import causes, error_code, error_responses, reasons_of, returned_item

#: The error a failed request raises, as PynamoDB's method for its operation raises it.
ERRORS: Dict[str, Tuple[Type[PynamoDBException], str]] = {
    UPDATE_ITEM: (UpdateError, "Failed to update item: {}"),
    GET_ITEM: (GetError, "Failed to get item: {}"),
    DELETE_ITEM: (DeleteError, "Failed to delete item: {}"),
    QUERY: (QueryError, "Failed to query items: {}"),
    SCAN: (ScanError, "Failed to scan table: {}"),
}

#: How many pages one :func:`scan` reads at most (a page holds up to 1 MB of items).
PAGES = Budget(attempts=9_999, seconds=None, backoff=None)


def send(connection: Connection, operation: str, kwargs: Dict[str, Any], *, raw: bool = False) -> Dict[str, Any]:
    """Send one request. A failure raises PynamoDB's error for ``operation`` (:data:`ERRORS`) with botocore's as
    its ``cause``; with ``raw``, botocore's error itself; no region, :func:`._endpoint.no_region`'s error. Either
    carries what became of each try botocore made (read by :func:`read_answer`), and so does an interrupt (Ctrl-C)
    that stops the request."""
    tries = _tries().reset()
    try:
        _watch(connection)
        return dict(connection.dispatch(operation, kwargs))
    except NoRegionError as error:  # no client could be made: no request was sent, and resending cannot help
        raise _endpoint.no_region(error, str(kwargs.get("TableName", ""))) from error
    except BOTOCORE_EXCEPTIONS as error:
        error.autoinc_tries = tries.snapshot()
        if raw:
            raise
        kind, message = ERRORS.get(operation, (PynamoDBException, f"Failed to send {operation}: {{}}"))
        raise kind(message.format(error), error)  # noqa: B904 - as PynamoDB raises it
    except BaseException as stop:
        if not isinstance(stop, Exception):  # an interrupt: note whether a try was in flight or may have applied
            stop.autoinc_tries = tries.snapshot()  # type: ignore[attr-defined]
        raise


@contextlib.contextmanager
def followed(connection: Connection) -> Iterator[None]:
    """Follow the tries of a request PynamoDB sends itself on ``connection`` (an explicit key's ``Model.save``): a
    failure or an interrupt carries what became of each, as one from :func:`send` does."""
    tries = _tries().reset()
    _watch(connection)
    try:
        yield
    except BaseException as stop:
        stop.autoinc_tries = tries.snapshot()  # type: ignore[attr-defined]
        raise


class _Tries:
    """What became of each try of the request this caller (a thread, or an awaited call) is sending: ``created``
    counts the tries that went to the wire (every other ``before-send`` handler had run, moto's included);
    ``fates`` holds, per try answered or failed, its answer kind (:func:`._judge.answer_kind`, read from the wire:
    the HTTP status first)."""

    def __init__(self) -> None:
        self.created = 0
        self.fates: List[str] = []

    def reset(self) -> _Tries:
        self.created, self.fates = 0, []
        return self

    def snapshot(self) -> Tuple[int, Tuple[str, ...]]:
        return self.created, tuple(self.fates)


class _ThreadTries(_Tries, threading.local):
    """A thread's record."""


_thread_tries = _ThreadTries()


_call_tries = _bridge.Local(_Tries)


def _tries() -> _Tries:
    """The record of this caller: its thread's, or, in an awaited call (and in botocore's handlers for it), the
    call's own. A thread's is read here, with no call into the bridge: every request reads it four times."""
    return _thread_tries if _bridge.CALL.get() is None else _call_tries.get()


_watched: weakref.WeakSet[Any] = weakref.WeakSet()
_hooked: weakref.WeakSet[Any] = weakref.WeakSet()


def _watch(connection: Connection) -> None:
    """Follow each try botocore makes of the requests sent on ``connection``'s client (once per client); once a
    call was awaited in this process, let an awaited call send on it (:func:`._aio.hook`)."""
    client = connection.client
    if client not in _watched:
        watch_client(client)
        _watched.add(client)
    if _bridge.runner is not None and client not in _hooked:
        _aio.hook(connection, client, watch_client)
        _hooked.add(client)


def watch_client(client: Any) -> None:
    """Follow each try of the requests ``client`` (botocore's or aiobotocore's) sends."""
    events = client.meta.events
    # each API call starts a record of its own (a request a receiver of pre_dynamodb_send sent first is not ours)
    events.register("before-call.dynamodb", _began, unique_id="pynamodb_autoinc.tries.began")
    events.register_last("before-send.dynamodb", _created, unique_id="pynamodb_autoinc.tries.created")
    events.register("response-received.dynamodb", _received, unique_id="pynamodb_autoinc.tries.received")


def _began(**_: Any) -> None:
    _tries().reset()


def _created(**_: Any) -> None:
    _tries().created += 1


def _received(exception: Optional[BaseException] = None, parsed_response: Optional[Dict[str, Any]] = None,
              response_dict: Optional[Dict[str, Any]] = None, **_: Any) -> None:
    tries = _tries()
    if exception is not None:
        tries.fates.append(_judge.answer_kind(None, sent=not isinstance(exception, NEVER_LEFT), answered=False))
        return
    status = (response_dict or {}).get("status_code")
    code = (parsed_response or {}).get("Error", {}).get("Code")
    ok = status is not None and 200 <= status < 300 and not code
    tries.fates.append(_judge.OK if ok else _judge.answer_kind(code, sent=True, answered=True, status=status))


#: The failures of a request that never left: no connection to the endpoint was made.
NEVER_LEFT = (EndpointConnectionError, ConnectTimeoutError)


def read_answer(exc: BaseException) -> _judge.Answer:
    """The judge's reading of a failed request (an error from :func:`send`, or an interrupt during it): the kind of
    its last answer, classified by what happened on the wire, and the record of every try botocore made."""
    tries = next((t for e in causes(exc) if (t := getattr(e, "autoinc_tries", None)) is not None), None)
    if tries is None:  # not raised in send(): an error read alone, or an interrupt while no request was out
        tries = (1, ()) if isinstance(exc, Exception) else (0, ())
    created, fates = tries
    if not isinstance(exc, Exception):
        in_flight = created > len(fates)  # a try was built and had no answer when the interrupt came
        last = _judge.INTERRUPTED if in_flight or (fates and fates[-1] not in _judge.PROOFS) else _judge.UNSENT
        record = fates + (last,) if in_flight or not fates else fates[:-1] + (last,)
        return _judge.Answer(last, earlier_may_have_applied=_judge.in_doubt(record[:-1]), tries=record)
    kind, record = _last_try(exc, created, fates, tries == (1, ()))
    code = error_code(exc)
    reasons = tuple(_judge.Reason("None") if r is None else _judge.Reason(r.code, r.raw_item)
                    for r in reasons_of(exc)) if kind == _judge.CANCELLED else ()
    item = returned_item(exc) if kind == _judge.CONDITION_FAILED else None
    return _judge.Answer(kind, code, reasons, item, _judge.in_doubt(record[:-1]), record)


def _last_try(exc: Exception, created: int, fates: Tuple[str, ...], alone: bool) -> Tuple[str, Tuple[str, ...]]:
    """What the last try of a failed request came to, and the record of all its tries: by the HTTP status first,
    then the code, for an answer; lost or never left for none (``alone``: an error not raised in :func:`send`)."""
    responses = error_responses(exc)
    if responses:
        status = next((r.get("ResponseMetadata", {}).get("HTTPStatusCode") for r in responses
                       if r.get("ResponseMetadata", {}).get("HTTPStatusCode")), None)
        kind = _judge.answer_kind(error_code(exc), sent=True, answered=True, status=status)
        return kind, fates[:-1] + (kind,) if fates else (kind,)
    if fates and len(fates) >= created:  # its last try failed with no answer: lost, or never left
        return fates[-1], fates
    if created > len(fates) or alone:  # a try went out and no answer was read
        kind = _judge.answer_kind(None, sent=not isinstance(exc, NEVER_LEFT), answered=False)
        return kind, fates + (kind,)
    return _judge.UNSENT, (_judge.UNSENT,)  # it failed before any try was made: signing, credentials, parameters


#: How many times a counter update whose outcome is unknown is sent again, unchanged, to find out (its own
#: token or writer number tells its applied try from another's change).
PROBES = 3


def probe(exc: BaseException, probes: int) -> bool:
    """Whether a marked counter update that failed with ``exc`` is sent again unchanged, as its ``probes``-th
    probe: the judge finds its outcome unknown (a 5xx, a lost or unclear answer)."""
    return probes <= PROBES and _judge.judge(_judge.Plan(_judge.PUT), read_answer(exc)).outcome == _judge.UNKNOWN


def may_have_applied(exc: BaseException) -> bool:
    """Whether an interrupt stopped a write that may have applied. The engine marks an interrupt with what its
    write's tries showed (``autoinc_in_doubt``); unmarked, the interrupt's own request is read."""
    marked = getattr(exc, "autoinc_in_doubt", None)
    if marked is not None:
        return bool(marked)
    return not isinstance(exc, Exception) and read_answer(exc).kind == _judge.INTERRUPTED


_T = TypeVar("_T", covariant=True)


class Exchange(Protocol[_T]):
    """Requests sent until one answer settles them: what to send next, and what an answer or a failure means."""

    errors: ClassVar[Tuple[Type[BaseException], ...]] = ()  # the failures failed() reads; any other ends it

    def request(self) -> Tuple[str, Dict[str, Any]]:
        """The request to send now: (operation name, its arguments)."""

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Any:
        """Send it (through :func:`send`)."""

    def failed(self, exc: Any) -> Any:
        """Read a failure: raise to stop (an error, or the budget spent); return None to send the next request,
        or the answer to take as applied."""
        raise exc

    def applied(self, response: Any) -> _T:
        return response


def drive(exchange: Exchange[_T], failure: Optional[BaseException] = None) -> _T:
    """Send ``exchange``'s requests until one is applied; ``failure``: the first request's, sent by the caller."""
    if failure is not None:
        answer = exchange.failed(failure)
        if answer is not None:
            return exchange.applied(answer)
    while True:
        operation, kwargs = exchange.request()
        try:
            response = exchange.send(operation, kwargs)
        except exchange.errors as exc:
            answer = exchange.failed(exc)
            if answer is None:
                continue
            response = answer
        return exchange.applied(response)


def get(connection: Connection, table: str, hash_key: Any, range_key: Any = None) -> Optional[Dict[str, Any]]:
    """One consistent GetItem of the item with these serialized keys: the item as stored, or None."""
    kwargs = connection.get_operation_kwargs(table, hash_key, range_key=range_key, consistent_read=True)
    return send(connection, GET_ITEM, kwargs).get(ITEM)


def expressions(attributes: Optional[List[str]] = None, **conditions: Optional[Condition]) -> Dict[str, Any]:
    """Request arguments for ``conditions`` (by argument, e.g. ``FilterExpression=...``) and a projection of
    ``attributes`` (stored names: a dot is no path), with their placeholders."""
    names: Dict[str, str] = {}
    values: Dict[str, Any] = {}
    kwargs: Dict[str, Any] = {argument: condition.serialize(names, values)
              for argument, condition in conditions.items() if condition is not None}
    if attributes:
        kwargs["ProjectionExpression"] = create_projection_expression([Path([name]) for name in attributes], names)
    if names:
        kwargs["ExpressionAttributeNames"] = {placeholder: name for name, placeholder in names.items()}
    if values:
        kwargs["ExpressionAttributeValues"] = values
    return kwargs


def scan(connection: Connection, table: str, condition: Optional[Condition] = None,
         attributes: Optional[List[str]] = None) -> List[Dict[str, Any]]:
    """Every item of ``table`` that ``condition`` holds for (a consistent scan), as stored; with ``attributes``,
    only those. :raises ScanError: the scan failed, or the table holds more than :data:`PAGES` allows"""
    kwargs = {"TableName": table, "ConsistentRead": True, **expressions(attributes, FilterExpression=condition)}
    items: List[Dict[str, Any]] = []
    pages = PAGES.tries()
    for _ in pages:
        page = send(connection, SCAN, kwargs)
        items += page.get("Items", [])
        if not page.get("LastEvaluatedKey"):
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    raise ScanError(f"Failed to scan table: {table!r} still had items after {pages.losses} pages; it is not a "
                    "counter table of this library, or scan it in parts")
