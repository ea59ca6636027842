"""Defects of the write engine found by review: each test is one behaviour that once lost or mislabelled data.

Group commit at the sequence's bound and with failing items, ``save_all()``
with explicit and new items together, writes whose answer was lost while
DynamoDB normalised their numbers, versioned copies saved as new items, and
the query strategy below its bounds.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List

import pytest
from pynamodb.attributes import NumberAttribute, NumberSetAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ConditionFailedError,
    InvalidIdError,
    ItemExistsError,
    ItemWriteError,
    SequenceExhaustedError,
)
from tests.test_fairness import HoldFirstTransaction, run_leader_first


def stored(model: Any) -> List[Any]:
    """The stored items' IDs, sorted."""
    return sorted(getattr(i, model.autoinc_options().attribute) for i in model.scan(consistent_read=True))


def currval(model: Any) -> Any:
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


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


# -- group commit (gapless, threads of one process) -----------------------------------

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
    assert stored(Item) == [1] and currval(Item) == 1


@pytest.mark.modes("gapless")
def test_group_commit_item_too_large_fails_alone(make_model):
    """An item too large for DynamoDB fails its own thread only; the other threads' items are stored."""
    Item = make_model("Item", autoinc_gapless=True, body=UnicodeAttribute(null=True))
    items = [Item(body="first"), Item(body="x" * 410_000), Item(body="small")]
    errors = in_threads(HoldFirstTransaction(2), [i.save for i in items])
    assert list(errors) == [1]
    assert isinstance(errors[1], ItemWriteError) and "ValidationException" in str(errors[1])
    assert items[1].id is None
    assert sorted(i.id for i in (items[0], items[2])) == [1, 2]
    assert stored(Item) == [1, 2] and currval(Item) == 2


# -- save_all: one key per item ---------------------------------------------------------

@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_an_explicit_id_equal_to_a_new_one(make_model, mode):
    """save_all() of an explicit id=1 and a new item on a fresh counter refuses the explicit one; nothing is
    overwritten or stored, and gapless mode spends nothing."""
    Item = make_model("Item", name=UnicodeAttribute())
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    with pytest.raises(ItemExistsError, match="explicit Item with id=1") as info:
        Item.save_all([explicit, new])
    assert isinstance(info.value, BulkSaveError) and info.value.saved == []
    assert new.id is None and stored(Item) == []
    assert currval(Item) == (1 if mode == "fast" else None)


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_two_explicit_items_with_one_key(make_model):
    """Two explicit items with the same key in one save_all() are refused before anything is sent."""
    Item = make_model("Item", name=UnicodeAttribute())
    with pytest.raises(BulkSaveError, match="id=5 and Item with id=5 have the same key"):
        Item.save_all([Item(id=5, name="a"), Item(name="new"), Item(id=5, name="b")])
    assert stored(Item) == [] and currval(Item) is None


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_the_same_instance_twice_before_spending(make_model):
    """save_all([a, b, a]) is refused before any value is spent."""
    Item = make_model("Item")
    a, b = Item(), Item()
    with pytest.raises(BulkSaveError, match="given twice"):
        Item.save_all([a, b, a])
    assert [a.id, b.id] == [None, None]
    assert stored(Item) == [] and currval(Item) is None


@pytest.mark.modes("query")
def test_query_save_all_refuses_an_explicit_key_a_new_item_took(make_model):
    """Query strategy: a new item numbered 1 and an explicit id=1 later in the same call: the explicit put
    is refused, the new item is not overwritten."""
    Item = make_model("Item", name=UnicodeAttribute())
    new, explicit = Item(name="new"), Item(id=1, name="explicit")
    with pytest.raises(ItemExistsError, match="explicit Item with part='p', id=1"):
        Item.save_all([new, explicit])
    assert [(i.id, i.name) for i in Item.scan()] == []


@pytest.mark.modes("fast", "gapless")
def test_save_all_checks_explicit_ids_as_save_does(make_model):
    """An explicit ID that save() refuses (2.5) is refused by save_all() too, before anything is tracked."""
    Item = make_model("Item", autoinc_track_explicit=True)
    with pytest.raises(InvalidIdError):
        Item(id=2.5).save()
    with pytest.raises(InvalidIdError, match="2.5 is not an integer"):
        Item.save_all([Item(), Item(id=2.5)])
    assert stored(Item) == [] and currval(Item) is None


