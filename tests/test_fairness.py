"""Gapless mode under contention: the counter's queue, group commit of threads, the time budget.

The many-process runs are in ``tests/test_concurrency.py``; how fair and how
fast the queue is under load is measured by ``benchmarks/throughput.py``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import pytest
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.operand import Path
from pynamodb.signals import post_dynamodb_send, pre_dynamodb_send

from pynamodb_autoinc import (
    _budget,
    _contention,
    _engine,
    _state,
)
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    ConditionFailedError,
    ContentionError,
    CounterValueError,
    ItemWriteError,
    SequenceExhaustedError,
)
from pynamodb_autoinc.testing import reset_counters
from tests.helpers import currval, ids, run_in_threads
from tests.simulation.scheduler import VirtualClock

pytestmark = pytest.mark.modes("gapless")


def counter_item(model: Any, key: str) -> Dict[str, Any]:
    """The counter item's attributes, as stored."""
    counter = model.autoinc_options().counter
    hash_key, range_key = counter._item_key(key)
    return counter._get_connection().get_item(hash_key, range_key=range_key, consistent_read=True).get("Item", {})


def queue_of(model: Any) -> Any:
    """(last ticket handed out, last ticket served) of the model's counter."""
    item = counter_item(model, model.autoinc_options().key)
    return tuple(int(item[name]["N"]) if name in item else None for name in ("NextTicket", "NextServed"))


@pytest.fixture
def virtual_clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    """The engine's clock, moved on by its own sleeps only."""
    clock = VirtualClock()
    monkeypatch.setattr(_budget, "clock", clock)
    return clock


def test_a_lost_race_queues_and_the_queue_ends_empty(make_model, rival):
    """A save that lost two races takes a ticket, is served, and leaves no ticket waiting."""
    User = make_model("User", autoinc_gapless=True)
    rival(User, times=2)
    user = User()
    user.save()
    assert user.id == 3
    assert queue_of(User) == (1, 1)


def test_a_dead_writers_ticket_delays_a_save_by_about_a_turn(make_model, virtual_clock):
    """A ticket whose writer died is passed over once it has kept the queue waiting for TURN seconds."""
    User = make_model("User", autoinc_gapless=True)
    counter = User.autoinc_options().counter
    counter.setval(User.autoinc_options().key, 5)
    key = User.autoinc_options().key
    # the dead writer's ticket
    User._get_connection().connection.dispatch("UpdateItem", _contention.ticket_kwargs(counter, key))
    user = User()
    user.save()
    assert user.id == 6
    assert _contention.TURN <= virtual_clock.elapsed <= 1.5 * _contention.TURN, virtual_clock.elapsed
    assert queue_of(User) == (2, 2)


def test_a_writer_passed_over_queues_again(make_model, virtual_clock):
    """A ticket holder that finds its ticket passed over takes a new ticket and still saves."""
    User = make_model("User", autoinc_gapless=True)
    counter = User.autoinc_options().counter
    connection = User._get_connection().connection
    counter.setval(User.autoinc_options().key, 1)
    key = User.autoinc_options().key
    connection.dispatch("UpdateItem", _contention.ticket_kwargs(counter, key))  # ticket 1: a writer still waiting
    served = {"done": False}

    def pass_over(_: Any, operation_name: str, **__: Any) -> None:
        # while our save waits with ticket 2, another writer passes over both tickets
        if operation_name == "TransactWriteItems" and not served["done"] and queue_of(User)[0] == 2:
            served["done"] = True
            connection.dispatch("UpdateItem", _contention.skip_kwargs(counter, User.autoinc_options().key, 0))
            connection.dispatch("UpdateItem", _contention.skip_kwargs(counter, User.autoinc_options().key, 1))

    with pre_dynamodb_send.connected_to(pass_over):
        user = User()
        user.save()
    assert served["done"]
    assert user.id == 2
    assert queue_of(User) == (3, 3)


