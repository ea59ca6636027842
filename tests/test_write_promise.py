"""The promise on every write path: no ID handed out twice, nothing overwritten, a failed write leaves None.

Each test is a behaviour that once broke on a path other than ``Model.save()``.
"""

from __future__ import annotations

import gc
from datetime import datetime
from typing import Any, Dict, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import AttributeNullError
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, TransactWrite, after_save, iam
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ConfigurationError,
    ItemExistsError,
    SequenceExhaustedError,
    SequenceMismatchError,
    TransactionCanceledError,
)
from pynamodb_autoinc.periods import clock
from pynamodb_autoinc.testing import reset_counters, reset_state


class Boom(Exception):
    pass


def transaction(model: Any, **kwargs: Any) -> TransactWrite:
    return TransactWrite(connection=model._get_connection().connection, **kwargs)


def stored_ids(model: Any) -> List[Any]:
    return sorted(getattr(i, model.autoinc_options().attribute) for i in model.scan(consistent_read=True))


def another_process() -> None:
    """Forget this process's blocks and remembered counter values, as a restart would."""
    reset_state()


# -- claims released on every exit --------------------------------------------------

def test_transaction_left_by_an_exception_releases_the_id(make_model):
    """A with-block left by an exception sends nothing and puts the new ID back to None."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    user = User(name="first")
    with pytest.raises(Boom), transaction(User) as tx:
        tx.save(user)
        assert user.id is not None
        raise Boom
    assert user.id is None
    User(name="other").save()
    user.save()  # a new ID: the other writer's item is not overwritten
    names = {u.name: u.id for u in User.scan(consistent_read=True)}
    assert set(names) == {"first", "other"}
    assert names["first"] == user.id != names["other"]


@pytest.mark.modes()  # its models set their own mode
def test_query_transaction_left_by_an_exception_releases_the_id(backend, make_model):
    """The query strategy's claim inside an abandoned transaction is released too."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_strategy="query", autoinc_attribute="number")
    issue = Issue(project="p")
    with pytest.raises(Boom), transaction(Issue) as tx:
        tx.save(issue)
        raise Boom
    assert issue.number is None


def test_transaction_dropped_unsent_releases_the_id(make_model):
    """A transaction that is never sent nor left by an exception releases its claims when it is dropped."""
    User = make_model("User")
    user = User()
    tx = transaction(User)
    tx.save(user)
    assert user.id == 1
    del tx
    if user.id is not None:  # held in a reference cycle: only a collection frees it (slow on a big heap)
        gc.collect()
    assert user.id is None


def test_failed_null_check_in_transaction_releases_the_id(make_model):
    """tx.save() of an instance that fails PynamoDB's null check leaves its ID at None."""
    User = make_model("User", name=UnicodeAttribute())  # name is required
    user = User()
    with pytest.raises(AttributeNullError), transaction(User) as tx:
        tx.save(user)
    assert user.id is None


def test_save_all_failing_with_a_pynamodb_error_releases_the_ids(make_model, mode):
    """save_all() stopped by a non-library error (a null attribute) leaves no ID on an unsaved instance."""
    User = make_model("User", name=UnicodeAttribute())
    users = [User(name="a"), User(), User(name="c")]
    with pytest.raises(AttributeNullError):
        User.save_all(users)
    assert [u.id for u in users[1:]] == [None, None]
    # every instance is checked before anything is sent: nothing landed, also with the query strategy (which
    # saves one by one)
    assert stored_ids(User) == []
    assert users[0].id is None


def test_interrupted_save_releases_the_id(make_model, backend):
    """A KeyboardInterrupt while the item is being written leaves the ID at None."""
    User = make_model("User")
    client = User._get_connection().connection.client

    def interrupt(**_: Any) -> None:
        raise KeyboardInterrupt

    client.meta.events.register_first("before-send.dynamodb.PutItem", interrupt)
    client.meta.events.register_first("before-send.dynamodb.TransactWriteItems", interrupt)
    user = User()
    try:
        with pytest.raises(KeyboardInterrupt):
            user.save()
    finally:
        client.meta.events.unregister("before-send.dynamodb.PutItem", interrupt)
        client.meta.events.unregister("before-send.dynamodb.TransactWriteItems", interrupt)
    assert user.id is None


