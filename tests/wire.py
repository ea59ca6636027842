"""One fault layer at botocore's HTTP session, after every botocore handler has run (the library's included).

:class:`Wire` wraps ``botocore.httpsession.URLLib3Session.send``, the place where a signed, prepared
``AWSPreparedRequest`` becomes an HTTP exchange, and ``botocore.signers.RequestSigner.sign``, where each try is
signed (a credentials failure happens there, before anything is sent). A plan says which fault each matching
request gets::

    with Wire() as wire:
        wire.on("TransactWriteItems", page(500, applied=True))          # the 1st transaction: applied, then a 500 page
        wire.on("PutItem", lost(applied=True), nth=2)                    # the 2nd put: applied, its answer lost
        wire.on("UpdateItem", interrupt(), when=writes("NextTicket"))    # Ctrl-C while a ticket request is out
        ...

Since every botocore handler has run, moto's in-process mock (which answers inside a ``before-send`` handler)
never reaches this layer: use a real HTTP endpoint, DynamoDB Local (``tests/conftest.py``'s ``local``) or moto's
server mode (:func:`moto_server`). The server sees each forwarded request exactly as botocore sent it, so its own
rules hold: DynamoDB Local answers a transaction resent with the ClientRequestToken of one it applied with success.

A fault is made by a named constructor: :func:`never_sent`, :func:`lost`, :func:`error` (each documented DynamoDB
error code, :data:`ERRORS`), :func:`cancelled`, :func:`page` (a proxy's HTML or empty 4xx/5xx), :func:`bad_crc`,
:func:`no_credentials`, :func:`interrupt`, :func:`passthrough`, and the wrappers :func:`delay` and :func:`before`.
``applied=True`` forwards the request to the server (which applies it) before the fault; ``applied=False`` does not.
Answers are botocore ``AWSResponse`` objects, as ``URLLib3Session.send`` returns them, and failures the botocore
errors it raises.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union
from unittest import mock

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from botocore.httpsession import URLLib3Session
from botocore.signers import RequestSigner

__all__ = [
    "ERRORS", "TARGET_PREFIX", "WRITES", "Fault", "Interrupt", "Rule", "Try", "Wire", "bad_crc", "before", "cancelled",
    "delay", "error", "failing_credentials", "held", "interrupt", "items", "lost", "moto_server", "named", "never_sent",
    "no_credentials", "page", "passthrough", "target", "wire", "writes",
]

#: The X-Amz-Target of DynamoDB's operations: ``DynamoDB_20120810.PutItem``.
TARGET_PREFIX = "DynamoDB_20120810."

#: The requests that store a new item, whichever the library sends for a write: ``wire.on(WRITES, ...)``.
WRITES = ("PutItem", "TransactWriteItems")

#: The error codes DynamoDB documents (the API reference's common errors and each operation's), with the HTTP
#: status it sends them with and a message as it words it.
ERRORS: Dict[str, Tuple[int, str]] = {
    "AccessDeniedException": (400, "User is not authorized to perform this action"),
    "ConditionalCheckFailedException": (400, "The conditional request failed"),
    "DuplicateItemException": (400, "Duplicate item"),
    "ExpiredTokenException": (400, "The security token included in the request is expired"),
    "IdempotentParameterMismatchException": (
        400, "Transaction request was already processed with different parameters"),
    "IncompleteSignatureException": (400, "The request signature does not conform to AWS standards"),
    "InternalServerError": (500, "Internal server error"),
    "InvalidSignatureException": (
        400, "The request signature we calculated does not match the signature you provided"),
    "ItemCollectionSizeLimitExceededException": (400, "Item collection size limit exceeded"),
    "LimitExceededException": (400, "Too many operations for a given subscriber"),
    "MissingAuthenticationTokenException": (400, "Request must contain a valid (registered) AWS Access Key ID"),
    "ProvisionedThroughputExceededException": (
        400, "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
             "provisioning level with the UpdateTable API"),
    "ReplicatedWriteConflictException": (409, "Replicated write conflict"),
    "RequestLimitExceeded": (400, "Throughput exceeds the current throughput limit for your account"),
    "ResourceInUseException": (400, "The resource which you are attempting to change is in use"),
    "ResourceNotFoundException": (400, "Requested resource not found"),
    "ServiceUnavailable": (503, "Service unavailable"),
    "ThrottlingException": (400, "Rate of requests exceeds the allowed throughput"),
    "TransactionCanceledException": (400, "Transaction cancelled, please refer cancellation reasons"),
    "TransactionConflictException": (400, "Transaction is ongoing for the item"),
    "TransactionInProgressException": (400, "Transaction is in progress"),
    "UnrecognizedClientException": (400, "The security token included in the request is invalid"),
    "ValidationException": (400, "One or more parameter values were invalid"),
}

#: Bodies a proxy or a load balancer sends instead of DynamoDB's JSON.
PAGES: Dict[str, bytes] = {
    "html": b"<html>\r\n<head><title>{status}</title></head>\r\n<body>\r\n<center><h1>{status}</h1></center>\r\n"
            b"</body>\r\n</html>\r\n",
    "empty": b"",
}


class Interrupt(KeyboardInterrupt):
    """The wire's Ctrl-C: a KeyboardInterrupt raised while a request is out (a test can tell it from a real one)."""


