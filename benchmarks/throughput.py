"""Throughput of integer-ID allocation on DynamoDB Local and moto, with several OS processes or threads.

Usage (from the repository root)::

    python benchmarks/throughput.py [--items N] [--procs 1,4,8] [--threads 8] [--backend local,moto]
                                    [--algorithms ...]

    --items N        saves per writer and row (default 200)
    --procs LIST     process counts, comma-separated, one writer per process (default 1,4: the defaults
                     took under 4 minutes on 2 cores; 8 processes add about 9 more, most of it moto's
                     contention rows; 16 work too, slowly: their start-up alone takes tens of seconds)
    --threads LIST   thread counts, comma-separated: each adds, after the process rows, rows of ONE
                     process running that many writers in threads, labelled e.g. ``gapless 1p×8t``
                     (default: none)
    --backend LIST   ``local`` (AWS's DynamoDB Local) and/or ``moto`` (default local,moto)
    --algorithms L   a subset of the rows, by key: plain, atomic, querymax, txn, fast, block, gapless,
                     sortkey (default: all)
    --slow           add, for plain and gapless, a row of 3 processes whose last one's requests
                     each take 0.3 s longer (a sleep in pre_dynamodb_send): it saves items/10 (at least
                     3), the other two save until it is done; its own items/s are in ``slow writer
                     items/s``, its failures in ``failed saves``
    --warmup N       untimed saves per algorithm, run in this process before a backend's rows, so that
                     DynamoDB Local's JVM has compiled its hot paths (default 100)
    --without NAME   the writer processes run with one feature of the gapless queue turned off, by a patch
                     applied in each of them after import (``benchmarks/queue_variants.py`` names them;
                     ``benchmarks/queue_pairs.py`` runs them paired with rows of the code as it is)

It prints progress to stderr and, at the end, one markdown table to stdout
(preceded by a line describing the machine and the exact command), and writes
the same to ``benchmarks/results.md``.  Everything talks to 127.0.0.1 only,
with dummy credentials, in region us-east-1.  This is a measuring script: it
asserts nothing about speed.

Backends
    ``local`` is DynamoDB Local, started exactly as the tests start it
    (``tests.engine.DynamoDBLocal``; install it with ``bash .ci/install-engine``).
    ``moto`` is ``moto.server.ThreadedMotoServer`` in this process, on a free
    port, so that several processes share one moto.  moto has no request
    locking: under concurrency it may lose updates and hand out one ID twice.
    That is expected; its rows *report* the duplicates, gaps and lost items
    found, they do not fail.

Rows (one algorithm x one shape of writers; each row gets fresh tables with unique names)
    A writer saves ``--items`` items one after the other.  ``--procs N`` rows
    run N writer processes (spawned, each with its own models and connections)
    that start together at a barrier.  ``--threads N`` rows run N writer threads
    in one process, released together: they share that process's PynamoDB models
    and HTTP connection pools, the library's per-process state (the counter value
    gapless mode remembers, the block a process reserved) and the GIL.

    baselines, written on PynamoDB's low-level ``TableConnection`` (not with this library):

    1. ``plain save``: ``Model.save()`` of an item whose key the client chose
       (``writer * 10**6 + i``): the cost of the write alone.
    2. ``atomic counter``: ``UpdateItem ADD NextId :1`` returning
       ``UPDATED_NEW`` on a counter item, then ``PutItem`` with
       ``attribute_not_exists`` (a failed put is an error: the value is spent).
    3. ``query max``: ``Query`` of one shared partition (descending,
       ``Limit 1``, consistent), ``PutItem`` of max+1 with ``attribute_not_exists``
       on the range key; on ``ConditionalCheckFailed`` re-query and retry at once.
    4. ``read+transaction`` (the gapless pattern of "Reliable Auto-Incrementing Integers in DynamoDB"):
       consistent ``GetItem`` of the counter, then
       ``TransactWriteItems`` (counter ``Put`` conditional on the value read,
       item ``Put`` with ``attribute_not_exists``); on cancellation retry at once,
       with no backoff (the algorithm of the npm package ``@nasa-gcn/dynamodb-autoincrement``).

    this library, through ``class M(AutoIncrementMixin, Model)`` and ``Meta``
    options, each with the default retry budget (``Meta.autoinc_timeout = 10`` s):

    5. ``fast`` (default options), 6. ``block N=100`` (``Meta.autoinc_block = 100``;
    printed as n/a if this version of the library rejects the option),
    7. ``gapless`` (``Meta.autoinc_gapless = True``), 8. ``sort-key``
    (``Meta.autoinc_strategy = "query"``: a NumberAttribute range key numbered
    within one partition that every process shares).

    Baselines 3/4 give up after 10,000 attempts for one item, and a save of any
    row that raises is counted in ``failed saves`` instead of stopping the row.

Columns
    ``items/s``: items saved by all writers / wall time from the first writer
    passing the start barrier to the last writer finishing (process start-up,
    table creation and connection set-up are outside it).
    ``vs plain``: items/s relative to ``plain save`` on the same backend and the
    same shape (process count, or process x threads).
    ``vs read+tx``: items/s relative to ``read+transaction`` of the same
    backend and shape; ``vs 1 process``: relative to the same algorithm's
    1-process row (``--procs`` must include 1).
    ``slowest writer items/s``, ``fastest writer items/s``: each writer's own
    successful saves / its own elapsed time (from passing the start barrier to
    its last save), the lowest and the highest over the row's writers.  A wide
    spread means some writers got through while others waited: with a shared
    counter, who wins the races.  ``slowest/fastest`` is their ratio; ``slow
    writer items/s`` is the slow writer's own rate in a ``--slow`` row (it is
    left out of the slowest/fastest columns).
    ``p50 ms``, ``p99 ms``, ``max ms``: wall time of one save, measured around
    the call in the writer (``time.perf_counter``), every save of every writer
    pooled, failed saves included; percentiles by nearest rank (p99 of 150 saves
    is the second slowest).  It includes the retries and backoff inside the save,
    and, on a machine with fewer cores than writers plus the server, time spent
    waiting for a core.  A row with saves over 1 s gets a note below the table:
    how many there were, and when each writer finished (writers that finish one
    after another, far apart, took turns rather than ran together).  ``p99/p50``: their ratio.
    ``req/item``: DynamoDB requests each process sent (PynamoDB's
    ``pre_dynamodb_send`` signal, one per request PynamoDB dispatches; botocore's
    own resends of throttled or failed requests are not included), summed over
    processes, per item saved.
    ``WCU/item``, ``RCU/item``: the ``ConsumedCapacity`` the backend returned,
    summed, per item saved.  ``ReturnConsumedCapacity=TOTAL`` is put into every
    request by a botocore ``provide-client-params`` hook on each client, and the
    response's ``ConsumedCapacity`` (a list for ``TransactWriteItems``) is read
    by an ``after-call`` hook.  Where the response names ``Read``/``WriteCapacityUnits``
    they are used; otherwise ``CapacityUnits`` counts as read units for
    ``GetItem``/``Query``/``Scan`` and as write units for everything else.  Error
    responses (a failed condition, a cancelled transaction) carry no
    ``ConsumedCapacity``, so under contention these columns are a lower bound
    (real DynamoDB bills failed conditional writes).  ``-`` means the backend
    reported no capacity at all.
    ``retries/item``: error responses with code ``ConditionalCheckFailedException``
    or ``TransactionCanceledException`` seen by the ``after-call`` hook, per item
    saved: each is a lost race that was retried (for ``atomic counter`` it is
    a failed put, which is also counted in ``failed saves``).
    ``client CPU ms/item``: CPU time the worker processes spent (``time.process_time``,
    summed over processes), per item saved (``CPU vs plain``: relative to ``plain
    save`` of the same shape): on a machine with fewer cores than
    processes plus the server, client CPU competes with the server's.
    ``failed saves``: saves that raised (the item was not saved by that call),
    with their count by the exception's class name; the first messages are
    listed below the table.
    ``duplicates``: IDs stored more than once (a scan with consistent reads
    after the row) plus IDs reported as saved to two saves.
    ``gaps``: numbers in 1..max(stored ID) that are not stored (counter-based
    rows only; ``block`` leaves the unused rest of each process's blocks by design).
    ``lost``: saves reported as successful whose item is not in the table as
    written (every item records the save that wrote it, ``"worker:i"``): an
    item overwritten by another save, or missing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import math
import multiprocessing
import os
import platform
import queue
import shlex
import socket
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# A benchmark of another checkout of the library (``queue_pairs.py --against``): its writers import it from there.
if os.environ.get("AUTOINC_BENCH_LIBRARY"):
    sys.path.insert(0, os.environ["AUTOINC_BENCH_LIBRARY"])

HOST = "127.0.0.1"
REGION = "us-east-1"
for _name, _value in {
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "dummy",
    "AWS_SECRET_ACCESS_KEY": "dummy",
    "AWS_EC2_METADATA_DISABLED": "true",
}.items():
    os.environ[_name] = _value
# Never send 127.0.0.1 traffic through a proxy from the environment.
_no_proxy = [p for p in os.environ.get("NO_PROXY", "").split(",") if p]
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join([*_no_proxy, HOST, "localhost"])

from pynamodb.attributes import NumberAttribute, UnicodeAttribute  # noqa: E402
from pynamodb.constants import ITEM, UPDATED_NEW  # noqa: E402
from pynamodb.exceptions import PutError, TransactWriteError  # noqa: E402
from pynamodb.models import Model  # noqa: E402
from pynamodb.signals import pre_dynamodb_send  # noqa: E402

from pynamodb_autoinc import AutoIncrementMixin, NextId  # noqa: E402
from pynamodb_autoinc.exceptions import ConfigurationError  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results.md"
COUNTER_KEY = "bench"
PARTITION = "shared"
MAX_ATTEMPTS = 10_000
"""Baselines 3 and 4 give up on one item after this many attempts (counted as an error)."""
ROW_TIMEOUT = 1800.0
SLOW_SAVE = 1.0
SLOW_DELAY = 0.3
"""Seconds added to every request of a slow writer (``--slow``: 2 fast processes and one slow)."""
"""Saves that took longer than this many seconds are counted in the notes below the table."""
BARRIER_TIMEOUT = 600.0
"""How long a worker waits for the others to be ready (16 processes start slowly on 2 busy cores)."""
READ_OPERATIONS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
RETRY_CODES = frozenset({"ConditionalCheckFailedException", "TransactionCanceledException"})
NO_CAPACITY_OPERATIONS = frozenset({"CreateTable", "DeleteTable", "DescribeTable", "ListTables", "UpdateTable",
                                    "UpdateTimeToLive", "DescribeTimeToLive"})


@dataclass(frozen=True)
class Algorithm:
    key: str
    label: str
    counter_based: bool
    """IDs come from a sequence 1, 2, 3...: gaps are counted."""
    partitioned: bool
    """Items are (pk, id) in one shared partition, not id alone."""
    ours: bool
    needs_counter_table: bool


ALGORITHMS: Tuple[Algorithm, ...] = (
    Algorithm("plain", "plain save", False, False, False, False),
    Algorithm("atomic", "atomic counter", True, False, False, True),
    Algorithm("querymax", "query max", True, True, False, False),
    Algorithm("txn", "read+transaction", True, False, False, True),
    Algorithm("fast", "fast", True, False, True, True),
    Algorithm("block", "block N=100", True, False, True, True),
    Algorithm("gapless", "gapless", True, False, True, True),
    Algorithm("sortkey", "sort-key", True, True, True, False),
)
BY_KEY = {a.key: a for a in ALGORITHMS}


# -- models (built the same way in the parent and in every worker) ----------------


@dataclass(frozen=True)
class RowSpec:
    """Everything a worker needs to rebuild a row's models: picklable."""

    algorithm: str
    backend: str
    url: str
    table: str
    counter_table: str
    items: int
    procs: int
    threads: int = 1
    """Writers per process, each in its own thread."""
    slow: int = 0
    """The last ``slow`` processes' requests each take :data:`SLOW_DELAY` s longer; they save ``items // 10``
    items (at least 3) while the other processes save until they are done (at least ``items`` each)."""
    without: str = ""
    """The queue feature turned off in the writer processes (``benchmarks/queue_variants.py``), or ""."""


