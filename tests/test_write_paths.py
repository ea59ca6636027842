"""Writes that do not go through Model.save(): TransactWrite and batch writes."""

from __future__ import annotations

import gc
import threading
from typing import Any, List

import pytest
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.connection import Connection
from pynamodb.exceptions import TransactWriteError

from pynamodb_autoinc import (
    TransactWrite,
    after_save,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    InvalidIdError,
    TransactionCanceledError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
)
from pynamodb_autoinc.testing import reset_counters
from tests.helpers import auto_model, stored_names


def counter_of(model):
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


def transaction(model):
    return TransactWrite(connection=model._get_connection().connection)


@pytest.mark.modes('fast', 'block', 'gapless')
def test_transaction_assigns_ids(make_model, requests, mode):
    """New instances saved in a TransactWrite get consecutive IDs and commit with it."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User().save()
    requests.clear()
    with transaction(User) as tx:
        a, b = User(name="a"), User(name="b")
        tx.save(a)
        tx.save(b)
    sent = [op for op, _ in requests]
    assert (a.id, b.id) == (2, 3)
    assert sorted((u.id, u.name) for u in User.scan()) == [(1, None), (2, "a"), (3, "b")]
    assert counter_of(User) == 3
    # gapless: the counter swap is part of the one transaction (the value is known from the first save);
    # fast: one UpdateItem per item first
    assert sent == (["UpdateItem", "UpdateItem", "TransactWriteItems"] if mode == "fast"
                    else ["TransactWriteItems"])


@pytest.mark.modes('fast', 'block', 'gapless')
def test_cancelled_transaction_leaves_no_item(make_model, mode):
    """A cancelled transaction stores nothing, resets the IDs, and names the failing item."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User(id=50, name="existing").save()
    new = User(name="new")
    with pytest.raises(TransactionCanceledError) as info, transaction(User) as tx:
        tx.save(new)
        tx.save(User(id=50, name="clash"), condition=User.id.does_not_exist())
    assert isinstance(info.value, TransactWriteError)
    assert "ConditionalCheckFailed on User with id=50" in str(info.value)
    assert new.id is None
    assert [(u.id, u.name) for u in User.scan()] == [(50, "existing")]
    # gapless: the counter swap was cancelled with the rest; fast: the value (or the block) was spent before
    assert counter_of(User) == {"fast": 1, "block": 3, "gapless": None}[mode]


@pytest.mark.modes()  # its models set their own mode
def test_gapless_transaction_lost_race_is_sent_again(make_model):
    """A gapless counter that moved after tx.save() does not cancel the transaction: it is sent again."""
    User = make_model("User", autoinc_gapless=True)
    tx = transaction(User)
    new = User()
    tx.save(new)
    assert new.id == 1
    User().save()  # another writer takes value 1 first
    tx._commit()
    assert new.id == 2
    assert sorted(u.id for u in User.scan()) == [1, 2]
    assert counter_of(User) == 2


@pytest.mark.modes()  # its models set their own mode
def test_gapless_transaction_with_own_token_lost_race_is_explained(make_model):
    """A transaction with its own client_request_token is not resent with other values: it says why."""
    User = make_model("User", autoinc_gapless=True)
    tx = TransactWrite(connection=User._get_connection().connection, client_request_token="order-17")
    new = User()
    tx.save(new)
    User().save()  # another writer takes value 1 first
    with pytest.raises(TransactionCanceledError, match="changed under concurrent writers since it was read"):
        tx._commit()
    assert new.id is None
    assert [u.id for u in User.scan()] == [1]
    assert counter_of(User) == 1


@pytest.mark.modes()  # its models set their own mode
def test_gapless_transaction_with_own_token_failing_to_serialize_gives_the_id_back(make_model):
    """A new instance of a transaction with its own client_request_token (its claim reads no remembered value)
    that fails to serialize raises at once and gives its ID back: releasing a claim on a counter this process
    has not looked up yet does not block."""
    from pynamodb.exceptions import AttributeNullError

    User = make_model("User", autoinc_gapless=True, name=UnicodeAttribute())
    tx = TransactWrite(connection=User._get_connection().connection, client_request_token="order-18")
    new = User()
    raised: List[BaseException] = []

    def save() -> None:
        try:
            tx.save(new)  # name is required and unset
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=save, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "tx.save() blocked"
    assert [type(exc) for exc in raised] == [AttributeNullError]
    assert new.id is None
    assert list(User.scan()) == []


