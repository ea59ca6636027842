"""Several real OS processes allocating from one counter on DynamoDB Local, and threads of one process.

moto cannot be trusted with processes (no request locking); DynamoDB Local is
AWS's own engine. Every ID every worker reported is checked against the table.
Threads of one process send their gapless saves together (group commit); an
interrupt in one of them must leave every instance's ID as its write ended.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from pynamodb.attributes import UnicodeAttribute

from pynamodb_autoinc.exceptions import ItemWriteError
from tests.conftest import Backend
from tests.workers import build_model

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def scale(request: pytest.FixtureRequest) -> int:
    """How many saves each worker makes: 25, or 250 with --soak."""
    return 250 if request.config.getoption("soak") else 25


class Run:
    """Start workers, let them go together, optionally SIGKILL one, and read what they saw."""

    def __init__(self, tmp_path: Path, local: Backend, gapless: bool, models: List[Dict[str, Any]]) -> None:
        self.tmp_path = tmp_path
        self.local = local
        self.gapless = gapless
        self.specs = models
        self.models: Dict[str, Any] = {m["name"]: build_model(gapless=gapless, meta=local.meta, **m) for m in models}
        for model in self.models.values():
            local.create(model)
        self.go = tmp_path / "go"
        self.outs: List[Path] = []

    def start(self, workers: int, **config: Any) -> List[subprocess.Popen]:
        procs = []
        for worker in range(workers):
            out = self.tmp_path / f"worker-{worker}.log"
            self.outs.append(out)
            conf = {"models": self.specs, "gapless": self.gapless, "meta": self.local.meta, "worker": worker,
                    "out": str(out), "go": str(self.go), **config}
            procs.append(subprocess.Popen([sys.executable, "-m", "tests.workers", json.dumps(conf)], cwd=ROOT))
        deadline = time.monotonic() + 60
        while not all(o.exists() and o.read_text().startswith("ready") for o in self.outs):
            assert time.monotonic() < deadline, "workers did not start"
            assert all(p.poll() is None for p in procs), "a worker died while starting"
            time.sleep(0.05)
        self.go.touch()
        return procs

    def lines(self, worker: Optional[int] = None) -> List[List[str]]:
        outs = self.outs if worker is None else [self.outs[worker]]
        return [line.split() for out in outs for line in out.read_text().splitlines() if not line.startswith("ready")]

    def stored(self, name: str) -> List[int]:
        return [item.id for item in self.models[name].scan(consistent_read=True)]

    def counter(self, name: str) -> Optional[int]:
        opts = self.models[name].autoinc_options()
        return opts.counter.currval(opts.key)


def one_model(local: Backend, name: str) -> Dict[str, Any]:
    """A model spec with its own table and its own counter key in the shared NextId table."""
    return {"name": name, "table": local.table_name(name.lower()), "key": local.table_name(name.lower())}


def wait_all(procs: List[subprocess.Popen], timeout: float = 600) -> List[int]:
    return [p.wait(timeout=timeout) for p in procs]


@pytest.fixture(name="gapless", params=(False, True), ids=("fast", "gapless"))
def _gapless(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def check_allocations(run: Run, name: str, gapless: bool, killed: bool = False) -> Dict[str, int]:
    """No ID twice; every reported save stored; gapless: exactly 1..N and the counter at N."""
    allocated = [int(f[2]) for f in run.lines() if f[0] == "ok" and f[1] == name]
    explicit = {int(f[2]) for f in run.lines() if f[0] == "explicit" and f[1] == name}
    stored = run.stored(name)
    duplicates = [i for i, n in collections.Counter(allocated).items() if n > 1]
    assert duplicates == [], f"IDs handed to two saves: {duplicates}"
    assert len(stored) == len(set(stored))
    auto_stored = sorted(set(stored) - explicit)
    unreported = set(auto_stored) - set(allocated)
    # a worker killed mid-save may have committed one item it never reported
    assert len(unreported) <= (1 if killed else 0), f"stored but never reported: {sorted(unreported)}"
    assert set(allocated) <= set(auto_stored), "a reported save is missing from the table"
    counter = run.counter(name)
    assert counter is not None and counter >= max(auto_stored)
    gaps = sorted(set(range(1, counter + 1)) - set(auto_stored))
    if gapless:
        assert auto_stored == list(range(1, len(auto_stored) + 1)), f"gaps in a gapless sequence: {gaps[:20]}"
        assert counter == len(auto_stored)
    return {"allocated": len(allocated), "stored": len(auto_stored), "gaps": len(gaps), "duplicates": 0}


@pytest.mark.engine
def test_eight_processes_one_counter(tmp_path, local, gapless, scale):
    """8 processes saving concurrently on one counter: every ID unique; gapless: exactly 1..N."""
    run = Run(tmp_path, local, gapless, [one_model(local, "User")])
    procs = run.start(8, count=scale)
    assert wait_all(procs) == [0] * 8
    summary = check_allocations(run, "User", gapless)
    assert summary["allocated"] == 8 * scale
    if gapless:
        assert summary["gaps"] == 0


@pytest.mark.engine
def test_tasks_in_four_processes_one_counter(tmp_path, local, gapless, scale):
    """4 processes of 8 asyncio tasks each (``await item.asave()``, the async driver) on one counter: every ID
    unique and stored; gapless: exactly 1..N; within each task, the IDs rise in the order its saves ended."""
    pytest.importorskip("aiobotocore", reason="the async driver needs aiobotocore: pip install '.[async]'")
    run = Run(tmp_path, local, gapless, [one_model(local, "User")])
    procs = run.start(4, task="tasks", tasks=8, count=scale)
    assert wait_all(procs) == [0] * 4
    summary = check_allocations(run, "User", gapless)
    assert summary["allocated"] == 4 * 8 * scale
    by_task: Dict[Tuple[int, str], List[int]] = {}
    for worker in range(4):
        for fields in run.lines(worker):
            by_task.setdefault((worker, fields[3]), []).append(int(fields[2]))
    assert len(by_task) == 32 and all(ids == sorted(ids) for ids in by_task.values())
    if gapless:
        assert summary["gaps"] == 0


@pytest.mark.engine
def test_mixed_load(tmp_path, local, gapless, scale):
    """Two models on one counter table, explicit IDs and failing conditions interleaved."""
    run = Run(tmp_path, local, gapless, [
        one_model(local, "User"),
        one_model(local, "Order"),
    ])
    procs = run.start(8, count=scale, explicit_every=5, fail_every=7)
    assert wait_all(procs) == [0] * 8
    lines = run.lines()
    assert not [f for f in lines if f[0] == "unexpected-success"]
    assert {f[2] for f in lines if f[0] == "refused"} == {"ConditionFailedError"}
    for name in ("User", "Order"):
        check_allocations(run, name, gapless)
        explicit = {int(f[2]) for f in lines if f[0] == "explicit" and f[1] == name}
        assert explicit and explicit <= set(run.stored(name))


@pytest.mark.engine
def test_sigkill_mid_run(tmp_path, local, gapless, scale):
    """A worker killed with SIGKILL mid-run leaves no duplicate, and no gap in gapless mode."""
    run = Run(tmp_path, local, gapless, [one_model(local, "User")])
    procs = run.start(8, count=scale * 2, pause=0.002)
    deadline = time.monotonic() + 120
    while len(run.lines(worker=0)) < scale // 2:
        assert time.monotonic() < deadline and procs[0].poll() is None, "worker 0 finished before the kill"
        time.sleep(0.005)
    os.kill(procs[0].pid, signal.SIGKILL)
    codes = wait_all(procs)
    assert codes[0] == -signal.SIGKILL
    assert codes[1:] == [0] * 7
    check_allocations(run, "User", gapless, killed=True)


@pytest.mark.engine
def test_max_holds_across_processes(tmp_path, local, gapless, scale):
    """8 processes racing for a sequence capped at N: exactly N saves succeed, the rest are refused."""
    limit = 4 * scale
    run = Run(tmp_path, local, gapless, [{**one_model(local, "User"), "autoinc_max": limit}])
    procs = run.start(8, count=scale)
    assert wait_all(procs) == [0] * 8
    lines = run.lines()
    assert sum(1 for f in lines if f[0] == "exhausted") == 8 * scale - limit
    summary = check_allocations(run, "User", gapless)
    assert summary["stored"] == limit
    assert max(run.stored("User")) == limit


@pytest.mark.engine
def test_query_strategy_across_processes(tmp_path, local, scale):
    """8 processes numbering one partition with the query strategy: exactly 1..N, none twice."""
    spec = {**one_model(local, "Issue"), "autoinc_strategy": "query", "autoinc_attribute": "id"}
    run = Run(tmp_path, local, True, [spec])
    procs = run.start(8, count=scale)
    assert wait_all(procs) == [0] * 8
    reported = sorted(int(f[2]) for f in run.lines() if f[0] == "ok")
    assert reported == list(range(1, 8 * scale + 1))
    assert sorted(run.stored("Issue")) == reported


@pytest.mark.engine
def test_period_reset_across_processes(tmp_path, local, scale):
    """8 processes counting on one item as a new month starts: one reset wins, no event lost."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    table = local.table_name("apikeys")
    meta = type("Meta", (), {"table_name": table, **local.meta})
    model: Any = type("ApiKey", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                           "request_count": NumberAttribute(null=True),
                                           "active_period": UnicodeAttribute(null=True)})
    local.create(model)
    model(key="k1", request_count=999, active_period="2026-11").save()
    go = tmp_path / "go"
    outs = [tmp_path / f"count-{w}.log" for w in range(8)]
    conf = {"task": "count", "table": table, "meta": local.meta, "now": "2026-12-01T00:00:00",
            "count": scale, "go": str(go)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.workers", json.dumps({**conf, "out": str(out)})],
                              cwd=ROOT) for out in outs]
    deadline = time.monotonic() + 60
    while not all(o.exists() for o in outs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a worker did not start"
        time.sleep(0.05)
    go.touch()
    assert wait_all(procs) == [0] * 8
    counts = sorted(int(line.split()[1]) for out in outs for line in out.read_text().splitlines()
                    if line.startswith("counted"))
    assert counts == list(range(1, 8 * scale + 1))
    item = model.get("k1", consistent_read=True)
    assert (item.request_count, item.active_period) == (8 * scale, "2026-12")


@pytest.mark.engine
def test_blocks_across_processes(tmp_path, local, scale):
    """8 processes taking values from blocks of 7: every ID unique, every block used by one process."""
    run = Run(tmp_path, local, False, [{**one_model(local, "User"), "autoinc_block": 7}])
    procs = run.start(8, count=scale)
    assert wait_all(procs) == [0] * 8
    check_allocations(run, "User", gapless=False)
    for worker in range(8):
        ids = [int(f[2]) for f in run.lines(worker) if f[0] == "ok"]
        assert ids == sorted(ids)  # increasing within a process


@pytest.mark.engine
def test_forked_child_does_not_reuse_the_parents_block(local):
    """A process forked after reserving a block starts with none of its values."""
    import multiprocessing

    model = build_model("User", local.table_name("users"), local.table_name("user"), False, local.meta,
                        autoinc_block=10)
    local.create(model)
    first = model()
    first.save()
    queue: Any = multiprocessing.get_context("fork").SimpleQueue()

    def child() -> None:
        item = model()
        item.save()
        queue.put(item.id)

    proc = multiprocessing.get_context("fork").Process(target=child)
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    second = model()
    second.save()
    assert (first.id, queue.get(), second.id) == (1, 11, 2)


@pytest.mark.engine
@pytest.mark.parametrize("numbering", ["fast", "block", "gapless"])
def test_cycle_with_deletes_across_processes(tmp_path, local, numbering):
    """8 processes on a CYCLE sequence of 1..50, deleting their items behind them: every ID stays within
    the bounds, no live item is ever overwritten, and the live items are exactly the saves not deleted."""
    extra = {"autoinc_block": 5} if numbering == "block" else {}
    spec = {**one_model(local, "Ticket"), "autoinc_max": 50, "autoinc_cycle": True, **extra}
    run = Run(tmp_path, local, numbering == "gapless", [spec])
    procs = run.start(8, task="cycle", count=40, keep=3)
    assert wait_all(procs) == [0] * 8
    lines = run.lines()
    assert [f for f in lines if f[0] == "overwritten"] == [], "a live item was overwritten"
    saved = [(int(f[1]), f[2]) for f in lines if f[0] == "ok"]
    deleted = {(int(f[1]), f[2]) for f in lines if f[0] == "deleted"}
    taken = [f for f in lines if f[0] == "taken"]
    assert len(saved) + len(taken) == 8 * 40
    assert all(1 <= value <= 50 for value, _ in saved), "a value outside 1..50"
    assert len({value for value, _ in saved}) < len(saved), "the sequence never wrapped"
    live = {(item.id, item.owner) for item in run.models["Ticket"].scan(consistent_read=True)}
    assert live == set(saved) - deleted


# -- threads of one process: a group commit interrupted --------------------------------------------------------

class Interrupt(BaseException):
    """Stands for KeyboardInterrupt or SystemExit raised in a thread: not an Exception."""


def _interrupt_group_send(hold: Any, exc: BaseException) -> Any:
    """A pre_dynamodb_send receiver: ``hold``'s first transaction waits for the queue, the second (the group's)
    raises ``exc`` in the thread that sends it (the group's leader), before it is sent."""
    sends: List[str] = []

    def receiver(sender: Any, operation_name: str, **kwargs: Any) -> None:
        if operation_name != "TransactWriteItems":
            return
        sends.append(threading.current_thread().name)
        if len(sends) == 1:
            hold(sender, operation_name, **kwargs)
        elif len(sends) == 2:
            raise exc

    receiver.sends = sends  # type: ignore[attr-defined]
    return receiver


def _save_in_threads(items: List[Any], receiver: Any, hold: Any) -> Dict[int, BaseException]:
    from pynamodb.signals import pre_dynamodb_send

    from tests.test_fairness import run_leader_first

    errors: Dict[int, BaseException] = {}

    def run(i: int) -> None:
        try:
            items[i].save()
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            errors[i] = exc

    with pre_dynamodb_send.connected_to(receiver):
        run_leader_first(hold, [lambda i=i: run(i) for i in range(len(items))])
    return errors


@pytest.mark.modes("gapless")
@pytest.mark.parametrize("exc", [KeyboardInterrupt(), Interrupt()], ids=["KeyboardInterrupt", "BaseException"])
def test_group_leader_interrupted_while_sending_leaves_no_ids(make_model, exc):
    """Three threads save gapless items; the first is stored alone while the other two queue, and the thread
    leading their group commit is interrupted as it sends it: that thread gets the interrupt, the other its
    own ItemWriteError (no interrupt of a thread that was not interrupted), both IDs are None, nothing of the
    group is stored, no value is spent, and the next saves, grouped or not, take the next values."""
    from tests.test_fairness import HoldFirstTransaction

    Item = make_model("Item", autoinc_gapless=True, name=UnicodeAttribute())
    items = [Item(name=f"t{i}") for i in range(3)]
    hold = HoldFirstTransaction(2)
    errors = _save_in_threads(items, _interrupt_group_send(hold, exc), hold)
    assert sorted(errors) == [1, 2]
    interrupted = [i for i, e in errors.items() if e is exc]
    assert len(interrupted) == 1
    other, = set(errors) - set(interrupted)
    assert type(errors[other]) is ItemWriteError and "was interrupted" in str(errors[other])
    assert [i.id for i in items] == [1, None, None]
    assert [(i.id, i.name) for i in Item.scan(consistent_read=True)] == [(1, "t0")]
    opts = Item.autoinc_options()
    assert opts.counter.currval(opts.key) == 1
    again = [items[1], items[2], Item(name="t3")]
    hold = HoldFirstTransaction(2)
    assert _save_in_threads(again, hold, hold) == {}
    assert sorted(i.id for i in again) == [2, 3, 4]
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == sorted(
        (i.id, i.name) for i in [items[0], *again])


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
@pytest.mark.parametrize("case", ["applied", "not-applied", "refused-when-resent"])
def test_a_member_of_a_group_whose_leader_was_interrupted_in_flight_learns_the_outcome(make_model, case):
    """Three threads save gapless items; the first is stored alone while the other two queue, and the thread
    leading their group commit is interrupted while the group's transaction is out (forwarded or not): that
    thread gets the interrupt; the other, not interrupted, resends the group's transaction with its token
    before it answers, never WriteOutcomeUnknownError on an outcome the resend tells. Applied, or applied by
    that resend: it returns, both items stored under their IDs. Refused when resent (the counter moved): it
    raises ItemWriteError, and both IDs go back to None. The counter has no gap either way."""
    from tests import wire as w
    from tests.test_fairness import HoldFirstTransaction

    Item = make_model("Item", name=UnicodeAttribute())
    items = [Item(name=f"t{i}") for i in range(3)]
    hold = HoldFirstTransaction(2)
    refused = w.cancelled("None", "None", "ConditionalCheckFailed")  # the swap's condition: the counter moved
    faults = {"applied": [w.interrupt(applied=True)], "not-applied": [w.interrupt(applied=False)],
              "refused-when-resent": [w.interrupt(applied=False), refused]}
    with w.Wire() as wire:
        wire.on("TransactWriteItems", *faults[case], when=w.items(3))  # the group's: 2 puts and the swap
        errors = _save_in_threads(items, hold, hold)
    leader, = [i for i, e in errors.items() if isinstance(e, w.Interrupt)]
    other, = {1, 2} - {leader}
    stored = sorted((i.id, i.name) for i in Item.scan(consistent_read=True))
    opts = Item.autoinc_options()
    if case != "refused-when-resent":
        assert other not in errors and sorted([items[leader].id, items[other].id]) == [2, 3]
        assert stored == sorted([(1, "t0"), (items[1].id, "t1"), (items[2].id, "t2")])
        assert opts.counter.currval(opts.key) == 3
    else:
        assert type(errors[other]) is ItemWriteError and "proved not applied" in str(errors[other])
        assert items[other].id is None and items[leader].id is None
        assert stored == [(1, "t0")] and opts.counter.currval(opts.key) == 1


def _queued() -> int:
    from pynamodb_autoinc import _state

    return sum(len(g.queue) for g in _state.state.parts.get("groups", {}).values())


def _wait_for(check: Any) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, "the threads did not get there"
        time.sleep(0.005)


@pytest.mark.modes("gapless")
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_thread_interrupted_after_a_leader_took_its_save_ends_as_the_leader_sends_it(make_model):
    """Ctrl-C (KeyboardInterrupt) reaches a thread whose gapless save another thread's group commit already took:
    the thread waits for that request to end, then raises KeyboardInterrupt with its ID as the request left it:
    the item is stored under it, nothing is stored twice, and the next save takes the next value."""
    from pynamodb.signals import pre_dynamodb_send

    Item = make_model("Item", autoinc_gapless=True, name=UnicodeAttribute())
    Item(name="warm").save()  # the counter is known to this process
    main = threading.current_thread()
    delivered = threading.Event()

    def on_sigint(*_: Any) -> None:
        delivered.set()
        raise KeyboardInterrupt

    def attempt(n: int) -> Optional[Any]:
        """One round: a lone save in flight, then another thread's save and this thread's queue behind it; the
        round counts when the other thread leads their group (this thread's save is taken, not sent by it)."""
        sends: List[str] = []

        def hook(_: Any, operation_name: str, **__: Any) -> None:
            if operation_name != "TransactWriteItems":
                return
            sends.append(threading.current_thread().name)
            if len(sends) == 1:
                _wait_for(lambda: _queued() >= 2)
            elif len(sends) == 2 and threading.current_thread() is not main:
                os.kill(os.getpid(), signal.SIGINT)
                assert delivered.wait(10)

        first, other, mine = Item(name=f"first{n}"), Item(name=f"other{n}"), Item(name=f"mine{n}")
        with pre_dynamodb_send.connected_to(hook):
            threads = [threading.Thread(target=first.save), threading.Thread(target=other.save)]
            threads[0].start()
            _wait_for(lambda: len(sends) == 1)
            threads[1].start()
            _wait_for(lambda: _queued() >= 1)
            try:
                mine.save()
            except KeyboardInterrupt:
                assert delivered.is_set()
                # the request that carried it has ended: the item is stored under the ID the instance holds
                assert mine.id is not None and Item.get(mine.id, consistent_read=True).name == mine.name
                for t in threads:
                    t.join(10)
                return mine
            finally:
                for t in threads:
                    t.join(10)
        return None

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        for n in range(20):  # which waiting thread leads is the OS's choice
            mine = attempt(n)
            if mine is not None:
                break
        else:
            pytest.fail("this thread led every group")
    finally:
        signal.signal(signal.SIGINT, previous)
    stored = {i.id: i.name for i in Item.scan(consistent_read=True)}
    assert mine.id is not None and stored[mine.id] == mine.name
    assert len(stored) == len(set(stored.values()))
    after = Item(name="after")
    after.save()
    assert after.id == max(stored) + 1
