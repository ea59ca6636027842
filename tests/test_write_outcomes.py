"""What a write reports when DynamoDB's answer is an error that may or may not mean "applied": a 500 or 503 on
a write that applied, a lost answer, a resend onto a key another item holds. The outcome is "saved" only for a write
that is stored as this write's own, "not written" only when DynamoDB said so, and WriteOutcomeUnknownError (the ID
kept) when nothing tells. The judge's table itself is checked cell by cell in tests/test_judge.py."""

from __future__ import annotations

import threading
from typing import Any, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import TransactWrite
from pynamodb_autoinc.exceptions import ItemExistsError, ItemWriteError, WriteOutcomeUnknownError
from tests.test_faults import faults_for, put_raw  # noqa: F401  (the fixture)


def _stored(model: Any) -> List[Any]:
    return sorted((item.attribute_values for item in model.scan(consistent_read=True)), key=repr)


@pytest.mark.modes("fast", "block")
def test_resent_put_onto_another_users_key_is_not_taken_for_the_write(make_model, faults_for):  # noqa: F811
    """A model numbering ``seq`` outside its key (an email): a new instance whose email is stored, its first try
    lost and resent, raises ItemExistsError; the other user's item is neither overwritten nor taken for this one."""
    User = make_model("User", email=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                      autoinc_attribute="seq", max_retry_attempts=2)
    User(email="kirk@example.com").save()
    faults = faults_for(User)
    faults.inject("PutItem", "no-answer")
    second = User(email="kirk@example.com")
    with pytest.raises(ItemExistsError):
        second.save()
    assert second.seq is None
    assert [(u.email, u.seq) for u in User.scan(consistent_read=True)] == [("kirk@example.com", 1)]


@pytest.mark.modes("fast", "block")
def test_resent_put_onto_another_users_key_is_refused_after_an_applied_try_too(make_model, faults_for):  # noqa: F811
    """The same, with the first try's answer lost after it failed on the stored item: the answer that comes back
    shows another value where this write put its own, so it is another's item: ItemExistsError."""
    User = make_model("User", email=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                      autoinc_attribute="seq", max_retry_attempts=2)
    User(email="kirk@example.com").save()
    faults = faults_for(User)
    faults.inject("PutItem", "drop-after-commit")
    second = User(email="kirk@example.com")
    with pytest.raises(ItemExistsError):
        second.save()
    assert [(u.email, u.seq) for u in User.scan(consistent_read=True)] == [("kirk@example.com", 1)]


@pytest.mark.modes("fast", "block", "gapless", "query")
@pytest.mark.parametrize("kind", ["internal-after-commit", "unavailable-after-commit", "drop-after-commit"])
def test_error_answer_after_the_write_applied_is_a_success(make_model, faults_for, kind):  # noqa: F811
    """A save applied but answered 500, 503, or not at all (botocore resends nothing: max_retry_attempts=0) is
    probed and reported saved: the item is stored once, under the ID the instance holds."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    faults = faults_for(User)
    operation = "PutItem" if User.autoinc_options().strategy != "query" and not User.autoinc_options().gapless \
        else "TransactWriteItems"
    faults.inject(operation, kind)
    user = User(name="Kirk")
    user.save()
    assert user.id == 1
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(1, "Kirk")]


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("kind", ["internal", "unavailable"])
def test_error_answer_of_a_write_not_applied_stores_it_once(make_model, faults_for, kind):  # noqa: F811
    """A save answered 500 or 503 that did not apply is probed by sending it again: it is stored once."""
    User = make_model("User", max_retry_attempts=0)
    faults = faults_for(User)
    faults.inject("PutItem" if not User.autoinc_options().gapless else "TransactWriteItems", kind)
    user = User()
    user.save()
    assert [u.id for u in User.scan(consistent_read=True)] == [user.id]


@pytest.mark.modes("fast", "gapless")
def test_transaction_answered_500_after_it_applied_is_a_success(make_model, faults_for):  # noqa: F811
    """A TransactWrite of a new item and an explicit one, applied but answered 500, is resent with its token
    and reported written: both items are stored once."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "internal-after-commit")
    new, explicit = User(name="new"), User(id=100, name="explicit")
    with TransactWrite(connection=User._get_connection().connection) as tx:
        tx.save(new)
        tx.save(explicit)
    assert new.id == 1
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(1, "new"), (100, "explicit")]


