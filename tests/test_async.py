"""The awaitable API (docs/async.md): ``await instance.asave()``, ``Model.asave_all()``, ``async with
TransactWrite``, ``NextId``'s a-operations, coroutine receivers of the signals, and cancellation, on moto and on
DynamoDB Local. Each test runs its coroutine with ``asyncio.run`` (no pytest plugin)."""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime
from typing import Any, Callable, Dict, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import CounterAttribute, CounterMixin, NextId, TransactWrite, after_save, before_save
from pynamodb_autoinc.exceptions import (
    ConditionFailedError,
    ConfigurationError,
    ItemExistsError,
    ItemWriteError,
    SequenceExhaustedError,
    TransactionCanceledError,
    UnassignedIdError,
)
from pynamodb_autoinc.periods import clock
from tests import wire as w
from tests.helpers import auto_history_doc, ids
from tests.wire import Wire

pytest.importorskip("aiobotocore", reason="the async driver needs aiobotocore: pip install 'pynamodb-autoinc[async]'")
pytest.importorskip("greenlet", reason="the async driver needs greenlet: pip install 'pynamodb-autoinc[async]'")

#: moto's server mode too: it answers over HTTP, where the async driver's aiobotocore sends (moto's in-process mock
#: answers inside botocore, in place).
pytestmark = pytest.mark.backends("moto", "local", "moto-server")


def transaction(model: Any) -> TransactWrite:
    return TransactWrite(connection=model._get_connection().connection)


async def asave_each(items: List[Any]) -> List[Any]:
    """Await the saves of ``items`` one after the other; their auto IDs."""
    for item in items:
        await item.asave()
    return [getattr(item, type(item).autoinc_options().attribute) for item in items]