@pytest.mark.modes('fast', 'block', 'gapless')
def test_cancelled_save_all_releases_the_unsaved_ids(make_model, mode):
    """A save_all() whose transaction is cancelled leaves the unsaved new instances without IDs."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    User(id=2, name="existing").save()
    users = [User(name="a"), User(name="b")]
    with pytest.raises(BulkSaveError) as info:
        User.save_all(users)
    assert info.value.saved == []
    assert [u.id for u in users] == [None, None]
    assert [u.name for u in User.scan()] == ["existing"]


# -- bounds ---------------------------------------------------------------------------

@pytest.mark.modes()  # its models set their own mode
def test_max_holds_for_blocks_on_a_new_counter(make_model):
    """autoinc_block larger than what autoinc_max leaves: only the values up to the max are handed out."""
    Seat = make_model("Seat", autoinc_gapless=False, autoinc_block=10, autoinc_max=3)
    for expected in (1, 2, 3):
        seat = Seat()
        seat.save()
        assert seat.id == expected
    with pytest.raises(SequenceExhaustedError):
        Seat().save()
    assert stored_ids(Seat) == [1, 2, 3]


@pytest.mark.modes("fast", "block", "gapless")  # the query strategy's save_all() saves one by one
def test_max_holds_for_save_all_on_a_new_counter(make_model, mode):
    """save_all() of more new instances than autoinc_max allows is refused whole, nothing spent."""
    Seat = make_model("Seat", autoinc_max=3)
    seats = [Seat() for _ in range(5)]
    with pytest.raises(BulkSaveError):
        Seat.save_all(seats)
    assert [s.id for s in seats] == [None] * 5
    assert stored_ids(Seat) == []
    Seat.save_all(seats[:3])
    assert stored_ids(Seat) == [1, 2, 3]


def test_max_holds_with_start_and_step(make_model, mode):
    """Start 24, step 4, max 36 hands out 24, 28, 32, 36 and nothing past it."""
    Lot = make_model("Lot", autoinc_start=24, autoinc_step=4, autoinc_max=36)
    for expected in (24, 28, 32, 36):
        lot = Lot()
        lot.save()
        assert lot.id == expected
    with pytest.raises(SequenceExhaustedError):
        Lot().save()
    assert stored_ids(Lot) == [24, 28, 32, 36]


@pytest.mark.modes("fast", "block", "gapless")  # the query strategy's save_all() saves one by one
def test_max_holds_with_start_and_step_in_bulk(make_model, mode):
    """save_all() of five on a sequence with room for four (24..36 by 4) is refused; four fit."""
    Lot = make_model("Lot", autoinc_start=24, autoinc_step=4, autoinc_max=36)
    with pytest.raises(BulkSaveError):
        Lot.save_all([Lot() for _ in range(5)])
    assert stored_ids(Lot) == []
    Lot.save_all([Lot() for _ in range(4)])
    assert stored_ids(Lot) == [24, 28, 32, 36]


@pytest.mark.modes()  # its models set their own mode
def test_max_holds_for_a_block_in_a_transaction(make_model):
    """A block-mode claim in a TransactWrite respects autoinc_max."""
    Seat = make_model("Seat", autoinc_gapless=False, autoinc_block=5, autoinc_max=2)
    seats = [Seat() for _ in range(3)]
    with pytest.raises(SequenceExhaustedError), transaction(Seat) as tx:
        for seat in seats:
            tx.save(seat)
    assert [s.id for s in seats] == [None, None, None]
    assert stored_ids(Seat) == []


@pytest.mark.modes("fast", "block", "gapless")
def test_models_sharing_a_counter_with_different_steps_are_refused(make_model, backend):
    """A second model sharing a counter key under another step is refused: one counter is one sequence."""
    table = backend.table_name("shared")
    One = make_model("One", autoinc_key="shared", table_name=table)
    Two = make_model("Two", autoinc_key="shared", autoinc_step=3, table_name=table, create=False)
    One().save()
    two = Two()
    with pytest.raises(SequenceMismatchError, match="step 1 [(]here 3[)]"):
        two.save()
    assert two.id is None
    assert stored_ids(One) == [1]
    assert One.autoinc_options().counter.currval("shared") == One.autoinc_options().block


# -- transactions ------------------------------------------------------------------------

@pytest.mark.modes()  # its models set their own mode
def test_gapless_transaction_does_not_trust_a_stale_remembered_value(make_model, rival):
    """After another process moved the counter, a gapless TransactWrite still commits, with the next value."""
    User = make_model("User", autoinc_gapless=True, autoinc_backoff=0)
    User().save()  # this process remembers 1
    rival(User, times=3)  # another process takes 2, 3 and 4 before each attempt
    user = User()
    with transaction(User) as tx:
        tx.save(user)
    assert user.id == 5
    assert stored_ids(User) == [1, 5]


class Audited:
    """Another mixin that overrides get_save_kwargs_from_instance, as audit or tenancy mixins do."""

    calls: List[str] = []

    def get_save_kwargs_from_instance(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        Audited.calls.append(type(self).__name__)
        return super().get_save_kwargs_from_instance(*args, **kwargs)  # type: ignore[misc]


@pytest.mark.modes('fast', 'block', 'gapless')
@pytest.mark.parametrize("outer", [True, False], ids=["audited-first", "autoinc-first"])
def test_transaction_survives_other_mixins(make_model, mode, outer):
    """Another mixin's override on either side of ours: IDs, after_save and release on cancel all still work."""
    Audited.calls.clear()
    User = make_model("User", bases=(Audited,) if outer else ())
    if not outer:
        User = type("User", (AutoIncrementMixin, Audited, Model), {"Meta": User.Meta,
                                                                  "id": NumberAttribute(hash_key=True)})
    events: List[Any] = []
    with after_save.connected_to(lambda s, **kw: events.append(kw["instance"].id)):
        with transaction(User) as tx:
            tx.save(User())
        assert events == [1]
        User(id=5).save()
        doomed = User()
        with pytest.raises(TransactionCanceledError), transaction(User) as tx:
            tx.save(doomed)
            tx.save(User(id=5), condition=User.id.does_not_exist())
    assert doomed.id is None
    assert Audited.calls == ["User"] * 3


