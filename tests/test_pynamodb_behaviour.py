"""PynamoDB unchanged: a model that uses the mixin behaves as PynamoDB's own in everything the mixin does not own.

Each scenario runs twice on moto, once over ``class P(Model)`` and once over ``class M(AutoIncrementMixin, Model)``
of the same shape (IDs given explicitly where the mixin would assign them), and the two outcomes must be equal:
the values read back, and for an error its PynamoDB class, its answer (``cause``, ``cause_response_code``,
``cause_response_message``, cancellation reasons) and, for an error of PynamoDB's or Python's own, its text.
The scenarios are those of PynamoDB 6.1's integration tests (``tests/integration``: the model's CRUD, indexes,
batches, queries and scans, transactions, version attributes, polymorphic models), with TTL, serialization, and
the three places PynamoDB's unit tests found the mixin changing PynamoDB: a base class without a table, a model
without a hash key, and a version conflict on a save with an explicit key.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterator, Tuple

import pytest
from pynamodb import exceptions as pynamodb_exceptions
from pynamodb.attributes import (
    BinaryAttribute,
    BooleanAttribute,
    DiscriminatorAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.connection import Connection
from pynamodb.constants import ALL_OLD
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, LocalSecondaryIndex
from pynamodb.models import Model
from pynamodb.transactions import TransactGet, TransactWrite

from pynamodb_autoinc import AutoIncrementMixin, NextId

KINDS = ("pynamodb", "mixin")
BASES: Dict[str, Tuple[type, ...]] = {"pynamodb": (Model,), "mixin": (AutoIncrementMixin, Model)}


@pytest.fixture
def aws() -> Iterator[None]:
    from moto import mock_aws

    with mock_aws():
        NextId.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        yield


Make = Callable[..., Any]


def maker(kind: str) -> Make:
    """``make(name, bases=(), discriminator=None, create=True, **attributes_and_meta)``: a model class of ``kind``
    (``meta_x`` goes into ``Meta``; its table, named for the kind, created unless ``create`` is False or the class
    has no ``table_name``)."""

    def make(cls_name: str, /, bases: Tuple[type, ...] = (), discriminator: Any = None, create: bool = True,
             **options: Any) -> Any:
        fields = {k: v for k, v in options.items() if not k.startswith("meta_")}
        meta = {k[len("meta_"):]: v for k, v in options.items() if k.startswith("meta_")}
        if "table_name" in meta:
            meta["table_name"] = f"{meta['table_name']}-{kind}-{uuid.uuid4().hex[:6]}"
        inherits = bases and not meta  # a subclass keeps its base's Meta, as PynamoDB's tests write them
        namespace = {**({} if inherits else {"Meta": type("Meta", (), {"region": "us-east-1", **meta})}), **fields}
        kwargs = {} if discriminator is None else {"discriminator": discriminator}
        model: Any = type(cls_name, bases or BASES[kind], namespace, **kwargs)
        if create and "table_name" in meta:
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        return model

    return make


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call()`` returns, or its error as PynamoDB would raise it: the nearest class of PynamoDB's (or
    Python's) in its MRO, its answer, its cancellation reasons, and the text of Python's own errors (PynamoDB's
    name the request and the table, which differ from run to run)."""
    try:
        return ("returned", call())
    except Exception as exc:  # noqa: BLE001 (every error is compared)
        return ("raised", *failure(exc))


def failure(exc: BaseException) -> Tuple[Any, ...]:
    known = next(k for k in type(exc).__mro__ if k.__module__ in (pynamodb_exceptions.__name__, "builtins"))
    reasons = getattr(exc, "cancellation_reasons", None)
    return (known.__name__, type(getattr(exc, "cause", None)).__name__, getattr(exc, "cause_response_code", None),
            getattr(exc, "cause_response_message", None),
            [r and (r.code, r.message, r.raw_item) for r in reasons] if reasons else None,  # the library's: []
            str(exc) if known.__module__ == "builtins" else None)


def both(scenario: Callable[[Make], Any]) -> Any:
    """The scenario's outcome over PynamoDB's models, asserted equal to its outcome over the mixin's."""
    seen = {kind: scenario(maker(kind)) for kind in KINDS}
    assert seen["mixin"] == seen["pynamodb"]
    return seen["pynamodb"]


class LSIndex(LocalSecondaryIndex):
    class Meta:
        projection = AllProjection()
    forum = UnicodeAttribute(hash_key=True)
    view = NumberAttribute(range_key=True)


class GSIndex(GlobalSecondaryIndex):
    class Meta:
        projection = AllProjection()
    epoch = UTCDateTimeAttribute(hash_key=True)