@dataclass
class Models:
    item: Any
    counter: Any = None
    """The counter model (baselines 2 and 4: a plain Model; ours: a NextId subclass)."""


def _meta(url: str, table: str, threads: int = 1, **options: Any) -> type:
    return type("Meta", (), {
        "table_name": table,
        "host": url,
        "region": REGION,
        "aws_access_key_id": "dummy",
        "aws_secret_access_key": "dummy",
        # one HTTP connection per writer thread (botocore's pool holds 10 by default)
        "max_pool_connections": max(10, threads),
        **options,
    })


def _item_attributes(partitioned: bool) -> Dict[str, Any]:
    keys: Dict[str, Any] = {"id": NumberAttribute(hash_key=True)}
    if partitioned:
        keys = {"pk": UnicodeAttribute(hash_key=True), "id": NumberAttribute(range_key=True)}
    return {**keys, "owner": UnicodeAttribute(null=True)}


def build_models(spec: RowSpec) -> Models:
    """The row's models: the item model and, where one is used, the counter model."""
    algo = BY_KEY[spec.algorithm]
    attrs = _item_attributes(algo.partitioned)
    if not algo.ours:
        item = type("BenchItem", (Model,), {"Meta": _meta(spec.url, spec.table, spec.threads), **attrs})
        counter = None
        if algo.needs_counter_table:
            counter = type("BenchCounter", (Model,), {
                "Meta": _meta(spec.url, spec.counter_table, spec.threads),
                "next_key": UnicodeAttribute(hash_key=True, attr_name="NextKey"),
                "next_id": NumberAttribute(null=True, attr_name="NextId"),
            })
        return Models(item, counter)
    options: Dict[str, Any] = {}
    counter_model: Any = None
    if algo.needs_counter_table:
        counter_model = type("BenchNextId", (NextId,), {"Meta": _meta(spec.url, spec.counter_table, spec.threads)})
        options.update(autoinc_counter=counter_model, autoinc_key=COUNTER_KEY)
    if algo.key == "block":
        options["autoinc_block"] = 100
    elif algo.key == "gapless":
        options["autoinc_gapless"] = True
    elif algo.key == "sortkey":
        options.update(autoinc_strategy="query", autoinc_attribute="id")
    meta = _meta(spec.url, spec.table, spec.threads, **options)
    item = type("BenchAuto", (AutoIncrementMixin, Model), {"Meta": meta, **attrs})
    return Models(item, counter_model)