def test_the_time_budget_ends_a_save_and_leaves_the_queue_empty(make_model, rival):
    """Losing races for longer than Meta.autoinc_timeout raises ContentionError, writes nothing, and the
    save's ticket is served so that nobody waits for it."""
    User = make_model("User", autoinc_gapless=True, autoinc_timeout=0.2)
    rival(User, times=10**6)
    user = User()
    began = time.monotonic()
    with pytest.raises(ContentionError, match=r"times in a row in 0\.[2-9]\d s; .*raise Meta.autoinc_timeout"):
        user.save()
    assert time.monotonic() - began < 5
    assert user.id is None
    assert list(User.scan()) == []
    ticket, served = queue_of(User)
    assert ticket == served


def test_no_timeout_means_retries_alone_bound_the_save(make_model, rival):
    """With Meta.autoinc_timeout = None, Meta.autoinc_retries still ends the save."""
    User = make_model("User", autoinc_gapless=True, autoinc_timeout=None, autoinc_retries=3)
    rival(User, times=10**6)
    user = User()
    with pytest.raises(ContentionError, match="4 times in a row"):
        user.save()
    assert user.id is None


# -- standing tickets --------------------------------------------------------

def standing_names(model: Any) -> List[str]:
    """The standing-ticket attributes on the model's counter item."""
    return [n for n in counter_item(model, model.autoinc_options().key) if n.startswith(_contention.STANDING_PREFIX)]


def serve_ghost(model: Any, ticket: int) -> None:
    """Another process's save: its swap serves ``ticket`` and stores the next value."""
    opts = model.autoinc_options()
    current = opts.counter.currval(opts.key)
    model._get_connection().connection.dispatch("UpdateItem", _engine.swap_kwargs(
        opts.counter, opts.key, current, current + 1, ticket=ticket))


def save_with_a_writer_behind(model: Any, rival: Any) -> Any:
    """Save after losing three races; before the first swap on its ticket, another process queues behind it."""
    opts = model.autoinc_options()
    sent = {"swaps": 0}

    def ghost(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "TransactWriteItems":
            sent["swaps"] += 1
            if sent["swaps"] == 3:  # the first swap on the ticket
                model._get_connection().connection.dispatch("UpdateItem",
                                                            _contention.ticket_kwargs(opts.counter, opts.key))

    rival(model, times=3)
    with pre_dynamodb_send.connected_to(ghost):
        user = model()
        user.save()
    assert sent["swaps"] == 4
    return user


def test_a_writer_saving_in_a_loop_keeps_its_place(make_model, rival, requests, virtual_clock):
    """A save served while another process queued behind it, begun right after the process's previous save,
    takes a standing ticket: the next save sends one transaction and no ticket request."""
    User = make_model("User", autoinc_gapless=True)
    User().save()
    save_with_a_writer_behind(User, rival)
    assert queue_of(User) == (3, 1)  # ticket 2: the other process; ticket 3: the standing one
    assert len(standing_names(User)) == 1
    serve_ghost(User, 2)
    requests.clear()
    user = User()
    user.save()
    assert [op for op, _ in requests] == ["TransactWriteItems"]
    assert user.id == User.autoinc_options().counter.currval(User.autoinc_options().key)
    # it served its standing ticket 3 and, having seen a writer behind it last time, took ticket 4
    assert queue_of(User) == (4, 3)
    assert len(standing_names(User)) == 1


def test_a_standing_ticket_starts_no_contest_for_other_writes(make_model, rival, virtual_clock, monkeypatch):
    """While this process holds a standing ticket, the saves of other models (a fast save, a gapless save_all()
    transaction on another counter) send their requests without a queue contest, as any uncontested write does."""
    User = make_model("User", autoinc_gapless=True)
    Order = make_model("Order", autoinc_gapless=False)
    Invoice = make_model("Invoice", autoinc_gapless=True)
    User().save()
    save_with_a_writer_behind(User, rival)
    assert len(standing_names(User)) == 1
    contests: List[Any] = []
    real = _contention.Contest

    def spy(write: Any, **kwargs: Any) -> Any:
        contests.append(write)
        return real(write, **kwargs)

    monkeypatch.setattr(_contention, "Contest", spy)
    Order().save()
    Invoice.save_all([Invoice(), Invoice()])
    assert contests == []
    assert [o.id for o in Order.scan()] == [1]
    assert sorted(i.id for i in Invoice.scan()) == [1, 2]
    assert len(standing_names(User)) == 1  # still held for the process's next lone save


def test_a_writer_after_a_pause_takes_no_standing_ticket(make_model, rival, virtual_clock):
    """A save begun more than HOT seconds after the process's previous one leaves no standing ticket."""
    User = make_model("User", autoinc_gapless=True)
    User().save()
    virtual_clock.sleep(2 * _contention.HOT)
    save_with_a_writer_behind(User, rival)
    assert queue_of(User) == (2, 1)
    assert standing_names(User) == []


def test_a_dead_processs_standing_ticket_is_passed_over_soon(make_model, virtual_clock):
    """A standing ticket whose process does not come back delays the writer behind it by about
    STANDING_TURN, not TURN, and is removed."""
    User = make_model("User", autoinc_gapless=True)
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 5)
    connection = User._get_connection().connection
    connection.dispatch("UpdateItem", _contention.ticket_kwargs(opts.counter, opts.key))
    connection.dispatch("UpdateItem", opts.counter._update_kwargs(  # ticket 1 is the dead process's standing one
        opts.key, [Path(_contention.STANDING_PREFIX + "dead").set(0)], None))
    user = User()
    user.save()
    assert user.id == 6
    assert _contention.STANDING_TURN <= virtual_clock.elapsed < _contention.TURN, virtual_clock.elapsed
    assert queue_of(User) == (2, 2)
    assert standing_names(User) == []


