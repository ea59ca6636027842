"""Third review round: defects found where two features meet, each checked through the public API only."""

from __future__ import annotations

from typing import Any, List

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    VersionAttribute,
)
from pynamodb.connection import Connection
from pynamodb.exceptions import AttributeNullError
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    CounterAttribute,
    CounterMixin,
    HistoryMixin,
    NextId,
    SequenceOptions,
    TransactWrite,
    after_save,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ConfigurationError,
    OutOfBoundsError,
    TransactionCanceledError,
    UnassignedIdError,
)
from pynamodb_autoinc.periods import increment_in_period
from pynamodb_autoinc.testing import reset_counters


def _model(backend: Any, name: str, attrs: dict, bases: tuple = (AutoIncrementMixin,), **meta: Any) -> Any:
    meta_cls = type("Meta", (), {"table_name": backend.table_name(name.lower()), **backend.meta, **meta})
    model = type(name, (*bases, Model), {"Meta": meta_cls, **attrs})
    backend.counter(model=model)
    backend.create(model)
    return model


def _connection(backend: Any) -> Connection:
    return Connection(region=backend.meta["region"], host=backend.meta.get("host"))


def _stored(model: Any) -> List[Any]:
    return sorted((item.id, item.name) for item in model.scan(consistent_read=True))


@pytest.mark.modes()
@pytest.mark.parametrize("operation", ["update", "delete", "refresh"])
def test_keyed_operation_on_a_new_instance_names_the_fix(backend, operation):
    """``update()``, ``delete()`` and ``refresh()`` of a new instance (its auto-increment key still None) are
    refused with the library's ``UnassignedIdError`` saying to save it first, not a ``decimal`` error from
    serialising a None key; nothing is written and the ID stays None."""
    User = _model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)})
    user = User(name="Ada")
    calls = {"update": lambda: user.update(actions=[User.name.set("Bob")]), "delete": user.delete,
             "refresh": user.refresh}
    with pytest.raises(UnassignedIdError, match=r"has no id yet.*save\(\) it first"):
        calls[operation]()
    assert user.id is None and _stored(User) == []


@pytest.mark.modes()
def test_counter_mixin_update_of_a_new_instance_names_the_fix(backend):
    """A ``CounterMixin`` model's ``update()`` of a new auto-increment instance (which sends its own
    ``UpdateItem``) is refused with ``UnassignedIdError`` naming save(), and creates no item."""
    Page = _model(backend, "Page", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True),
                                    "views": CounterAttribute()}, bases=(CounterMixin, AutoIncrementMixin))
    page = Page(name="home")
    with pytest.raises(UnassignedIdError, match=r"save\(\) it first"):
        page.update(actions=[Page.name.set("index")])
    assert page.id is None and _stored(Page) == []


@pytest.mark.modes()
@pytest.mark.parametrize("operation", ["update", "delete"])
def test_transaction_update_or_delete_of_a_new_instance_names_the_fix(backend, operation):
    """``TransactWrite.update()`` or ``.delete()`` of a new auto-increment instance is refused as it is added,
    with ``UnassignedIdError`` naming save(); the transaction sends nothing."""
    User = _model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)})
    user = User(name="Ada")
    refused = pytest.raises(UnassignedIdError, match=r"save\(\) it first")
    with refused, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(User(name="kept out"))
        if operation == "update":
            tx.update(user, actions=[User.name.set("Bob")])
        else:
            tx.delete(user)
    assert user.id is None and _stored(User) == []


@pytest.mark.modes()
@pytest.mark.parametrize("gapless", [False, True])
def test_transaction_new_id_taking_an_explicit_key_of_the_same_transaction(backend, gapless):
    """A ``TransactWrite`` holding an explicit ``id=1`` and a new item whose counter also hands it 1 fails with
    the library's ``TransactionCanceledError`` naming the clash and the fix (``setval``), not DynamoDB's bare
    "multiple operations on one item" (DynamoDB Local reports the clash as a failed condition, also named);
    nothing is written and the new ID is back to None."""
    User = _model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=gapless)
    new = User(name="new")
    with pytest.raises(TransactionCanceledError) as caught, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(User(id=1, name="explicit"))
        tx.save(new)
    message = str(caught.value)
    assert "User with id=1" in message and "setval(" in message
    assert new.id is None and _stored(User) == []