class _Raw:
    """A response body as ``AWSResponse`` reads it (``stream()``), already received."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield self.body

    def read(self, *_: Any, **__: Any) -> bytes:
        return self.body

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def response(request: Any, status: int, body: bytes, headers: Optional[Dict[str, str]] = None, *,
             crc: Optional[int] = None) -> AWSResponse:
    """An ``AWSResponse`` for ``request``, as ``URLLib3Session.send`` returns one (its body read). ``crc``: the
    ``x-amz-crc32`` header DynamoDB sends (default: the body's own, when ``headers`` are DynamoDB's)."""
    made = {"x-amzn-RequestId": uuid.uuid4().hex.upper(), "Content-Length": str(len(body))}
    made.update(headers or {})
    if crc is not None:
        made["x-amz-crc32"] = str(crc)
    answer = AWSResponse(request.url, status, made, _Raw(body))
    answer.content  # noqa: B018 - read, as URLLib3Session.send reads a response that does not stream
    return answer


def _json(status: int, payload: Dict[str, Any], request: Any) -> AWSResponse:
    body = json.dumps(payload).encode()
    return response(request, status, body, {"Content-Type": "application/x-amz-json-1.0"},
                    crc=zlib.crc32(body) & 0xFFFFFFFF)


# -- faults ---------------------------------------------------------------------------------------------------------

Forward = Callable[[], AWSResponse]


@dataclass(frozen=True)
class Fault:
    """What one try of a request gets. ``applied``: the request is forwarded to the server (so it applies) before
    ``answer`` runs; ``stage``: "send" (at the HTTP session) or "sign" (while the try is signed: nothing is
    sent). ``answer(request, forwarded)`` returns the ``AWSResponse`` botocore receives, or raises what the HTTP
    session raises; ``forwarded`` is the server's own answer (None when not forwarded). ``run`` replaces the
    whole try (it forwards, or not, itself): :func:`delay` and :func:`before` wrap another fault with it."""

    name: str
    applied: bool = False
    answer: Optional[Callable[[Any, Optional[AWSResponse]], AWSResponse]] = None
    stage: str = "send"
    run: Optional[Callable[[Any, Forward], AWSResponse]] = None
    gate: Any = None  # an asyncio.Event the try waits for before it goes on (:func:`held`: the async driver only)

    def __call__(self, request: Any, forward: Forward) -> AWSResponse:
        if self.run is not None:
            return self.run(request, forward)
        forwarded = forward() if self.applied else None
        assert self.answer is not None
        return self.answer(request, forwarded)

    def __str__(self) -> str:
        return self.name


def passthrough() -> Fault:
    """No fault: the request goes to the server and its answer comes back (a place holder in a plan)."""
    def answer(request: Any, forwarded: Optional[AWSResponse]) -> AWSResponse:
        assert forwarded is not None
        return forwarded

    return Fault("passthrough", applied=True, answer=answer)


def never_sent(kind: str = "endpoint") -> Fault:
    """The request never reaches the server: ``EndpointConnectionError`` (no connection could be made), or with
    ``kind="connect-timeout"`` ``ConnectTimeoutError``. Nothing is applied."""
    errors = {"endpoint": EndpointConnectionError, "connect-timeout": ConnectTimeoutError}
    if kind not in errors:
        raise ValueError(f"never_sent(kind={kind!r}): one of {sorted(errors)}")

    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        raise errors[kind](endpoint_url=request.url, error=OSError("wire: never sent"))

    return Fault(f"never-sent:{kind}", applied=False, answer=answer)


def lost(applied: bool, kind: str = "timeout") -> Fault:
    """Sent, and its answer lost: forwarded (``applied``) or not, then ``ReadTimeoutError`` (``kind="timeout"``) or
    ``ConnectionClosedError`` (``kind="closed"``)."""
    if kind not in ("timeout", "closed"):
        raise ValueError(f"lost(kind={kind!r}): 'timeout' or 'closed'")

    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        if kind == "timeout":
            raise ReadTimeoutError(endpoint_url=request.url, error="wire: read timed out")
        raise ConnectionClosedError(endpoint_url=request.url, request=request, error="wire: connection closed")

    return Fault(f"lost:{kind}:{'applied' if applied else 'not-applied'}", applied=applied, answer=answer)


def error(code: str, applied: bool = False, *, message: Optional[str] = None, status: Optional[int] = None,
          **fields: Any) -> Fault:
    """DynamoDB's JSON error ``code`` (one of :data:`ERRORS`; its status unless ``status`` is given), as the
    service sends it: ``{"__type": "com.amazonaws.dynamodb.v20120810#<code>", "message": ...}`` plus ``fields``
    (e.g. ``Item=...`` for a failed condition), after forwarding the request (``applied``) or not."""
    if code not in ERRORS and status is None:
        raise ValueError(f"error({code!r}): not a documented DynamoDB error code; give its status=")
    known_status, known_message = ERRORS.get(code, (status, code))
    payload = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": message or known_message, **fields}

    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        return _json(status or known_status or 400, payload, request)

    return Fault(f"error:{code}:{'applied' if applied else 'not-applied'}", applied=applied, answer=answer)


def cancelled(*reasons: Union[str, Dict[str, Any]], applied: bool = False) -> Fault:
    """A TransactionCanceledException with one reason per item as sent: each a code ("None", "ConditionalCheck
    Failed", "TransactionConflict", ...) or a dict (``{"Code": ..., "Item": ...}``); items past the reasons given
    get "None". Nothing of the transaction applies, so ``applied`` is for a test of what cannot happen."""
    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        sent = len(_body(request).get("TransactItems", []))
        given = [r if isinstance(r, dict) else {"Code": r} for r in reasons]
        given += [{"Code": "None"} for _ in range(sent - len(given))]
        for reason in given:
            if reason["Code"] != "None" and "Message" not in reason:
                reason["Message"] = _REASON_MESSAGES.get(reason["Code"], reason["Code"])
        codes = ", ".join(r["Code"] for r in given)
        return _json(400, {
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            "CancellationReasons": given}, request)

    return Fault(f"cancelled:{','.join(str(r) for r in reasons)}", applied=applied, answer=answer)


_REASON_MESSAGES = {
    "ConditionalCheckFailed": "The conditional request failed",
    "TransactionConflict": "Transaction is ongoing for the item",
    "ThrottlingError": "Throughput exceeds the current capacity of your table or index.",
    "ProvisionedThroughputExceeded": "The level of configured provisioned throughput for the table was exceeded.",
    "ValidationError": "One or more parameter values were invalid",
}


def page(status: int, body: str = "html", applied: bool = False) -> Fault:
    """A 4xx or 5xx whose body is not DynamoDB's JSON, as a proxy or a load balancer sends it: ``body`` "html" (a
    small error page, ``text/html``), "empty" (no body), or the bytes given, after forwarding the request
    (``applied``) or not. botocore reads such an answer's error code as the status ("500")."""
    if not 400 <= status <= 599:
        raise ValueError(f"page({status}): a 4xx or 5xx status")
    content = PAGES[body].replace(b"{status}", str(status).encode()) if body in PAGES else body.encode()

    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        headers = {"Content-Type": "text/html", "Server": "awselb/2.0"} if content else {"Server": "awselb/2.0"}
        return response(request, status, content, headers)

    return Fault(f"page:{status}:{body if body in PAGES else 'custom'}:{'applied' if applied else 'not-applied'}",
                 applied=applied, answer=answer)