def test_a_failed_save_gives_its_standing_ticket_back(make_model, rival, virtual_clock):
    """A save on a standing ticket that fails for its own reason serves the ticket unused: nobody waits for it,
    and the instance keeps no ID."""
    User = make_model("User", autoinc_gapless=True, score=NumberAttribute(null=True))
    User().save()
    save_with_a_writer_behind(User, rival)
    serve_ghost(User, 2)
    user = User()
    with pytest.raises(ConditionFailedError):
        user.save(condition=User.score.exists())
    assert user.id is None
    assert queue_of(User) == (3, 3)
    assert standing_names(User) == []


def test_a_passed_over_standing_ticket_queues_again(make_model, rival, requests, virtual_clock):
    """A process whose standing ticket was passed over finds out from the refusal, takes a new ticket and
    saves."""
    User = make_model("User", autoinc_gapless=True)
    opts = User.autoinc_options()
    User().save()
    save_with_a_writer_behind(User, rival)
    serve_ghost(User, 2)
    name, = standing_names(User)
    User._get_connection().connection.dispatch("UpdateItem", _contention.skip_kwargs(opts.counter, opts.key, 2, name))
    requests.clear()
    user = User()
    user.save()
    assert [op for op, _ in requests] == ["TransactWriteItems", "UpdateItem", "TransactWriteItems"]
    assert user.id == opts.counter.currval(opts.key)
    assert queue_of(User) == (4, 4)


# -- group commit ------------------------------------------------------------

class HoldFirstTransaction:
    """A pre_dynamodb_send receiver: the first transaction waits until ``waiting`` saves are queued behind it."""

    def __init__(self, waiting: int) -> None:
        self.waiting = waiting
        self.holding = threading.Event()

    def __call__(self, _: Any, operation_name: str, **__: Any) -> None:
        if operation_name != "TransactWriteItems" or self.holding.is_set():
            return
        self.holding.set()
        deadline = time.monotonic() + 10
        groups = _state.state.parts.get("groups", {})  # the engine's group commits, by counter and connection
        while time.monotonic() < deadline and sum(len(g.queue) for g in list(groups.values())) < self.waiting:
            time.sleep(0.005)