@pytest.mark.modes("gapless")
def test_transaction_of_explicit_items_lost_after_it_applied_is_a_success(make_model, faults_for):  # noqa: F811
    """A TransactWrite holding only an explicit-ID item, applied but answered 500, is reported written."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "internal-after-commit")
    with TransactWrite(connection=User._get_connection().connection) as tx:
        tx.save(User(id=7, name="explicit"))
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(7, "explicit")]


@pytest.mark.modes("fast", "block")
def test_replicated_conflict_on_the_resend_of_an_applied_put_is_a_success(make_model, faults_for):  # noqa: F811
    """A put applied whose answer was lost, and whose resend met a ReplicatedWriteConflict (409), is reported
    saved once the next resend shows the item as sent."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    faults = faults_for(User)
    faults.inject("PutItem", "drop-after-commit")
    faults.inject("PutItem", "replicated-conflict")
    user = User(name="Kirk")
    user.save()
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(user.id, "Kirk")]


@pytest.mark.modes("fast", "gapless")
def test_probes_that_never_answer_raise_unknown_and_keep_the_id(make_model, faults_for):  # noqa: F811
    """A write answered 500 whose probes are answered 500 too raises WriteOutcomeUnknownError naming the instance;
    the instance keeps the ID it may be stored under."""
    User = make_model("User", max_retry_attempts=0)
    faults = faults_for(User)
    faults.inject("PutItem" if not User.autoinc_options().gapless else "TransactWriteItems", "internal-after-commit")
    faults.inject("PutItem" if not User.autoinc_options().gapless else "TransactWriteItems", "internal", times=10)
    user = User()
    with pytest.raises(WriteOutcomeUnknownError, match=r"User with id=1\b"):
        user.save()
    assert user.id == 1
    assert [u.id for u in User.scan(consistent_read=True)] == [1]


@pytest.mark.modes("gapless")
def test_group_commit_answered_500_is_not_split_and_stores_each_once(make_model, faults_for):  # noqa: F811
    """Threads' saves sent as one group commit, applied but answered 500, are resent with the group's token, not
    split up under new IDs: each record is stored once, under the ID its instance holds."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    faults = faults_for(User)
    users = [User(name=f"u{n}") for n in range(6)]
    faults.inject("TransactWriteItems", "internal-after-commit", times=3)
    errors: List[BaseException] = []

    def save(user: Any) -> None:
        try:
            user.save()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = [(u.id, u.name) for u in User.scan(consistent_read=True)]
    assert sorted(stored) == sorted((u.id, u.name) for u in users)
    assert sorted(u.id for u in users) == list(range(1, 7))


@pytest.mark.modes("gapless")
def test_group_commit_outcome_unknown_names_each_member(make_model, faults_for):  # noqa: F811
    """When a group commit's outcome stays unknown, each member gets its own WriteOutcomeUnknownError, naming its
    own instance and the ID it keeps. A save that comes after it (the threads may form more than one group) would
    take one of those IDs while that write is in doubt: it is not sent (ItemWriteError, its ID None)."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    User(name="first").save()
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "internal", times=100)
    users = [User(name=f"u{n}") for n in range(4)]
    errors: dict = {}
    barrier = threading.Barrier(len(users))

    def save(user: Any) -> None:
        barrier.wait()
        try:
            user.save()
        except BaseException as exc:
            errors[user.name] = exc

    threads = [threading.Thread(target=save, args=(u,)) for u in users]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    faults.remove()
    assert set(errors) == {u.name for u in users}
    assert len({id(e) for e in errors.values()}) == len(users)  # one error each
    unknown = [user for user in users if isinstance(errors[user.name], WriteOutcomeUnknownError)]
    assert unknown
    for user in users:
        error = errors[user.name]
        if user in unknown:
            assert f"id={user.id!r}" in str(error) and user.id is not None
        else:
            assert isinstance(error, ItemWriteError) and user.id is None and "still unknown" in str(error)
    held = [user.id for user in users if user.id is not None]
    assert len(held) == len(set(held))  # no two instances hold one ID