@pytest.mark.modes()  # its models set their own mode
def test_query_negative_step_counts_down_in_the_partition(make_model):
    """The query strategy with a negative step hands out 100, 99, 98 (the smallest key is the last)."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_strategy="query", autoinc_attribute="number", autoinc_step=-1,
                       autoinc_max=100)
    numbers = []
    for _ in range(3):
        issue = Issue(project="p")
        issue.save()
        numbers.append(issue.number)
    assert numbers == [100, 99, 98]


@pytest.mark.modes()  # its models set their own mode
def test_query_items_of_one_partition_in_one_transaction(make_model):
    """Two new items of one partition in one TransactWrite get consecutive numbers."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_strategy="query", autoinc_attribute="number")
    Issue(project="p").save()
    a, b, c = Issue(project="p"), Issue(project="p"), Issue(project="q")
    with transaction(Issue) as tx:
        for issue in (a, b, c):
            tx.save(issue)
    assert (a.number, b.number, c.number) == (2, 3, 1)


# -- options -------------------------------------------------------------------------------

@pytest.mark.modes('fast', 'block', 'gapless')
@pytest.mark.parametrize("default", [{"default": 0}, {"default_for_new": lambda: 1}])
def test_auto_attribute_with_a_default_is_refused(make_model, default):
    """An auto attribute with a default would write that default on every save: refused."""
    with pytest.raises(ConfigurationError, match="has a default"):
        make_model("Item", id=NumberAttribute(hash_key=True, **default), create=False)


