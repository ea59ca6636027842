"""Awaited saves (asyncio tasks) against threads and processes: gapless items on one counter, on DynamoDB Local.

Usage (from the repository root)::

    python benchmarks/async_vs_threads.py [--writers 16] [--seconds 4] [--procs 4] [--warmup 200]

    --writers N   asyncio tasks in one process, and threads in one process (default 16)
    --seconds S   how long each row's writers save (default 4)
    --procs N     also a row of N processes, one writer each (default 0: no such row)
    --warmup N    untimed saves before the rows, so that DynamoDB Local's JVM has compiled its hot paths

Each row gets a fresh gapless model (``Meta.autoinc_gapless = True``) and counter key; its writers save new
items one after the other until the time is up. The tasks row runs ``await item.asave()`` in N tasks of one
event loop (the async driver: docs/async.md); the threads row ``item.save()`` in N
threads. Columns: ``items/s`` (all writers' items / wall time), ``requests/item`` (every DynamoDB request the
writers sent, counted at PynamoDB's ``pre_dynamodb_send``), ``CPU ms/item`` (the client process's user+system
CPU over the row, for processes the sum of theirs), ``p50 ms``/``p99 ms`` (one save's latency), ``spread``
((most - fewest items of one writer) / mean), ``gapless`` (the stored IDs are exactly 1..N). It prints a
markdown table to stdout; a measuring script: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
HOST = "127.0.0.1"
os.environ.update({"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "dummy",
                   "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_EC2_METADATA_DISABLED": "true"})
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(
    [p for p in os.environ.get("NO_PROXY", "").split(",") if p] + [HOST, "localhost"])

from pynamodb.attributes import NumberAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402
from pynamodb.signals import pre_dynamodb_send  # noqa: E402

from pynamodb_autoinc import AutoIncrementMixin, NextId  # noqa: E402

#: One writer's result: items saved, each save's latency (s), requests sent, CPU seconds (processes only).
Result = Tuple[int, List[float], int, float]


def model(url: str, table: str) -> Any:
    """The gapless model of one row, on ``url``."""
    meta = type("Meta", (), {"table_name": table, "host": url, "region": "us-east-1", "aws_access_key_id": "dummy",
                             "aws_secret_access_key": "dummy", "max_pool_connections": 64, "autoinc_gapless": True})
    return type("Bench", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True)})


def create(url: str, table: str) -> Any:
    made = model(url, table)
    NextId.create_table_for(made)
    made.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    return made


class Requests:
    """Counts this process's DynamoDB requests."""

    def __init__(self) -> None:
        self.count, self.lock = 0, threading.Lock()
        pre_dynamodb_send.connect(self.sent, weak=False)

    def sent(self, *_: Any, **__: Any) -> None:
        with self.lock:
            self.count += 1


def save_until(made: Any, deadline: float) -> Tuple[int, List[float]]:
    latencies: List[float] = []
    while time.monotonic() < deadline:
        began = time.perf_counter()
        made().save()
        latencies.append(time.perf_counter() - began)
    return len(latencies), latencies


async def asave_until(made: Any, deadline: float) -> Tuple[int, List[float]]:
    latencies: List[float] = []
    while time.monotonic() < deadline:
        began = time.perf_counter()
        await made().asave()
        latencies.append(time.perf_counter() - began)
    return len(latencies), latencies


def run_tasks(made: Any, writers: int, seconds: float) -> List[Tuple[int, List[float]]]:
    async def main() -> List[Tuple[int, List[float]]]:
        deadline = time.monotonic() + seconds
        return list(await asyncio.gather(*(asave_until(made, deadline) for _ in range(writers))))

    return asyncio.run(main())


def run_threads(made: Any, writers: int, seconds: float) -> List[Tuple[int, List[float]]]:
    results: List[Tuple[int, List[float]]] = [(0, [])] * writers
    deadline = time.monotonic() + seconds

    def one(i: int) -> None:
        results[i] = save_until(made, deadline)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def process_writer(url: str, table: str, start: Any, seconds: float, out: Any) -> None:
    """One writer process: wait for ``start``, save until the time is up, put its :data:`Result` on ``out``."""
    made, requests = model(url, table), Requests()
    made().save()  # untimed, this process's first claim: it describes the tables and reads the counter
    start.wait()
    cpu, sent, began = time.process_time(), requests.count, time.monotonic()
    n, latencies = save_until(made, began + seconds)
    out.put((n, latencies, requests.count - sent, time.process_time() - cpu, time.monotonic() - began))


