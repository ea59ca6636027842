"""How IDs are assigned on save, in fast and gapless mode."""

from __future__ import annotations

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import NextId
from pynamodb_autoinc.exceptions import ConditionFailedError, ItemExistsError
from tests.workers import set_by_another_process

pytestmark = pytest.mark.modes('fast', 'gapless')


def counter_of(model):
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


def test_first_ids_count_from_one(make_model):
    """New instances get 1, 2, 3 in save order and the counter holds the last one."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    users = [User(name=n) for n in ("Kirk", "Spock", "McCoy")]
    for user in users:
        user.save()
    assert [u.id for u in users] == [1, 2, 3]
    assert sorted((u.id, u.name) for u in User.scan()) == [(1, "Kirk"), (2, "Spock"), (3, "McCoy")]
    assert counter_of(User) == 3


def test_saved_instance_is_not_reallocated(make_model):
    """Saving an instance that has its ID again is an ordinary save: nothing is allocated."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    user = User(name="Kirk")
    user.save()
    user.name = "James T. Kirk"
    user.save()
    assert user.id == 1
    assert User.get(1).name == "James T. Kirk"
    assert counter_of(User) == 1


def test_explicit_id_is_kept(make_model):
    """An instance created with an ID is stored with it and the counter does not move."""
    User = make_model("User")
    User(id=42).save()
    assert [u.id for u in User.scan()] == [42]
    assert counter_of(User) is None


def test_string_attribute_gets_decimal_string(make_model):
    """A UnicodeAttribute auto attribute stores the decimal string, as the LoopBack article does."""
    Doc = make_model("Doc", id=UnicodeAttribute(hash_key=True))
    first, second = Doc(), Doc()
    first.save()
    second.save()
    assert (first.id, second.id) == ("1", "2")
    assert sorted(d.id for d in Doc.scan()) == ["1", "2"]


def test_start_and_step(make_model):
    """autoinc_start and autoinc_step set the first value and the increment."""
    Ticket = make_model("Ticket", autoinc_start=100, autoinc_step=10)
    ids = []
    for _ in range(3):
        ticket = Ticket()
        ticket.save()
        ids.append(ticket.id)
    assert ids == [100, 110, 120]


def test_models_share_one_counter_table(make_model):
    """Two models keep separate counters, one item each, in the same NextId table."""
    User = make_model("User", autoinc_key="user")
    Order = make_model("Order", autoinc_key="order")
    for model in (User, Order, User):
        model().save()
    counter = User.autoinc_options().counter
    assert counter is Order.autoinc_options().counter
    assert counter.Meta.table_name == "NextId"
    assert counter.currval("user") == 2
    assert counter.currval("order") == 1


def test_counter_below_existing_ids_never_overwrites(make_model, mode):
    """A counter set below a stored ID makes the save fail; the stored item is untouched."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User(id=1, name="original").save()
    user = User(name="newcomer")
    with pytest.raises(ItemExistsError, match="already exists and was not overwritten"):
        user.save()
    assert user.id is None
    assert User.get(1).name == "original"
    # fast mode spends the value, like nextval; gapless mode spends nothing
    assert counter_of(User) == (1 if mode == "fast" else None)


@pytest.mark.modes()  # its models set their own mode
def test_fast_mode_moves_past_a_collision(make_model):
    """In fast mode the next save after a collision takes the next value and succeeds."""
    User = make_model("User", autoinc_gapless=False)
    User(id=1).save()
    with pytest.raises(ItemExistsError):
        User().save()
    user = User()
    user.save()
    assert user.id == 2


def test_callers_condition_is_anded(make_model, mode):
    """A condition passed to save() must hold too; when it fails nothing is written."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    user = User(name="Kirk")
    with pytest.raises(ConditionFailedError, match="condition passed to save"):
        user.save(condition=User.name == "someone else")
    assert user.id is None
    assert list(User.scan()) == []
    assert counter_of(User) == (1 if mode == "fast" else None)