@pytest.mark.modes("fast", "block", "gapless")
def test_interrupt_during_the_resend_of_an_applied_write_keeps_the_id(make_model, faults_for):  # noqa: F811
    """Ctrl-C while botocore resends a write whose first try applied (its answer lost): the interrupt is raised
    as it is, and the instance keeps the ID it is stored under, so a second save cannot store it twice."""
    User = make_model("User", max_retry_attempts=2)
    faults = faults_for(User)
    operation = "TransactWriteItems" if User.autoinc_options().gapless else "PutItem"
    faults.inject(operation, "drop-after-commit")
    faults.inject(operation, "interrupt")
    user = User()
    with pytest.raises(KeyboardInterrupt):
        user.save()
    assert user.id == 1
    assert [u.id for u in User.scan(consistent_read=True)] == [1]


@pytest.mark.modes("fast", "gapless")
def test_interrupt_before_any_try_left_gives_the_id_back(make_model, faults_for):  # noqa: F811
    """Ctrl-C before the write's only try left: nothing can be stored, so the ID is back to None."""
    User = make_model("User", max_retry_attempts=2)
    faults = faults_for(User)
    faults.inject("TransactWriteItems" if User.autoinc_options().gapless else "PutItem", "interrupt")
    user = User()
    with pytest.raises(KeyboardInterrupt):
        user.save()
    assert user.id is None
    assert list(User.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("code", ["TransactionConflict", "ThrottlingError"])
def test_busy_item_in_a_transaction_of_explicit_items_is_resent(make_model, faults_for, code):  # noqa: F811
    """A TransactWrite of explicit-ID items cancelled once for a busy item (a conflict, throttling) is sent again
    and stored."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    faults = faults_for(User)
    faults.inject("TransactWriteItems", f"cancel:{code}:0")
    with TransactWrite(connection=User._get_connection().connection) as tx:
        tx.save(User(id=1, name="a"))
        tx.save(User(id=2, name="b"))
    assert sorted(u.id for u in User.scan(consistent_read=True)) == [1, 2]


@pytest.mark.modes("fast", "gapless")
def test_conflict_that_never_passes_names_the_explicit_item(make_model, faults_for):  # noqa: F811
    """A TransactWrite of explicit-ID items whose conflict never passes raises TransactionCanceledError naming the
    item that met it and the reason."""
    from pynamodb_autoinc.exceptions import TransactionCanceledError

    User = make_model("User", name=UnicodeAttribute(null=True))
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "cancel:TransactionConflict:1", times=50)
    with pytest.raises(TransactionCanceledError, match=r"item 1: TransactionConflict on User with id=2"), \
            TransactWrite(connection=User._get_connection().connection) as tx:
        tx.save(User(id=1, name="a"))
        tx.save(User(id=2, name="b"))
    assert list(User.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "gapless")
def test_a_versioned_edit_whose_answer_was_lost_is_not_reported_unwritten(make_model, faults_for):  # noqa: F811
    """An edit of a model with a VersionAttribute whose first try applied and whose answer was lost: botocore's
    resend fails the version condition the first try moved. That is not "nothing was written": the save raises
    WriteOutcomeUnknownError, and the stored item is the edit."""
    from pynamodb.attributes import VersionAttribute

    User = make_model("User", name=UnicodeAttribute(null=True), version=VersionAttribute(), max_retry_attempts=2)
    user = User(name="Kirk")
    user.save()
    user.name = "James"
    faults = faults_for(User)
    faults.inject("PutItem", "drop-after-commit")
    with pytest.raises(WriteOutcomeUnknownError):
        user.save()
    stored = User.get(user.id, consistent_read=True)
    assert (stored.name, stored.version) == ("James", 2)


@pytest.mark.modes("gapless")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_the_next_save_settles_a_gapless_write_in_doubt(make_model, faults_for, applied):  # noqa: F811
    """A gapless save whose outcome stayed unknown keeps its ID; the next save on its counter first resends that
    transaction with its token, so that it never takes the same ID: stored (now or before), the first instance
    keeps its ID and the next save takes the one after it."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    User(name="first").save()
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "internal-after-commit" if applied else "internal", times=100)
    kirk = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError):
        kirk.save()
    assert kirk.id == 2
    faults.remove()
    spock = User(name="Spock")
    spock.save()
    assert (kirk.id, spock.id) == (2, 3)
    assert sorted((u.id, u.name) for u in User.scan(consistent_read=True)) == [(1, "first"), (2, "Kirk"),
                                                                                (3, "Spock")]


