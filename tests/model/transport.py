"""Faults at the transport, as DynamoDB, a proxy and the network cause them, for the model-based check.

While :func:`faults` is active, every request a botocore client sends to moto
passes through :class:`Transport` first (moto's in-process server is the
``BotocoreStubber`` that ``mock_aws`` registers on every client's
``before-send`` event; its ``__call__`` is wrapped, so every client, the
library's, the user's ``TransactWrite`` connection and the command line's, is
reached). Each try is also met where botocore signs it (``RequestSigner.sign``,
before anything is sent), the library's sleeps (``_budget.Clock.sleep``) and
its ``race_lost`` signal are steps a Ctrl-C may hit, and a user's
``pre_dynamodb_send`` receiver may send a request of its own first
(:attr:`Transport.peeking`). A fault is armed for the ``n``-th request of one
operation and fires once.

Each kind names the answer (or the failure) the try gets; ``-applied`` means moto applies the request first, then
the answer below replaces moto's (AWS documents a 500 or a 503 as "may or may not have succeeded", and a proxy's
page or a damaged answer may come after the server applied it).

``unsent``
    the request never leaves (``EndpointConnectionError``); botocore sends it again;
``creds``
    the credentials fail while the try is signed (``NoCredentialsError``): nothing left, nothing applied, and
    botocore does not send it again;
``lost`` / ``applied``
    the connection closes with no answer (``ConnectionClosedError``), the request not applied / applied;
``throttle``, ``ptx``, ``request-limit``
    ``ThrottlingException``, ``ProvisionedThroughputExceededException``, ``RequestLimitExceeded``, nothing applied;
``500`` / ``500-applied``, ``503`` / ``503-applied``
    ``InternalServerError`` (HTTP 500), ``ServiceUnavailable`` (HTTP 503), not applied / applied;
``500-validation`` / ``500-validation-applied``
    an HTTP 500 whose JSON body names ``ValidationException`` (a gateway relaying another answer): a 5xx, whatever
    its body, may have applied;
``refused:<Code>``
    a documented 4xx code that DynamoDB sends for a request it did not apply (:data:`REFUSALS`);
``unclear:<Code>`` / ``unclear:<Code>-applied``
    a 4xx code outside those (:data:`UNCLEAR`): nothing proves that nothing was written;
``page-<status>-<html|empty>`` / ``...-applied``
    a proxy's or a load balancer's answer: HTTP 403, 500, 502 or 503 with an HTML page or no body, no JSON
    (botocore reports the status as the error code);
``crc``
    moto applies the request and its real answer (a 200) comes back with a wrong ``x-amz-crc32``: botocore's
    standard retry mode sends it again while tries are left (on the last it takes the answer as it came);
``409``
    ``ReplicatedWriteConflictException`` (HTTP 409, an MRSC global table), nothing applied;
``tip`` / ``tip-applied``
    ``TransactionInProgressException`` (a transaction with the same token still in flight), not applied /
    applied (the first try went through);
``conflict``
    a ``TransactWriteItems`` cancelled with ``TransactionConflict`` on one item and ``None`` on the
    others; any other write: ``TransactionConflictException``; nothing applied;
``tx-throttle``, ``tx-ptx``, ``tx-validation``, ``tx-none``
    a ``TransactWriteItems`` cancelled with ``ThrottlingError``, ``ProvisionedThroughputExceeded``,
    ``ValidationError`` on one item (``None`` on the others), or ``None`` on every item; nothing applied
    (these meet only ``TransactWriteItems``);
``interrupt`` / ``interrupt-applied``
    ``KeyboardInterrupt`` raised in the sending thread (Ctrl-C while the request is in flight), before /
    after moto applied it; on a step that sends nothing (``Sleep``, ``Signal``) the interrupt comes there; in
    an awaited call (the async driver) the interrupt is the task's cancellation, ``asyncio.CancelledError``;
``rival``
    before the request is sent, another process saves an item (:attr:`Transport.rival`, set by the rule): a
    gapless save loses its race, and after two losses queues (the queue's ticket, skip and give-back requests).

The operation a fault is armed for is a DynamoDB operation, ``"*"`` (any write), or one of the steps
:data:`PSEUDO` names: ``Queue`` (an UpdateItem of the counter's queue: a ticket, a skip, a give back),
``Resend`` (a write whose very request was sent before in the step: botocore's resend, or the library's probe
of a write in doubt, or its settling of an earlier one), ``Sleep`` (the library's sleeps: a probe's backoff, the
queue's waits) and ``Signal`` (the library's ``race_lost`` signal, sent while a save waits its turn).

Several faults may be armed at once (:meth:`Transport.arm` takes a list), each for the ``n``-th request of one
operation: ``[("applied", "PutItem", 0), ("409", "PutItem", 1)]`` is a put applied with its answer lost,
then botocore's resend answered with a ``ReplicatedWriteConflictException``.

moto serves one request at a time (a lock), as DynamoDB applies each request atomically; moto
itself has no locks, and a transaction it cancels restores a copy of every table taken before it,
undoing a concurrent thread's writes. Botocore's retry delays are skipped
(tests/simulation/scheduler.py's ``instant_retries``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple
from unittest import mock

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError, NoCredentialsError
from botocore.signers import RequestSigner
from moto.core.botocore_stubber import BotocoreStubber
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import _bridge, _budget
from pynamodb_autoinc.signals import race_lost
from tests.simulation.scheduler import instant_retries

#: The documented 4xx codes DynamoDB sends for a request it did not apply, with their HTTP status.
REFUSALS: Dict[str, int] = {
    "ValidationException": 400,
    "AccessDeniedException": 400,
    "ResourceNotFoundException": 400,
    "ItemCollectionSizeLimitExceededException": 400,
    "LimitExceededException": 400,
    "ExpiredTokenException": 400,
    "UnrecognizedClientException": 400,
    "InvalidSignatureException": 400,
    "MissingAuthenticationTokenException": 403,
}
#: Codes DynamoDB names whose meaning for a write is not "nothing applied" (a legacy code; a token reused with
#: other parameters): the library must find out, as for any answer it cannot read.
UNCLEAR: Dict[str, int] = {"IdempotentParameterMismatchException": 400, "DuplicateItemException": 400}
#: (HTTP status, DynamoDB's error code) of each kind that is a JSON error answer.
ANSWERS: Dict[str, Tuple[int, str]] = {
    "throttle": (400, "ThrottlingException"),
    "ptx": (400, "ProvisionedThroughputExceededException"),
    "request-limit": (400, "RequestLimitExceeded"),
    "500": (500, "InternalServerError"),
    "503": (503, "ServiceUnavailable"),
    "500-validation": (500, "ValidationException"),
    "409": (409, "ReplicatedWriteConflictException"),
    "tip": (400, "TransactionInProgressException"),
    **{f"refused:{code}": (status, code) for code, status in REFUSALS.items()},
    **{f"unclear:{code}": (status, code) for code, status in UNCLEAR.items()},
}
PAGE_STATUSES = (403, 500, 502, 503)
PAGE_BODIES: Dict[str, bytes] = {
    "html": b"<html>\r\n<head><title>{status}</title></head>\r\n<body>\r\n<center><h1>{status}</h1></center>\r\n"
            b"</body>\r\n</html>\r\n",
    "empty": b"",
}
PAGES = tuple(f"page-{status}-{body}" for status in PAGE_STATUSES for body in PAGE_BODIES)

#: The kinds by family: a fault is drawn family first (:data:`FAMILIES`), so that the many codes and pages do not
#: crowd out the rest.
FAMILIES: Dict[str, Tuple[str, ...]] = {
    "network": ("unsent", "lost", "applied", "creds"),
    "server": ("500", "500-applied", "503", "503-applied", "500-validation", "500-validation-applied"),
    "throttled": ("throttle", "ptx", "request-limit"),
    "refused": tuple(f"refused:{code}" for code in REFUSALS),
    "unclear": tuple(f"unclear:{code}{applied}" for code in UNCLEAR for applied in ("", "-applied")),
    "page": tuple(f"{page}{applied}" for page in PAGES for applied in ("", "-applied")),
    "crc": ("crc",),
    "busy": ("409", "tip", "tip-applied", "conflict"),
    "cancelled": ("tx-throttle", "tx-ptx", "tx-validation", "tx-none"),
    "interrupt": ("interrupt", "interrupt-applied"),
}
KINDS = tuple(kind for family in FAMILIES.values() for kind in family) + ("rival",)
APPLIED = tuple(kind for kind in KINDS if kind == "applied" or kind == "crc" or kind.endswith("-applied"))
"""The kinds that apply the request before they answer."""
NOT_APPLIED = tuple(kind for kind in KINDS if kind not in APPLIED)
#: The cancellation reason of each ``tx-`` kind (``None``: every item's reason is ``None``).
REASONS = {"tx-throttle": "ThrottlingError", "tx-ptx": "ProvisionedThroughputExceeded",
           "tx-validation": "ValidationError", "tx-none": None, "conflict": "TransactionConflict"}
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
#: The steps a fault may be armed for besides DynamoDB's operations (see the module's docstring).
PSEUDO = ("Queue", "Resend", "Sleep", "Signal")
#: The steps that send nothing: only an interrupt meets them.
SILENT = ("Sleep", "Signal")



def _interrupt() -> BaseException:
    """Ctrl-C, or in an awaited call its task's cancellation."""
    if _bridge.awaiting():
        import asyncio

        return asyncio.CancelledError()
    return KeyboardInterrupt()