def test_model_integration(aws):
    """PynamoDB's test_model_integration: save, refresh, batch write and get, query with a range condition, batch
    delete, scan, update, index queries, a set emptied to None and a conditional update, all on explicit keys."""

    def scenario(make: Make) -> Any:
        epoch = datetime(2026, 1, 2, tzinfo=timezone.utc)
        Thread = make("Thread", meta_table_name="pynamodb-ci", forum=UnicodeAttribute(hash_key=True),
                      thread=UnicodeAttribute(range_key=True), view=NumberAttribute(default=0),
                      view_index=LSIndex(), epoch_index=GSIndex(), epoch=UTCDateTimeAttribute(default=lambda: epoch),
                      content=BinaryAttribute(null=True, legacy_encoding=False), scores=NumberSetAttribute(null=True),
                      version=VersionAttribute())
        obj = Thread("1", "2")
        obj.save()
        obj.refresh()
        Thread("setitem", "setrange", scores={1, 2.1}).save()
        with Thread.batch_write() as batch:
            for x in range(10):
                batch.save(Thread(f"hash-{x}", f"{x}"))
        got = sorted(i.thread for i in Thread.batch_get([(f"hash-{x}", f"{x}") for x in range(10)]))
        queried = [i.thread for i in Thread.query("setitem", Thread.thread.startswith("set"))]
        with Thread.batch_write() as batch:
            for x in range(10):
                batch.delete(Thread(f"hash-{x}", f"{x}"))
        scanned = sorted((i.forum, i.thread, i.version) for i in Thread.scan())
        query_obj = Thread("foo", "query_thread")
        query_obj.save()
        query_obj.update([Thread.view.add(1)])
        by_epoch = [i.thread for i in Thread.epoch_index.query(epoch)]
        by_view = [i.view for i in Thread.view_index.query("foo", Thread.view > 0)]
        query_obj.update([Thread.scores.set([])])
        query_obj.refresh()
        last = query_obj.update([Thread.view.add(1)], condition=Thread.forum.exists())
        return (obj.version, got, queried, scanned, sorted(by_epoch), by_view, query_obj.scores,
                last["Attributes"]["view"], query_obj.version)

    assert both(scenario)[0] == 1


def test_can_inherit_version_attribute(aws):
    """PynamoDB's test_can_inherit_version_attribute: a subclass keeps its base's version attribute, and one with
    a second version attribute is refused with PynamoDB's ValueError."""

    def scenario(make: Make) -> Any:
        A = make("A", meta_table_name="ci-a", forum=UnicodeAttribute(hash_key=True),
                 thread=UnicodeAttribute(range_key=True), scores=NumberAttribute(), version=VersionAttribute())
        B = make("B", bases=(A,), meta_table_name="ci-b")
        item = B("f", "t", scores=1)
        item.save()
        second = outcome(lambda: make("C", bases=(A,), meta_table_name="ci-c", version_invalid=VersionAttribute()))
        return B._version_attribute_name, item.version, second

    assert both(scenario)[2][-1] == "The model has more than one Version attribute: version, version_invalid"


def bank(make: Make) -> Dict[str, Any]:
    """The models of PynamoDB's transaction integration tests."""
    return {
        "User": make("User", meta_table_name="user", user_id=NumberAttribute(hash_key=True)),
        "BankStatement": make("BankStatement", meta_table_name="statement", user_id=NumberAttribute(hash_key=True),
                              balance=NumberAttribute(default=0), active=BooleanAttribute(default=True)),
        "LineItem": make("LineItem", meta_table_name="line-item", user_id=NumberAttribute(hash_key=True),
                         created_at=UTCDateTimeAttribute(range_key=True, default=datetime(2026, 1, 1)),
                         amount=NumberAttribute(), currency=UnicodeAttribute()),
        "Foo": make("Foo", meta_table_name="foo", bar=NumberAttribute(hash_key=True),
                    star=UnicodeAttribute(null=True), version=VersionAttribute()),
    }


def connection() -> Connection:
    return Connection(region="us-east-1")


def test_transact_write_idempotent_parameter_mismatch(aws):
    """A token used again for other items: IdempotentParameterMismatchException; the first transaction stays."""

    def scenario(make: Make) -> Any:
        User = bank(make)["User"]
        token = str(uuid.uuid4())
        with TransactWrite(connection=connection(), client_request_token=token) as tx:
            tx.save(User(1))
            tx.save(User(2))

        def again() -> None:
            with TransactWrite(connection=connection(), client_request_token=token) as tx:
                tx.save(User(3))
        return outcome(again), sorted(u.user_id for u in User.scan())

    assert both(scenario)[1] == [1, 2]