def bad_crc() -> Fault:
    """The request is forwarded (it applies), and its real answer comes back with a wrong ``x-amz-crc32``, as a
    body damaged on the way does: botocore's check of DynamoDB's checksum fails, and it sends the request again
    (while retries are left; on the last try it takes the answer as it came)."""
    def answer(request: Any, forwarded: Optional[AWSResponse]) -> AWSResponse:
        assert forwarded is not None
        content = forwarded.content
        headers = {k: v for k, v in forwarded.headers.items() if k.lower() not in ("x-amz-crc32", "content-length")}
        return response(request, forwarded.status_code, content, headers,
                        crc=(zlib.crc32(content) + 1) & 0xFFFFFFFF)

    return Fault("bad-crc", applied=True, answer=answer)


def interrupt(applied: bool = False) -> Fault:
    """Ctrl-C while the request is out: :class:`Interrupt` (a KeyboardInterrupt), after forwarding the request
    (``applied``) or before."""
    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        raise Interrupt(f"wire: interrupted while {_operation(request)} was out")

    return Fault(f"interrupt:{'applied' if applied else 'not-applied'}", applied=applied, answer=answer)


def held(gate: Any) -> Fault:
    """For the async driver: the try waits, out on the wire, until ``gate`` (an :class:`asyncio.Event`) is set,
    then goes to the server and its answer comes back (:func:`passthrough`); the task may be cancelled meanwhile."""
    return replace(passthrough(), name="held", gate=gate)


