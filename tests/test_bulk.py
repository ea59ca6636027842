"""save_all(): many new instances, one counter request per batch, never an overwrite."""

from __future__ import annotations

from typing import Any, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import after_save, before_save
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    BulkSequenceExhaustedError,
    BulkWriteOutcomeUnknownError,
    SequenceExhaustedError,
    WriteOutcomeUnknownError,
)


@pytest.mark.modes('fast', 'gapless')
def test_one_counter_request_for_a_batch(make_model, requests, mode):
    """250 new items: one counter request (fast) or one swap per transaction (gapless), 3 transactions."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    users = [User(name=f"u{i}") for i in range(250)]
    requests.clear()
    User.save_all(users)
    ops = [op for op, _ in requests]
    assert [u.id for u in users] == list(range(1, 251))
    assert sorted(u.id for u in User.scan()) == list(range(1, 251))
    described = ["DescribeTable"] * 2  # the model's table and the counter table, once per process
    if mode == "fast":
        assert ops == described + ["UpdateItem"] + ["TransactWriteItems"] * 3
    else:
        assert ops == described + ["GetItem"] + ["TransactWriteItems"] * 3  # 99 + 99 + 52 items, each with its swap
    opts = User.autoinc_options()
    assert opts.counter.currval(opts.key) == 250


@pytest.mark.modes('fast', 'block', 'gapless')  # the query strategy numbers after the partition's largest key
def test_existing_and_new_together(make_model):
    """Instances with IDs are written as they are; new ones get the next values."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User.save_all([User(id=100, name="old"), User(name="a"), User(name="b")])
    assert sorted((u.id, u.name) for u in User.scan()) == [(1, "a"), (2, "b"), (100, "old")]


@pytest.mark.modes('fast', 'gapless')
def test_collision_leaves_the_batch_unwritten(make_model, mode):
    """A new ID that collides cancels its transaction; nothing is overwritten, the error says what landed."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User(id=2, name="original").save()
    users = [User(name="a"), User(name="b"), User(name="c")]
    with pytest.raises(BulkSaveError, match="0 of 3 saved.*an item with this key already exists") as info:
        User.save_all(users)
    assert info.value.saved == [] and info.value.unsaved == users
    assert [u.id for u in users] == [None, None, None]
    assert [(u.id, u.name) for u in User.scan()] == [(2, "original")]
    opts = User.autoinc_options()
    assert opts.counter.currval(opts.key) == (3 if mode == "fast" else None)


def test_signals_for_each_instance(make_model):
    """before_save and after_save are sent for every instance of the batch."""
    User = make_model("User")
    events: List[Any] = []
    with before_save.connected_to(lambda s, **kw: events.append(("before", kw["operation"])), sender=User), \
            after_save.connected_to(lambda s, **kw: events.append(("after", kw["instance"].id)), sender=User):
        User.save_all([User(), User()])
    assert events == [("before", "bulk"), ("before", "bulk"), ("after", 1), ("after", 2)]


@pytest.mark.modes('fast', 'block', 'gapless')
def test_scoped_batch(make_model, requests, mode):
    """A batch over several scopes asks each scope's counter once."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_attribute="number", autoinc_scope="project")
    issues = [Issue(project=p) for p in "ABABA"]
    requests.clear()
    Issue.save_all(issues)
    assert [(i.project, i.number) for i in issues] == [("A", 1), ("B", 1), ("A", 2), ("B", 2), ("A", 3)]
    counter_requests = [op for op, table in requests if op in ("UpdateItem", "GetItem")]
    assert len(counter_requests) == 2


@pytest.mark.modes()  # its models set their own mode
def test_gapless_batch_after_another_writer(make_model):
    """Gapless: if the counter moved since it was read, the batch takes the value from the failure and lands."""
    User = make_model("User", autoinc_gapless=True)
    User().save()
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 4)
    users = [User(), User()]
    User.save_all(users)
    assert [u.id for u in users] == [5, 6]


def test_other_models_are_refused(make_model):
    """save_all() of one model refuses instances of another."""
    User = make_model("User")
    Order = make_model("Order")
    with pytest.raises(TypeError, match="save_all\\(\\) of User was given a Order"):
        User.save_all([Order()])


# -- a sequence near its end bound ------------------------------------------------------------------------

def _currval(model: Any) -> Any:
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


