"""The simulator itself: it finds real interleavings, replays exactly, injects what it says, and cannot hang."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import ItemWriteError, NextId, WriteOutcomeUnknownError
from pynamodb_autoinc.counter import bind_counter

from .checker import check
from .explore import Bounds, DepthFirst, Replay, Scripted, exhaust, run_once, seeded_run
from .scheduler import CRASH, DROP, NONE, THROTTLE, Client, Outcome, StepTimeout
from .world import ID_AFTER, MAX_RETRY_ATTEMPTS, MODES, REGION, Mode, Snapshot, World, build_model

MakeWorld = Callable[..., World]


def broken_world(make_world: MakeWorld) -> World:
    """A deliberately wrong allocator: read the counter, write it back plus one, put the item unconditionally."""
    meta = type("Meta", (), {"table_name": "sim-broken", "region": REGION,
                             "max_retry_attempts": MAX_RETRY_ATTEMPTS})
    plain: Any = type("Plain", (Model,), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                          "owner": UnicodeAttribute()})
    counter = bind_counter(NextId, plain)

    def save(tag: str) -> int:
        value = (counter.currval("sim") or 0) + 1
        counter.setval("sim", value)
        plain(value, owner=tag).save()
        return value

    return make_world(Mode("broken"), model=plain, counter=counter, save=save)


def test_broken_allocator_is_caught(make_world: MakeWorld) -> None:
    """Within the exhaustive bounds, some interleaving makes a read-then-write allocator hand out an ID twice."""
    stats = exhaust(broken_world(make_world), Bounds(clients=3, saves=2, preemptions=2))
    assert stats.failures
    replay, what = stats.failures[0]
    assert "was handed to two saves" in what and "is owned by" in what, what


def test_broken_allocator_needs_an_interleaving(make_world: MakeWorld) -> None:
    """Run one client after another, the broken allocator breaks nothing: the bug it has is a race."""
    stats = exhaust(broken_world(make_world), Bounds(clients=3, saves=2, preemptions=0))
    assert stats.runs == 1
    assert not stats.failures


def test_every_interleaving_is_enumerated(make_world: MakeWorld) -> None:
    """3 fast clients of one save (2 requests each) have 6!/2!^3 = 90 interleavings: 15 up to renaming clients."""
    world = make_world("fast")
    explorer = DepthFirst()
    schedules = set()
    while True:
        run = run_once(world, Bounds(clients=3, saves=1), explorer)
        schedules.add(tuple(map(str, run.steps)))
        if not explorer.advance():
            break
    assert len(schedules) == 15
    assert all(len(s) == 6 for s in schedules)


def test_split_exploration_covers_each_schedule_once(make_world: MakeWorld) -> None:
    """Three shares of an exhaustive exploration add up to the whole, schedule for schedule."""
    world = make_world("gapless")
    bounds = Bounds(clients=2, saves=2, faults=1, preemptions=1)
    whole = exhaust(world, bounds, split=2)
    shares = [exhaust(world, bounds, share=(i, 3), split=2) for i in range(3)]
    assert sum(s.runs for s in shares) == whole.runs
    assert sum(s.steps for s in shares) == whole.steps
    assert all(s.runs for s in shares)


def test_same_seed_same_run(make_world: MakeWorld) -> None:
    """A seed replays exactly: the same schedule, the same faults, the same outcomes, the same final state."""
    world = make_world("gapless")
    first, second = seeded_run(world, 7), seeded_run(world, 7)
    assert first.steps == second.steps
    assert first.describe() == second.describe()


def test_recorded_choices_replay_the_run(make_world: MakeWorld) -> None:
    """The choice indices printed for a failing exhaustive run replay that run."""
    world = make_world("fast")
    original = seeded_run(world, 11)
    replayed = run_once(world, original.bounds, Replay(original.path))
    assert replayed.steps == original.steps
    assert replayed.describe() == original.describe()


def test_crashed_client_sends_nothing_more(make_world: MakeWorld) -> None:
    """A client that crashes before its put sends no further request; its spent value is a gap (fast)."""
    world = make_world("fast")
    run = run_once(world, Bounds(clients=2, saves=2, faults=1),
                   Scripted([(0, NONE), (0, CRASH), (1, NONE), (1, NONE)]))
    crash = next(i for i, s in enumerate(run.steps) if s.fault == CRASH)
    assert [s for s in run.steps[crash + 1:] if s.client == 0] == []
    assert [o.status for o in run.clients[0].outcomes] == ["crashed"]
    assert run.snapshot.items == {2: "c1s0", 3: "c1s1"}
    assert not run.problems


def test_dropped_request_is_applied(make_world: MakeWorld) -> None:
    """A dropped counter update was applied and is sent again: it spends one value, as on DynamoDB."""
    world = make_world("fast")
    run = run_once(world, Bounds(clients=1, saves=1, faults=1), Scripted([(0, DROP)]))
    assert [str(s) for s in run.steps] == ["c0:UpdateItem!drop", "c0:UpdateItem", "c0:PutItem"]
    assert run.snapshot.items == {2: "c0s0"} and run.snapshot.counter == 2


def test_throttled_request_is_not_applied(make_world: MakeWorld) -> None:
    """A throttled counter update changes nothing and is sent again: no value is spent."""
    world = make_world("fast")
    run = run_once(world, Bounds(clients=1, saves=1, faults=1), Scripted([(0, THROTTLE)]))
    assert [str(s) for s in run.steps] == ["c0:UpdateItem!throttle", "c0:UpdateItem", "c0:PutItem"]
    assert run.snapshot.items == {1: "c0s0"} and run.snapshot.counter == 1


def test_each_client_has_its_own_process_memory(make_world: MakeWorld) -> None:
    """Gapless: a client's first save reads the counter, whatever other clients remember; its second does not."""
    world = make_world("gapless")
    run = run_once(world, Bounds(clients=2, saves=2), Scripted([(0, NONE)] * 3))
    assert [str(s) for s in run.steps] == [
        "c0:GetItem", "c0:TransactWriteItems", "c0:TransactWriteItems",
        "c1:GetItem", "c1:TransactWriteItems", "c1:TransactWriteItems",
    ]