def test_transact_write_condition_check_failure(aws):
    """Saves conditional on absent keys that exist: TransactWriteError with a reason per item (and ALL_OLD)."""

    def scenario(make: Make) -> Any:
        models = bank(make)
        User, Statement = models["User"], models["BankStatement"]
        User(1).save()
        Statement(1).save()

        def both_exist() -> None:
            with TransactWrite(connection=connection()) as tx:
                tx.save(User(1), condition=User.user_id.does_not_exist())
                tx.save(Statement(1), condition=Statement.user_id.does_not_exist())

        def all_old() -> None:
            with TransactWrite(connection=connection()) as tx:
                tx.save(User(1), condition=User.user_id.does_not_exist(), return_values=ALL_OLD)

        def partial() -> None:
            User(2).delete()
            Statement(2).save()
            with TransactWrite(connection=connection()) as tx:
                tx.save(User(2), condition=User.user_id.does_not_exist())
                tx.save(Statement(2), condition=Statement.user_id.does_not_exist())
        return outcome(both_exist), outcome(all_old), outcome(partial)

    first = both(scenario)[0]
    assert first[:4] == ("raised", "TransactWriteError", "VerboseClientError", "TransactionCanceledException")


def test_transact_write_multiple_operations_on_same_record(aws):
    """Two operations on one item in a transaction: ValidationException."""

    def scenario(make: Make) -> Any:
        Statement = bank(make)["BankStatement"]
        Statement(1).save()

        def twice() -> None:
            with TransactWrite(connection=connection()) as tx:
                tx.condition_check(Statement, 1, condition=Statement.user_id.exists())
                tx.update(Statement(1), actions=[Statement.balance.add(10)])
        return outcome(twice)

    assert both(scenario)[3] == "ValidationException"


def test_transact_get(aws):
    """TransactGet reads items; a missing one raises DoesNotExist, and a future read inside the block raises
    InvalidStateError."""

    def scenario(make: Make) -> Any:
        models = bank(make)
        User, Statement = models["User"], models["BankStatement"]
        User(1).save()
        Statement(2, balance=100).save()
        with TransactGet(connection=connection()) as tx:
            user, statement, missing = tx.get(User, 1), tx.get(Statement, 2), tx.get(User, 100)
            early = outcome(user.get)
        return user.get().user_id, statement.get().balance, outcome(missing.get), early

    assert both(scenario)[:2] == (1, 100)


def test_transact_write_transfers_and_one_of_each(aws):
    """A transaction of conditional saves and updates moves balances; one of each operation applies."""

    def scenario(make: Make) -> Any:
        models = bank(make)
        User, Statement, Line = models["User"], models["BankStatement"], models["LineItem"]
        Statement(1, balance=0).save()
        Statement(2, balance=100).save()
        first, second = Statement.get(1), Statement.get(2)
        with TransactWrite(connection=connection()) as tx:
            tx.save(Line(user_id=1, amount=50, currency="USD"), condition=Line.user_id.does_not_exist())
            tx.save(Line(user_id=2, amount=-50, currency="USD"), condition=Line.user_id.does_not_exist())
            tx.update(first, actions=[Statement.balance.add(50)])
            tx.update(second, actions=[Statement.balance.add(-50)], condition=Statement.balance >= 50)
        first.refresh()
        second.refresh()
        User(1).save()
        User(2).save()
        with TransactWrite(connection=connection()) as tx:
            tx.condition_check(User, 1, condition=User.user_id.exists())
            tx.delete(User(2))
            tx.save(Line(4, amount=100, currency="USD"), condition=Line.user_id.does_not_exist())
            tx.update(first, actions=[Statement.active.set(False), Statement.balance.set(0)])
        first.refresh()
        line = next(Line.query(4, scan_index_forward=False, limit=1))
        return (first.balance, second.balance, first.active, outcome(lambda: User.get(2)), line.amount,
                line.currency)

    assert both(scenario)[1] == 50


