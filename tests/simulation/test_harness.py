"""The simulator itself: it finds real interleavings, replays exactly, injects what it says, and cannot hang;
and its checker catches deliberately broken write paths."""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import NextId
from pynamodb_autoinc.counter import bind_counter
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ContentionError,
    ItemWriteError,
    SequenceExhaustedError,
    WriteOutcomeUnknownError,
)

from .checker import check
from .explore import Bounds, DepthFirst, Replay, Scripted, exhaust, run_once, seeded_run
from .scheduler import CRASH, DROP, NONE, THROTTLE, Client, Expect, Outcome, Report, StepTimeout
from .workloads import Item, Operation, UserAbort
from .world import MAX_RETRY_ATTEMPTS, MODES, REGION, Mode, Snapshot, World, build_model

MakeWorld = Callable[..., World]


def plain_model(name: str = "broken") -> Any:
    """A model without the library: an integer ID and an owner tag, and the counter table bound to it."""
    meta = type("Meta", (), {"table_name": f"sim-{name}", "region": REGION,
                             "max_retry_attempts": MAX_RETRY_ATTEMPTS})
    plain: Any = type("Plain", (Model,), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                          "owner": UnicodeAttribute()})
    return plain, bind_counter(NextId, plain)


def broken_world(make_world: MakeWorld) -> World:
    """A deliberately wrong allocator: read the counter, write it back plus one, put the item unconditionally."""
    plain, counter = plain_model()

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


def failed_save(error: Exception, kept: Any) -> Report:
    """The report of client 0's first save, which raised ``error`` and left ``kept`` on its instance."""
    return Report("c0s0", 0, "save", "error", [Outcome("c0s0", "error", kept, error, op="c0s0")], error,
                  Expect(excused=(ContentionError,)))


def test_checker_flags_an_id_left_on_a_failed_instance() -> None:
    """A failed save must leave the instance's ID at None; the checker says so when it does not."""
    error = ItemWriteError("write failed")
    client = Client(0, reports=[failed_save(error, kept=1)], faults={0: ["throttle:PutItem"]})
    verdict = check(MODES["fast"], [client], Snapshot({}, 1))
    assert verdict.problems == ["c0s0 raised ItemWriteError but left ID 1 on the instance "
                                "(a failed or abandoned write leaves it at None)"]


def test_checker_flags_an_unknown_outcome_kept_under_another_id() -> None:
    """WriteOutcomeUnknownError keeps the ID; the item, if stored, must be under that very ID."""
    error = WriteOutcomeUnknownError("no answer")
    client = Client(0, reports=[failed_save(error, kept=1)], faults={0: ["drop:PutItem"]})
    verdict = check(MODES["fast"], [client], Snapshot({2: "c0s0"}, 2))
    assert verdict.problems == ["c0s0 raised WriteOutcomeUnknownError keeping ID 1, but its item is stored as [2]"]


# -- the checker against deliberately broken write paths ---------------------------------------------------


def abandoning_world(make_world: MakeWorld, reset: bool) -> World:
    """A transaction left by the user's exception after the new instance got its ID: ``reset`` says whether the
    write path gives the ID back (as it must) or leaves it on the instance."""
    plain, counter = plain_model("abandon")

    def workload(world: World, save: int, tag: str) -> Operation:
        item = Item(tag, plain(owner=tag))

        def run() -> None:
            item.instance.id = counter.nextval("sim")
            try:
                raise UserAbort(tag)
            finally:
                if reset:
                    item.instance.id = None

        return Operation(tag, save, "abandon", [item], run, Expect(must_fail=(UserAbort,), foreign=(UserAbort,)))

    return make_world(Mode(f"abandon-{reset}"), model=plain, counter=counter, workload=workload)