def wait_until(done: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# -- saves in every mode -----------------------------------------------------------


def test_asave_assigns_increasing_ids(make_model, mode):
    """In every mode, awaited saves one after the other get 1, 2, 3, 4, stored under those IDs."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    assert asyncio.run(asave_each([Item(name=str(i)) for i in range(4)])) == [1, 2, 3, 4]
    assert ids(Item) == [1, 2, 3, 4]


def test_asave_returns_what_save_returns(make_model, mode):
    """asave() returns the answer save() returns (a dict), and the instance is stored as a sync save stores it."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    item = Item(name="a")
    assert isinstance(asyncio.run(item.asave()), dict)
    assert [i.name for i in Item.scan()] == ["a"]


def test_asave_of_a_stored_instance_is_an_edit(make_model, mode):
    """A second asave() of an instance keeps its ID and updates the item."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    item = Item(name="a")

    async def twice() -> None:
        await item.asave()
        item.name = "b"
        await item.asave()

    asyncio.run(twice())
    assert [(i.id, i.name) for i in Item.scan()] == [(1, "b")]


@pytest.mark.modes("fast", "block", "gapless")
def test_asave_follows_start_and_step(make_model, mode):
    """A sequence's start and step apply to awaited saves: 1000, 1010, 1020."""
    Item = make_model("Item", autoinc_start=1000, autoinc_step=10)
    assert asyncio.run(asave_each([Item() for _ in range(3)])) == [1000, 1010, 1020]


@pytest.mark.modes("fast", "block", "gapless")
def test_asave_numbers_each_scope(make_model, mode):
    """With a scope, awaited saves number each parent's items 1, 2, … on its own counter."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_attribute="number", autoinc_scope="project")
    issues = [Issue(project=p) for p in ("A", "A", "B", "A")]
    assert asyncio.run(asave_each(issues)) == [1, 2, 1, 3]


@pytest.mark.modes("fast", "gapless")
def test_asave_formats_ids_in_periods(make_model, mode):
    """A yearly, formatted sequence: INV-2026-000001, INV-2026-000002, then INV-2027-000001, awaited."""
    Invoice = make_model("Invoice", id=UnicodeAttribute(hash_key=True), autoinc_period="year",
                         autoinc_format="INV-{period}-{value:06d}")
    with clock.frozen(datetime(2026, 12, 31, 23, 59)):
        first = asyncio.run(asave_each([Invoice(), Invoice()]))
    with clock.frozen(datetime(2027, 1, 1, 0, 1)):
        second = asyncio.run(asave_each([Invoice()]))
    assert first + second == ["INV-2026-000001", "INV-2026-000002", "INV-2027-000001"]


@pytest.mark.backends("local")  # moto has no request locking: under concurrency it may hand out a value twice
@pytest.mark.modes("fast", "block", "gapless", "query")
def test_concurrent_asaves_get_distinct_ids(make_model, mode):
    """Eight tasks of one loop saving at once on DynamoDB Local get eight distinct IDs, all stored."""
    Item = make_model("Item")
    items = [Item() for _ in range(8)]

    async def together() -> None:
        await asyncio.gather(*(item.asave() for item in items))

    asyncio.run(together())
    assert sorted(item.id for item in items) == ids(Item) and len(set(ids(Item))) == 8


# -- the other write paths ---------------------------------------------------------


def test_asave_all_saves_every_item(make_model, mode):
    """asave_all() stores every item, new ones numbered 1..5 in the order of the list."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    items = [Item(name=str(i)) for i in range(5)]
    asyncio.run(Item.asave_all(items))
    assert [item.id for item in items] == [1, 2, 3, 4, 5]
    assert ids(Item) == [1, 2, 3, 4, 5]


def test_asave_all_takes_any_iterable(make_model, mode):
    """asave_all() accepts a generator, as save_all() does."""
    Item = make_model("Item")
    asyncio.run(Item.asave_all(Item() for _ in range(3)))
    assert ids(Item) == [1, 2, 3]


@pytest.mark.modes("fast", "block", "gapless")
def test_async_transaction_commits_on_exit(make_model, mode):
    """``async with TransactWrite``: items given by tx.save() and await tx.asave() get IDs 1, 2 and are stored
    when the block ends."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    ada, bob = User(name="ada"), User(name="bob")

    async def both() -> None:
        async with transaction(User) as tx:
            tx.save(ada)
            await tx.asave(bob)
            assert ids(User) == []  # nothing sent before the block ends

    asyncio.run(both())
    assert (ada.id, bob.id) == (1, 2)
    assert [(u.id, u.name) for u in sorted(User.scan(), key=lambda u: u.id)] == [(1, "ada"), (2, "bob")]


@pytest.mark.modes("fast", "block", "gapless")
def test_async_transaction_left_by_an_error_sends_nothing(make_model, mode):
    """An error inside ``async with TransactWrite`` sends nothing and puts the claimed ID back to None."""
    User = make_model("User")
    user = User()

    async def failing() -> None:
        async with transaction(User) as tx:
            tx.save(user)
            raise KeyError("stop")

    with pytest.raises(KeyError):
        asyncio.run(failing())
    assert user.id is None and ids(User) == []


@pytest.mark.modes("fast", "block", "gapless")
def test_async_transaction_raises_what_a_transaction_raises(make_model, mode):
    """A cancelled async transaction raises TransactionCanceledError, as the sync one, and the new ID is None."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User(id=50, name="existing").save()
    new = User()

    async def clash() -> None:
        async with transaction(User) as tx:
            tx.save(new)
            tx.save(User(id=50), condition=User.id.does_not_exist())

    with pytest.raises(TransactionCanceledError):
        asyncio.run(clash())
    assert new.id is None and ids(User) == [50]


@pytest.mark.modes("fast", "block")  # HistoryMixin refuses gapless and query IDs
def test_history_mixin_saves_through_asave(backend, mode):
    """A HistoryMixin model's asave() is its own save: the item and its version 1 are written together."""
    Doc, history = auto_history_doc(backend, **({"autoinc_block": 3} if mode == "block" else {}))
    doc = Doc(title="Hello")
    asyncio.run(doc.asave())
    assert doc.id == 1
    assert [(h.version, h.title) for h in history.scan()] == [(1, "Hello")]


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_saves_through_asave(make_model, mode):
    """A CounterMixin model's asave() raises its counter attributes as save() does."""
    Order = make_model("Order", bases=(CounterMixin,), name=UnicodeAttribute(null=True),
                       edits=CounterAttribute(start=1))
    order = Order(name="x")

    async def twice() -> None:
        await order.asave()
        await order.asave()

    asyncio.run(twice())
    assert (order.id, order.edits) == (1, 2)


# -- the counter -------------------------------------------------------------------


@pytest.mark.modes()
def test_counter_operations_awaited(backend):
    """anextval, areserve, asetval and acompare_and_set return what their sync namesakes return."""
    counter = backend.counter(NextId)

    async def ops() -> List[Any]:
        return [await counter.anextval("a"), await counter.areserve("a", 3), await counter.asetval("a", 10),
                await counter.acompare_and_set("a", 10, 20), await counter.acompare_and_set("a", 10, 30)]

    assert asyncio.run(ops()) == [1, [2, 3, 4], 10, True, False]
    assert counter.nextval("a") == 21


# -- signals -----------------------------------------------------------------------


@pytest.mark.modes("fast", "gapless")
def test_a_coroutine_before_save_receiver_is_awaited_before_the_id(make_model, mode):
    """A coroutine receiver of before_save is awaited on the saving task's loop, sees the instance with no ID
    yet, and what it sets is stored."""
    User = make_model("User", created_by=UnicodeAttribute(null=True))
    seen: List[Any] = []

    async def stamp(sender: Any, instance: Any, **_: Any) -> None:
        await asyncio.sleep(0)
        seen.append((asyncio.get_running_loop(), instance.id))
        instance.created_by = "receiver"

    async def save() -> Any:
        with before_save.connected_to(stamp, sender=User):
            await User().asave()
        return asyncio.get_running_loop()

    loop = asyncio.run(save())
    assert seen == [(loop, None)]
    assert User.get(1).created_by == "receiver"


@pytest.mark.modes("fast", "gapless")
def test_a_coroutine_after_save_receiver_is_awaited_with_the_id(make_model, mode):
    """A coroutine receiver of after_save is awaited once the item is stored, and sees its ID."""
    User = make_model("User")
    seen: List[Any] = []

    async def note(sender: Any, instance: Any, **_: Any) -> None:
        seen.append(instance.id)

    async def save() -> None:
        with after_save.connected_to(note, sender=User):
            await User().asave()

    asyncio.run(save())
    assert seen == [1]


@pytest.mark.modes("fast")
def test_a_failing_coroutine_receiver_aborts_the_save(make_model, mode):
    """A coroutine before_save receiver that raises aborts the awaited save with its error: nothing stored."""
    User = make_model("User")
    user = User()

    async def refuse(sender: Any, **_: Any) -> None:
        raise PermissionError("no")

    async def save() -> None:
        with before_save.connected_to(refuse, sender=User):
            await user.asave()

    with pytest.raises(PermissionError):
        asyncio.run(save())
    assert user.id is None and ids(User) == []


@pytest.mark.modes("fast")
def test_a_sync_save_refuses_a_coroutine_receiver(make_model, mode):
    """A save() that is not awaited cannot await a coroutine receiver: RuntimeError naming the fix, nothing
    stored."""
    User = make_model("User")

    async def stamp(sender: Any, **_: Any) -> None:
        pass

    with before_save.connected_to(stamp, sender=User), pytest.raises(RuntimeError, match="Await the save"):
        User().save()
    assert ids(User) == []


@pytest.mark.modes("fast")
def test_sync_receivers_still_run_with_a_coroutine_receiver(make_model, mode):
    """A sync receiver connected beside a coroutine one runs as before, for sync and awaited saves alike."""
    User = make_model("User")
    calls: List[str] = []

    def plain(sender: Any, operation: str, **_: Any) -> None:
        calls.append(operation)

    async def coroutine(sender: Any, **_: Any) -> None:
        calls.append("coroutine")

    with before_save.connected_to(plain, sender=User), before_save.connected_to(coroutine, sender=User):
        asyncio.run(User().asave())
    assert sorted(calls) == ["coroutine", "save"]


# -- the same errors ---------------------------------------------------------------


def _counter_behind(model: Any) -> None:
    """Store item 1 (if missing) and set the counter back so that the next new ID is 1 again."""
    if not ids(model):
        model().save()
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 1, is_called=False)