def test_stale_memory_recovers_from_the_cancellation(make_world: MakeWorld) -> None:
    """Gapless: a client whose remembered value is stale learns the counter from its cancelled swap, with no read."""
    world = make_world("gapless")
    script = [(0, NONE), (0, NONE), (1, NONE), (1, NONE), (0, NONE), (0, NONE)]
    run = run_once(world, Bounds(clients=2, saves=2, preemptions=2), Scripted(script))
    assert [str(s) for s in run.steps][4:6] == ["c0:TransactWriteItems", "c0:TransactWriteItems"]
    assert run.clients[0].outcomes[1].value == 3
    assert not run.problems


def test_stuck_client_fails_the_run_in_time(make_world: MakeWorld) -> None:
    """A client that blocks anywhere but at a request boundary fails the run after the step timeout."""
    release = threading.Event()
    model: Any = build_model(MODES["fast"])

    def save(tag: str) -> Any:
        if tag == "c1s0":
            release.wait(30)  # stands for a deadlock inside a save
        item = model(owner=tag)
        item.save()
        return item.id

    world = make_world("fast", model=model, save=save)
    try:
        with pytest.raises(StepTimeout, match="client 1 did not reach a request boundary within 0.5s"):
            run_once(world, Bounds(clients=2, saves=1), Scripted([]), step_timeout=0.5)
    finally:
        release.set()
        for thread in threading.enumerate():
            if thread.name.startswith("sim-client-"):
                thread.join(10)
    assert not [t for t in threading.enumerate() if t.name.startswith("sim-client-")]


def test_checker_flags_an_id_left_on_a_failed_instance() -> None:
    """A failed save must leave the instance's ID at None; the checker says so when it does not."""
    error = ItemWriteError("write failed")
    setattr(error, ID_AFTER, 1)
    client = Client(0, outcomes=[Outcome("c0s0", "error", error=error)], faults={0: ["throttle:PutItem"]})
    verdict = check(MODES["fast"], [client], Snapshot({}, 1))
    assert verdict.problems == ["c0s0 raised ItemWriteError but left ID 1 on the instance "
                                "(a failed save leaves it at None)"]


def test_checker_flags_an_unknown_outcome_kept_under_another_id() -> None:
    """WriteOutcomeUnknownError keeps the ID; the item, if stored, must be under that very ID."""
    error = WriteOutcomeUnknownError("no answer")
    setattr(error, ID_AFTER, 1)
    client = Client(0, outcomes=[Outcome("c0s0", "error", error=error)], faults={0: ["drop:PutItem"]})
    verdict = check(MODES["fast"], [client], Snapshot({2: "c0s0"}, 2))
    assert verdict.problems == ["c0s0 raised WriteOutcomeUnknownError keeping ID 1, but its item is stored as [2]"]