@pytest.mark.modes()
def test_transaction_given_the_same_new_instance_twice(backend):
    """Saving one new instance twice in a ``TransactWrite`` is refused at the second ``save()`` with the
    library's ``TransactionCanceledError`` saying to save it once; nothing is sent and its ID is back to None."""
    User = _model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=False)
    user = User(name="twice")
    refused = pytest.raises(TransactionCanceledError, match="given to this transaction twice.*save each instance once")
    with refused, TransactWrite(connection=_connection(backend)) as tx:
        tx.save(user)
        tx.save(user)
    assert user.id is None and _stored(User) == []


def _history(backend: Any) -> Any:
    meta = type("Meta", (), {"table_name": backend.table_name("doc-history"), **backend.meta})
    model = type("DocVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "name": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


@pytest.mark.modes()
def test_history_save_reports_operation_save_to_signal_receivers(backend):
    """``save()`` of a ``HistoryMixin`` auto-increment model is reported to ``before_save`` and ``after_save``
    receivers as ``operation="save"`` (what the signals document for ``Model.save()``), for a new item and for
    a later save of it, not as ``"transaction"``, which names ``TransactWrite.save()``."""
    Doc = _model(backend, "Doc", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True),
                                  "revision": VersionAttribute()},
                 bases=(HistoryMixin, AutoIncrementMixin), history_model=_history(backend), autoinc_gapless=False)
    seen: List[Any] = []

    def before(sender: Any, instance: Any, is_new: bool, operation: str, **_: Any) -> None:
        seen.append(("before", is_new, operation))

    def after(sender: Any, instance: Any, is_new: bool, operation: str, **_: Any) -> None:
        seen.append(("after", is_new, operation))

    doc = Doc(name="draft")
    with before_save.connected_to(before, sender=Doc), after_save.connected_to(after, sender=Doc):
        doc.save()
        doc.name = "final"
        doc.save()
    assert seen == [("before", True, "save"), ("after", True, "save"),
                    ("before", False, "save"), ("after", False, "save")]
    assert doc.id == 1 and doc.revision == 2


@pytest.mark.modes()
@pytest.mark.parametrize("key", ["a@b", "orders#x@example.com"])
def test_setval_of_an_own_key_holding_an_at_sign_is_not_checked_as_a_region_counter(backend, key):
    """``NextId.setval`` and ``NextId.restart`` of an ordinary counter whose key holds ``@`` (a key of your own,
    or a scope value such as an e-mail address) with a step of 2 take any value within the bounds, as a
    PostgreSQL sequence does; only a key ending ``@`` and a region name is checked against a region's
    subsequence."""
    counter = backend.counter()
    sequence = SequenceOptions.of(step=2)
    assert counter.nextval(key, sequence) == 1
    counter.setval(key, 4)
    assert counter.nextval(key, sequence) == 6
    counter.restart(key, sequence, 10)
    assert counter.nextval(key, sequence) == 10


@pytest.mark.modes()
def test_setval_of_a_region_counter_off_its_subsequence_is_still_refused(backend):
    """A counter key ending ``@`` and a region name, with a step of 2 recorded, is still a region counter:
    ``setval`` to a value of the other region's subsequence is refused with ``OutOfBoundsError``."""
    counter = backend.counter()
    sequence = SequenceOptions.of(step=2)
    counter.nextval("user@us-east-1", sequence)
    with pytest.raises(OutOfBoundsError, match="off the subsequence of region 'us-east-1'"):
        counter.setval("user@us-east-1", 4)
    assert counter.currval("user@us-east-1") == 1


@pytest.mark.modes()
@pytest.mark.backends()
def test_counter_attribute_as_the_auto_increment_attribute_is_refused_at_class_creation(backend):
    """A ``CounterMixin`` model whose ``Meta.autoinc_attribute`` names a ``CounterAttribute`` is refused with a
    ``ConfigurationError`` when the class is created: ``save()`` sets the counter to its start value first, so
    a new instance was stored with that value and no ``attribute_not_exists``, overwriting an item with its
    key."""
    meta = type("Meta", (), {"table_name": "pages", "autoinc_attribute": "number", **backend.meta})
    with pytest.raises(ConfigurationError, match="'number' is a CounterAttribute.*NumberAttribute\\(null=True\\)"):
        type("Page", (CounterMixin, AutoIncrementMixin, Model), {
            "Meta": meta, "url": UnicodeAttribute(hash_key=True), "number": CounterAttribute()})


