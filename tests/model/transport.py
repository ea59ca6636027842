"""Faults at the transport, as DynamoDB and the network cause them, for the model-based check.

While :func:`faults` is active, every request a botocore client sends to moto
passes through :class:`Transport` first (moto's in-process server is the
``BotocoreStubber`` that ``mock_aws`` registers on every client's
``before-send`` event; its ``__call__`` is wrapped, so every client, the
library's, the user's ``TransactWrite`` connection and the command line's, is
reached). A fault is armed for the ``n``-th request of one operation and fires
once:

``lost``
    the request never arrives (``ConnectionClosedError``); botocore sends it again;
``applied``
    moto applies it, then the answer is lost (``ConnectionClosedError``); botocore sends it again;
``throttle``
    ``ThrottlingException``, nothing applied; botocore sends it again;
``tx-throttle``
    a ``TransactWriteItems`` cancelled with the reason ``ThrottlingError`` on one item and ``None``
    on the others, nothing applied (DynamoDB's answer to a throttled transaction);
``conflict``
    a ``TransactWriteItems`` cancelled with ``TransactionConflict`` on one item and ``None`` on the
    others; any other write: ``TransactionConflictException``; nothing applied;
``interrupt``
    ``KeyboardInterrupt`` raised in the sending thread (Ctrl-C while the request is in flight), nothing applied.

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
from typing import Any, Iterator, List, Optional, Tuple
from unittest import mock

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError
from moto.core.botocore_stubber import BotocoreStubber

from tests.simulation.scheduler import instant_retries

KINDS = ("lost", "applied", "throttle", "tx-throttle", "conflict")
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def _answer(url: str, code: str, extra: Optional[dict] = None) -> AWSResponse:
    payload = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code, **(extra or {})}
    return AWSResponse(url, 400, {"x-amzn-RequestId": "fault"}, _Body(json.dumps(payload).encode()))


def _cancelled(url: str, body: dict, reason: str) -> AWSResponse:
    """A TransactWriteItems cancelled as DynamoDB answers: one reason per item, ``None`` for those that did not
    fail, ``reason`` on the last item (the item a concurrent writer touches last is as likely as any)."""
    count = len(body.get("TransactItems", [])) or 1
    reasons = [{"Code": "None"} for _ in range(count)]
    reasons[-1] = {"Code": reason, "Message": reason}
    codes = ", ".join(r["Code"] for r in reasons)
    return _answer(url, "TransactionCanceledException", {
        "message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
        "CancellationReasons": reasons,
    })


@dataclass
class Transport:
    """The fault armed for the next operation, and what fired."""

    armed: Optional[Tuple[str, str, int]] = None
    """(kind, operation, n): the ``n``-th request of ``operation`` (0 first) meets ``kind``."""
    seen: dict = field(default_factory=dict)
    fired: List[Tuple[str, str]] = field(default_factory=list)
    sent: List[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, kind: Optional[str], operation: str = "", n: int = 0) -> None:
        with self.lock:
            self.armed = None if kind is None else (kind, operation, n)
            self.seen = {}
            self.fired = []
            self.sent = []

    def disarm(self) -> List[Tuple[str, str]]:
        with self.lock:
            fired, self.armed = self.fired, None
            return fired

    def _take(self, operation: str) -> Optional[str]:
        with self.lock:
            self.sent.append(operation)
            index = self.seen.get(operation, 0)
            self.seen[operation] = index + 1
            if self.armed is None:
                return None
            kind, wanted, n = self.armed
            if wanted not in (operation, "*") or index != n or (wanted == "*" and operation not in WRITES):
                return None
            self.armed = None
            self.fired.append((kind, operation))
            return kind

    def handle(self, real: Any, stubber: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).split(".")[-1]
        kind = self._take(operation)
        if kind is None:
            return real(stubber, event_name, request, **kwargs)
        body = json.loads(request.body or b"{}")
        if kind == "lost":
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind == "applied":
            real(stubber, event_name, request, **kwargs)
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind == "throttle":
            return _answer(request.url, "ThrottlingException")
        if kind == "interrupt":
            raise KeyboardInterrupt
        if operation == "TransactWriteItems":
            return _cancelled(request.url, body, "ThrottlingError" if kind == "tx-throttle" else "TransactionConflict")
        if kind == "tx-throttle":
            return _answer(request.url, "ThrottlingException")
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
