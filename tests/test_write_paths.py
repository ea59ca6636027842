"""Writes that do not go through Model.save(): TransactWrite and batch writes."""

from __future__ import annotations

import gc
from typing import Any, List

import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.exceptions import TransactWriteError

from pynamodb_autoinc import TransactWrite, after_save, before_save
from pynamodb_autoinc.exceptions import TransactionCanceledError, UnassignedIdError, WriteOutcomeUnknownError


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