class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def _response(url: str, status: int, body: bytes, headers: Dict[str, str]) -> AWSResponse:
    return AWSResponse(url, status, {"x-amzn-RequestId": "fault", "Content-Length": str(len(body)), **headers},
                       _Body(body))


def _answer(url: str, code: str, extra: Optional[dict] = None, status: int = 400) -> AWSResponse:
    payload = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code, **(extra or {})}
    body = json.dumps(payload).encode()
    return _response(url, status, body, {"Content-Type": "application/x-amz-json-1.0",
                                         "x-amz-crc32": str(zlib.crc32(body) & 0xFFFFFFFF)})


def _page(url: str, kind: str) -> AWSResponse:
    """A proxy's answer: ``page-<status>-<body>``, an HTML page or nothing, no JSON."""
    _, status, body = kind.split("-")
    content = PAGE_BODIES[body].replace(b"{status}", status.encode())
    return _response(url, int(status), content, {"Server": "awselb/2.0", **(
        {"Content-Type": "text/html"} if content else {})})


def _damaged(answer: AWSResponse) -> AWSResponse:
    """``answer`` as it came, but with an ``x-amz-crc32`` that its body does not match."""
    content = answer.content
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in ("x-amz-crc32", "content-length")}
    headers["x-amz-crc32"] = str((zlib.crc32(content) + 1) & 0xFFFFFFFF)
    return _response(answer.url, answer.status_code, content, headers)