#: case: (Meta options, what happens first, the instance and condition to save, the class expected at least)
SAME_ERRORS: Dict[str, Any] = {
    "a taken explicit key, with a condition": (
        {}, lambda M: M(id=1).save(), lambda M: (M(id=1), M.id.does_not_exist()), ItemWriteError),
    "a taken new ID (the counter behind the items)": (
        {}, _counter_behind, lambda M: (M(), None), ItemExistsError),
    "a condition that fails on a new item": (
        {}, lambda M: None, lambda M: (M(name="x"), M.name == "y"), ConditionFailedError),
    "the end of the sequence": (
        {"autoinc_max": 2}, lambda M: M.save_all([M(), M()]), lambda M: (M(), None), SequenceExhaustedError),
}


@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("case", sorted(SAME_ERRORS))
def test_asave_raises_what_save_raises(make_model, mode, case):
    """An awaited save that fails raises exactly the class the sync save raises for the same case, and a new
    instance keeps no ID."""
    meta, before, build, expected = SAME_ERRORS[case]
    Item = make_model("Item", name=UnicodeAttribute(null=True), **meta)
    before(Item)
    item, condition = build(Item)
    explicit = item.id
    with pytest.raises(expected) as sync:
        item.save(condition)
    if case.startswith("a taken new ID"):
        _counter_behind(Item)
    with pytest.raises(expected) as awaited:
        asyncio.run(item.asave(condition))
    assert type(awaited.value) is type(sync.value)
    assert item.id == explicit