# -- the algorithms: one save each, returning the ID stored ---------------------------

Saver = Callable[[int, str], int]
"""``save(i, owner)`` saves one new item and returns its ID."""


def make_saver(algo: Algorithm, models: Models, worker: int) -> Saver:
    item, counter = models.item, models.counter

    if algo.key == "plain":
        def plain(i: int, owner: str) -> int:
            instance = item(id=worker * 10**6 + i, owner=owner)
            instance.save()
            return int(instance.id)
        return plain

    if algo.key == "atomic":
        counter_conn, item_conn = counter._get_connection(), item._get_connection()

        def atomic(i: int, owner: str) -> int:
            data = counter_conn.update_item(COUNTER_KEY, actions=[counter.next_id.add(1)], return_values=UPDATED_NEW)
            value = int(data["Attributes"]["NextId"]["N"])
            item_conn.put_item(str(value), attributes={"owner": {"S": owner}}, condition=item.id.does_not_exist())
            return value
        return atomic

    if algo.key == "querymax":
        item_conn = item._get_connection()

        def query_max(i: int, owner: str) -> int:
            for _ in range(MAX_ATTEMPTS):
                data = item_conn.query(PARTITION, scan_index_forward=False, limit=1, consistent_read=True)
                found = data.get("Items") or []
                value = int(found[0]["id"]["N"]) + 1 if found else 1
                try:
                    item_conn.put_item(PARTITION, range_key=str(value), attributes={"owner": {"S": owner}},
                                       condition=item.id.does_not_exist())
                except PutError as exc:
                    if exc.cause_response_code == "ConditionalCheckFailedException":
                        continue
                    raise
                return value
            raise RuntimeError(f"query max: no free ID after {MAX_ATTEMPTS} attempts")
        return query_max

    if algo.key == "txn":
        counter_conn, item_conn = counter._get_connection(), item._get_connection()

        def read_and_transact(i: int, owner: str) -> int:
            for _ in range(MAX_ATTEMPTS):
                data = counter_conn.get_item(COUNTER_KEY, consistent_read=True)
                raw = data.get("Item", {}).get("NextId")
                expected = int(raw["N"]) if raw else None
                value = (expected or 0) + 1
                moved = counter.next_id.does_not_exist() if expected is None else counter.next_id == expected
                counter_put = counter_conn.get_operation_kwargs(
                    COUNTER_KEY, key=ITEM, attributes={"NextId": {"N": str(value)}}, condition=moved)
                item_put = item_conn.get_operation_kwargs(
                    str(value), key=ITEM, attributes={"owner": {"S": owner}}, condition=item.id.does_not_exist())
                try:
                    item_conn.connection.transact_write_items(
                        condition_check_items=(), delete_items=(), put_items=[counter_put, item_put],
                        update_items=(), client_request_token=uuid.uuid4().hex)
                except TransactWriteError as exc:
                    if exc.cause_response_code == "TransactionCanceledException":
                        continue  # no backoff, as @nasa-gcn/dynamodb-autoincrement
                    raise
                return value
            raise RuntimeError(f"read+transaction: counter still moving after {MAX_ATTEMPTS} attempts")
        return read_and_transact

    def ours(i: int, owner: str) -> int:
        instance = item(pk=PARTITION, owner=owner) if algo.partitioned else item(owner=owner)
        instance.save()
        return int(instance.id)
    return ours