def test_transaction_write_with_version_attribute(aws):
    """Versions in a transaction: raised on save and update, not checked with add_version_condition=False."""

    def scenario(make: Make) -> Any:
        Foo = bank(make)["Foo"]
        Foo(1).save()
        foo2 = Foo(2, star="bar")
        foo2.save()
        foo3 = Foo(3)
        foo3.save()
        foo42 = Foo(42)
        foo42.save()
        Foo.get(42).save()
        with TransactWrite(connection=connection()) as tx:
            tx.condition_check(Foo, 1, condition=Foo.bar.exists())
            tx.delete(foo2)
            tx.save(Foo(4))
            tx.update(foo3, actions=[Foo.star.set("birdistheword")])
            tx.update(foo42, actions=[Foo.star.set("last write wins")], add_version_condition=False)
        stored = Foo.get(42)
        return (Foo.get(1).version, outcome(lambda: Foo.get(2)), foo3.version, Foo.get(4).version, stored.version,
                stored.star)

    assert both(scenario)[4] == 3


def test_transaction_with_version_attribute_condition_failure(aws):
    """A stale version in a transaction's save, update or delete cancels it, and the local version stays."""

    def scenario(make: Make) -> Any:
        Foo = bank(make)["Foo"]
        Foo(21).save()
        stale = Foo(21)

        def run(operation: Callable[[Any], None]) -> Any:
            def call() -> None:
                with TransactWrite(connection=connection()) as tx:
                    operation(tx)
            return outcome(call)
        return (run(lambda tx: tx.save(Foo(21))), run(lambda tx: tx.update(stale, actions=[Foo.star.set("x")])),
                run(lambda tx: tx.delete(stale)), stale.version, Foo.get(21).version)

    assert both(scenario)[3:] == (None, 1)


def test_polymorphic_models_with_a_discriminator(aws):
    """Polymorphic models on one table: each item reads back as its own class, from the base and from a
    subclass's query; an item of another class is refused as PynamoDB refuses it."""

    def scenario(make: Make) -> Any:
        Animal = make("Animal", meta_table_name="animals", id=NumberAttribute(hash_key=True),
                      cls=DiscriminatorAttribute(), name=UnicodeAttribute(null=True))
        Dog = make("Dog", bases=(Animal,), discriminator="Dog", barks=BooleanAttribute(default=True))
        Cat = make("Cat", bases=(Animal,), discriminator="Cat")
        Dog(1, name="rex").save()
        Cat(2, name="tom").save()
        kinds = sorted((type(a).__name__, a.id, a.name) for a in Animal.scan())
        return kinds, [d.name for d in Dog.scan()], type(Animal.get(1)).__name__, outcome(lambda: Dog.get(2))

    assert both(scenario)[0] == [("Cat", 2, "tom"), ("Dog", 1, "rex")]


def test_ttl_attribute(aws):
    """A TTLAttribute is stored as epoch seconds and read back as a timezone-aware datetime."""

    def scenario(make: Make) -> Any:
        Session = make("Session", meta_table_name="sessions", id=NumberAttribute(hash_key=True),
                       expires=TTLAttribute(null=True))
        at = datetime(2030, 1, 1, tzinfo=timezone.utc)
        Session(1, expires=at).save()
        Session(2, expires=timedelta(days=1)).save()
        later = Session.get(2).expires > at - timedelta(days=3650)
        return Session.get(1).expires, Session.get(1).serialize()["expires"], later

    assert both(scenario)[1] == {"N": "1893456000"}


def test_serialization_round_trips(aws):
    """to_simple_dict/from_simple_dict, to_dynamodb_dict/from_dynamodb_dict, from_raw_data and serialize give
    PynamoDB's forms, for an item with its ID, nested maps and lists."""

    class Address(MapAttribute):
        city = UnicodeAttribute()

    def scenario(make: Make) -> Any:
        Person = make("Person", meta_table_name="people", id=NumberAttribute(hash_key=True),
                      name=UnicodeAttribute(), address=Address(null=True), tags=ListAttribute(null=True))
        person = Person(7, name="Ada", address=Address(city="Paris"), tags=["a", "b"])
        simple, dynamo = person.to_simple_dict(), person.to_dynamodb_dict()
        again, raw = Person(), Person.from_raw_data(person.serialize())
        again.from_simple_dict(simple)
        copy = Person()
        copy.from_dynamodb_dict(dynamo)
        return (simple, dynamo, again.to_simple_dict(), raw.to_simple_dict(), copy.to_simple_dict(),
                repr(Person(1, name="x")).replace("mixin", "pynamodb"))

    assert both(scenario)[0]["address"] == {"city": "Paris"}