def test_transaction_sends_signals(make_model):
    """before_save runs at tx.save() and after_save after the commit."""
    User = make_model("User")
    events: List[Any] = []
    with before_save.connected_to(lambda s, **kw: events.append(("before", kw["operation"])), sender=User), \
            after_save.connected_to(lambda s, **kw: events.append(("after", kw["instance"].id)), sender=User), \
            transaction(User) as tx:
        tx.save(User())
        events.append("added")
    assert events == [("before", "transaction"), "added", ("after", 1)]


@pytest.mark.modes('fast', 'block', 'gapless')
def test_existing_instance_in_transaction_is_ordinary(make_model):
    """Saving an instance that has its ID inside a transaction allocates nothing."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    with transaction(User) as tx:
        tx.save(User(id=7, name="seven"))
    assert User.get(7).name == "seven"
    assert counter_of(User) is None


def test_batch_write_refuses_new_instances(make_model):
    """A new instance is refused by batch.save(); what was added before still commits, as in PynamoDB."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    with pytest.raises(UnassignedIdError, match="batch write cannot carry the condition"), \
            User.batch_write() as batch:
        batch.save(User(id=1, name="one"))
        batch.save(User(name="new"))
    assert [(u.id, u.name) for u in User.scan()] == [(1, "one")]
    assert counter_of(User) is None


def test_batch_write_of_existing_instances(make_model):
    """Instances with IDs are batch-written and the signals are sent for each."""
    User = make_model("User")
    seen: List[Any] = []
    with after_save.connected_to(lambda s, instance, **_: seen.append(instance.id), sender=User), \
            User.batch_write() as batch:
        for i in (1, 2, 3):
            batch.save(User(id=i))
    assert sorted(u.id for u in User.scan()) == [1, 2, 3]
    assert seen == [1, 2, 3]


def test_plain_batchwrite_cannot_store_without_id(make_model):
    """Even pynamodb's own BatchWrite cannot serialize an instance that has no ID."""
    from pynamodb.models import BatchWrite

    User = make_model("User", name=UnicodeAttribute(null=True))
    batch = BatchWrite(User)
    batch.save(User(name="no id"))
    with pytest.raises(UnassignedIdError, match="has no id yet"):
        batch.commit()
    assert list(User.scan()) == []