# -- counting at the client ----------------------------------------------------------


@dataclass
class Stats:
    """What one process saw of its own requests (only while ``active``)."""

    active: bool = False
    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    capacity_responses: int = 0
    retries: int = 0
    transport_retries: int = 0
    operations: Dict[str, int] = field(default_factory=dict)
    no_capacity: Dict[str, int] = field(default_factory=dict)
    """Successful responses, by operation, that carried no ConsumedCapacity although it was asked for."""
    _hooked: set = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    """The writer threads of one process share these counts."""

    def on_send(self, sender: Any, operation_name: str = "", **_: Any) -> None:
        if self.active:
            with self._lock:
                self.requests += 1
                self.operations[operation_name] = self.operations.get(operation_name, 0) + 1

    def hook(self, client: Any) -> None:
        """Register the capacity and retry hooks on one botocore client (once)."""
        if id(client) in self._hooked:
            return
        self._hooked.add(id(client))
        client.meta.events.register("provide-client-params.dynamodb.*", self._ask_capacity)
        client.meta.events.register("after-call.dynamodb.*", self._after_call)

    @staticmethod
    def _ask_capacity(params: Dict[str, Any], model: Any, **_: Any) -> None:
        if model.name not in NO_CAPACITY_OPERATIONS and "ReturnConsumedCapacity" in model.input_shape.members:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _after_call(self, parsed: Dict[str, Any], model: Any, **_: Any) -> None:
        if self.active:
            with self._lock:
                self._count_response(parsed, model)

    def _count_response(self, parsed: Dict[str, Any], model: Any) -> None:
        self.transport_retries += int(parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)
        code = parsed.get("Error", {}).get("Code")
        if code in RETRY_CODES:
            self.retries += 1
        consumed = parsed.get("ConsumedCapacity")
        if not consumed:
            if code is None and model.name not in NO_CAPACITY_OPERATIONS:
                self.no_capacity[model.name] = self.no_capacity.get(model.name, 0) + 1
            return
        self.capacity_responses += 1
        for entry in consumed if isinstance(consumed, list) else [consumed]:
            if "ReadCapacityUnits" in entry or "WriteCapacityUnits" in entry:
                self.read_units += float(entry.get("ReadCapacityUnits", 0.0))
                self.write_units += float(entry.get("WriteCapacityUnits", 0.0))
            elif model.name in READ_OPERATIONS:
                self.read_units += float(entry.get("CapacityUnits", 0.0))
            else:
                self.write_units += float(entry.get("CapacityUnits", 0.0))


def clients_of(models: Models) -> Iterator[Any]:
    """The botocore clients a row's saves use (PynamoDB creates them lazily)."""
    yield models.item._get_connection().connection.client
    if models.counter is not None:
        yield models.counter._get_connection().connection.client
    if issubclass(models.item, AutoIncrementMixin):
        yield models.item.autoinc_options().counter._get_connection().connection.client


# -- a worker process -----------------------------------------------------------------