def run_leader_first(hold: HoldFirstTransaction, targets: List[Any]) -> None:
    """Run ``targets`` in threads: the first alone until its transaction is held, then the others."""
    threads = [threading.Thread(target=t) for t in targets]
    threads[0].start()
    assert hold.holding.wait(10)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(30)


def test_threads_of_one_process_share_a_transaction(make_model):
    """Threads saving gapless items on one counter are sent together: fewer transactions than items,
    every ID once, and no lost race among them."""
    User = make_model("User", autoinc_gapless=True)
    sizes: List[int] = []
    connection = User._get_connection().connection
    original = connection.dispatch

    def dispatch(operation: str, kwargs: Dict[str, Any]) -> Any:
        if operation == "TransactWriteItems":
            sizes.append(sum("Put" in item for item in kwargs["TransactItems"]))
        return original(operation, kwargs)

    users = [User() for _ in range(8)]
    hold = HoldFirstTransaction(7)
    with pre_dynamodb_send.connected_to(hold):
        connection.dispatch = dispatch
        try:
            run_leader_first(hold, [u.save for u in users])
        finally:
            del connection.dispatch
    assert sorted(u.id for u in users) == list(range(1, 9))
    assert sorted(u.id for u in User.scan()) == list(range(1, 9))
    assert sizes == [1, 7]
    assert User.autoinc_options().counter.currval(User.autoinc_options().key) == 8


def test_a_failing_item_of_a_group_fails_alone(make_model):
    """In a group commit, an item whose condition fails gets ConditionFailedError and keeps no ID;
    the other threads' items are stored with consecutive IDs."""
    User = make_model("User", autoinc_gapless=True, score=NumberAttribute(null=True))
    users = [User(score=i) for i in range(6)]
    errors: Dict[int, BaseException] = {}

    def save(i: int) -> None:
        try:
            users[i].save(condition=User.score.exists() if i == 3 else None)
        except BaseException as exc:  # noqa: BLE001 - recorded and checked below
            errors[i] = exc

    hold = HoldFirstTransaction(5)
    with pre_dynamodb_send.connected_to(hold):
        run_leader_first(hold, [lambda i=i: save(i) for i in range(6)])
    assert list(errors) == [3] and type(errors[3]) is ConditionFailedError
    assert users[3].id is None
    assert sorted(u.id for u in users if u.id is not None) == [1, 2, 3, 4, 5]
    assert sorted((u.id, u.score) for u in User.scan()) == sorted((u.id, u.score) for u in users if u.id)
    assert User.autoinc_options().counter.currval(User.autoinc_options().key) == 5


# -- a slow writer -----------------------------------------------------------

def dead_ticket(model: Any, pace: Optional[int] = None) -> None:
    """A ticket taken by a writer that then died; with ``pace``, the writer had declared itself slow."""
    opts = model.autoinc_options()
    model._get_connection().connection.dispatch("UpdateItem", _contention.ticket_kwargs(
        opts.counter, opts.key, _contention.STANDING_PREFIX + "dead", pace))


def test_a_slow_writers_ticket_is_waited_for_longer_than_a_turn(make_model, virtual_clock):
    """The writer behind a ticket whose holder declared a 300 ms pace waits one turn plus four of its requests
    before passing over it, not TURN; and a dead slow writer costs no more than that."""
    User = make_model("User", autoinc_gapless=True)
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 5)
    dead_ticket(User, pace=300)
    user = User()
    user.save()
    assert user.id == 6
    assert _contention.TURN + 4 * 0.3 <= virtual_clock.elapsed <= _contention.SLOW_TURN_LIMIT, virtual_clock.elapsed
    assert queue_of(User) == (2, 2)
    assert [n for n in counter_item(User, opts.key) if n.startswith(("NextStanding_", "NextPace_"))] == []