def test_id_left_by_an_abandoned_write_is_caught(make_world: MakeWorld) -> None:
    """An abandoned write that leaves its ID on the instance breaks the new invariant, in the very first run."""
    stats = exhaust(abandoning_world(make_world, reset=False), Bounds(clients=1, saves=1))
    assert stats.failures
    assert "c0s0 raised UserAbort but left ID 1 on the instance" in stats.failures[0][1]


def test_abandoned_write_that_gives_the_id_back_passes(make_world: MakeWorld) -> None:
    """The same path with the ID reset keeps every invariant, in every schedule: the user's error is expected."""
    stats = exhaust(abandoning_world(make_world, reset=True), Bounds(clients=2, saves=2, faults=1, preemptions=1))
    assert stats.runs > 1
    assert not stats.failures, stats.failures[0]


def split_transaction_world(make_world: MakeWorld) -> World:
    """A "transaction" of two new items sent as two separate puts: not atomic."""
    plain, counter = plain_model("split")

    def workload(world: World, save: int, tag: str) -> Operation:
        items = [Item(tag + letter, plain(owner=tag + letter)) for letter in "ab"]

        def run() -> None:
            for item in items:
                item.instance.id = counter.nextval("sim")
            for item in items:
                item.instance.save(condition=plain.id.does_not_exist())

        return Operation(tag, save, "commit", items, run, Expect(), atomic=(tuple(i.tag for i in items),))

    return make_world(Mode("split"), model=plain, counter=counter, workload=workload)


def test_transaction_that_lands_in_part_is_caught(make_world: MakeWorld) -> None:
    """A crash between the two puts leaves half a transaction stored: the checker says so."""
    stats = exhaust(split_transaction_world(make_world), Bounds(clients=1, saves=1, faults=1, kinds=(CRASH,)),
                    stop_after=100)
    found = [what for _, what in stats.failures if "one transaction wrote ('c0s0a', 'c0s0b'), but only" in what]
    assert found, [what for _, what in stats.failures]


def unbounded_world(make_world: MakeWorld, exhaust_early: bool) -> World:
    """A sequence with ``autoinc_max = 2`` whose allocator ignores it, or raises SequenceExhaustedError at once."""
    plain, counter = plain_model("unbounded")

    def save(tag: str) -> int:
        if exhaust_early:
            raise SequenceExhaustedError("exhausted (falsely)")
        value = counter.nextval("sim")
        plain(value, owner=tag).save(condition=plain.id.does_not_exist())
        return value

    return make_world(Mode(f"unbounded-{exhaust_early}", {"autoinc_max": 2}), model=plain, counter=counter,
                      save=save)


def test_id_past_the_max_is_caught(make_world: MakeWorld) -> None:
    """An allocator that passes autoinc_max is caught: the IDs stored and the counter past it."""
    run = run_once(unbounded_world(make_world, exhaust_early=False), Bounds(clients=1, saves=3), Scripted([]))
    assert "IDs [3] are stored, past autoinc_max = 2" in run.problems
    assert "the counter is 3, past autoinc_max = 2" in run.problems


def test_false_exhaustion_is_caught(make_world: MakeWorld) -> None:
    """SequenceExhaustedError while the counter has room is caught (it is excused only at the max)."""
    run = run_once(unbounded_world(make_world, exhaust_early=True), Bounds(clients=1, saves=1), Scripted([]))
    assert run.problems == ["c0s0 raised SequenceExhaustedError, but the counter ended at None, with room left "
                            "below autoinc_max = 2"]


def test_checker_allows_an_unknown_outcome_raised_from_a_bulk_save() -> None:
    """A BulkSaveError raised from WriteOutcomeUnknownError may keep the ID: the outcome is unknown."""
    unknown = WriteOutcomeUnknownError("no answer")
    try:
        raise BulkSaveError("stopped") from unknown
    except BulkSaveError as exc:
        error = exc
    client = Client(0, reports=[failed_save(error, kept=1)], faults={0: ["drop:TransactWriteItems"]})
    assert check(MODES["fast"], [client], Snapshot({}, 1)).problems == []