@pytest.mark.modes('fast', 'block', 'gapless')
def test_period_key_without_the_period_in_its_format_is_refused(make_model):
    """A periodic sequence in the hash key must carry the period in its format, or keys repeat."""
    with pytest.raises(ConfigurationError, match="put the period in the ID"):
        make_model("Ticket", id=UnicodeAttribute(hash_key=True), autoinc_period="month",
                            autoinc_format="T-{value}", create=False)


@pytest.mark.modes('fast', 'block', 'gapless')
def test_scope_values_equal_as_numbers_share_a_counter(make_model, mode):
    """Scope 1 and 1.0 are one DynamoDB number, so they number one sequence."""
    Order = make_model("Order", shop=NumberAttribute(hash_key=True), line=NumberAttribute(range_key=True),
                       autoinc_attribute="line", autoinc_scope="shop")
    first, second = Order(shop=1), Order(shop=1.0)
    first.save()
    second.save()
    assert (first.line, second.line) == (1, 2)


# -- counters --------------------------------------------------------------------------------

@pytest.mark.modes('fast', 'gapless')
def test_reset_counters_resets_in_table_counters(make_model):
    """testing.reset_counters(Model) removes the counters kept in the model's own table."""
    Doc = make_model("Doc", id=UnicodeAttribute(hash_key=True), autoinc_counter_in_table=True)
    Doc().save()
    Doc().save()
    opts = Doc.autoinc_options()
    assert opts.counter.currval(opts.key) == 2
    assert reset_counters(Doc) == 1
    assert opts.counter.currval(opts.key) is None
    assert sorted(d.id for d in Doc.scan()) == ["1", "2"]


def test_current_reads_what_increment_counted(backend):
    """NextId.current(name) reads the count NextId.increment(name) keeps, with the same default period."""
    counter = backend.counter()
    with clock.frozen(datetime(2026, 11, 23)):
        assert counter.increment("logins") == 1
        assert counter.increment("logins") == 2
        assert counter.current("logins") == 2


def test_policy_allows_reading_the_models_table(make_model):
    """The IAM policy grants GetItem on the model's table: settling an unanswered write reads it."""
    User = make_model("User")
    assert "dynamodb:GetItem" in iam.required_actions(User)[User.Meta.table_name]


def test_required_pynamodb_gives_cancelled_items_their_old_item():
    """The oldest pynamodb the package accepts (6.0.1) carries a cancelled item's old item (raw_item), which a
    lost gapless race is read from; 6.0.0 has no such field."""
    import inspect
    import re
    from importlib.metadata import requires

    from pynamodb.exceptions import CancellationReason

    requirement = next(r for r in requires("pynamodb-autoinc") or [] if re.match(r"pynamodb\b", r))
    lowest = re.search(r">=\s*([\d.]+)", requirement)
    assert lowest is not None, f"no lower bound on pynamodb in {requirement!r}"
    assert tuple(int(p) for p in lowest.group(1).split(".")) >= (6, 0, 1), requirement
    assert "raw_item" in inspect.signature(CancellationReason).parameters


@pytest.mark.modes("fast", "gapless")
def test_a_collision_on_the_key_names_the_key(make_model):
    """When the auto ID is outside the key, ItemExistsError names the key that collided, not only the ID."""
    Member = make_model("Member", pk=UnicodeAttribute(hash_key=True), num=NumberAttribute(null=True),
                        autoinc_attribute="num")
    Member(pk="User#Alex").save()
    with pytest.raises(ItemExistsError, match=r"Member with pk='User#Alex', num="):
        Member(pk="User#Alex").save()