@pytest.mark.modes()
@pytest.mark.parametrize("count, period", [("missing", "active"), ("requests", "missing"), ("active", "requests"),
                                           ("key", "active")])
def test_increment_in_period_names_attributes_that_cannot_count(backend, count, period):
    """``periods.increment_in_period`` given a ``count_attribute`` that is not a NumberAttribute outside the
    key, or a ``period_attribute`` that is not a UnicodeAttribute outside the key, raises the library's
    ``ConfigurationError`` naming the attributes that would do, not a ``KeyError`` or PynamoDB's
    ``ValueError``; the item is left as it was."""
    meta = type("Meta", (), {"table_name": backend.table_name("apikey"), **backend.meta})
    ApiKey: Any = type("ApiKey", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                       "requests": NumberAttribute(null=True),
                                       "active": UnicodeAttribute(null=True)})
    backend.create(ApiKey)
    ApiKey(key="k").save()
    with pytest.raises(ConfigurationError, match="must name a .*Attribute of ApiKey outside its key; choose from"):
        increment_in_period(ApiKey, "k", count_attribute=count, period_attribute=period)
    stored = ApiKey.get("k", consistent_read=True)
    assert (stored.requests, stored.active) == (None, None)


@pytest.mark.modes()
@pytest.mark.backends()
def test_counter_table_and_counter_in_table_together_are_refused_at_class_creation(backend):
    """A model setting both ``Meta.autoinc_counter`` (a counter table of its own) and
    ``Meta.autoinc_counter_in_table`` is refused with a ``ConfigurationError`` when the class is created, rather
    than keeping its counter in its own table and silently ignoring the counter model it named."""

    class Sequences(NextId):
        class Meta:
            table_name = "sequences"

    meta = type("Meta", (), {"table_name": "docs", "autoinc_attribute": "number", "autoinc_counter": Sequences,
                             "autoinc_counter_in_table": True, **backend.meta})
    with pytest.raises(ConfigurationError, match="autoinc_counter and Meta.autoinc_counter_in_table .* choose one"):
        type("Doc", (AutoIncrementMixin, Model), {
            "Meta": meta, "key": UnicodeAttribute(hash_key=True), "number": NumberAttribute(null=True)})


@pytest.mark.modes()
@pytest.mark.parametrize("count", [0, -1, 1.5, True])
def test_reserve_refuses_a_count_that_is_not_a_positive_int(backend, count):
    """``NextId.reserve`` with a count that is not an int of 1 or more raises ``OutOfBoundsError`` at once and
    leaves the counter as it was: 1.5 stored a fraction in the counter (every later save failed on it), and 0
    or -1 sent a hundred requests before a misleading ``ContentionError``."""
    counter = backend.counter()
    counter.nextval("orders")
    with pytest.raises(OutOfBoundsError, match="count must be an int of 1 or more"):
        counter.reserve("orders", count)
    assert counter.currval("orders") == 1
    assert counter.nextval("orders") == 2


@pytest.mark.modes()
@pytest.mark.parametrize("expected, value", [(1, 2.5), (1.0, 2), (None, "3")])
def test_compare_and_set_refuses_values_that_are_not_ints(backend, expected, value):
    """``NextId.compare_and_set`` with a value (or an expected value other than None) that is not an int raises
    ``OutOfBoundsError`` and leaves the counter as it was, instead of storing a fraction or text in it."""
    counter = backend.counter()
    counter.nextval("orders")
    with pytest.raises(OutOfBoundsError, match="the values must be ints"):
        counter.compare_and_set("orders", expected, value)
    assert counter.currval("orders") == 1