@pytest.mark.modes('fast', 'block', 'gapless')
def test_asking_for_more_than_is_left_says_the_last_value(make_model, mode):
    """save_all() of new, explicit and stored items asking a sequence for more values than are left raises
    SequenceExhaustedError whose ``last`` is the counter's value (the last value handed out), as a single save's
    error says; nothing of the call is written and every new instance keeps no ID."""
    Item = make_model("Item", name=UnicodeAttribute(null=True), autoinc_max=10)
    for _ in range(7):
        Item(name="old").save()
    last = _currval(Item)  # 7; 9 in block mode, whose process holds 8 and 9
    stored = Item.get(1)
    stored.name = "edited"
    new = [Item(name=f"n{i}") for i in range(5)]
    explicit = Item(id=50, name="explicit")
    with pytest.raises(SequenceExhaustedError, match="asked for 5 values") as info:
        Item.save_all([stored, *new, explicit])
    assert isinstance(info.value, BulkSequenceExhaustedError)
    assert info.value.last == last == {"block": 9}.get(mode, 7)
    assert [i.id for i in new] == [None] * 5
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == [(n, "old") for n in range(1, 8)]
    assert _currval(Item) == last


@pytest.mark.modes('gapless')
def test_gapless_asking_more_than_is_left_after_another_writer(make_model):
    """Gapless: another process moved the counter since this one last wrote (it remembers 3, the counter holds
    8, the maximum is 10): a save_all() of three raises SequenceExhaustedError with ``last`` 8, the counter's
    value, and writes nothing."""
    Item = make_model("Item", autoinc_max=10)
    for _ in range(3):
        Item().save()
    opts = Item.autoinc_options()
    for _ in range(5):
        opts.counter.nextval(opts.key, opts.sequence)  # another process's values 4..8, items not stored yet
    items = [Item() for _ in range(3)]
    with pytest.raises(SequenceExhaustedError, match="asked for 3 values.*only 2 are left") as info:
        Item.save_all(items)
    assert info.value.last == 8
    assert [i.id for i in items] == [None] * 3
    assert sorted(i.id for i in Item.scan(consistent_read=True)) == [1, 2, 3]
    assert _currval(Item) == 8


@pytest.mark.modes('gapless')
def test_gapless_refusal_after_a_transaction_landed_says_the_counters_value(make_model):
    """Gapless: a save_all() of 150 with 120 values left stores its first transaction (99 items and the swap);
    the rest is refused with ``last`` 99, the counter's value then, not the last value the refused claims took."""
    Item = make_model("Item", autoinc_max=120)
    items = [Item() for _ in range(150)]
    with pytest.raises(SequenceExhaustedError, match="asked for 51 values.*only 21 are left") as info:
        Item.save_all(items)
    assert info.value.last == 99 == _currval(Item)
    assert [i.id for i in items[99:]] == [None] * 51


# -- every new instance not written keeps no ID ---------------------------------------------------------------

@pytest.mark.modes('fast', 'block', 'gapless')
def test_one_scope_exhausted_leaves_every_new_instance_without_an_id(make_model):
    """A save_all() over two scopes whose second scope has too few values left raises SequenceExhaustedError;
    the new instance of the first scope keeps an ID only if it is stored (gapless mode sends its transaction
    first; fast and block mode reserve every scope's values first, and send nothing)."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_attribute="number", autoinc_scope="project", autoinc_max=2)
    issues = [Issue(project=p) for p in "ABBB"]
    with pytest.raises(SequenceExhaustedError) as info:
        Issue.save_all(issues)
    assert isinstance(info.value, BulkSaveError)
    assert [i.number for i in issues[1:]] == [None] * 3
    stored = [(i.project, i.number) for i in Issue.scan(consistent_read=True)]
    assert stored == ([("A", 1)] if issues[0].number is not None else [])
    assert info.value.saved == ([issues[0]] if stored else [])


@pytest.mark.modes('fast', 'gapless')
def test_unknown_outcome_keeps_only_that_transactions_ids(make_model):
    """save_all() of 101 new items: the first transaction gets no answer and the check read fails too. The error
    is a BulkSaveError and a WriteOutcomeUnknownError; that transaction's instances keep the IDs they may be
    stored under, and the instances of the transaction never sent keep none."""
    from tests.test_faults import Faults

    User = make_model("User", max_retry_attempts=1)
    User().save()  # gapless: the counter's value is known, the call reads nothing
    users = [User() for _ in range(101)]
    faults = Faults(User, User.autoinc_options().counter)
    faults.inject("TransactWriteItems", "no-answer", times=10)
    faults.inject("GetItem", "throttling", times=10)
    try:
        with pytest.raises(WriteOutcomeUnknownError) as info:
            User.save_all(users)
    finally:
        faults.remove()
    assert isinstance(info.value, BulkWriteOutcomeUnknownError) and info.value.saved == []
    first = [u for u in users if u.id is not None]
    assert first == users[:len(first)] and len(first) in (99, 100)  # gapless: 99 and the swap
    assert [u.id for u in first] == list(range(2, len(first) + 2))
    assert all(u.id is None for u in users[len(first):])
    assert faults.count("TransactWriteItems") == 2  # the first transaction and its retry; the next never sent