def test_errors_for_missing_items(aws):
    """A missing item: get and refresh raise DoesNotExist, a conditional delete and update of it raise
    DeleteError and UpdateError, count is 0, batch_get and query find nothing."""

    def scenario(make: Make) -> Any:
        Item = make("Item", meta_table_name="items", id=NumberAttribute(hash_key=True),
                    name=UnicodeAttribute(null=True))
        return (outcome(lambda: Item.get(99)), outcome(lambda: Item(99).refresh()),
                outcome(lambda: Item(99).delete(condition=Item.id.exists())),
                outcome(lambda: Item(99).update([Item.name.set("x")], condition=Item.id.exists())),
                Item.count(99), list(Item.batch_get([99])), list(Item.query(99)))

    assert both(scenario)[0][:2] == ("raised", "DoesNotExist")


def test_a_base_class_without_a_table_is_accepted(aws):
    """A base class without ``Meta.table_name`` is accepted as PynamoDB accepts it: an instance serializes (and
    refuses a null key) as PynamoDB's, is read from raw data, and saving it raises PynamoDB's error; a subclass
    with a table works."""

    def scenario(make: Make) -> Any:
        Base = make("Base", id=NumberAttribute(hash_key=True), name=UnicodeAttribute(null=True))
        NoMeta: Any = type("NoMeta", BASES["pynamodb" if Base.__bases__ == (Model,) else "mixin"],
                      {"x": UnicodeAttribute(null=True)})
        Child = make("Child", bases=(Base,), meta_table_name="child")
        Child(id=5, name="five").save()
        return (Base(id=1, name="a").serialize(), outcome(lambda: Base(name="a").serialize()),
                Base.from_raw_data({"id": {"N": "3"}}).id, outcome(lambda: Base(id=1).save()),
                NoMeta(x="a").serialize(), NoMeta.from_raw_data({"x": {"S": "b"}}).x, Child.get(5).name)

    assert both(scenario)[0] == {"id": {"N": "1"}, "name": {"S": "a"}}


def test_a_mixin_base_without_a_table_numbers_its_subclasses(aws):
    """The mixin on a base class without a table: its subclass with a table numbers its new items."""
    make = maker("mixin")
    Base = make("Base", id=NumberAttribute(hash_key=True), name=UnicodeAttribute(null=True))
    Child = make("Child", bases=(Base,), meta_table_name="child")
    first, second = Child(name="a"), Child(name="b")
    first.save()
    second.save()
    assert (first.id, second.id) == (1, 2)


def test_a_model_without_a_hash_key(aws):
    """A model without a hash key is created as PynamoDB creates it (a subclass keeps its table name), and saving
    it raises PynamoDB's own error."""

    def scenario(make: Make) -> Any:
        Keyless = make("Keyless", meta_table_name="keyless", create=False, name=UnicodeAttribute(null=True))
        Sub = make("Sub", bases=(Keyless,))
        empty = make("Empty", meta_table_name="empty", create=False)
        return (Keyless.Meta.table_name == Sub.Meta.table_name, Keyless(name="a").serialize(),
                outcome(lambda: Keyless(name="a").save()), empty._hash_keyname)

    assert both(scenario)[2][1] == "AttributeError"


def test_a_version_conflict_on_a_save_with_an_explicit_key(aws):
    """A stale version saved with its key given raises what PynamoDB raises (a PutError whose cause is the
    ConditionalCheckFailedException), and the local version is not raised."""

    def scenario(make: Make) -> Any:
        Doc = make("Doc", meta_table_name="docs", id=NumberAttribute(hash_key=True),
                   name=UnicodeAttribute(null=True), version=VersionAttribute())
        Doc(id=1, name="a").save()
        fresh, stale = Doc.get(1), Doc.get(1)
        fresh.save()
        stale.name = "b"
        conflict = outcome(stale.save)
        unread = outcome(lambda: Doc(id=1, name="c").save())
        return conflict, stale.version, unread, Doc.get(1).name, Doc.get(1).version

    conflict, version, _, name, stored = both(scenario)
    assert conflict[1:5] == ("PutError", "VerboseClientError", "ConditionalCheckFailedException",
                             "The conditional request failed")
    assert (version, name, stored) == (1, "a", 2)


def test_a_version_conflict_names_the_version_not_a_condition(aws):
    """The library's error for a stale version saved without a condition names the version condition that
    failed, not a condition passed to save() (none was)."""
    make = maker("mixin")
    Doc = make("Doc", meta_table_name="docs", id=NumberAttribute(hash_key=True), version=VersionAttribute())
    Doc(id=1).save()
    fresh, stale = Doc.get(1), Doc.get(1)
    fresh.save()
    with pytest.raises(pynamodb_exceptions.PutError) as info:
        stale.save()
    assert "condition passed to save()" not in str(info.value)
    assert "version condition (version) failed: the stored item is not at version 1" in str(info.value)
