"""One DynamoDB request at a time, in the order the explorer picks, with faults at every request boundary.

The clients are threads that call the library's real write paths. They
are stopped *below* the library, in botocore: :class:`Interposer` is the first
``before-send.dynamodb`` handler of the botocore clients the model, its
counter and the user's own connection (for ``TransactWrite``) use, and it is
the only way those clients reach moto's in-process
DynamoDB (moto's own ``before-send`` handler is taken off those clients while
the simulation runs, and called by the interposer instead). A client that
reaches a request boundary blocks in the hook until :class:`Scheduler` grants
it a step, together with what happens to that request:

``none``
    moto applies it and the client gets the answer;
``crash``
    the process dies before the request is sent: :class:`SimCrash` unwinds the
    client's thread and it sends nothing more;
``drop``
    moto applies it, then the connection is closed before the answer arrives
    (``ConnectionClosedError``); botocore's retry sends the same request again;
``throttle``
    a ``ThrottlingException`` answer, nothing applied; botocore retries;
``conflict``
    (``TransactWriteItems`` only) a ``TransactionCanceledException`` whose
    reason is ``TransactionConflict``, nothing applied, as DynamoDB answers a
    transaction that met a concurrent write of one of its items. Only on a
    first attempt: botocore resends a transaction with its
    ``ClientRequestToken``, and DynamoDB answers a resend of an applied
    transaction from that token, never with a conflict. (moto does not keep
    tokens; ``tests/moto_tokens.py`` makes it answer as DynamoDB does.)

Only the granted thread runs; every other client is blocked in the hook or
finished, so moto (which has no request locking) only ever sees one request at
a time, and a run is a deterministic function of its choices.

The library keeps per-process memory in one object, ``pynamodb_autoinc._state.state``
(the counter value a gapless process last wrote, the blocks it reserved, its
places in queues). Each client stands for a separate process, so
:func:`separate_process_state` swaps that object for a thread-local one of the
same class for the duration of a run: every client thread then starts with an empty memory of its own, as a new
process does, and forgets it when it dies. The library's code is unchanged; the
alternative, one memory shared by all clients, would model one process with
several threads and could not even be scheduled: a block reservation holds
its memory's lock across its counter request, so a second client would block on
that lock rather than at a request boundary.

Botocore's retry sleeps (``time.sleep`` in ``botocore.endpoint``) are skipped
while the simulation runs (:func:`instant_retries`): simulated time is the
schedule, and the retried request is a new boundary like any other.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Type

import botocore.endpoint
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError
from moto.core.models import botocore_stubber

from pynamodb_autoinc import _budget, _contention, _state
from pynamodb_autoinc._state import ProcessState

NONE = "none"
CRASH = "crash"
DROP = "drop"
THROTTLE = "throttle"
CONFLICT = "conflict"
FAULTS = (CRASH, DROP, THROTTLE, CONFLICT)

STARTING, RUNNING, WAITING, DONE = "starting", "running", "waiting", "done"


class SimCrash(BaseException):
    """The simulated process died before sending a request (a BaseException: nothing may catch it)."""


class SimAbort(BaseException):
    """The scheduler gave up on the run; a blocked client unwinds with this."""


class StepTimeout(Exception):
    """A client did not reach its next request boundary, or its end, in time."""


#: The ID an instance holds is not known: the item was not written through a model instance.
UNKNOWN: Any = type("Unknown", (), {"__repr__": lambda self: "UNKNOWN"})()


@dataclass
class Outcome:
    """What became of one item an operation wrote: ``ok``, ``error`` or ``crashed``.

    ``value`` is the ID the instance holds once the operation has returned or
    raised (:data:`UNKNOWN` when the harness's own allocator gave no instance).
    ``new``: the instance had no ID and was to get one from the library (an
    explicit ID is the user's). ``op`` is the tag of the operation it belongs to.
    """

    tag: str
    status: str
    value: Any = None
    error: Optional[BaseException] = None
    new: bool = True
    op: str = ""


@dataclass(frozen=True)
class Expect:
    """How an operation may end besides success, whatever the schedule.

    ``must_fail``: it never succeeds, and with no fault on its requests it
    ends in one of these errors (a transaction cancelled by design, the
    user's own exception). ``excused``: errors that may end it even when no
    request of it met a fault (losing a race, an exhausted sequence).
    ``foreign``: errors that are not the library's but the user's own, which
    must come through unchanged.
    """

    must_fail: Tuple[Type[BaseException], ...] = ()
    excused: Tuple[Type[BaseException], ...] = ()
    foreign: Tuple[Type[BaseException], ...] = ()


@dataclass
class Report:
    """What one operation of a client reported, and what became of each item it wrote.

    ``atomic`` lists groups of tags (items' tags, or ``extra``, the key of an
    unrelated item put alongside them) that are written in one transaction:
    each group is stored whole or not at all.
    """

    tag: str
    save: int
    kind: str
    status: str
    items: List[Outcome]
    error: Optional[BaseException] = None
    expect: Expect = Expect()
    extra: Optional[str] = None
    atomic: Tuple[Tuple[str, ...], ...] = ()


@dataclass
class Client:
    """One simulated process: its thread, where it stands, and what its operations reported."""

    index: int
    state: str = STARTING
    operation: Optional[str] = None
    resend: bool = False
    grant: Optional[str] = None
    save: int = -1
    crashed: bool = False
    reports: List[Report] = field(default_factory=list)
    faults: Dict[int, List[str]] = field(default_factory=dict)
    thread: Optional[threading.Thread] = None

    def tag(self, save: int) -> str:
        return f"c{self.index}s{save}"

    @property
    def outcomes(self) -> List[Outcome]:
        """The outcome of every item its operations wrote, in order."""
        return [item for report in self.reports for item in report.items]


class Scheduler:
    """Lets exactly one client thread run at a time, each up to its next request boundary."""

    def __init__(self, step_timeout: float) -> None:
        self.cond = threading.Condition()
        self.local = threading.local()
        self.step_timeout = step_timeout
        self.aborted = False

    def current(self) -> Optional[Client]:
        """The simulated client running on this thread, if any."""
        client: Optional[Client] = getattr(self.local, "client", None)
        return client

    def attach(self, client: Client) -> None:
        self.local.client = client

    # -- client side ----------------------------------------------------------

    def boundary(self, client: Client, operation: str, resend: bool) -> str:
        """Block the calling client at a request boundary until it is granted; return the fault to apply."""
        with self.cond:
            if client.crashed:
                raise SimCrash()  # a dead process sends nothing
            client.state, client.operation, client.resend = WAITING, operation, resend
            self.cond.notify_all()
            while client.grant is None and not self.aborted:
                self.cond.wait(1.0)
            if self.aborted:
                raise SimAbort()
            fault, client.grant = str(client.grant), None
            return fault

    def finish(self, client: Client) -> None:
        with self.cond:
            client.state, client.operation = DONE, None
            self.cond.notify_all()

    # -- scheduler side ---------------------------------------------------------

    def grant(self, client: Client, fault: str) -> None:
        """Let ``client`` send its request (with ``fault``) and run up to its next boundary."""
        with self.cond:
            assert client.state == WAITING, client
            client.state, client.grant = RUNNING, fault
            self.cond.notify_all()

    def settle(self, client: Client) -> None:
        """Wait until ``client`` is blocked at its next boundary or finished."""
        deadline = time.monotonic() + self.step_timeout
        with self.cond:
            while client.state not in (WAITING, DONE):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StepTimeout(f"client {client.index} did not reach a request boundary within "
                                      f"{self.step_timeout}s (state {client.state}, save {client.save})")
                self.cond.wait(remaining)

    def abort(self) -> None:
        with self.cond:
            self.aborted = True
            self.cond.notify_all()


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def _answer(request: Any, status: int, payload: Dict[str, Any]) -> AWSResponse:
    return AWSResponse(request.url, status, {"x-amzn-RequestId": "simulated"}, _Body(json.dumps(payload).encode()))


def _header(request: Any, name: str) -> str:
    value = request.headers.get(name, b"")
    return str(value.decode() if isinstance(value, bytes) else value)


def operation_of(request: Any) -> str:
    return _header(request, "X-Amz-Target").split(".")[-1]


def is_resend(request: Any) -> bool:
    """Whether botocore is sending this request again (its ``amz-sdk-request`` header says ``attempt=2`` or more)."""
    match = re.search(r"attempt=(\d+)", _header(request, "amz-sdk-request"))
    return match is not None and int(match.group(1)) > 1


class Interposer:
    """The ``before-send.dynamodb`` hook of the simulated clients' botocore clients: the scheduler's gate.

    Requests from threads that are not simulated clients (setting up, reading
    the final state) pass straight to moto.
    """

    #: The interposer holding each botocore client (by id): one at a time, or requests would be applied twice.
    active: Dict[int, Interposer] = {}

    def __init__(self, botocore_clients: Sequence[Any]) -> None:
        self.clients = list({id(c): c for c in botocore_clients}.values())
        self.scheduler: Optional[Scheduler] = None
        if any(id(c) in Interposer.active for c in self.clients):
            raise RuntimeError("a botocore client is already interposed: close the other World first")
        for client in self.clients:
            Interposer.active[id(client)] = self
            client.meta.events.unregister("before-send", botocore_stubber)
            client.meta.events.register_first("before-send.dynamodb", self.hook)

    def refill_retry_quotas(self) -> None:
        """Give each botocore client's retry quota its full capacity again (a run is a set of new processes).

        Botocore's standard retry mode keeps a per-client token bucket: every
        retry takes from it, successes give back, and an empty bucket stops
        retrying. Left alone it would carry faults from one run into the next
        and make runs depend on their order.
        """
        for client in self.clients:
            registered = client.meta.events._emitter._unique_id_handlers.get("retry-config-dynamodb")
            handler = registered["handler"] if registered else None
            quota = getattr(getattr(getattr(handler, "__self__", None), "_retry_quota", None), "_quota", None)
            if quota is None:
                raise RuntimeError("botocore's standard retry handler was not found; has botocore changed?")
            quota._available_capacity = quota._max_capacity

    def close(self) -> None:
        """Give the botocore clients back to moto's own handler."""
        for client in self.clients:
            if Interposer.active.get(id(client)) is self:
                del Interposer.active[id(client)]
                client.meta.events.unregister("before-send.dynamodb", self.hook)
                client.meta.events.register("before-send", botocore_stubber)

    @staticmethod
    def apply(event_name: str, request: Any) -> Any:
        """Have moto apply the request, and return its answer."""
        return botocore_stubber(event_name, request)

    def hook(self, request: Any, event_name: str, **_: Any) -> Any:
        scheduler = self.scheduler
        client = scheduler.current() if scheduler is not None else None
        if scheduler is None or client is None:
            return self.apply(event_name, request)
        operation = operation_of(request)
        fault = scheduler.boundary(client, operation, is_resend(request))
        if fault != NONE:
            client.faults.setdefault(client.save, []).append(f"{fault}:{operation}")
        if fault == CRASH:
            client.crashed = True
            raise SimCrash()
        if fault == THROTTLE:
            return _answer(request, 400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                          "message": "Rate of requests exceeds the allowed throughput."})
        if fault == CONFLICT:
            items = json.loads(request.body or b"{}").get("TransactItems", [])
            reasons: List[Dict[str, str]] = [{"Code": "None"} for _ in items]
            reasons[-1] = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
            return _answer(request, 400, {
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                           "[" + ", ".join(r["Code"] for r in reasons) + "]",
                "CancellationReasons": reasons,
            })
        if fault == DROP:
            self.apply(event_name, request)
            raise ConnectionClosedError(endpoint_url=request.url)
        return self.apply(event_name, request)


def faults_for(operation: Optional[str], resend: bool) -> Sequence[str]:
    """The faults that can hit a request of ``operation`` (a resend, or a first attempt) at its boundary."""
    return FAULTS if operation == "TransactWriteItems" and not resend else (CRASH, DROP, THROTTLE)


# -- per-client process state ---------------------------------------------------------

#: Parts of the process state that all clients share: what was learned of the tables (DescribeTable), which
#: never changes within a run. Describing them again in every client would multiply the schedules to explore
#: without trying anything new.
SHARED_PARTS = ("tables",)


class ClientProcessState(threading.local, ProcessState):
    """The library's process state, one per thread: each simulated client is a process of its own."""

    def __init__(self, common: ProcessState) -> None:
        ProcessState.__init__(self)
        self.common = common

    def part(self, name: str, make: Any) -> Any:
        if name in SHARED_PARTS:
            return self.common.part(name, make)
        return ProcessState.part(self, name, make)


@contextlib.contextmanager
def separate_process_state() -> Iterator[None]:
    """Give every thread its own process state for the duration (see the module docstring)."""
    saved = _state.state
    _state.state = ClientProcessState(saved)
    try:
        yield
    finally:
        _state.state = saved


class VirtualClock(_budget.Clock):
    """The library's clock in a simulation: a sleep moves simulated time on at once.

    Only the granted client runs, so simulated time is the sum of the sleeps
    taken so far: a client waiting for a dead writer's queue ticket sees the
    turn pass after the sleeps it takes, not after real seconds.
    """

    def __init__(self) -> None:
        self.elapsed = 0.0
        self.lock = threading.Lock()

    def monotonic(self) -> float:
        return self.elapsed

    def sleep(self, seconds: float) -> None:
        # A sleep takes at least a tenth of a queue turn, so that a client polling a queue reaches the
        # turn's end in a few requests rather than many (and never spins with time standing still).
        with self.lock:
            self.elapsed += max(seconds, _contention.TURN / 10)


@contextlib.contextmanager
def virtual_clock() -> Iterator[VirtualClock]:
    """Run the library on a :class:`VirtualClock` for the duration."""
    saved = _budget.clock
    clock = _budget.clock = VirtualClock()
    try:
        yield clock
    finally:
        _budget.clock = saved


class _InstantTime:
    """``time`` for ``botocore.endpoint``, whose retry sleep returns at once."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def sleep(self, _seconds: float) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextlib.contextmanager
def instant_retries() -> Iterator[None]:
    """Skip botocore's retry delays (the retried request is still sent, as a new boundary)."""
    real = botocore.endpoint.time
    botocore.endpoint.time = _InstantTime(real)
    try:
        yield
    finally:
        botocore.endpoint.time = real