def slow_requests(model: Any, clock: Any, seconds: float) -> List[Dict[str, Any]]:
    """Make every request of ``model``'s connection take ``seconds`` longer on ``clock``; return the list the
    sent UpdateItem arguments are recorded in (undone by ``del connection.dispatch``)."""
    connection = model._get_connection().connection
    original = connection.dispatch
    updates: List[Dict[str, Any]] = []

    def dispatch(operation: str, kwargs: Dict[str, Any]) -> Any:
        clock.sleep(seconds)
        if operation == "UpdateItem":
            updates.append(kwargs)
        return original(operation, kwargs)

    connection.dispatch = dispatch
    return updates


def test_a_slow_writer_declares_its_pace_with_its_ticket(make_model, rival, virtual_clock):
    """A save whose requests take 300 ms longer records its pace beside its ticket, and its swap removes both."""
    User = make_model("User", autoinc_gapless=True)
    updates = slow_requests(User, virtual_clock, 0.3)
    try:
        rival(User, times=2)
        User().save()
    finally:
        del User._get_connection().connection.dispatch
    ticket, = [u for u in updates if "NextTicket" in str(u)]
    assert "NextPace_" in str(ticket["ExpressionAttributeNames"])
    assert [n for n in counter_item(User, User.autoinc_options().key) if n.startswith(("NextStanding_", "NextPace_"))
            ] == []