@pytest.mark.modes("fast")
def test_transaction_explicit_equal_to_new_is_refused(make_model):
    """In a TransactWrite, an explicit id=1 and a new item on a fresh counter do not overwrite each other."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    with pytest.raises(AutoIncrementError), TransactWrite(connection=Item._get_connection().connection) as tx:
        tx.save(new)
        tx.save(explicit)
    stored = sorted((i.id, i.name) for i in Item.scan(consistent_read=True))
    assert stored in ([], [(1, "new")], [(1, "explicit")])
    assert len(stored) <= 1


def _connection(backend: Any) -> Connection:
    return Connection(region=backend.meta["region"], host=backend.meta.get("host"))


@pytest.mark.modes()
@pytest.mark.parametrize("operation", ["update", "delete"])
def test_transaction_update_or_delete_of_a_new_instance_names_the_fix(backend, operation):
    """``TransactWrite.update()`` or ``.delete()`` of a new auto-increment instance is refused as it is added,
    with ``UnassignedIdError`` naming save(); the transaction sends nothing."""
    User = auto_model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)})
    user = User(name="Ada")
    refused = pytest.raises(UnassignedIdError, match=r"save\(\) it first")
    with refused, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(User(name="kept out"))
        if operation == "update":
            tx.update(user, actions=[User.name.set("Bob")])
        else:
            tx.delete(user)
    assert user.id is None and stored_names(User) == []


@pytest.mark.modes()
@pytest.mark.parametrize("gapless", [False, True])
def test_transaction_new_id_taking_an_explicit_key_of_the_same_transaction(backend, gapless):
    """A ``TransactWrite`` holding an explicit ``id=1`` and a new item whose counter also hands it 1 fails with
    the library's ``TransactionCanceledError`` naming the clash and the fix (``setval``), not DynamoDB's bare
    "multiple operations on one item" (DynamoDB Local reports the clash as a failed condition, also named);
    nothing is written and the new ID is back to None."""
    User = auto_model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=gapless)
    new = User(name="new")
    with pytest.raises(TransactionCanceledError) as caught, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(User(id=1, name="explicit"))
        tx.save(new)
    message = str(caught.value)
    assert "User with id=1" in message and "setval(" in message
    assert new.id is None and stored_names(User) == []


@pytest.mark.modes()
def test_transaction_given_the_same_new_instance_twice(backend):
    """Saving one new instance twice in a ``TransactWrite`` is refused at the second ``save()`` with the
    library's ``TransactionCanceledError`` saying to save it once; nothing is sent and its ID is back to None."""
    User = auto_model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=False)
    user = User(name="twice")
    refused = pytest.raises(TransactionCanceledError, match="given to this transaction twice.*save each instance once")
    with refused, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(user)
        tx.save(user)
    assert user.id is None and stored_names(User) == []


@pytest.mark.modes()
def test_transaction_new_id_taking_the_key_of_an_item_it_updates(backend):
    """A ``TransactWrite`` that updates the stored ``User`` 1 and saves a new user whose counter (reset behind
    the stored IDs) hands it 1 fails with ``TransactionCanceledError`` naming the fix (``setval``); the stored
    item is unchanged, nothing is written and the new ID is back to None."""
    User = auto_model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=False)
    User(name="stored").save()
    reset_counters(User)
    new = User(name="new")
    with pytest.raises(TransactionCanceledError, match=r"setval\(") as caught, \
            TransactWrite(connection=_connection(backend)) as tx:
        tx.update(User.get(1), actions=[User.name.set("updated")])
        tx.save(new)
    assert "User" in str(caught.value)
    assert new.id is None and stored_names(User) == [(1, "stored")]


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("value", [7.5, True, "7"])
def test_batch_write_refuses_an_explicit_id_that_is_not_an_integer(make_model, mode, value):
    """``batch_write()`` refuses an ID set by hand that is not an integer with InvalidIdError, as ``save()``
    and ``save_all()`` do, before anything is sent; it does not store 7.5 (or fail later in DynamoDB)."""
    User = make_model("User")
    with pytest.raises(InvalidIdError, match="is not an integer"), User.batch_write() as batch:
        batch.save(User(id=value))
    assert list(User.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "block", "gapless")
def test_batch_write_of_an_explicit_id_moves_a_tracking_counter(make_model, mode):
    """With ``Meta.autoinc_track_explicit``, an item batch-written with an ID set by hand moves the counter
    past it, as on the other write paths, so the next new instance gets the value after it instead of
    failing on its key."""
    User = make_model("User", autoinc_track_explicit=True)
    with User.batch_write() as batch:
        batch.save(User(id=5))
    user = User()
    user.save()
    assert user.id == 6
@pytest.mark.modes('fast', 'gapless')
def test_transaction_with_unknown_outcome_keeps_its_id_after_it_is_collected(make_model, mode):
    """A TransactWrite that ends in WriteOutcomeUnknownError keeps the new instance's ID (the item may be stored
    under it), also once the transaction object is garbage-collected."""
    from tests.test_faults import Faults

    User = make_model("User", max_retry_attempts=1)
    User().save()  # gapless: the counter's value is known, the transaction reads nothing
    faults = Faults(User, User.autoinc_options().counter)
    faults.inject("TransactWriteItems", "no-answer", times=10)
    faults.inject("GetItem", "throttling", times=10)
    user = User()
    tx = transaction(User)
    try:
        with pytest.raises(WriteOutcomeUnknownError), tx:
            tx.save(user)
    finally:
        faults.remove()
    assert user.id == 2
    del tx
    gc.collect()
    assert user.id == 2