def run_procs(url: str, table: str, procs: int, seconds: float) -> Tuple[List[Result], float]:
    """The processes' results, and the longest time one of them saved (they start together at a barrier)."""
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    workers = [context.Process(target=process_writer, args=(url, table, start, seconds, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    time.sleep(1.0 + procs * 0.7)  # each imports the library and makes its first save
    start.set()
    got = [out.get(timeout=120 + seconds) for _ in workers]
    for w in workers:
        w.join()
    return [g[:4] for g in got], max(g[4] for g in got)


def measure(kind: str, url: str, writers: int, seconds: float) -> Dict[str, Any]:
    """One row: fresh tables, one untimed save, then ``writers`` of ``kind`` saving for ``seconds``."""
    table = f"bench-async-{kind}-{uuid.uuid4().hex[:8]}"
    made = create(url, table)
    made().save()
    requests = Requests() if kind != "processes" else None
    sent, cpu, began = (requests.count if requests else 0), time.process_time(), time.monotonic()
    if kind == "tasks":
        results: List[Result] = [(n, lat, 0, 0.0) for n, lat in run_tasks(made, writers, seconds)]
    elif kind == "threads":
        results = [(n, lat, 0, 0.0) for n, lat in run_threads(made, writers, seconds)]
    wall = time.monotonic() - began
    if kind == "processes":
        results, wall = run_procs(url, table, writers, seconds)
    if requests is not None:
        pre_dynamodb_send.disconnect(requests.sent)
        total_requests, total_cpu = requests.count - sent, time.process_time() - cpu
    else:
        total_requests, total_cpu = sum(r[2] for r in results), sum(r[3] for r in results)
    return row(kind, writers, made, results, wall, total_requests, total_cpu)


def row(kind: str, writers: int, made: Any, results: List[Result], wall: float, requests: int,
        cpu: float) -> Dict[str, Any]:
    counts = [r[0] for r in results]
    items = sum(counts)
    latencies = sorted(x for r in results for x in r[1])
    stored = sorted(i.id for i in made.scan(consistent_read=True))
    return {
        "writers": f"{writers} {kind}", "items": items, "items/s": items / wall,
        "requests/item": requests / items, "CPU ms/item": 1000 * cpu / items,
        "p50 ms": 1000 * latencies[len(latencies) // 2], "p99 ms": 1000 * latencies[int(len(latencies) * 0.99)],
        "spread": (max(counts) - min(counts)) / statistics.mean(counts),
        "gapless": "yes" if stored == list(range(1, len(stored) + 1)) else "NO",
    }


COLUMNS = ["writers", "items", "items/s", "requests/item", "CPU ms/item", "p50 ms", "p99 ms", "spread", "gapless"]


def table(rows: List[Dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join("---" for _ in COLUMNS) + " |"]
    lines += ["| " + " | ".join(cell(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--procs", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    from tests.engine import INSTALL_HINT, DynamoDBLocal, find_jar

    jar = find_jar()
    if jar is None:
        raise SystemExit(INSTALL_HINT)
    with DynamoDBLocal(jar) as server:
        warm = create(server.url, f"bench-async-warm-{uuid.uuid4().hex[:8]}")
        for _ in range(args.warmup):
            warm().save()
        if args.warmup:
            run_threads(warm, args.writers, 1.0)  # and the group commit's path
        rows = [measure(kind, server.url, args.writers, args.seconds) for kind in ("tasks", "threads")]
        if args.procs:
            rows.append(measure("processes", server.url, args.procs, args.seconds))
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
          f"DynamoDB Local; python benchmarks/async_vs_threads.py {' '.join(sys.argv[1:])}")
    print(table(rows))


if __name__ == "__main__":
    main()