def test_a_writer_whose_requests_are_slower_still_gets_its_turn(make_model, backend_name):
    """Two writers saving in a loop and a third whose requests take 0.3 s longer (each a process of its own):
    the slow writer's saves all succeed within the default time budget."""
    if backend_name == "moto":
        pytest.skip("moto has no request locking: threads racing on one counter may lose its updates")
    from tests.simulation.scheduler import separate_process_state

    models = [make_model(f"Writer{i}", autoinc_gapless=True, autoinc_key="shared", autoinc_timeout=5)
              for i in range(3)]
    slow_connection = models[2]._get_connection().connection
    original = slow_connection.dispatch

    def slow_dispatch(operation: str, kwargs: Dict[str, Any]) -> Any:
        time.sleep(0.3)
        return original(operation, kwargs)

    stop = threading.Event()
    errors: List[BaseException] = []
    slow_ids: List[int] = []

    def fast(model: Any) -> None:
        while not stop.is_set():
            try:
                model().save()
            except BaseException as exc:  # noqa: BLE001 - recorded and checked below
                errors.append(exc)
                return

    def slow() -> None:
        try:
            for _ in range(4):
                item = models[2]()
                item.save()
                slow_ids.append(item.id)
        except BaseException as exc:  # noqa: BLE001 - recorded and checked below
            errors.append(exc)
        finally:
            stop.set()

    slow_connection.dispatch = slow_dispatch
    try:
        with separate_process_state():
            threads = [threading.Thread(target=fast, args=(m,)) for m in models[:2]] + [threading.Thread(target=slow)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
    finally:
        stop.set()
        del slow_connection.dispatch
    assert errors == []
    assert len(slow_ids) == 4
    stored = sorted(i.id for m in models for i in m.scan())
    assert stored == list(range(1, len(stored) + 1))


# -- two models on one counter, and a reset ---------------------------------

def test_two_models_on_one_counter_keep_separate_standing_tickets(make_model, rival, virtual_clock):
    """A second model sharing the counter takes its ticket without cancelling the first model's standing
    ticket: each (counter, connection) place has its own standing-ticket attribute."""
    A = make_model("A", autoinc_gapless=True, autoinc_key="shared")
    B = make_model("B", autoinc_gapless=True, autoinc_key="shared")
    A().save()
    save_with_a_writer_behind(A, rival)
    held, = standing_names(A)
    seen: List[List[str]] = []

    def after_ticket(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "UpdateItem" and not seen:
            seen.append(standing_names(A))

    with post_dynamodb_send.connected_to(after_ticket):
        b = B()
        b.save()
    assert seen == [[held]]
    assert b.id == A.autoinc_options().counter.currval("shared")


def test_reset_counters_forgets_a_standing_ticket(make_model, rival, virtual_clock):
    """After the items are deleted and reset_counters() is called, a process that held a standing ticket saves
    at once (ID 1), even with no time budget."""
    User = make_model("User", autoinc_gapless=True, autoinc_timeout=None)
    User().save()
    save_with_a_writer_behind(User, rival)
    assert standing_names(User) != []
    for stored in User.scan():
        stored.delete()
    reset_counters(User)
    user = User()
    user.save()
    assert user.id == 1


def test_a_standing_ticket_on_a_deleted_counter_does_not_loop(make_model, rival, virtual_clock):
    """A save coming back on a standing ticket whose counter item was deleted with the items (this process not
    reset) finds no counter in the refusal and claims the first value, within a few requests."""
    User = make_model("User", autoinc_gapless=True, autoinc_timeout=None, autoinc_retries=20)
    opts = User.autoinc_options()
    User().save()
    save_with_a_writer_behind(User, rival)
    for stored in User.scan():
        stored.delete()
    hash_key, range_key = opts.counter._item_key(opts.key)
    opts.counter._get_connection().delete_item(hash_key, range_key=range_key)
    user = User()
    user.save()
    assert user.id == 1
    assert opts.counter.currval(opts.key) == 1


def test_a_ticket_answer_showing_no_counter_value_ends_the_save(make_model, rival, requests, monkeypatch):
    """A queued save whose ticket's answer shows a counter holding no integer (put there by hand meanwhile) takes
    no ticket after ticket: it raises CounterValueError naming the fix within a few requests, its ID at None."""
    User = make_model("User", autoinc_gapless=True, autoinc_backoff=0, autoinc_timeout=None, autoinc_retries=50)
    opts = User.autoinc_options()
    User().save()
    hash_key, range_key = opts.counter._item_key(opts.key)
    tickets: List[int] = []
    build = _contention.ticket_kwargs

    def break_then_build(*args: Any, **kwargs: Any) -> Dict[str, Any]:
        tickets.append(1)
        opts.counter._get_connection().update_item(hash_key, range_key=range_key, actions=[Path(["NextId"]).set("x")])
        return build(*args, **kwargs)

    monkeypatch.setattr(_contention, "ticket_kwargs", break_then_build)
    rival(User, times=2)  # two lost races: the second takes a ticket
    requests.clear()
    user = User()
    with pytest.raises(CounterValueError, match="not an integer.*setval"):
        user.save()
    assert user.id is None
    assert tickets == [1]
    assert len(requests) <= 12
    assert ids(User) == [1]


def _in_threads(saves: List[Any], waiting: int) -> dict:
    return in_threads(HoldFirstTransaction(waiting), saves)


@pytest.mark.modes("gapless")
def test_group_commit_at_the_bound_with_cycle_wraps(make_model):
    """Gapless with autoinc_cycle, max 10, counter at 8, three threads: IDs 9, 10 and the minimum 1, all stored."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=10, autoinc_cycle=True,
                      name=UnicodeAttribute())
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 8)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = _in_threads([i.save for i in items], 2)
    assert errors == {}
    assert sorted(i.id for i in items) == [1, 9, 10]
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == sorted((i.id, i.name) for i in items)


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("gapless")
def test_group_commit_at_the_bound_all_exhausted_keep_no_id(make_model):
    """Gapless, counter at the maximum, three threads: each gets SequenceExhaustedError, none keeps an ID."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=10, name=UnicodeAttribute())
    Item(id=10, name="last").save()
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 10)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = run_in_threads([i.save for i in items])
    assert sorted(errors) == [0, 1, 2]
    assert all(isinstance(e, SequenceExhaustedError) for e in errors.values())
    assert [i.id for i in items] == [None] * 3
    assert [(i.id, i.name) for i in Item.scan(consistent_read=True)] == [(10, "last")]


@pytest.mark.modes("gapless")
def test_group_commit_item_too_large_in_the_leader_fails_alone(make_model):
    """The held leader's item too large: it fails alone, the queued threads' items are stored."""
    from pynamodb_autoinc.exceptions import ItemWriteError

    Item = make_model("Item", autoinc_gapless=True, body=UnicodeAttribute(null=True))
    items = [Item(body="x" * 410_000), Item(body="a"), Item(body="b")]
    errors = _in_threads([i.save for i in items], 2)
    assert list(errors) == [0] and isinstance(errors[0], ItemWriteError)
    assert items[0].id is None
    assert sorted(i.id for i in items[1:]) == [1, 2] and ids(Item) == [1, 2]


@pytest.mark.modes("gapless")
@pytest.mark.parametrize("timeout", [3, None])
def test_gapless_save_after_reset_counters_with_threads(make_model, timeout):
    """After gapless saves from threads (places in the queue) and testing.reset_counters(), a save gets 1."""
    import threading

    from pynamodb_autoinc.testing import reset_counters

    Item = make_model("Item", autoinc_gapless=True, autoinc_timeout=timeout)

    def work() -> None:
        for _ in range(3):
            Item().save()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert ids(Item) == list(range(1, 13))
    for item in Item.scan():
        item.delete()
    reset_counters(Item)
    item = Item()
    done = threading.Event()
    errors: List[BaseException] = []

    def save() -> None:
        try:
            item.save()
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)
        done.set()

    threading.Thread(target=save, daemon=True).start()
    assert done.wait(20), "the save after reset_counters() did not finish"
    assert errors == [] and item.id == 1