@pytest.mark.modes("gapless")
def test_a_gapless_write_in_doubt_that_never_applied_gives_its_id_back(make_model, faults_for):  # noqa: F811
    """A gapless save in doubt that never applied, its value since taken by another process: the next save in
    this process finds its transaction cancelled, puts its ID back to None, and takes the value after the
    other process's."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    User(name="first").save()
    opts = User.autoinc_options()
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "internal", times=100)
    kirk = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError):
        kirk.save()
    faults.remove()
    put_raw(User, User(id=2, name="other process"))
    assert opts.counter.compare_and_set(opts.key, 1, 2, opts.sequence)
    spock = User(name="Spock")
    spock.save()
    assert (kirk.id, spock.id) == (None, 3)
    assert sorted((u.id, u.name) for u in User.scan(consistent_read=True)) == [(1, "first"), (2, "other process"),
                                                                                (3, "Spock")]


@pytest.mark.modes("block")
@pytest.mark.parametrize("fault", ["internal-after-commit", "drop-after-commit"])
def test_a_counter_update_answered_unknown_is_probed_not_moved_twice(make_model, faults_for, fault):  # noqa: F811
    """A counter update applied whose answer was a 500 or lost, with no botocore retry (max_retry_attempts = 0),
    is probed with the same request: a reserve's token, a compare-and-set's writer number tell its own applied
    try, so the call returns what it did and the counter moved once."""
    User = make_model("User", max_retry_attempts=0, autoinc_block=5)
    opts = User.autoinc_options()
    faults = faults_for(User)
    faults.inject("UpdateItem", fault)
    assert opts.counter.reserve(opts.key, 3, opts.sequence) == [1, 2, 3]
    faults.inject("UpdateItem", fault)
    assert opts.counter.compare_and_set(opts.key, 3, 10, opts.sequence) is True
    faults.inject("UpdateItem", fault)
    user = User()
    user.save()  # the block's reserve
    assert user.id == 11
    assert opts.counter.currval(opts.key) == 15


@pytest.mark.modes("query")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_the_next_save_settles_a_query_put_in_doubt(make_model, faults_for, applied):  # noqa: F811
    """A query-strategy save whose put stayed unknown keeps its ID; the next save of the partition that would take
    the same value first sends that put again: the first item is stored (now or before), and the next save takes
    the value after it, so two instances never hold one ID."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    User(name="first").save()
    faults = faults_for(User)
    faults.inject("PutItem", "internal-after-commit" if applied else "internal", times=100)
    kirk = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError):
        kirk.save()
    faults.remove()
    spock = User(name="Spock")
    spock.save()
    assert kirk.id is not None and spock.id is not None and kirk.id != spock.id
    assert sorted(u.name for u in User.scan(consistent_read=True)) == ["Kirk", "Spock", "first"]