def test_callers_condition_that_holds(make_model):
    """A condition that holds lets the new item be written."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    user = User(name="Kirk")
    user.save(condition=User.name.does_not_exist())
    assert User.get(user.id).name == "Kirk"


def test_auto_attribute_outside_the_key(make_model, mode):
    """Article 004: the key is a string, the auto attribute a separate number."""
    Member = make_model(
        "Member",
        pk=UnicodeAttribute(hash_key=True),
        num_identifier=NumberAttribute(null=True),
        autoinc_attribute="num_identifier",
    )
    for name in ("Uros", "Alex", "Luc"):
        Member(pk=f"User#{name}").save()
    duplicate = Member(pk="User#Alex")
    with pytest.raises(ItemExistsError, match="choose a key that is not in use"):
        duplicate.save()
    assert duplicate.num_identifier is None
    assert Member.get("User#Alex").num_identifier == 2
    assert sorted(m.num_identifier for m in Member.scan()) == [1, 2, 3]
    assert counter_of(Member) == (4 if mode == "fast" else 3)


def test_requests_per_new_item(make_model, mode, requests):
    """Fast: one UpdateItem and one PutItem per new item; gapless: a read once, then one transaction each.

    The process's first save also describes the model's table and the counter table, once (global tables)."""
    User = make_model("User")
    requests.clear()
    User().save()
    User().save()
    described = [("DescribeTable", User.Meta.table_name), ("DescribeTable", "NextId")]
    expected = {
        "fast": described + [("UpdateItem", "NextId"), ("PutItem", User.Meta.table_name)] * 2,
        "gapless": described + [("GetItem", "NextId"), ("TransactWriteItems", None), ("TransactWriteItems", None)],
    }[mode]
    assert requests == expected


@pytest.mark.modes()  # its models set their own mode
def test_gapless_retry_reads_the_counter_from_the_failure(make_model, requests):
    """When another process moved the counter, the failed transaction returns its value: no extra read."""
    User = make_model("User", autoinc_gapless=True)
    User().save()
    opts = User.autoinc_options()
    set_by_another_process(opts.counter, opts.key, 5)  # it handed out 2..5 (their items are elsewhere)
    requests.clear()
    user = User()
    user.save()
    assert user.id == 6
    assert [op for op, _ in requests] == ["TransactWriteItems", "TransactWriteItems"]


def test_counter_item_layout(make_model):
    """The counter item is {"NextKey": key, "NextId": last value}, as in the article."""
    User = make_model("User", autoinc_key="user")
    User().save()
    User().save()
    counter = User.autoinc_options().counter
    raw = counter._get_connection().get_item("user", consistent_read=True)["Item"]
    assert raw == {"NextKey": {"S": "user"}, "NextId": {"N": "2"},
                   "NextOptions": {"S": "start=1 step=1 min=1 max=9223372036854775807 no cycle"}}


def test_custom_counter_table(make_model, backend):
    """Meta.autoinc_counter points a model at a NextId subclass with its own table."""

    class Sequences(NextId):
        class Meta:
            table_name = backend.table_name("sequences")

    Invoice = make_model("Invoice", autoinc_counter=Sequences, create=False)
    backend.counter(Sequences, Invoice)
    backend.create(Invoice)
    Invoice().save()
    assert Invoice.autoinc_options().counter.currval(Invoice.Meta.table_name) == 1
    assert Invoice.autoinc_options().counter.Meta.table_name == Sequences.Meta.table_name


def test_a_bound_counter_has_its_own_connection():
    """A counter class whose connection was cached for its own settings does not lend it to the counter bound
    to a model on another endpoint (same table name, other host)."""
    from pynamodb.models import Model

    from pynamodb_autoinc.counter import bind_counter

    class Counter(NextId):
        class Meta:
            table_name = "NextId"
            region = "us-east-1"

    Counter._get_connection()
    meta = type("Meta", (), {"table_name": "elsewhere", "region": "us-east-1", "host": "http://127.0.0.1:9"})
    model = type("Elsewhere", (Model,), {"Meta": meta, "id": NumberAttribute(hash_key=True)})
    bound = bind_counter(Counter, model)
    assert bound._get_connection().connection.host == "http://127.0.0.1:9"
