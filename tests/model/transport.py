"""Faults at the transport, as DynamoDB and the network cause them, for the model-based check.

While :func:`faults` is active, every request a botocore client sends to moto
passes through :class:`Transport` first (moto's in-process server is the
``BotocoreStubber`` that ``mock_aws`` registers on every client's
``before-send`` event; its ``__call__`` is wrapped, so every client, the
library's, the user's ``TransactWrite`` connection and the command line's, is
reached). A fault is armed for the ``n``-th request of one operation and fires
once:

Each kind names DynamoDB's answer (or the network's failure); ``-applied`` means moto applies the request
first, then the answer below replaces moto's (AWS documents a 500 or a 503 as "may or may not have succeeded").

``unsent``
    the request never leaves (``EndpointConnectionError``); botocore sends it again;
``lost`` / ``applied``
    the connection closes with no answer (``ConnectionClosedError``), the request not applied / applied;
``throttle``, ``ptx``
    ``ThrottlingException``, ``ProvisionedThroughputExceededException``, nothing applied;
``500`` / ``500-applied``, ``503`` / ``503-applied``
    ``InternalServerError`` (HTTP 500), ``ServiceUnavailable`` (HTTP 503), not applied / applied;
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
    after moto applied it.

Several faults may be armed at once (:meth:`Transport.arm` takes a list), each for the ``n``-th request of
one operation: ``[("applied", "PutItem", 0), ("409", "PutItem", 1)]`` is a put applied with its answer lost,
then botocore's resend answered with a ``ReplicatedWriteConflictException``.

moto serves one request at a time (a lock), as DynamoDB applies each request atomically; moto
itself has no locks, and a transaction it cancels restores a copy of every table taken before it,
undoing a concurrent thread's writes. Botocore's retry delays are skipped
(tests/simulation/scheduler.py's ``instant_retries``).
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional, Sequence, Tuple
from unittest import mock

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError, EndpointConnectionError
from moto.core.botocore_stubber import BotocoreStubber

from tests.simulation.scheduler import instant_retries

APPLIED = ("applied", "500-applied", "503-applied", "tip-applied", "interrupt-applied")
"""The kinds that apply the request before they answer."""
NOT_APPLIED = ("unsent", "lost", "throttle", "ptx", "500", "503", "409", "tip", "conflict", "tx-throttle", "tx-ptx",
               "tx-validation", "tx-none", "interrupt")
KINDS = APPLIED + NOT_APPLIED
#: (HTTP status, DynamoDB's error code) of each kind that is an error answer.
ANSWERS = {
    "throttle": (400, "ThrottlingException"),
    "ptx": (400, "ProvisionedThroughputExceededException"),
    "500": (500, "InternalServerError"),
    "503": (503, "ServiceUnavailable"),
    "409": (409, "ReplicatedWriteConflictException"),
    "tip": (400, "TransactionInProgressException"),
}
#: The cancellation reason of each ``tx-`` kind (``None``: every item's reason is ``None``).
REASONS = {"tx-throttle": "ThrottlingError", "tx-ptx": "ProvisionedThroughputExceeded",
           "tx-validation": "ValidationError", "tx-none": None, "conflict": "TransactionConflict"}
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def _answer(url: str, code: str, extra: Optional[dict] = None, status: int = 400) -> AWSResponse:
    payload = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code, **(extra or {})}
    return AWSResponse(url, status, {"x-amzn-RequestId": "fault"}, _Body(json.dumps(payload).encode()))


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


Armed = Tuple[str, str, int]


@dataclass
class Transport:
    """The faults armed for the next operation, and what fired."""

    armed: List[Armed] = field(default_factory=list)
    """(kind, operation, n): the ``n``-th request of ``operation`` (0 first; ``"*"``: any write) meets ``kind``."""
    seen: dict = field(default_factory=dict)
    fired: List[Tuple[str, str]] = field(default_factory=list)
    sent: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, faults: Optional[Sequence[Armed]]) -> None:
        with self.lock:
            self.armed = list(faults or ())
            self.seen = {}
            self.fired = []
            self.sent = []

    def disarm(self) -> List[Tuple[str, str]]:
        with self.lock:
            fired, self.armed = self.fired, []
            return fired

    def _take(self, operation: str) -> Optional[str]:
        with self.lock:
            self.sent.append(operation)
            index = self.seen.get(operation, 0)
            self.seen[operation] = index + 1
            for armed in self.armed:
                kind, wanted, n = armed
                if wanted not in (operation, "*") or index != n or (wanted == "*" and operation not in WRITES):
                    continue
                if kind.startswith("tx-") and operation != "TransactWriteItems":
                    continue
                self.armed.remove(armed)
                self.fired.append((kind, operation))
                return kind
            return None

    def handle(self, real: Any, stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        kind = self._take(operation)
        if kind is None:
            return real(stubber, event_name, request, **kwargs)
        body = json.loads(request.body or b"{}")
        if kind == "unsent":
            raise EndpointConnectionError(endpoint_url=request.url)
        if kind in APPLIED:
            real(stubber, event_name, request, **kwargs)
            kind = kind[:-len("-applied")] if kind != "applied" else "lost"
        if kind == "lost":
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind == "interrupt":
            raise KeyboardInterrupt
        if kind in ANSWERS:
            status, code = ANSWERS[kind]
            return _answer(request.url, code, status=status)
        if operation == "TransactWriteItems":
            return _cancelled(request.url, body, REASONS[kind])
        return _answer(request.url, "TransactionConflictException")


@contextlib.contextmanager
def faults() -> Iterator[Transport]:
    """Route every request to moto through a :class:`Transport` for the duration."""
    transport = Transport()
    real = BotocoreStubber.__call__

    atomic = threading.Lock()

    def serve(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        with atomic:  # one request at a time, as DynamoDB applies each atomically (moto has no locks)
            return real(stubber, event_name, request, **kwargs)

    def call(stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        if not stubber.enabled:
            return real(stubber, event_name, request, **kwargs)
        return transport.handle(serve, stubber, event_name, request, **kwargs)

    with mock.patch.object(BotocoreStubber, "__call__", call), instant_retries():
        yield transport