@pytest.mark.modes("fast", "gapless")
def test_save_all_past_the_bound_says_how_many_are_left(make_model):
    """save_all() of five with three left says so; a single save still gets the next value."""
    Item = make_model("Item", autoinc_max=10)
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 7)
    items = [Item() for _ in range(5)]
    with pytest.raises(SequenceExhaustedError, match="asked for 5 values of sequence .*only 3 are left before "
                                                     "its maximum .*10") as info:
        Item.save_all(items)
    assert isinstance(info.value, BulkSaveError)
    assert [i.id for i in items] == [None] * 5
    single = Item()
    single.save()
    assert single.id == 8


# -- a versioned copy saved as a new item ------------------------------------------------

@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_is_saved_as_a_new_item(make_model):
    """A copy of a stored versioned item with its ID cleared is saved as a new item, with version 1; the
    original is untouched."""
    Doc = make_model("Doc", name=UnicodeAttribute(), version=VersionAttribute(null=True))
    Doc(name="first").save()
    Doc.get(1).save()  # version 2
    clone = copy.copy(Doc.get(1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)
    assert sorted((d.id, d.name, d.version) for d in Doc.scan()) == [(1, "first", 2), (2, "first", 1)]
    assert currval(Doc) == 2


@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_in_a_transaction_is_saved_as_a_new_item(make_model):
    """TransactWrite.save() of a versioned copy with its ID cleared stores it as a new item, version 1."""
    from pynamodb_autoinc import TransactWrite

    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    with TransactWrite(connection=Doc._get_connection().connection) as tx:
        tx.save(clone)
    assert (clone.id, clone.version) == (2, 1)
    assert sorted((d.id, d.version) for d in Doc.scan()) == [(1, 1), (2, 1)]


@pytest.mark.modes("fast", "gapless")
def test_versioned_copy_in_save_all_is_saved_as_a_new_item(make_model):
    """save_all() of a versioned copy with its ID cleared stores it as a new item, version 1."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    Doc.save_all([Doc(), clone])
    assert (clone.id, clone.version) == (3, 1)
    assert sorted((d.id, d.version) for d in Doc.scan()) == [(1, 1), (2, 1), (3, 1)]


# -- the query strategy ---------------------------------------------------------------

@pytest.mark.modes("query")
def test_query_strategy_ignores_keys_below_its_minimum(make_model):
    """Keys stored below autoinc_min are not the sequence's: the first new item gets autoinc_start."""
    Item = make_model("Item", autoinc_min=100, autoinc_start=100)
    Item(id=3).save()
    item = Item()
    item.save()
    assert item.id == 100


# -- a write whose answer was lost ---------------------------------------------------------

@pytest.fixture
def lost_answers(local):
    """A fast-mode model on DynamoDB Local (which normalises numbers) and a Faults on its clients."""
    from tests.test_faults import Faults

    made: List[Any] = []

    def build(model: Any) -> Any:
        made.append(Faults(model, model.autoinc_options().counter))
        return made[-1]

    yield build
    for faults in made:
        faults.remove()


@pytest.mark.engine
@pytest.mark.parametrize("then", ["resend-refused", "no-answer"])
def test_landed_write_with_normalised_numbers_is_kept(local, lost_answers, then):
    """A put applied but unanswered, whose numbers DynamoDB stored normalised (5.0 as 5, 1e20 in full, a
    set in its own order), is recognised as landed: saved once, the ID kept."""
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin

    meta = type("Meta", (), {"table_name": local.table_name("normalised"), "autoinc_gapless": False,
                             "max_retry_attempts": 2, **local.meta})
    Reading: Any = type("Reading", (AutoIncrementMixin, Model), {
        "Meta": meta, "id": NumberAttribute(hash_key=True), "value": NumberAttribute(),
        "marks": NumberSetAttribute()})
    local.counter(model=Reading)
    local.create(Reading)
    faults = lost_answers(Reading)
    faults.inject("PutItem", "drop-after-commit")
    if then == "no-answer":
        faults.inject("PutItem", "no-answer", times=2)
    reading = Reading(value=5.0, marks={1e20, 2.50, 3, 4, 5, 6, 7})
    reading.save()
    assert reading.id == 1
    assert [(r.id, r.value) for r in Reading.scan(consistent_read=True)] == [(1, 5)]


@pytest.mark.modes("fast", "gapless")
def test_a_collision_on_the_key_names_the_key(make_model):
    """When the auto ID is outside the key, ItemExistsError names the key that collided, not only the ID."""
    Member = make_model("Member", pk=UnicodeAttribute(hash_key=True), num=NumberAttribute(null=True),
                        autoinc_attribute="num")
    Member(pk="User#Alex").save()
    with pytest.raises(ItemExistsError, match=r"Member with pk='User#Alex', num="):
        Member(pk="User#Alex").save()