def _cancelled(url: str, body: dict, reason: Optional[str]) -> AWSResponse:
    """A TransactWriteItems cancelled as DynamoDB answers: one reason per item, ``None`` for those that did not
    fail, ``reason`` on the last item (the item a concurrent writer touches last is as likely as any)."""
    count = len(body.get("TransactItems", [])) or 1
    reasons = [{"Code": "None"} for _ in range(count)]
    if reason is not None:
        reasons[-1] = {"Code": reason, "Message": reason}
    codes = ", ".join(r["Code"] for r in reasons)
    return _answer(url, "TransactionCanceledException", {
        "message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        "CancellationReasons": reasons,
    })


def _queue_request(operation: str, body: dict) -> bool:
    """Whether a request is one of the queue's own (a ticket, a skip, a give back): an UpdateItem of the counter's
    queue numbers, answered with the whole item."""
    names = set(body.get("ExpressionAttributeNames", {}).values())
    return operation == "UpdateItem" and bool(names & {"NextTicket", "NextServed"}) and \
        body.get("ReturnValues") == "ALL_NEW"


Armed = Tuple[str, str, int]


@dataclass
class Transport:
    """The faults armed for the next operation, and what fired."""

    armed: List[Armed] = field(default_factory=list)
    """(kind, operation, n): the ``n``-th request of ``operation`` (0 first; ``"*"``: any write; or a step of
    :data:`PSEUDO`) meets ``kind``."""
    seen: dict = field(default_factory=dict)
    fired: List[Tuple[str, str]] = field(default_factory=list)
    """(kind, what it met: the operation armed for, or the operation sent when armed for ``"*"``)."""
    sent: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    rival: Optional[Callable[[], Any]] = None
    """What a ``rival`` fault runs (another process's save), set by the rule that arms it."""
    peeking: bool = False
    """A user's ``pre_dynamodb_send`` receiver sends a request of its own (DescribeTable, on the same client) before
    each request the library sends in a step."""
    bodies: Set[Tuple[str, str]] = field(default_factory=set)
    local: threading.local = field(default_factory=threading.local)
    active: bool = False
    hold: float = 0.0
    """Seconds the step's first TransactWriteItems waits before it is served, so that other threads saving then
    queue behind it (their saves go out together, a group commit of their own); 0: none waits."""

    def arm(self, faults: Optional[Sequence[Armed]]) -> None:
        with self.lock:
            self.armed = list(faults or ())
            self.seen = {}
            self.fired = []
            self.sent = []
            self.bodies = set()
            self.active = True

    def disarm(self) -> List[Tuple[str, str]]:
        with self.lock:
            fired, self.armed = self.fired, []
            self.active = False
            self.rival = None
            self.hold = 0.0
            return fired

    @property
    def bypassed(self) -> bool:
        return bool(getattr(self.local, "bypass", 0))

    @contextlib.contextmanager
    def bypass(self) -> Iterator[None]:
        """Requests sent inside the block pass unseen (a rival's, a user's receiver's)."""
        self.local.bypass = getattr(self.local, "bypass", 0) + 1
        try:
            yield
        finally:
            self.local.bypass -= 1

    def _take(self, names: Sequence[str], *, count: bool = True, only: Optional[Callable[[str], bool]] = None,
              record: Optional[str] = None) -> Optional[str]:
        """The kind armed for this request, which answers to each of ``names`` (its operation first), if any;
        ``count``: it is one more request of each name; ``only``: the kinds that may fire here."""
        with self.lock:
            if record is not None:
                self.sent.append(record)
            indexes = {name: self.seen.get(name, 0) for name in names}
            if count:
                for name in names:
                    self.seen[name] = indexes[name] + 1
            operation = names[0]
            for armed in self.armed:
                kind, wanted, n = armed
                if wanted == "*":
                    if operation not in WRITES or indexes[operation] != n:
                        continue
                elif wanted not in indexes or indexes[wanted] != n:
                    continue
                if only is not None and not only(kind):
                    continue
                if kind.startswith("tx-") and operation != "TransactWriteItems":
                    continue
                if kind == "rival" and (self.rival is None or operation not in ("PutItem", "TransactWriteItems")):
                    continue
                if kind == "creds":
                    continue  # met where the try is signed (:meth:`sign`)
                self.armed.remove(armed)
                self.fired.append((kind, operation if wanted == "*" else wanted))
                return kind
            return None

    def names(self, operation: str, body: dict, raw: Any) -> List[str]:
        names = [operation]
        if _queue_request(operation, body):
            names.append("Queue")
        if operation in WRITES:
            mark = (operation, hashlib.sha1(raw if isinstance(raw, bytes) else str(raw).encode()).hexdigest())
            with self.lock:
                if mark in self.bodies:
                    names.append("Resend")
                self.bodies.add(mark)
        return names

    def sign(self, operation: str) -> None:
        """A try is being signed: a ``creds`` fault armed for it fires here (nothing is sent; it counts as one
        request of its operation)."""
        if self.bypassed or not self.active:
            return
        with self.lock:
            index = self.seen.get(operation, 0)
            for armed in self.armed:
                kind, wanted, n = armed
                if kind != "creds" or index != n or not (
                        wanted == operation or (wanted == "*" and operation in WRITES)):
                    continue
                self.armed.remove(armed)
                self.fired.append((kind, operation if wanted == "*" else wanted))
                self.seen[operation] = index + 1
                self.sent.append(operation)
                raise NoCredentialsError()

    def step(self, name: str) -> None:
        """A step that sends nothing (``Sleep``, ``Signal``): an interrupt armed for it comes now."""
        if self.bypassed or not self.active:
            return
        if self._take([name], only=lambda kind: kind.startswith("interrupt")) is not None:
            raise _interrupt()

    def handle(self, real: Any, stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if self.bypassed:
            return real(stubber, event_name, request, **kwargs)
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        body = json.loads(request.body or b"{}")
        if self.hold and operation == "TransactWriteItems":
            with self.lock:
                hold, self.hold = self.hold, 0.0
            time.sleep(hold)
        kind = self._take(self.names(operation, body, request.body), record=operation)
        if kind is None:
            return real(stubber, event_name, request, **kwargs)
        if kind == "rival":
            assert self.rival is not None
            with self.bypass():
                self.rival()
            return real(stubber, event_name, request, **kwargs)
        if kind == "unsent":
            raise EndpointConnectionError(endpoint_url=request.url)
        if kind == "crc":
            return _damaged(real(stubber, event_name, request, **kwargs))
        if kind in APPLIED:
            real(stubber, event_name, request, **kwargs)
            kind = kind[:-len("-applied")] if kind != "applied" else "lost"
        if kind == "lost":
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind == "interrupt":
            raise _interrupt()
        if kind.startswith("page-"):
            return _page(request.url, kind)
        if kind in ANSWERS:
            status, code = ANSWERS[kind]
            return _answer(request.url, code, status=status)
        if operation == "TransactWriteItems":
            return _cancelled(request.url, body, REASONS[kind])
        return _answer(request.url, "TransactionConflictException")

    def peek(self, sender: Any, operation_name: str, table_name: Optional[str]) -> None:
        """A user's ``pre_dynamodb_send`` receiver: a DescribeTable of its own on the sending client first."""
        if not (self.peeking and self.active) or self.bypassed or not table_name or operation_name == "DescribeTable":
            return
        with self.bypass():
            sender.client.describe_table(TableName=table_name)


@contextlib.contextmanager
def faults() -> Iterator[Transport]:
    """Route every request to moto through a :class:`Transport` for the duration."""
    transport = Transport()
    real = BotocoreStubber.__call__
    real_sign = RequestSigner.sign
    real_sleep = _budget.Clock.sleep

    atomic = threading.Lock()

    def serve(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        with atomic:  # one request at a time, as DynamoDB applies each atomically (moto has no locks)
            return real(stubber, event_name, request, **kwargs)

    def call(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if not stubber.enabled:
            return real(stubber, event_name, request, **kwargs)
        return transport.handle(serve, stubber, event_name, request, **kwargs)

    def sign(signer: Any, operation_name: str, *args: Any, **kwargs: Any) -> Any:
        transport.sign(operation_name)
        return real_sign(signer, operation_name, *args, **kwargs)

    def sleep(clock: Any, seconds: float) -> None:
        transport.step("Sleep")
        real_sleep(clock, seconds)

    def signalled(sender: Any, **_: Any) -> None:
        transport.step("Signal")

    def peek(sender: Any, operation_name: str = "", table_name: Optional[str] = None, **_: Any) -> None:
        transport.peek(sender, operation_name, table_name)

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(BotocoreStubber, "__call__", call))
        stack.enter_context(mock.patch.object(RequestSigner, "sign", sign))
        stack.enter_context(mock.patch.object(_budget.Clock, "sleep", sleep))
        stack.enter_context(race_lost.connected_to(signalled))
        stack.enter_context(pre_dynamodb_send.connected_to(peek))
        stack.enter_context(instant_retries())
        yield transport