def no_credentials(error: Optional[Exception] = None) -> Fault:
    """The client's credentials fail while the try is signed (``NoCredentialsError``, or ``error``): nothing is
    sent, nothing applied. This fault acts at ``RequestSigner.sign``, before the HTTP session."""
    def answer(request: Any, _: Optional[AWSResponse]) -> AWSResponse:
        raise error if error is not None else NoCredentialsError()

    return Fault(f"no-credentials:{type(error).__name__ if error else 'NoCredentialsError'}", applied=False,
                 answer=answer, stage="sign")


def delay(seconds: float, then: Optional[Fault] = None) -> Fault:
    """Wait ``seconds`` while the request is out, then give it ``then`` (default: :func:`passthrough`)."""
    inner = then or passthrough()

    def run(request: Any, forward: Forward) -> AWSResponse:
        time.sleep(seconds)
        return inner(request, forward)

    return Fault(f"delay:{seconds}:{inner.name}", applied=inner.applied, run=run)


def before(action: Callable[[], Any], then: Optional[Fault] = None) -> Fault:
    """Run ``action()`` while the request is out, before the server sees it (as another writer would), then give it
    ``then`` (default: :func:`passthrough`). The action's own requests pass the wire without faults."""
    inner = then or passthrough()

    def run(request: Any, forward: Forward) -> AWSResponse:
        with _bypass():
            action()
        return inner(request, forward)

    return Fault(f"before:{getattr(action, '__name__', 'action')}:{inner.name}", applied=inner.applied, run=run)


# -- predicates on the request's JSON body -------------------------------------------------------------------------

Predicate = Callable[[Dict[str, Any]], bool]


def items(at_least: int) -> Predicate:
    """A TransactWriteItems holding at least ``at_least`` items (a group commit of several saves)."""
    return lambda body: len(body.get("TransactItems", [])) >= at_least


def target(table: str) -> Predicate:
    """A request on table ``table`` (``TableName``)."""
    return lambda body: body.get("TableName") == table


def named(*names: str, attribute: str = "name") -> Predicate:
    """A write (a PutItem, or a TransactWriteItems with a Put) storing an item whose string ``attribute`` is one of
    ``names``: the write of one record, whichever request carries it."""
    def check(body: Dict[str, Any]) -> bool:
        puts = [body.get("Item", {})] + [i["Put"]["Item"] for i in body.get("TransactItems", []) if "Put" in i]
        return any(put.get(attribute, {}).get("S") in names for put in puts)

    return check


def writes(attribute: str) -> Predicate:
    """An UpdateItem whose UpdateExpression sets or adds ``attribute`` (the queue's ticket request writes
    ``NextTicket``; a counter advance ``NextId``)."""
    def check(body: Dict[str, Any]) -> bool:
        names = {placeholder for placeholder, name in body.get("ExpressionAttributeNames", {}).items()
                 if name == attribute}
        written = _written(body.get("UpdateExpression", ""))
        return bool(names & written) or attribute in written

    return check


_CLAUSE = re.compile(r"\b(SET|ADD|REMOVE|DELETE)\b")