def worker_main(spec: RowSpec, worker: int, barrier: Any, results: Any, done: Any = None) -> None:
    """Build the row's models, connect, wait for the other processes, save ``spec.items`` items per writer, report.

    With ``spec.threads`` > 1 the process runs that many writers, each in its own
    thread with its own saver, sharing the process's models (and so PynamoDB's
    connections and the library's per-process state), started together.
    """
    try:
        if spec.without:
            from queue_variants import apply  # beside this file, which is on sys.path as the main script's

            apply(spec.without)
        algo = BY_KEY[spec.algorithm]
        models = build_models(spec)
        numbers = [worker * spec.threads + t for t in range(spec.threads)]
        savers = [make_saver(algo, models, n) for n in numbers]
        stats = Stats()
        for client in clients_of(models):
            stats.hook(client)
        # Open the HTTP connections before the clock starts (not counted).
        models.item.describe_table()
        if models.counter is not None:
            models.counter.describe_table()
        pre_dynamodb_send.connect(stats.on_send, weak=False)
        slow = spec.slow and worker >= spec.procs - spec.slow
        if slow:
            pre_dynamodb_send.connect(lambda *_, **__: time.sleep(SLOW_DELAY), weak=False)
        if spec.threads == 1:
            barrier.wait(timeout=BARRIER_TIMEOUT)
            cpu_started = time.process_time()
            stats.active = True
            if slow:
                try:
                    writers = [write_items(savers[0], numbers[0], max(3, spec.items // 10))]
                finally:
                    done.set()
            else:
                writers = [write_items(savers[0], numbers[0], spec.items, done if spec.slow else None)]
        else:
            writers, cpu_started = _write_in_threads(spec, savers, numbers, stats, barrier)
        cpu = time.process_time() - cpu_started
        stats.active = False
        results.put({
            "worker": worker, "cpu": cpu, "writers": writers,
            "requests": stats.requests, "read_units": stats.read_units, "write_units": stats.write_units,
            "capacity_responses": stats.capacity_responses, "retries": stats.retries,
            "transport_retries": stats.transport_retries, "operations": stats.operations,
            "no_capacity": stats.no_capacity,
        })
    except BaseException:
        with contextlib.suppress(Exception):
            barrier.abort()
        results.put({"worker": worker, "fatal": traceback.format_exc()})


def _write_in_threads(spec: RowSpec, savers: List[Saver], numbers: List[int], stats: Stats,
                      barrier: Any) -> Tuple[List[Dict[str, Any]], float]:
    """Run one writer per thread, all released at once; their reports and the process CPU time at the start."""
    gate = threading.Barrier(len(savers) + 1)
    writers: List[Dict[str, Any]] = []
    failures: List[str] = []

    def run(save: Saver, number: int) -> None:
        try:
            gate.wait(timeout=BARRIER_TIMEOUT)
            report = write_items(save, number, spec.items)
        except BaseException:
            failures.append(traceback.format_exc())
            return
        writers.append(report)  # list.append is atomic under the GIL

    threads = [threading.Thread(target=run, args=(save, number), name=f"writer-{number}", daemon=True)
               for save, number in zip(savers, numbers)]
    for thread in threads:
        thread.start()
    try:
        barrier.wait(timeout=BARRIER_TIMEOUT)
    except BaseException:
        gate.abort()
        raise
    cpu_started = time.process_time()
    stats.active = True
    gate.wait(timeout=BARRIER_TIMEOUT)
    for thread in threads:
        thread.join(timeout=ROW_TIMEOUT)
    if failures:
        raise RuntimeError("a writer thread failed:\n" + failures[0])
    if len(writers) < len(threads):
        raise RuntimeError(f"only {len(writers)} of {len(threads)} writer threads finished in {ROW_TIMEOUT:.0f} s")
    return sorted(writers, key=lambda w: w["writer"]), cpu_started


def write_items(save: Saver, writer: int, items: int, until: Any = None) -> Dict[str, Any]:
    """One writer's loop: ``items`` saves (and on, until the event ``until`` is set), each timed on its own;
    what it saved, what raised, when."""
    saved: List[Tuple[int, str]] = []
    errors: List[Tuple[str, str]] = []
    latencies: List[float] = []
    started = time.time()
    i = -1
    while True:
        i += 1
        if i >= items and (until is None or until.is_set()):
            break
        owner = f"{writer}:{i}"
        began = time.perf_counter()
        try:
            saved.append((save(i, owner), owner))
        except Exception as exc:  # counted, not fatal: see the module docstring
            errors.append((type(exc).__name__, f"{type(exc).__name__}: {exc}"[:300]))
        finally:
            latencies.append(time.perf_counter() - began)
    finished = time.time()
    return {"writer": writer, "started": started, "finished": finished, "saved": saved, "errors": errors,
            "latencies": latencies}


# -- the parent: rows, servers, the table ------------------------------------------


@dataclass
class Row:
    algorithm: Algorithm
    backend: str
    procs: int
    threads: int = 1
    slow: int = 0
    items: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    capacity_reported: bool = False
    retries: int = 0
    transport_retries: int = 0
    errors: int = 0
    error_classes: Dict[str, int] = field(default_factory=dict)
    """Failed saves by the name of the exception's class."""
    latencies: List[float] = field(default_factory=list)
    """Wall time of every save (failed ones too), in seconds, all writers pooled."""
    writer_rates: List[float] = field(default_factory=list)
    """Each writer's own successful saves / its own elapsed time."""
    slow_rates: List[float] = field(default_factory=list)
    """The same, of the slow writers (``--slow`` rows); they are not in ``writer_rates``."""
    writer_ends: List[float] = field(default_factory=list)
    """When each writer finished, in seconds after the first one started, in order."""
    duplicates: int = 0
    gaps: Optional[int] = None
    lost: int = 0
    operations: Dict[str, int] = field(default_factory=dict)
    no_capacity: Dict[str, int] = field(default_factory=dict)
    error_samples: List[str] = field(default_factory=list)
    unavailable: Optional[str] = None

    @property
    def name(self) -> str:
        """The algorithm's label, followed by the shape of the row when its writers are threads."""
        if self.slow:
            return f"{self.algorithm.label}, {self.slow} of {self.procs} slow (+{SLOW_DELAY:g} s/request)"
        if self.threads == 1:
            return self.algorithm.label
        return f"{self.algorithm.label} {self.procs}p×{self.threads}t"

    @property
    def shape(self) -> str:
        if self.slow:
            return f"{self.procs}p/{self.slow}slow"
        return f"{self.procs}p" if self.threads == 1 else f"{self.procs}p×{self.threads}t"

    @property
    def rate(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _unique(stem: str) -> str:
    return f"bench-{stem}-{uuid.uuid4().hex[:8]}"


def create_tables(models: Models) -> None:
    for model in (models.item, models.counter):
        if model is not None:
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)


def delete_tables(models: Models) -> None:
    for model in (models.item, models.counter):
        if model is not None:
            try:
                model.delete_table()
            except Exception as exc:  # a leftover table in a throw-away server is harmless
                log(f"  could not delete {model.Meta.table_name}: {exc}")


def block_option_missing(spec: RowSpec) -> Optional[str]:
    """Why this library cannot build the row's model, or None."""
    if BY_KEY[spec.algorithm].key != "block":
        return None
    try:
        build_models(spec).item.autoinc_options()
    except ConfigurationError:
        return "n/a (autoinc_block missing)"
    return None


def warm_up(backend: str, url: str, algorithms: Sequence[Algorithm], count: int) -> None:
    """Run each algorithm ``count`` times in this process, untimed (JIT, caches, code paths)."""
    if count <= 0:
        return
    for algo in algorithms:
        spec = RowSpec(algo.key, backend, url, _unique(f"warm-{algo.key}"), _unique(f"warm-{algo.key}-ctr"), count, 1)
        if block_option_missing(spec):
            continue
        models = build_models(spec)
        create_tables(models)
        try:
            save = make_saver(algo, models, 0)
            for i in range(count):
                save(i, f"warm:{i}")
        finally:
            delete_tables(models)


def run_row(ctx: Any, algo: Algorithm, backend: str, url: str, procs: int, items: int, threads: int = 1,
            slow: int = 0, without: str = "") -> Row:
    row = Row(algo, backend, procs, threads, slow)
    stem = f"{algo.key}-{backend}-{procs}p{threads}t"
    spec = RowSpec(algo.key, backend, url, _unique(stem), _unique(f"{stem}-ctr"), items, procs, threads, slow,
                   without)
    missing = block_option_missing(spec)
    if missing:
        row.unavailable = missing
        return row
    models = build_models(spec)
    create_tables(models)
    try:
        reports = _run_workers(ctx, spec, procs)
        _aggregate(row, reports)
        _check_table(row, algo, models, reports)
    finally:
        delete_tables(models)
    return row


def _run_workers(ctx: Any, spec: RowSpec, procs: int) -> List[Dict[str, Any]]:
    barrier = ctx.Barrier(procs)
    results = ctx.Queue()
    done = ctx.Event()
    workers = [ctx.Process(target=worker_main, args=(spec, w, barrier, results, done), daemon=True)
               for w in range(procs)]
    for process in workers:
        process.start()
    reports: List[Dict[str, Any]] = []
    deadline = time.monotonic() + ROW_TIMEOUT
    try:
        while len(reports) < procs:
            try:
                reports.append(results.get(timeout=1.0))
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"row timed out after {ROW_TIMEOUT:.0f} s") from None
                if all(not p.is_alive() for p in workers):
                    with contextlib.suppress(queue.Empty):
                        while True:
                            reports.append(results.get(timeout=1.0))
                    if len(reports) < procs:
                        raise RuntimeError("a worker process died without reporting") from None
        fatal = [r["fatal"] for r in reports if "fatal" in r]
        if fatal:
            raise RuntimeError("a worker failed:\n" + fatal[0])
    finally:
        for process in workers:
            process.join(timeout=10)
            if process.is_alive():  # only our own children, by their Process object
                process.terminate()
                process.join(timeout=10)
    return reports


def _aggregate(row: Row, reports: List[Dict[str, Any]]) -> None:
    writers = [w for r in reports for w in r["writers"]]
    row.items = sum(len(w["saved"]) for w in writers)
    first = min(w["started"] for w in writers)
    row.seconds = max(w["finished"] for w in writers) - first
    row.writer_ends = sorted(w["finished"] - first for w in writers)
    row.latencies = sorted(x for w in writers for x in w["latencies"])
    def rate(w: Dict[str, Any]) -> float:
        return len(w["saved"]) / (w["finished"] - w["started"]) if w["finished"] > w["started"] else 0.0

    slow = {r["worker"] for r in reports if r["worker"] >= row.procs - row.slow} if row.slow else set()
    row.writer_rates = sorted(rate(w) for r in reports if r["worker"] not in slow for w in r["writers"])
    row.slow_rates = sorted(rate(w) for r in reports if r["worker"] in slow for w in r["writers"])
    row.cpu_seconds = sum(r["cpu"] for r in reports)
    row.requests = sum(r["requests"] for r in reports)
    row.read_units = sum(r["read_units"] for r in reports)
    row.write_units = sum(r["write_units"] for r in reports)
    row.capacity_reported = any(r["capacity_responses"] for r in reports)
    row.retries = sum(r["retries"] for r in reports)
    row.transport_retries = sum(r["transport_retries"] for r in reports)
    row.errors = sum(len(w["errors"]) for w in writers)
    row.error_classes = dict(collections.Counter(name for w in writers for name, _ in w["errors"]))
    ops: collections.Counter = collections.Counter()
    for r in reports:
        ops.update(r["operations"])
    row.operations = dict(ops)
    missing: collections.Counter = collections.Counter()
    for r in reports:
        missing.update(r["no_capacity"])
    row.no_capacity = dict(missing)
    row.error_samples = sorted({message for w in writers for _, message in w["errors"]})[:3]


def percentile(ordered: Sequence[float], p: float) -> Optional[float]:
    """The ``p``-th percentile of sorted values by nearest rank (the smallest value with ``p`` % at or below it)."""
    if not ordered:
        return None
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def _check_table(row: Row, algo: Algorithm, models: Models, reports: List[Dict[str, Any]]) -> None:
    pairs = [(int(item.id), item.owner) for item in models.item.scan(consistent_read=True)]
    stored = collections.Counter(i for i, _ in pairs)
    saved = [pair for r in reports for w in r["writers"] for pair in w["saved"]]
    reported = collections.Counter(i for i, _ in saved)
    duplicated = {i for i, n in stored.items() if n > 1} | {i for i, n in reported.items() if n > 1}
    row.duplicates = len(duplicated)
    present = set(pairs)
    row.lost = sum(1 for pair in saved if pair not in present)
    if algo.counter_based:
        top = max(stored, default=0)
        row.gaps = sum(1 for i in range(1, top + 1) if i not in stored)


# -- servers ------------------------------------------------------------------------------


class Server:
    """A running backend: its URL and how to stop it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.url = ""
        self.description = ""
        self._stop: Callable[[], None] = lambda: None

    def start(self) -> None:
        if self.name == "local":
            from tests.engine import INSTALL_HINT, DynamoDBLocal, find_jar

            jar = find_jar()
            if jar is None:
                raise SystemExit(f"DynamoDB Local is not installed. {INSTALL_HINT}")
            server = DynamoDBLocal(jar)
            server.start()
            self.url = server.url
            self.description = f"DynamoDB Local {jar.parent.name} (pid {server.pid})"
            self._stop = server.stop
        else:
            import moto
            from moto.server import ThreadedMotoServer

            port = _free_port()
            logging.getLogger("werkzeug").setLevel(logging.CRITICAL)  # no line (or traceback) per request
            moto_server = ThreadedMotoServer(ip_address=HOST, port=port, verbose=False)
            moto_server.start()
            self.url = f"http://{HOST}:{port}"
            self.description = f"moto {moto.__version__} ThreadedMotoServer (in this process)"
            self._stop = moto_server.stop
        log(f"{self.description} at {self.url}")

    def stop(self) -> None:
        stop, self._stop = self._stop, lambda: None
        stop()


# -- output ---------------------------------------------------------------------------------


def _nproc() -> Optional[int]:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def machine_line() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    nproc = _nproc()
    system = f"{platform.system()} {platform.machine()}"
    return f"Machine: nproc {nproc}, {cpu}, Python {platform.python_version()} ({system})"


def command_line() -> str:
    argv = list(getattr(sys, "orig_argv", []) or [sys.executable, *sys.argv])
    argv[0] = Path(argv[0]).name
    return shlex.join(argv)


def _num(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


COLUMNS = ("algorithm", "backend", "procs", "items", "items/s", "vs plain", "vs read+tx", "vs 1 process",
           "slowest writer items/s", "fastest writer items/s", "slowest/fastest", "slow writer items/s", "p50 ms",
           "p99 ms", "max ms", "p99/p50", "req/item", "WCU/item", "RCU/item", "retries/item", "client CPU ms/item",
           "CPU vs plain", "failed saves", "duplicates", "gaps", "lost")


def _ms(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{1000 * seconds:.1f}"


def _ratio(value: Optional[float], base: Optional[float]) -> str:
    """``value / base`` with two decimals, or ``-`` when either is missing or ``base`` is 0."""
    return f"{value / base:.2f}" if value is not None and base else "-"


def _failed(row: Row) -> str:
    if not row.errors:
        return "0"
    classes = ", ".join(f"{name} {count}" for name, count in sorted(row.error_classes.items()))
    return f"{row.errors} ({classes})"


def render(rows: List[Row]) -> str:
    """The markdown table of ``rows``."""
    plain = {(r.backend, r.shape): r for r in rows if r.algorithm.key == "plain" and r.unavailable is None}
    txn = {(r.backend, r.shape): r.rate for r in rows if r.algorithm.key == "txn" and r.unavailable is None}
    alone = {(r.backend, r.algorithm.key): r.rate for r in rows if r.shape == "1p" and r.unavailable is None}
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join([" --- "] * len(COLUMNS)) + "|"]
    for r in rows:
        cells = [r.name, r.backend, str(r.procs)]
        if r.unavailable is not None:
            cells += [r.unavailable.replace("|", "/")] + [""] * (len(COLUMNS) - 4)
        else:
            def per(total: float, row: Row = r) -> Optional[float]:
                return total / row.items if row.items else None

            base = plain.get((r.backend, r.shape))
            cap = r.capacity_reported
            p50, p99 = percentile(r.latencies, 50), percentile(r.latencies, 99)
            cpu = per(1000 * r.cpu_seconds)
            base_cpu = (1000 * base.cpu_seconds / base.items) if base is not None and base.items else None
            cells += [
                str(r.items),
                f"{r.rate:.0f}",
                _ratio(r.rate, base.rate if base is not None else None),
                _ratio(r.rate, txn.get((r.backend, r.shape))),
                _ratio(r.rate, alone.get((r.backend, r.algorithm.key))),
                f"{min(r.writer_rates):.0f}" if r.writer_rates else "-",
                f"{max(r.writer_rates):.0f}" if r.writer_rates else "-",
                _ratio(min(r.writer_rates), max(r.writer_rates)) if r.writer_rates else "-",
                ", ".join(f"{x:.1f}" for x in r.slow_rates) or "-",
                _ms(p50),
                _ms(p99),
                _ms(r.latencies[-1] if r.latencies else None),
                _ratio(p99, p50),
                _num(per(r.requests)),
                _num(per(r.write_units)) if cap else "-",
                _num(per(r.read_units)) if cap else "-",
                _num(per(r.retries)),
                _num(cpu),
                _ratio(cpu, base_cpu),
                _failed(r),
                str(r.duplicates),
                "-" if r.gaps is None else str(r.gaps),
                str(r.lost),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_average() -> str:
    """The 1-minute load average of the machine (other work competes for the cores too), or ``?``."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):
        return "?"


def notes(rows: List[Row], servers: List[str], elapsed: float, loads: Sequence[str] = ()) -> List[str]:
    """What the reader should know about this run, below the table."""
    out = [f"Backends: {'; '.join(servers)}. Total run time {elapsed:.0f} s."]
    if loads:
        out.append(f"Machine load (1-minute load average) at the start and the end of the run: {', '.join(loads)} "
                   f"on {_nproc()} cores, this run included.")
    if any(r.backend == "moto" for r in rows):
        out.append("moto is not safe under concurrency (its server has no request locking): with several "
                   "processes it may lose updates and hand out one ID twice. Its duplicates/gaps/lost columns "
                   "report what happened; they are expected and not a failure of the algorithm. moto's "
                   "ConsumedCapacity is its own estimate (e.g. 0.5 for a consistent GetItem), not DynamoDB's.")
    silent: Dict[str, set] = {}
    for r in rows:
        silent.setdefault(r.backend, set()).update(r.no_capacity)
    for backend, operations in silent.items():
        if operations:
            out.append(f"{backend} returned no ConsumedCapacity for {', '.join(sorted(operations))} (asked with "
                       "ReturnConsumedCapacity=TOTAL): those requests are missing from WCU/RCU per item.")
    for r in rows:
        if r.transport_retries:
            out.append(f"{r.backend} {r.shape} {r.algorithm.label}: botocore resent {r.transport_retries} "
                       "request(s) after throttling or a server error (moto answers 500 when its own state "
                       "changes under a concurrent request); resends are not in req/item.")
        slow = [x for x in r.latencies if x > SLOW_SAVE]
        if slow:
            out.append(f"{r.backend} {r.shape} {r.algorithm.label}: {len(slow)} of {len(r.latencies)} saves took "
                       f"over {SLOW_SAVE:.0f} s (the longest {r.latencies[-1]:.1f} s); the writers finished "
                       f"{', '.join(f'{end:.1f}' for end in r.writer_ends)} s after the first one started.")
        for sample in r.error_samples:
            out.append(f"{r.backend} {r.shape} {r.algorithm.label}: error: {sample}")
    out.append("Counting: req/item from pynamodb's pre_dynamodb_send in each process; WCU/RCU from the "
               "ConsumedCapacity the backend returned (none on error responses, so a lower bound under "
               "contention); retries = ConditionalCheckFailedException + TransactionCanceledException "
               "responses; p50/p99/max: wall time of one save measured in the writer, every writer's saves "
               "pooled, failed ones included (nearest rank); slowest/fastest writer: that writer's own saves / "
               "its own elapsed time. See the docstring of benchmarks/throughput.py.")
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=200, help="saves per writer and row (default 200)")
    parser.add_argument("--procs", default="1,4", help="process counts, comma-separated (default 1,4)")
    parser.add_argument("--backend", default="local,moto", help="local and/or moto, comma-separated")
    parser.add_argument("--algorithms", default=",".join(BY_KEY),
                        help=f"rows to run, comma-separated, of: {', '.join(BY_KEY)}")
    parser.add_argument("--threads", default="",
                        help="thread counts, comma-separated: each adds rows of one process with that many writer "
                             "threads, e.g. 8 gives 'gapless 1p×8t' (default: none)")
    parser.add_argument("--slow", action="store_true",
                        help=f"add, for plain and gapless, a row of 3 processes whose last one's requests take "
                             f"{SLOW_DELAY:g} s longer (it saves items/10; the others save until it is done)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed saves per algorithm before a backend's rows")
    parser.add_argument("--without", default="",
                        help="a gapless queue feature turned off in the writers (benchmarks/queue_variants.py)")
    args = parser.parse_args(argv)
    try:
        args.procs = [int(p) for p in args.procs.split(",") if p.strip()]
    except ValueError:
        parser.error("--procs takes integers, e.g. 1,4,8")
    try:
        args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        parser.error("--threads takes integers, e.g. 8")
    if args.threads and min(args.threads) < 2:
        parser.error("every --threads value must be at least 2 (one thread is the 1-process row of --procs)")
    args.backend = [b.strip() for b in args.backend.split(",") if b.strip()]
    args.algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    if args.items < 1 or not args.procs or min(args.procs) < 1:
        parser.error("--items and every --procs value must be at least 1")
    if not args.backend or set(args.backend) - {"local", "moto"}:
        parser.error("--backend takes local and/or moto")
    if not args.algorithms or set(args.algorithms) - set(BY_KEY):
        parser.error(f"--algorithms takes some of: {', '.join(BY_KEY)}")
    if args.without:
        from queue_variants import VARIANTS, known

        if not known(args.without):
            parser.error(f"--without takes one of (or several joined by +): {', '.join(VARIANTS)}")
    return args


def _runs(algo: Algorithm, shape: Tuple[int, int, int]) -> bool:
    """Whether ``algo`` gets a row of ``shape`` (procs, threads, slow): slow rows only for plain and gapless.

    Not for read+transaction: its slow writer's read is always stale by the time its transaction arrives,
    so it never saves, and the row (whose fast writers save until the slow one is done) would not end."""
    return not shape[2] or algo.key in ("plain", "gapless")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    load_at_start = load_average()
    ctx = multiprocessing.get_context("spawn")
    algorithms = [a for a in ALGORITHMS if a.key in args.algorithms]
    rows: List[Row] = []
    descriptions: List[str] = []
    shapes = [(procs, 1, 0) for procs in args.procs] + [(1, threads, 0) for threads in args.threads]
    if args.slow:
        shapes.append((3, 1, 1))
    total = len(args.backend) * sum(1 for shape in shapes for algo in algorithms if _runs(algo, shape))
    log(f"{total} rows, {args.items} items per writer; {machine_line()}")
    log(f"library: {Path(sys.modules['pynamodb_autoinc'].__file__ or '?').parent}")
    for backend in args.backend:
        server = Server(backend)
        server.start()
        descriptions.append(server.description)
        try:
            log(f"{backend}: warming up ({args.warmup} untimed saves per algorithm)")
            warm_up(backend, server.url, algorithms, args.warmup)
            for procs, threads, slow in shapes:
                for algo in [a for a in algorithms if _runs(a, (procs, threads, slow))]:
                    row = Row(algo, backend, procs, threads, slow)
                    log(f"[{len(rows) + 1}/{total}] {backend} {row.shape} {algo.label}: running "
                        f"({procs * threads * args.items} items) ...")
                    try:
                        row = run_row(ctx, algo, backend, server.url, procs, args.items, threads, slow,
                                      args.without)
                    except Exception as exc:  # report the row as failed and go on with the others
                        log(traceback.format_exc())
                        row.unavailable = f"failed: {str(exc).splitlines()[0][:80]}"
                    rows.append(row)
                    if row.unavailable:
                        log(f"    {row.unavailable}")
                    else:
                        log(f"    {row.rate:.0f} items/s, {row.items} items in {row.seconds:.2f} s, "
                            f"writers {min(row.writer_rates):.0f}..{max(row.writer_rates):.0f} items/s, "
                            f"p50 {_ms(percentile(row.latencies, 50))} ms, p99 {_ms(percentile(row.latencies, 99))} "
                            f"ms, max {_ms(row.latencies[-1])} ms, "
                            f"{row.retries} retries, {_failed(row)} failed, {row.duplicates} duplicates, "
                            f"gaps {row.gaps if row.gaps is not None else '-'}, lost {row.lost}; "
                            f"requests {dict(sorted(row.operations.items()))}; "
                            f"{time.monotonic() - began:.0f} s so far")
        finally:
            server.stop()
    elapsed = time.monotonic() - began
    text = "\n".join([
        machine_line(),
        f"Command: `{command_line()}`",
        "",
        render(rows),
        "",
        *(f"- {n}" for n in notes(rows, descriptions, elapsed, (load_at_start, load_average()))),
    ])
    print(text)
    RESULTS.write_text(text + "\n")
    log(f"done in {elapsed:.0f} s; written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