@pytest.mark.modes("gapless")
def test_gapless_save_after_the_counter_item_vanished(make_model):
    """After threads' gapless saves, the counter item deleted by another process (no reset in this one): the
    next save finishes (an ID past the stored ones, or a clear error), it does not spin to a ContentionError."""
    import threading

    from pynamodb_autoinc.exceptions import ContentionError

    Item = make_model("Item", autoinc_gapless=True, autoinc_timeout=5)

    def work() -> None:
        for _ in range(3):
            Item().save()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    opts = Item.autoinc_options()
    hash_key, range_key = opts.counter._item_key(opts.key)
    opts.counter._get_connection().delete_item(hash_key, range_key=range_key)
    for item in Item.scan():
        item.delete()
    item = Item()
    try:
        item.save()
    except ContentionError as exc:
        pytest.fail(f"spun until the timeout: {exc}")
    except AutoIncrementError:
        return
    assert item.id == 1


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("gapless")
def test_two_models_sharing_a_gapless_counter_from_threads_number_once(make_model):
    """Two gapless models with one counter key, saved from threads of one process: every value once, no gap."""
    A = make_model("A", autoinc_gapless=True, autoinc_key="shared")
    B = make_model("B", autoinc_gapless=True, autoinc_key="shared")

    def work(model: Any) -> Any:
        return lambda: [model().save() for _ in range(3)]

    errors = run_in_threads([work(A), work(B), work(A), work(B)])
    assert errors == {}
    assert sorted(ids(A) + ids(B)) == list(range(1, 13))


@pytest.mark.modes("gapless")
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_save_interrupted_while_queued_behind_a_group_leader_keeps_no_id(make_model):
    """A gapless save whose thread is interrupted (Ctrl-C: KeyboardInterrupt) while it waits in the group-commit
    queue behind another thread's transaction leaves that queue: its ID goes back to None, no later group
    stores it, and its value is not spent (the counter holds only the leader's)."""
    Item = make_model("Item", autoinc_gapless=True, name=UnicodeAttribute(null=True))
    Item(name="warm").save()  # the counter is known to this process: the next claims read nothing
    sending, release = threading.Event(), threading.Event()
    leader_id = threading.get_ident()

    def hold(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "TransactWriteItems" and threading.get_ident() == leader_id:
            sending.set()
            release.wait(10)

    first, second = Item(name="leader"), Item(name="queued")
    errors: List[BaseException] = []

    def lead() -> None:
        nonlocal leader_id
        leader_id = threading.get_ident()
        try:
            first.save()
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)

    # Python raises KeyboardInterrupt on SIGINT only with its default handler, which it does not install in a
    # process started with SIGINT ignored (a background job of a shell script, as CI may run the suite)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with pre_dynamodb_send.connected_to(hold):
        leader = threading.Thread(target=lead)
        leader.start()
        assert sending.wait(10)
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                second.save()
        finally:
            timer.cancel()
            release.set()
            leader.join(10)
            signal.signal(signal.SIGINT, previous)
    assert errors == [] and first.id == 2
    assert second.id is None
    assert sorted(i.name for i in Item.scan(consistent_read=True)) == ["leader", "warm"]
    opts = Item.autoinc_options()
    assert opts.counter.currval(opts.key) == 2