def _written(expression: str) -> set:
    """The paths an UpdateExpression's SET and ADD clauses write."""
    parts = _CLAUSE.split(expression)
    written = set()
    for keyword, clause in zip(parts[1::2], parts[2::2]):
        if keyword not in ("SET", "ADD"):
            continue
        depth, start, actions = 0, 0, []
        for i, char in enumerate(clause):
            depth += char == "("
            depth -= char == ")"
            if char == "," and depth == 0:
                actions.append(clause[start:i])
                start = i + 1
        actions.append(clause[start:])
        for action in actions:
            action = action.strip()
            path = action.split("=", 1)[0] if keyword == "SET" else action.split(None, 1)[0] if action else ""
            if path.strip():
                written.add(path.strip())
    return written


# -- the plan and the wire -----------------------------------------------------------------------------------------

def _operation_name(operation: str) -> str:
    return operation[len(TARGET_PREFIX):] if operation.startswith(TARGET_PREFIX) else operation


def _header(request: Any, name: str) -> str:
    value = request.headers.get(name) or ""
    return str(value.decode() if isinstance(value, bytes) else value)


def _operation(request: Any) -> str:
    return _operation_name(_header(request, "X-Amz-Target"))


def _body(request: Any) -> Dict[str, Any]:
    body = request.body
    if hasattr(body, "read"):  # a stream (not for DynamoDB's JSON): leave it alone
        return {}
    try:
        parsed = json.loads(body or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


@dataclass
class Rule:
    """Faults for the requests of ``operations`` that ``when`` holds for: the ``nth`` such request (1-based) gets
    the first fault, the next one the second, and so on (``times`` rounds of them; None: for ever). Every request
    that matches counts towards ``nth``, whichever rule gave it a fault."""

    operations: Tuple[str, ...]
    faults: Sequence[Fault]
    nth: int = 1
    when: Optional[Predicate] = None
    times: Optional[int] = 1
    seen: int = 0
    given: int = 0

    def matches(self, operation: str, body: Dict[str, Any]) -> bool:
        return operation in self.operations and (self.when is None or bool(self.when(body)))

    def left(self) -> Optional[int]:
        """How many faults this rule has yet to give (None: for ever)."""
        if self.times is None:
            return None
        return len(self.faults) * self.times - self.given

    def next_fault(self) -> Optional[Fault]:
        """Count one matching request; the fault it gets, if any."""
        self.seen += 1
        if self.seen < self.nth or not self.faults or self.left() == 0:
            return None
        fault = self.faults[self.given % len(self.faults)]
        self.given += 1
        return fault


@dataclass
class Try:
    """One try of a DynamoDB request that reached the wire: its operation, JSON body, the fault it got (None:
    none), and how it ended ("<status>" answered, or the error class raised)."""

    operation: str
    body: Dict[str, Any]
    fault: Optional[str]
    outcome: str = "pending"
    forwarded: bool = False
    thread: str = field(default_factory=lambda: threading.current_thread().name)

    @property
    def token(self) -> Optional[str]:
        return self.body.get("ClientRequestToken")


_local = threading.local()


@contextlib.contextmanager
def _bypass() -> Iterator[None]:
    """Requests sent inside pass the wire untouched (a fault's own action: another writer)."""
    was = getattr(_local, "bypass", False)
    _local.bypass = True
    try:
        yield
    finally:
        _local.bypass = was


class Wire:
    """The fault layer: while entered, every DynamoDB request (X-Amz-Target ``DynamoDB_20120810.*``) to
    ``endpoint`` (default: any) is matched against the plan (:meth:`on`) once per try, when the try is signed,
    and gets its fault there ("sign" faults) or at ``URLLib3Session.send``; the others go to the server as they
    are. Each try is recorded in :attr:`tries`."""

    def __init__(self, endpoint: Optional[str] = None) -> None:
        self.endpoint = endpoint
        self.rules: List[Rule] = []
        self.tries: List[Try] = []
        self.lock = threading.Lock()
        self._patches: List[Any] = []

    # the plan

    def on(self, operation: Union[str, Sequence[str]], *faults: Fault, nth: int = 1,
           when: Optional[Predicate] = None, times: Optional[int] = 1) -> Rule:
        """Give ``faults`` to the requests of ``operation`` ("TransactWriteItems", the whole X-Amz-Target, or several:
        ``WRITES``, whichever of them the library sends) that ``when`` (a predicate on the JSON body) holds for, from
        the ``nth`` on, one each (``times`` rounds; None: for ever). Rules are asked in the order they were added;
        the first with a fault for a request gives it."""
        if not faults or nth < 1 or (times is not None and times < 1):
            raise ValueError("on(): give at least one fault, nth >= 1 and times >= 1 (or None)")
        names = (operation,) if isinstance(operation, str) else tuple(operation)
        rule = Rule(tuple(_operation_name(name) for name in names), list(faults), nth, when, times)
        with self.lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        """Drop every rule: from now on requests pass untouched."""
        with self.lock:
            self.rules = []

    def left(self) -> List[Tuple[Tuple[str, ...], Optional[int]]]:
        """The rules with faults still to give: (operations, how many; None: for ever)."""
        with self.lock:
            return [(r.operations, r.left()) for r in self.rules if r.left() != 0]

    # what happened

    def sent(self, operation: Union[None, str, Sequence[str]] = None,
             when: Optional[Predicate] = None) -> List[Try]:
        """The tries of ``operation`` (default: all; or several) that ``when`` holds for, in order."""
        names = None if operation is None else {_operation_name(n) for n in (
            (operation,) if isinstance(operation, str) else operation)}
        with self.lock:
            return [t for t in self.tries if (names is None or t.operation in names)
                    and (when is None or when(t.body))]

    def count(self, operation: Union[str, Sequence[str]], when: Optional[Predicate] = None) -> int:
        return len(self.sent(operation, when))

    def fired(self) -> List[Tuple[str, str]]:
        """(operation, fault) for each try that got a fault."""
        with self.lock:
            return [(t.operation, t.fault) for t in self.tries if t.fault is not None]

    # the layer

    def __enter__(self) -> Wire:
        wire, send, sign = self, URLLib3Session.send, RequestSigner.sign

        def wired_send(session: Any, request: Any) -> AWSResponse:
            return wire._send(request, lambda: send(session, request))

        def wired_sign(signer: Any, operation_name: str, request: Any, *args: Any, **kwargs: Any) -> Any:
            record = wire._sign(request)
            try:
                return sign(signer, operation_name, request, *args, **kwargs)
            except BaseException as exc:  # the client's own credentials failed: nothing is sent
                if record is not None:
                    record.outcome = type(exc).__name__
                    _pending().pop(_signed(request), None)
                raise

        self._patches = [mock.patch.object(URLLib3Session, "send", wired_send),
                         mock.patch.object(RequestSigner, "sign", wired_sign)]
        try:  # the async driver's HTTP session (aiobotocore's), when installed
            from aiobotocore.httpsession import AIOHTTPSession
        except ImportError:
            pass
        else:
            asend = AIOHTTPSession.send

            async def wired_asend(session: Any, request: Any) -> Any:
                return await wire._asend(request, lambda: asend(session, request))

            self._patches.append(mock.patch.object(AIOHTTPSession, "send", wired_asend))
        for patch in self._patches:
            patch.start()
        return self

    def __exit__(self, *_: Any) -> None:
        for patch in reversed(self._patches):
            patch.stop()
        self._patches = []
        _local.pending = {}

    def _ours(self, request: Any) -> bool:
        return (_header(request, "X-Amz-Target").startswith(TARGET_PREFIX)
                and (self.endpoint is None or str(request.url).startswith(self.endpoint))
                and not getattr(_local, "bypass", False))

    def _decide(self, request: Any) -> Tuple[Try, Optional[Fault]]:
        """Count the try against the plan; record it, with the fault it gets."""
        operation, body = _operation(request), _body(request)
        chosen: Optional[Fault] = None
        with self.lock:
            for rule in self.rules:
                if rule.matches(operation, body):
                    fault = rule.next_fault()
                    chosen = chosen or fault
            record = Try(operation, body, None if chosen is None else chosen.name)
            self.tries.append(record)
        return record, chosen

    def _sign(self, request: Any) -> Optional[Try]:
        """A try is signed: decide its fault now (botocore signs each try once, then sends it in this thread)."""
        if not self._ours(request):
            return None
        record, fault = self._decide(request)
        if fault is not None and fault.stage == "sign":
            try:
                fault(request, _never)
            except BaseException as exc:
                record.outcome = type(exc).__name__
                raise
            raise AssertionError(f"fault {fault.name} of the sign stage raised nothing")
        _pending()[_signed(request)] = (record, fault)
        return record

    def _send(self, request: Any, forward: Forward) -> AWSResponse:
        if not self._ours(request):
            return forward()
        record, fault = self._taken(request)
        assert fault is None or fault.gate is None, f"{fault.name} is for the async driver"

        def forwarded() -> AWSResponse:
            record.forwarded = True
            return forward()

        try:
            answer = forwarded() if fault is None else fault(request, forwarded)
        except BaseException as exc:
            record.outcome = type(exc).__name__
            raise
        record.outcome = str(answer.status_code)
        return answer


    def _taken(self, request: Any) -> Tuple[Try, Optional[Fault]]:
        """The record and fault decided when ``request`` was signed (or, signed elsewhere, decided now)."""
        signed = _pending().pop(_signed(request), None)
        return signed if signed is not None else self._decide(request)

    async def _asend(self, request: Any, forward: Callable[[], Any]) -> Any:
        """:meth:`_send` for aiobotocore's session: the fault's answer, as aiobotocore reads one. An interrupt is
        the task's cancellation while the request is out; a fault that runs the try itself (:func:`delay`,
        :func:`before`) is not for the async driver."""
        import asyncio

        from aiobotocore.awsrequest import AioAWSResponse

        if not self._ours(request):
            return await forward()
        record, fault = self._taken(request)
        assert fault is None or fault.run is None, f"{fault.name} runs the try itself: not over aiobotocore"
        forwarded: Optional[AWSResponse] = None
        if fault is not None and fault.gate is not None:
            try:
                await fault.gate.wait()
            except BaseException as exc:
                record.outcome = type(exc).__name__
                raise
        if fault is None or fault.applied:
            record.forwarded = True
            real = await forward()
            forwarded = AWSResponse(real.url, real.status_code, real.headers, _Raw(await real.content))
            forwarded.content  # noqa: B018 - read
        try:
            answer = forwarded if fault is None else fault(request, lambda: forwarded)
        except Interrupt:
            record.outcome = "CancelledError"
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)  # the cancellation is raised here
            raise AssertionError("the task was not cancelled")  # noqa: B904
        except BaseException as exc:
            record.outcome = type(exc).__name__
            raise
        assert answer is not None
        record.outcome = str(answer.status_code)
        return AioAWSResponse(answer.url, answer.status_code, answer.headers, _AsyncRaw(answer.content))


