"""A probe of the gapless queue: N processes each save K gapless items on one counter, and the probe prints
items/s, requests per item, client CPU per item, the latency of one save, the writer spread, and how the
queue was used (per item: saves coming back on a standing ticket, those refused, tickets taken, tickets passed
over, and how many writers were ahead when a ticket holder looked).

Usage (from the repository root, DynamoDB Local installed as for the tests)::

    python benchmarks/queue_probe.py --procs 8 --items 40 [--repeat 3] [--url http://127.0.0.1:PORT]

Without ``--url`` it starts DynamoDB Local itself. To compare two versions of the library, run the probe
alternately with ``PYTHONPATH`` naming each checkout (the benchmark's rows move by ±30 % between repetitions on
a shared 2-core machine, so compare medians of interleaved repetitions). The queue counts come from wrapping
private methods of :mod:`pynamodb_autoinc._contention`: a measuring tool, it asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.getcwd())


def _models(url: str, suffix: str) -> Tuple[Any, Any]:
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin, NextId

    def meta(table: str, **options: Any) -> type:
        return type("Meta", (), dict(table_name=table, host=url, region="us-east-1", aws_access_key_id="dummy",
                                     aws_secret_access_key="dummy", **options))

    counter = type("ProbeCounter", (NextId,), {"Meta": meta("probe-counter-" + suffix)})
    item = type("ProbeItem", (AutoIncrementMixin, Model), {
        "Meta": meta("probe-item-" + suffix, autoinc_gapless=True, autoinc_counter=counter),
        "id": NumberAttribute(hash_key=True), "owner": UnicodeAttribute(null=True)})
    return counter, item


def _count_queue_events(events: Dict[str, int]) -> None:
    from pynamodb_autoinc import _contention as contention

    def counted(name: str) -> None:
        original = getattr(contention.Contest, name)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            events[name] += 1
            return original(self, *args, **kwargs)
        setattr(contention.Contest, name, wrapper)

    for name in ("_come_back", "_standing_refused", "_queue", "_skip"):
        counted(name)
    original_wait = contention.Contest._wait

    def wait(self: Any, item: Any, exc: Any) -> Any:
        served = contention._number(item, "NextServed")
        if served is not None and self.ticket is not None:
            events[f"ahead {min(self.ticket - served - 1, 5)}"] += 1
        return original_wait(self, item, exc)
    setattr(contention.Contest, "_wait", wait)  # noqa: B010 (a method replaced for counting)


def _writer(url: str, suffix: str, items: int, barrier: Any, results: Any, writer: int) -> None:
    from pynamodb.signals import pre_dynamodb_send

    _, item = _models(url, suffix)
    requests: Dict[str, int] = collections.Counter()
    events: Dict[str, int] = collections.Counter()
    pre_dynamodb_send.connect(lambda sender, operation_name="", **_: requests.update([operation_name]), weak=False)
    _count_queue_events(events)
    item(owner="warm-up").save()
    requests.clear()
    events.clear()
    barrier.wait()
    cpu, began = time.process_time(), time.perf_counter()
    latencies: List[float] = []
    failed = 0
    for _ in range(items):
        start = time.perf_counter()
        try:
            item(owner=str(writer)).save()
        except Exception:  # counted, not raised: a measuring tool
            failed += 1
        latencies.append(time.perf_counter() - start)
    results.put(dict(began=began, ended=time.perf_counter(), cpu=time.process_time() - cpu,
                     requests=dict(requests), events=dict(events), latencies=latencies, failed=failed))


def probe(url: str, procs: int, items: int) -> str:
    suffix = uuid.uuid4().hex[:8]
    counter, item = _models(url, suffix)
    for model in (counter, item):
        model.create_table(read_capacity_units=1, write_capacity_units=1, wait=True)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(procs), context.Queue()
    workers = [context.Process(target=_writer, args=(url, suffix, items, barrier, results, w)) for w in range(procs)]
    for worker in workers:
        worker.start()
    reports = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    total = procs * items
    requests: Dict[str, int] = collections.Counter()
    events: Dict[str, int] = collections.Counter()
    for report in reports:
        requests.update(report["requests"])
        events.update(report["events"])
    latencies = sorted(x for r in reports for x in r["latencies"])
    rates = [items / (r["ended"] - r["began"]) for r in reports]
    elapsed = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    ids = sorted(int(i.id) for i in item.scan())
    gapless = ids == list(range(ids[0], ids[0] + len(ids))) if ids else True
    for model in (counter, item):
        model.delete_table()
    return (f"{procs}p: {total / elapsed:.1f} items/s, {sum(requests.values()) / total:.2f} req/item, "
            f"{sum(r['cpu'] for r in reports) / total * 1000:.2f} CPU ms/item, "
            f"p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, p99 {latencies[int(len(latencies) * .99)] * 1000:.0f}"
            f" ms, max {latencies[-1] * 1000:.0f} ms, slowest/fastest {min(rates) / max(rates):.2f}, "
            f"failed {sum(r['failed'] for r in reports)}, gapless {gapless}\n"
            f"    per item: {', '.join(f'{k} {v / total:.2f}' for k, v in sorted(requests.items()))}; "
            f"{', '.join(f'{k} {v / total:.2f}' for k, v in sorted(events.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--url", default="")
    args = parser.parse_args()
    server = None
    url = args.url
    if not url:
        from tests.engine import INSTALL_HINT, DynamoDBLocal, find_jar

        jar = find_jar()
        if jar is None:
            raise SystemExit(f"DynamoDB Local is not installed. {INSTALL_HINT}")
        server = DynamoDBLocal(jar)
        server.start()
        url = server.url
    try:
        lines = [probe(url, args.procs, args.items) for _ in range(args.repeat)]
    finally:
        if server is not None:
            server.stop()
    print("\n".join(lines))
    if args.repeat > 1:
        rates = [float(line.split(" items/s")[0].split(": ")[1]) for line in lines]
        print(f"median {statistics.median(rates):.1f} items/s")


if __name__ == "__main__":
    main()