# -- references between the items of a transaction -----------------------------------------------------------

def _order_and_line(make_model: Any) -> Any:
    Order = make_model("Order", customer=UnicodeAttribute(), autoinc_gapless=True)
    Line = make_model("Line", order_id=NumberAttribute(), autoinc_gapless=True)
    return Order, Line


@pytest.mark.modes()  # its models set their own mode
def test_lost_race_with_a_reference_to_the_claimed_id_is_not_renumbered(make_model):
    """Gapless: a line item refers to order.id as tx.save() claimed it; another writer stores an order under that
    value before the commit. The transaction is not sent again with a new value (the line would point at the
    other writer's order): TransactionCanceledError says why, nothing of it is written, and both IDs are None."""
    Order, Line = _order_and_line(make_model)
    order, line = Order(customer="mine"), Line()
    with pytest.raises(TransactionCanceledError, match="operations added after that save may hold the IDs"), \
            transaction(Order) as tx:
        tx.save(order)
        Order(customer="theirs").save()  # another writer takes the value between the claim and the commit
        line.order_id = order.id
        tx.save(line)
    assert (order.id, line.id) == (None, None)
    assert [(o.id, o.customer) for o in Order.scan(consistent_read=True)] == [(1, "theirs")]
    assert list(Line.scan(consistent_read=True)) == []
    assert counter_of(Order) == 1 and counter_of(Line) is None


@pytest.mark.modes()  # its models set their own mode
def test_lost_race_with_an_update_after_the_claim_is_not_renumbered(make_model):
    """Gapless: an update added after the new item's save (it may carry the claimed ID) keeps a lost race from
    being sent again with another value: nothing is written."""
    Order, Line = _order_and_line(make_model)
    Line(id=7, order_id=0).save()
    order = Order(customer="mine")
    with pytest.raises(TransactionCanceledError, match="not sent again"), transaction(Order) as tx:
        tx.save(order)
        Order(customer="theirs").save()
        tx.update(Line(id=7, order_id=0), actions=[Line.order_id.set(order.id)])
    assert order.id is None
    assert Line.get(7, consistent_read=True).order_id == 0
    assert [o.customer for o in Order.scan(consistent_read=True)] == ["theirs"]


@pytest.mark.modes()  # its models set their own mode
def test_lost_race_is_retried_when_the_new_item_is_the_last_operation(make_model):
    """Gapless: operations added before the new item's save cannot hold its ID, so a lost race is still sent
    again with the next value."""
    Order, Line = _order_and_line(make_model)
    Line(id=7, order_id=0).save()
    order = Order(customer="mine")
    with transaction(Order) as tx:
        tx.update(Line(id=7, order_id=0), actions=[Line.order_id.set(99)])
        tx.save(order)
        Order(customer="theirs").save()  # takes 1 before the commit
    assert order.id == 2
    assert sorted((o.id, o.customer) for o in Order.scan(consistent_read=True)) == [(1, "theirs"), (2, "mine")]
    assert Line.get(7, consistent_read=True).order_id == 99


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_lost_race_with_a_reference_is_not_renumbered(make_model):
    """Query strategy: a second new issue of the same transaction refers to the first one's number; another
    writer takes that number before the commit: nothing is written and both numbers are None."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       parent=NumberAttribute(null=True), autoinc_strategy="query", autoinc_attribute="number")
    epic, task = Issue(project="p"), Issue(project="p")
    with pytest.raises(TransactionCanceledError, match="not sent again"), transaction(Issue) as tx:
        tx.save(epic)
        task.parent = epic.number
        tx.save(task)
        Issue(project="p").save()  # another writer takes number 1
    assert (epic.number, task.number) == (None, None)
    assert [(i.number, i.parent) for i in Issue.scan(consistent_read=True)] == [(1, None)]