@pytest.mark.modes("fast", "gapless")
def test_save_all_with_a_required_attribute_missing_sends_nothing(make_model):
    """``save_all()`` whose 111th instance lacks a required attribute raises PynamoDB's ``AttributeNullError``
    (as its ``save()`` would) before anything is sent: the first transaction's 100 items were stored first and
    the error did not say so (no ``BulkSaveError`` with ``saved``). Nothing is stored and every ID stays None."""
    User = make_model("User", name=UnicodeAttribute())
    users = [User(name=f"u{n}") for n in range(120)]
    users[110].name = None
    with pytest.raises(AttributeNullError, match="'name' cannot be None"):
        User.save_all(users)
    assert all(user.id is None for user in users)
    assert list(User.scan(consistent_read=True)) == []


@pytest.mark.modes()
def test_transaction_new_id_taking_the_key_of_an_item_it_updates(backend):
    """A ``TransactWrite`` that updates the stored ``User`` 1 and saves a new user whose counter (reset behind
    the stored IDs) hands it 1 fails with ``TransactionCanceledError`` naming the fix (``setval``); the stored
    item is unchanged, nothing is written and the new ID is back to None."""
    User = _model(backend, "User", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True)},
                  autoinc_gapless=False)
    User(name="stored").save()
    reset_counters(User)
    new = User(name="new")
    with pytest.raises(TransactionCanceledError, match=r"setval\(") as caught, \
            TransactWrite(connection=_connection(backend)) as tx:
        tx.update(User.get(1), actions=[User.name.set("updated")])
        tx.save(new)
    assert "User" in str(caught.value)
    assert new.id is None and _stored(User) == [(1, "stored")]


@pytest.mark.modes()
@pytest.mark.parametrize("key", ["", 5, None])
@pytest.mark.parametrize("call", ["nextval", "currval", "setval"])
def test_counter_key_that_is_not_a_non_empty_string_is_refused(backend, key, call):
    """``NextId.nextval``, ``currval`` and ``setval`` given a counter key that is not a non-empty string raise
    the library's ``ConfigurationError`` naming what to pass, not a bare ``TypeError`` (``5``, ``None``) or a
    ``CounterError`` wrapping DynamoDB's validation message (``""``); the table holds no counter after."""
    counter = backend.counter()
    calls = {"nextval": lambda: counter.nextval(key), "currval": lambda: counter.currval(key),
             "setval": lambda: counter.setval(key, 3)}
    with pytest.raises(ConfigurationError, match="a counter key must be a non-empty string"):
        calls[call]()
    assert counter.keys() == []


@pytest.mark.modes()
@pytest.mark.backends()
def test_scope_by_a_set_attribute_is_refused_at_class_creation(backend):
    """``Meta.autoinc_scope`` naming a set attribute is refused with a ``ConfigurationError`` when the class is
    created: the counter key was the set's text, whose order differs between processes (hash randomisation),
    so one scope got several counters and handed out its IDs more than once."""
    meta = type("Meta", (), {"table_name": "tickets", "autoinc_attribute": "number", "autoinc_scope": "tags",
                             **backend.meta})
    with pytest.raises(ConfigurationError, match="autoinc_scope names 'tags', a UnicodeSetAttribute"):
        type("Ticket", (AutoIncrementMixin, Model), {
            "Meta": meta, "key": UnicodeAttribute(hash_key=True), "number": NumberAttribute(null=True),
            "tags": UnicodeSetAttribute(null=True)})


@pytest.mark.modes()
def test_history_save_all_stopped_by_a_pynamodb_error_says_which_were_saved(backend):
    """``HistoryMixin.save_all()`` (one save per instance) stopped at its second instance by PynamoDB's
    ``AttributeNullError`` raises ``BulkSaveError`` whose ``saved`` holds the first instance, which landed, and
    ``unsaved`` the rest, instead of the bare error, which hid that the first was stored."""
    Doc = _model(backend, "Doc", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(),
                                  "revision": VersionAttribute()},
                 bases=(HistoryMixin, AutoIncrementMixin), history_model=_history(backend), autoinc_gapless=False)
    first, broken, last = Doc(name="a"), Doc(), Doc(name="c")
    with pytest.raises(BulkSaveError, match="1 of 3 saved; AttributeNullError") as caught:
        Doc.save_all([first, broken, last])
    assert caught.value.saved == [first] and caught.value.unsaved == [broken, last]
    assert first.id == 1 and broken.id is None and last.id is None