def _pending() -> Dict[Tuple[str, Any], Tuple[Try, Optional[Fault]]]:
    """The tries this thread signed and has not sent yet, by operation and body (the tasks of one loop share it)."""
    pending = getattr(_local, "pending", None)
    if pending is None:
        pending = _local.pending = {}
    return pending


def _signed(request: Any) -> Tuple[str, Any]:
    return _operation(request), request.body


class _AsyncRaw:
    """A read body as aiobotocore reads one (``await raw.read()``)."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    async def read(self) -> bytes:
        return self.content


def _never() -> AWSResponse:
    raise AssertionError("a fault of the sign stage forwards nothing")


@pytest.fixture
def wire() -> Iterator[Wire]:
    """A :class:`Wire` for the test, removed after it."""
    with Wire() as made:
        yield made


# -- credentials, around a client ----------------------------------------------------------------------------------

class _FailingCredentials:
    """Credentials whose every use fails as a refresh that found none does."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def get_frozen_credentials(self) -> Any:
        raise self.error


@contextlib.contextmanager
def failing_credentials(*models: Any, error: Optional[Exception] = None) -> Iterator[None]:
    """While inside, the botocore clients of ``models`` (PynamoDB models, or botocore clients) fail to sign every
    request (``NoCredentialsError``, or ``error``): nothing is sent. The plan's :func:`no_credentials` does the
    same per request; this one holds the clients' credentials themselves."""
    clients = [m if hasattr(m, "_request_signer") else m._get_connection().connection.client for m in models]
    signers = list({id(c._request_signer): c._request_signer for c in clients}.values())
    kept = [signer._credentials for signer in signers]
    for signer in signers:
        signer._credentials = _FailingCredentials(error or NoCredentialsError())
    try:
        yield
    finally:
        for signer, credentials in zip(signers, kept):
            signer._credentials = credentials


# -- moto's server mode --------------------------------------------------------------------------------------------

@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's server mode (``ThreadedMotoServer``) on a free port of 127.0.0.1, for the test; yields its URL.
    Unlike ``mock_aws``, it answers over HTTP, so its requests reach the wire."""
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