def in_threads(hold: HoldFirstTransaction, saves: List[Callable[[], Any]]) -> Dict[int, BaseException]:
    """Run ``saves`` in threads, the first one's transaction held until the others are queued; their errors."""
    errors: Dict[int, BaseException] = {}

    def run(i: int) -> None:
        try:
            saves[i]()
        except BaseException as exc:  # noqa: BLE001 - recorded and checked by the test
            errors[i] = exc

    with pre_dynamodb_send.connected_to(hold):
        run_leader_first(hold, [lambda i=i: run(i) for i in range(len(saves))])
    return errors


@pytest.mark.modes("gapless")
def test_group_commit_at_the_bound_saves_what_fits(make_model):
    """Three threads saving with one value left after the first: the first gets 9, one gets 10, the
    third gets SequenceExhaustedError and keeps no ID; nothing is overwritten."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=10, name=UnicodeAttribute())
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 8)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = in_threads(HoldFirstTransaction(2), [i.save for i in items])
    assert [type(e) for e in errors.values()] == [SequenceExhaustedError]
    failed, = errors
    assert items[failed].id is None
    assert sorted(i.id for i in items if i.id is not None) == [9, 10]
    assert sorted((i.id, i.name) for i in Item.scan()) == sorted((i.id, i.name) for i in items if i.id)
    with pytest.raises(SequenceExhaustedError):
        items[failed].save()  # no ID left over from the group: it cannot replace another thread's item
    assert sorted((i.id, i.name) for i in Item.scan()) == sorted((i.id, i.name) for i in items if i.id)


@pytest.mark.modes("gapless")
def test_group_commit_failing_whole_gives_each_thread_its_own_error(make_model):
    """When every item of a group commit fails, each thread's error names its own item."""
    Item = make_model("Item", autoinc_gapless=True, score=NumberAttribute(null=True))
    items = [Item() for _ in range(3)]
    refused = Item.score.exists()  # no new item has a score: the condition fails
    errors = in_threads(HoldFirstTransaction(2),
                        [items[0].save, lambda: items[1].save(condition=refused),
                         lambda: items[2].save(condition=refused)])
    assert sorted(errors) == [1, 2]
    assert all(type(e) is ConditionFailedError for e in errors.values())
    assert errors[1] is not errors[2]
    assert sorted(str(e).split(":")[0] for e in errors.values()) == ["Item with id=2", "Item with id=3"]
    assert [items[1].id, items[2].id] == [None, None]
    assert ids(Item) == [1] and currval(Item) == 1


@pytest.mark.modes("gapless")
def test_group_commit_item_too_large_fails_alone(make_model):
    """An item too large for DynamoDB fails its own thread only; the other threads' items are ids."""
    Item = make_model("Item", autoinc_gapless=True, body=UnicodeAttribute(null=True))
    items = [Item(body="first"), Item(body="x" * 410_000), Item(body="small")]
    errors = in_threads(HoldFirstTransaction(2), [i.save for i in items])
    assert list(errors) == [1]
    assert isinstance(errors[1], ItemWriteError) and "ValidationException" in str(errors[1])
    assert items[1].id is None
    assert sorted(i.id for i in (items[0], items[2])) == [1, 2]
    assert ids(Item) == [1, 2] and currval(Item) == 2