@pytest.mark.modes("fast")
def test_asave_without_a_scope_value_is_refused(make_model, mode):
    """A scoped model saved without its scope value raises UnassignedIdError, awaited as sync, nothing sent."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_attribute="number", autoinc_scope="project")
    with pytest.raises(UnassignedIdError):
        asyncio.run(Issue().asave())


def test_an_awaited_save_without_the_async_extra_names_its_install(make_model, mode, monkeypatch, requests):
    """Where aiobotocore is not installed, an awaited save raises ConfigurationError naming the extra to install;
    nothing is sent and the ID stays None."""
    Item = make_model("Item")
    item = Item()
    monkeypatch.setitem(sys.modules, "aiobotocore.session", None)
    requests.clear()
    with pytest.raises(ConfigurationError, match=r"pynamodb-autoinc\[async\]"):
        asyncio.run(item.asave())
    assert item.id is None and requests == []


# -- cancellation: an interrupt, at the wire (DynamoDB Local) ------------------------


async def _cancel_once(gate_reached: Callable[[], bool], call: Any) -> None:
    """Start ``call``, cancel its task once ``gate_reached()``, and check it raises CancelledError."""
    task = asyncio.create_task(call)
    deadline = time.monotonic() + 10
    while not gate_reached():
        assert time.monotonic() < deadline and not task.done(), "the call never reached the point to cancel it at"
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_cancelled_while_its_write_is_out_keeps_the_id(make_model, mode, applied):
    """A task cancelled while its item's write is out (forwarded to DynamoDB or not) raises CancelledError and
    keeps its ID, as an interrupt in flight does: the write may have applied. Stored or not, no later save of the
    process takes that ID: the next one gets another (gapless: the value after it once the doubt is settled)."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    item = Item(name="first")
    with Wire() as wire:
        wire.on(w.WRITES, w.interrupt(applied=applied), when=w.named("first"))
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(item.asave())
    assert item.id == 1
    assert ids(Item) == ([1] if applied else [])
    later = Item(name="later")
    asyncio.run(later.asave())
    assert later.id != item.id and later.id in ids(Item)


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
def test_cancelled_while_waiting_for_the_group_s_turn_gives_the_id_back(make_model, mode):
    """A task cancelled while it waits for the process's group commit (another task's transaction is out) raises
    CancelledError: nothing of it was sent, its ID is back to None, and the counter has no gap (the next save
    gets the value after the stored one). The process knows the counter (a save before): a lone save of a
    counter not read yet sends its own first transaction."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    asyncio.run(Item(name="known").asave())
    first, waiting = Item(name="first"), Item(name="waiting")

    async def scene() -> None:
        gate = asyncio.Event()
        with Wire() as wire:
            wire.on(w.WRITES, w.held(gate), when=w.named("first"))
            out = asyncio.create_task(first.asave())
            await _cancel_once(lambda: wire.count(w.WRITES) == 1, waiting.asave())
            gate.set()
            await out
            sent.append(wire.count(w.WRITES, when=w.named("waiting")))

    sent: List[int] = []
    asyncio.run(scene())
    assert waiting.id is None and first.id == 2 and sent == [0]
    later = Item(name="later")
    asyncio.run(later.asave())
    assert later.id == 3 and ids(Item) == [1, 2, 3]


@pytest.mark.modes("fast", "gapless")
def test_cancelled_in_a_coroutine_receiver_sends_nothing(make_model, mode, requests):
    """A task cancelled while a coroutine ``before_save`` receiver awaits (before the library's receiver claims
    the ID) raises CancelledError; nothing is sent for the item and its ID stays None."""
    Item = make_model("Item")
    item = Item()
    reached = asyncio.Event()

    async def slow(sender: Any, **_: Any) -> None:
        reached.set()
        await asyncio.sleep(30)

    async def scene() -> None:
        await _cancel_once(reached.is_set, item.asave())

    requests.clear()
    with before_save.connected_to(slow, sender=Item):
        asyncio.run(scene())
    assert item.id is None and not [op for op, _ in requests if op in w.WRITES]
    assert asyncio.run(asave_each([Item()])) == [1]


@pytest.mark.backends("local")
def test_a_fault_at_the_wire_reaches_the_async_driver(make_model, mode):
    """The async driver reads DynamoDB's answers as the sync one does: an error page not applied fails the save
    with the library's error and gives the ID back; botocore's resend of a throttled write stores it once."""
    Item = make_model("Item", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    refused = Item(name="refused")
    with Wire() as wire:
        wire.on(w.WRITES, w.error("ValidationException"), when=w.named("refused"))
        with pytest.raises(ItemWriteError):
            asyncio.run(refused.asave())
    assert refused.id is None and ids(Item) == []
    Again = make_model("Again", name=UnicodeAttribute(null=True), max_retry_attempts=2)
    again = Again(name="throttled")
    with Wire() as wire:
        wire.on(w.WRITES, w.error("ProvisionedThroughputExceededException"), when=w.named("throttled"))
        asyncio.run(again.asave())
        assert wire.count(w.WRITES, when=w.named("throttled")) >= 2
    assert again.id == 1 and ids(Again) == [1]


# -- group commit on DynamoDB Local ------------------------------------------------


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
def test_tasks_on_one_gapless_counter_commit_together(make_model, mode, requests):
    """16 concurrent tasks saving gapless items on one counter on DynamoDB Local store exactly 1..16 with no gap,
    in fewer TransactWriteItems than items (the threads' group commit)."""
    Item = make_model("Item")
    items = [Item() for _ in range(16)]

    async def together() -> None:
        await asyncio.gather(*(item.asave() for item in items))

    requests.clear()
    asyncio.run(together())
    assert sorted(item.id for item in items) == list(range(1, 17)) == ids(Item)
    assert len([op for op, _ in requests if op == "TransactWriteItems"]) < 16
