"""Independent review checks of the 28 defects of issue 21, through the public API, with neighbouring cases
(other modes, str IDs, ranges, transactions, save_all)."""

from __future__ import annotations

import copy
from typing import Any, List

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.models import BatchWrite, Model

from pynamodb_autoinc import AutoIncrementMixin, HistoryMixin, NextId, SequenceOptions, TransactWrite
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    BulkSaveError,
    ConditionFailedError,
    ConfigurationError,
    CounterValueError,
    HistoryWriteError,
    InvalidIdError,
    ItemExistsError,
    SequenceExhaustedError,
    VersionConflictError,
)


def ids(model: Any) -> List[Any]:
    """The stored items' auto IDs, sorted."""
    name = model.autoinc_options().attribute
    return sorted(getattr(i, name) for i in model.scan(consistent_read=True))


def currval(model: Any) -> Any:
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


def history_of(backend: Any, stem: str = "hist") -> Any:
    """A plain PynamoDB history model on ``backend``, its table created."""
    meta = type("Meta", (), {"table_name": backend.table_name(stem), **backend.meta})
    model = type("Hist", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


# -- 2: save_all with explicit and new items ------------------------------------------------------


@pytest.mark.modes("block")
def test_block_save_all_explicit_equal_to_new_is_refused(make_model):
    """Block mode: save_all([Item(id=1), Item()]) on a fresh counter is refused, nothing stored."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    with pytest.raises(ItemExistsError):
        Item.save_all([explicit, new])
    assert new.id is None and ids(Item) == []


@pytest.mark.modes("query")
def test_query_save_all_explicit_first_then_new_stores_both(make_model):
    """Query strategy: save_all([Item(id=1), Item()]) stores the explicit 1 and numbers the new item 2."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    Item.save_all([explicit, new])
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == [(1, "explicit"), (2, "new")]


@pytest.mark.modes("fast", "gapless")
def test_save_all_explicit_after_new_is_refused(make_model):
    """save_all([Item(), Item(id=1)]) on a fresh counter: the explicit put does not overwrite the new item."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    new, explicit = Item(name="new"), Item(id=1, name="explicit")
    with pytest.raises(ItemExistsError):
        Item.save_all([new, explicit])
    stored = sorted((i.id, i.name) for i in Item.scan(consistent_read=True))
    assert (1, "explicit") not in stored


@pytest.mark.modes("fast", "gapless")
def test_save_all_explicit_with_track_explicit_goes_past_it(make_model):
    """With autoinc_track_explicit, save_all([Item(id=1), Item()]) stores both, the new one past 1."""
    Item = make_model("Item", autoinc_track_explicit=True, name=UnicodeAttribute(null=True))
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    Item.save_all([explicit, new])
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == [(1, "explicit"), (2, "new")]


@pytest.mark.modes("fast", "gapless")
def test_save_all_range_key_explicit_equal_to_new_is_refused(make_model):
    """ID as range key: an explicit (p, 1) and a new item in partition p do not overwrite each other."""
    Item = make_model("Item", part=UnicodeAttribute(hash_key=True), num=NumberAttribute(range_key=True),
                      name=UnicodeAttribute(null=True), autoinc_attribute="num")
    explicit, new = Item("p", 1, name="explicit"), Item("p", name="new")
    with pytest.raises(ItemExistsError):
        Item.save_all([explicit, new])
    assert [(i.num, i.name) for i in Item.scan(consistent_read=True)] == []


# -- 8: explicit IDs in save_all ----------------------------------------------------------------


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("bad", [2.5, True])
def test_save_all_refuses_what_save_refuses(make_model, bad):
    """save_all() refuses an explicit ID that is not an int (a float, a bool) with InvalidIdError, storing none."""
    Item = make_model("Item")
    with pytest.raises(InvalidIdError):
        Item.save_all([Item(), Item(id=bad)])
    assert ids(Item) == []


@pytest.mark.modes("query")
def test_query_save_all_refuses_a_float_id(make_model):
    """Query strategy: save_all() refuses an explicit 2.5 as save() does."""
    Item = make_model("Item")
    with pytest.raises(InvalidIdError):
        Item("p", 2.5).save()
    with pytest.raises(InvalidIdError):
        Item.save_all([Item(), Item("p", 2.5)])
    assert Item.count("p", consistent_read=True) == 0


# -- 9: a save() override after the mixin -------------------------------------------------------


def test_mixin_overriding_save_after_auto_increment_is_run_or_refused():
    """class M(AutoIncrementMixin, Stamped, Model): refused at class creation (it would be skipped)."""

    class Stamped:
        def save(self, *args: Any, **kwargs: Any) -> Any:
            self.stamped = True
            return super().save(*args, **kwargs)  # type: ignore[misc]

    meta = type("Meta", (), {"table_name": "m"})
    with pytest.raises(ConfigurationError):
        type("M", (AutoIncrementMixin, Stamped, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True)})


@pytest.mark.modes("fast")
def test_mixin_overriding_save_before_auto_increment_runs_for_new_items(backend):
    """class M(Stamped, AutoIncrementMixin, Model) runs Stamped.save for a new item."""
    calls = []

    class Stamped:
        def save(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(self)
            return super().save(*args, **kwargs)  # type: ignore[misc]

    meta = type("Meta", (), {"table_name": backend.table_name("m"), "autoinc_gapless": False, **backend.meta})
    M: Any = type("M", (Stamped, AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True)})
    backend.counter(model=M)
    backend.create(M)
    m = M()
    m.save()
    assert calls == [m] and m.id == 1


# -- 10: a scope on a model whose ID is the only key -----------------------------------------------


@pytest.mark.parametrize("mode_options", [{"autoinc_gapless": False}, {"autoinc_gapless": True},
                                          {"autoinc_block": 5}])
def test_scope_on_the_only_key_is_refused(mode_options):
    """autoinc_scope when the ID is the only key is refused when the class is created, in every counter mode."""
    meta = type("Meta", (), {"table_name": "m", "autoinc_scope": "tenant", **mode_options})
    with pytest.raises(ConfigurationError):
        type("M", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                                 "tenant": UnicodeAttribute()})


def test_scope_on_a_hash_key_id_with_a_range_key_is_refused():
    """ID as hash key and a range key scoped: every scope would still collide on the hash key alone? The
    scope is the range key, so each scope's 1 is a distinct key: accepted."""
    meta = type("Meta", (), {"table_name": "m", "autoinc_scope": "tenant", "autoinc_gapless": False})
    type("M", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                             "tenant": UnicodeAttribute(range_key=True)})


# -- 11: save_all larger than what is left ---------------------------------------------------------


@pytest.mark.modes("block")
def test_block_save_all_past_the_bound_says_how_many_are_left(make_model):
    """Block mode: save_all() of five with three left says how many are left and asked."""
    Item = make_model("Item", autoinc_max=10, autoinc_block=3)
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 7)
    items = [Item() for _ in range(5)]
    with pytest.raises(SequenceExhaustedError, match=r"5.*3|3.*5"):
        Item.save_all(items)
    assert [i.id for i in items] == [None] * 5


@pytest.mark.modes("fast", "gapless")
def test_save_all_exactly_what_is_left_is_saved(make_model):
    """save_all() of three with three left saves all three."""
    Item = make_model("Item", autoinc_max=10)
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 7)
    items = [Item() for _ in range(3)]
    Item.save_all(items)
    assert sorted(i.id for i in items) == [8, 9, 10] and ids(Item) == [8, 9, 10]


# -- 12: a versioned copy ------------------------------------------------------------------------


@pytest.mark.modes("fast", "gapless", "block")
def test_versioned_copy_does_not_spend_values(make_model):
    """A versioned copy saved as new takes exactly one value (the next), in every counter mode."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    Doc.get(1).save()
    Doc.get(1).save()
    clone = copy.copy(Doc.get(1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)
    nxt = Doc()
    nxt.save()
    assert nxt.id == 3


@pytest.mark.modes("query")
def test_query_versioned_copy_is_saved_as_new(make_model):
    """Query strategy: a versioned copy with its ID cleared is stored as a new item, version 1."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    Doc.get("p", 1).save()
    clone = copy.copy(Doc.get("p", 1))
    clone.id = None
    clone.save()
    assert (clone.id, clone.version) == (2, 1)


@pytest.mark.modes("fast")
def test_versioned_stale_copy_with_condition_names_the_version(make_model):
    """A stale versioned instance (not new) failing PynamoDB's version condition is not blamed on a caller
    condition it never passed."""
    Doc = make_model("Doc", version=VersionAttribute(null=True))
    Doc().save()
    a, b = Doc.get(1), Doc.get(1)
    a.save()
    with pytest.raises(Exception) as info:
        b.save()
    assert "the condition passed to save() did not hold" not in str(info.value)


# -- 13: query strategy below min ----------------------------------------------------------------


@pytest.mark.modes("query")
def test_query_strategy_keys_below_min_in_save_all(make_model):
    """Query strategy, keys below autoinc_min: save_all() numbers from autoinc_start."""
    Item = make_model("Item", autoinc_min=100, autoinc_start=100)
    Item("p", 3).save()
    items = [Item(), Item()]
    Item.save_all(items)
    assert [i.id for i in items] == [100, 101]


@pytest.mark.modes("query")
def test_query_strategy_keys_above_max_are_not_the_sequences(make_model):
    """Query strategy, a key stored above autoinc_max: the next new item is still numbered within bounds."""
    Item = make_model("Item", autoinc_max=50)
    Item("p", 1).save()
    Item("p", 1000).save()
    item = Item()
    item.save()
    assert item.id == 2


# -- 15-19: history ------------------------------------------------------------------------------


def test_history_after_counter_mixin_order_refused_or_recorded():
    """class Doc(AutoIncrementMixin, HistoryMixin, Model) with a str key is refused too."""
    meta = type("Meta", (), {"table_name": "doc"})
    with pytest.raises(ConfigurationError):
        type("Doc", (AutoIncrementMixin, HistoryMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "revision": VersionAttribute()})


def _auto_doc(backend: Any, **meta: Any) -> Any:
    history = history_of(backend)
    m = type("Meta", (), {"table_name": backend.table_name("doc"), "history_model": history, **backend.meta,
                          **meta})
    Doc: Any = type("Doc", (HistoryMixin, AutoIncrementMixin, Model), {
        "Meta": m, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.counter(model=Doc)
    backend.create(Doc)
    return Doc, history


@pytest.mark.parametrize("block", [None, 3])
def test_history_auto_save_all_records_version_one(backend, block):
    """HistoryMixin first, save_all of new items (fast mode, blocks): each gets version 1 in the history."""
    Doc, history = _auto_doc(backend, autoinc_gapless=False, **({"autoinc_block": block} if block else {}))
    docs = [Doc(title="a"), Doc(title="b")]
    try:
        Doc.save_all(docs)
    except AutoIncrementError:
        return  # refused outright: nothing written without history
    assert sorted((h.item, h.version) for h in history.scan(consistent_read=True)) == [("1", 1), ("2", 1)]


def test_pynamodb_batch_write_on_auto_history_model_is_refused(backend):
    """PynamoDB's BatchWrite(Doc) of an auto-ID history model cannot overwrite without a version."""
    Doc, history = _auto_doc(backend, autoinc_gapless=False)
    d = Doc(title="one")
    d.save()
    d.title = "two"
    with pytest.raises((HistoryWriteError, AutoIncrementError)), BatchWrite(Doc) as batch:
        batch.save(d)
    assert Doc.get(1, consistent_read=True).title == "one"


def test_history_new_instance_with_explicit_id_over_unversioned_item(backend):
    """A new explicit-ID instance of an auto-ID history model over an item stored without version is refused."""
    Doc, history = _auto_doc(backend, autoinc_gapless=False)
    plain: Any = type("Plain", (Model,), {"Meta": Doc.Meta, "id": NumberAttribute(hash_key=True),
                                          "title": UnicodeAttribute(null=True)})
    plain(id=5, title="before").save()
    with pytest.raises((VersionConflictError, ItemExistsError)):
        Doc(id=5, title="new").save()
    assert Doc.get(5, consistent_read=True).title == "before"


def test_history_float_and_int_number_keys_share_history(backend):
    """A numeric-key history model: id=7.0 then the item read back as 7: one history under one key."""
    history = history_of(backend)
    m = type("Meta", (), {"table_name": backend.table_name("acct"), "history_model": history, **backend.meta})
    Acct: Any = type("Acct", (HistoryMixin, Model), {
        "Meta": m, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(Acct)
    Acct(id=7.0, title="a").save()
    a = Acct.get(7, consistent_read=True)
    a.title = "b"
    a.save()
    Acct(id=8.50, title="x").save()
    b = Acct.get(8.5, consistent_read=True)
    b.save()
    assert sorted({h.item for h in history.scan(consistent_read=True)}) == ["7", "8.5"]


def test_history_auto_id_collision_is_item_exists(backend):
    """History + auto ID, the counter behind stored items: ItemExistsError, not a version conflict."""
    Doc, _ = _auto_doc(backend, autoinc_gapless=False)
    Doc(id=1, title="explicit").save()
    Doc(id=2, title="explicit").save()
    with pytest.raises(ItemExistsError):
        Doc(title="new").save()
    with pytest.raises(ItemExistsError):
        Doc(title="new").save(merge=lambda mine, theirs: None)
    assert Doc.get(1, consistent_read=True).title == "explicit"


# -- 21: increment by a non-integer ------------------------------------------------------------


@pytest.mark.modes("fast")
@pytest.mark.parametrize("by", [1.5, 2.0, True, "1"])
def test_next_id_increment_refuses_every_non_int(backend, by):
    """NextId.increment(by=...) refuses floats (even 2.0), bools and strings, writing nothing."""
    counter = backend.counter()
    with pytest.raises(CounterValueError):
        counter.increment("hits", by=by)
    assert counter.increment("hits") == 1


# -- 22: setval drops the block of a model with Meta.region ----------------------------------------


@pytest.mark.modes("block")
def test_restart_drops_the_block_of_a_model_with_a_region(make_model):
    """Block mode with Meta.region: restart() through the model's counter drops this process's block."""
    Item = make_model("Item", autoinc_block=10, region="us-east-1")
    Item().save()
    opts = Item.autoinc_options()
    opts.counter.restart(opts.key, opts.sequence, 50)
    item = Item()
    item.save()
    assert item.id == 50


@pytest.mark.modes("block")
@pytest.mark.backends("moto")  # the plain NextId reaches the default endpoint, which only moto serves here
def test_plain_next_id_setval_drops_the_block_of_a_model_with_a_region(make_model):
    """Block mode with Meta.region: plain NextId.setval drops the model's block."""
    Item = make_model("Item", autoinc_block=10, region="us-east-1")
    Item().save()
    NextId.setval(Item.autoinc_options().key, 40)
    item = Item()
    item.save()
    assert item.id == 41


# -- str IDs ------------------------------------------------------------------------------------


@pytest.mark.modes("fast", "gapless")
def test_str_id_save_all_explicit_equal_to_new_is_refused(make_model):
    """A str ID (autoinc_format): an explicit ID equal to the one a new item gets is refused in save_all."""
    Item = make_model("Item", sku=UnicodeAttribute(hash_key=True), autoinc_attribute="sku",
                      autoinc_format="S-{value:04d}", name=UnicodeAttribute(null=True))
    explicit, new = Item("S-0001", name="explicit"), Item(name="new")
    with pytest.raises(ItemExistsError):
        Item.save_all([explicit, new])
    assert [i.sku for i in Item.scan(consistent_read=True)] == []


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


_ = (BulkSaveError, ConditionFailedError, SequenceOptions)


def _plain_threads(saves: List[Any]) -> dict:
    """Run ``saves`` in threads at once; their errors by index."""
    import threading

    errors: dict = {}

    def run(i: int) -> None:
        try:
            saves[i]()
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(saves))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


# -- 1, 4, 14: group commit (threads of one process) -------------------------------------------------


def _in_threads(saves: List[Any], waiting: int) -> dict:
    from tests.test_engine_defects import in_threads
    from tests.test_fairness import HoldFirstTransaction

    return in_threads(HoldFirstTransaction(waiting), saves)


@pytest.mark.modes("gapless")
def test_group_commit_at_the_bound_with_cycle_wraps(make_model):
    """Gapless with autoinc_cycle, max 10, counter at 8, three threads: IDs 9, 10 and the minimum 1, all stored."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=10, autoinc_cycle=True,
                      name=UnicodeAttribute())
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 8)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = _in_threads([i.save for i in items], 2)
    assert errors == {}
    assert sorted(i.id for i in items) == [1, 9, 10]
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == sorted((i.id, i.name) for i in items)


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("gapless")
def test_group_commit_at_the_bound_all_exhausted_keep_no_id(make_model):
    """Gapless, counter at the maximum, three threads: each gets SequenceExhaustedError, none keeps an ID."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=10, name=UnicodeAttribute())
    Item(id=10, name="last").save()
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 10)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = _plain_threads([i.save for i in items])
    assert sorted(errors) == [0, 1, 2]
    assert all(isinstance(e, SequenceExhaustedError) for e in errors.values())
    assert [i.id for i in items] == [None] * 3
    assert [(i.id, i.name) for i in Item.scan(consistent_read=True)] == [(10, "last")]


@pytest.mark.modes("gapless")
def test_group_commit_item_too_large_in_the_leader_fails_alone(make_model):
    """The held leader's item too large: it fails alone, the queued threads' items are stored."""
    from pynamodb_autoinc.exceptions import ItemWriteError

    Item = make_model("Item", autoinc_gapless=True, body=UnicodeAttribute(null=True))
    items = [Item(body="x" * 410_000), Item(body="a"), Item(body="b")]
    errors = _in_threads([i.save for i in items], 2)
    assert list(errors) == [0] and isinstance(errors[0], ItemWriteError)
    assert items[0].id is None
    assert sorted(i.id for i in items[1:]) == [1, 2] and ids(Item) == [1, 2]


# -- 7: reset_counters with a standing ticket ------------------------------------------------------


@pytest.mark.modes("gapless")
@pytest.mark.parametrize("timeout", [3, None])
def test_gapless_save_after_reset_counters_with_threads(make_model, timeout):
    """After gapless saves from threads (places in the queue) and testing.reset_counters(), a save gets 1."""
    import threading

    from pynamodb_autoinc.testing import reset_counters

    Item = make_model("Item", autoinc_gapless=True, autoinc_timeout=timeout)

    def work() -> None:
        for _ in range(3):
            Item().save()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert ids(Item) == list(range(1, 13))
    for item in Item.scan():
        item.delete()
    reset_counters(Item)
    item = Item()
    done = threading.Event()
    errors: List[BaseException] = []

    def save() -> None:
        try:
            item.save()
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)
        done.set()

    threading.Thread(target=save, daemon=True).start()
    assert done.wait(20), "the save after reset_counters() did not finish"
    assert errors == [] and item.id == 1


@pytest.mark.modes("gapless")
def test_gapless_save_after_the_counter_item_vanished(make_model):
    """After threads' gapless saves, the counter item deleted by another process (no reset in this one): the
    next save finishes (an ID past the stored ones, or a clear error), it does not spin to a ContentionError."""
    import threading

    from pynamodb_autoinc.exceptions import ContentionError

    Item = make_model("Item", autoinc_gapless=True, autoinc_timeout=5)

    def work() -> None:
        for _ in range(3):
            Item().save()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    opts = Item.autoinc_options()
    hash_key, range_key = opts.counter._item_key(opts.key)
    opts.counter._get_connection().delete_item(hash_key, range_key=range_key)
    for item in Item.scan():
        item.delete()
    item = Item()
    try:
        item.save()
    except ContentionError as exc:
        pytest.fail(f"spun until the timeout: {exc}")
    except AutoIncrementError:
        return
    assert item.id == 1


# -- 26: HistoryMixin on an MRSC global table ---------------------------------------------------------

MRSC = {"TableStatus": "ACTIVE", "GlobalTableVersion": "2019.11.21", "MultiRegionConsistency": "STRONG",
        "Replicas": [{"RegionName": "us-east-2", "ReplicaStatus": "ACTIVE"},
                     {"RegionName": "us-west-2", "ReplicaStatus": "ACTIVE"}]}


def test_history_explicit_id_on_strong_consistency_is_refused(backend, monkeypatch):
    """An auto-ID history model on MRSC: an explicit-ID save (still a transaction) is refused too."""
    from pynamodb_autoinc import regions
    from pynamodb_autoinc.exceptions import GlobalTableError

    Doc, _ = _auto_doc(backend, autoinc_gapless=False)
    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(MRSC, TableName=table))
    with pytest.raises(GlobalTableError):
        Doc(id=5).save()
    assert Doc.count() == 0


# -- 17, 18 with a range key ------------------------------------------------------------------------


def _ranged_page(backend: Any, range_attr: Any) -> Any:
    history = history_of(backend)
    m = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history, **backend.meta})
    Page: Any = type("Page", (HistoryMixin, Model), {
        "Meta": m, "site": UnicodeAttribute(hash_key=True), "n": range_attr,
        "title": UnicodeAttribute(null=True), "revision": VersionAttribute()})
    backend.create(Page)
    return Page, history


def test_history_new_instance_does_not_overwrite_an_unversioned_ranged_item(backend):
    """With a range key, a new instance over an item stored without a version is refused; the item stays."""
    Page, _ = _ranged_page(backend, NumberAttribute(range_key=True))
    plain: Any = type("Plain", (Model,), {"Meta": Page.Meta, "site": UnicodeAttribute(hash_key=True),
                                          "n": NumberAttribute(range_key=True), "title": UnicodeAttribute(null=True)})
    plain("s", 1, title="before").save()
    plain("s", 2, title="other").save()
    with pytest.raises((VersionConflictError, ItemExistsError)):
        Page("s", 1, title="new").save()
    assert Page.get("s", 1, consistent_read=True).title == "before"
    Page("s", 3, title="fresh").save()  # a key not stored is saved
    assert Page.get("s", 3, consistent_read=True).revision == 1


def test_history_float_and_int_range_keys_share_history(backend):
    """A numeric range key: (s, 7.0) then the item read back as (s, 7): one history key."""
    Page, history = _ranged_page(backend, NumberAttribute(range_key=True))
    Page("s", 7.0, title="a").save()
    p = Page.get("s", 7, consistent_read=True)
    p.title = "b"
    p.save()
    assert len({h.item for h in history.scan(consistent_read=True)}) == 1


# -- 23-25: region-homed counters ------------------------------------------------------------------

REGIONS = ("us-east-1", "eu-west-1", "ap-south-1")


def _in_region(make_model: Any, backend: Any, region: str, table: str, **options: Any) -> Any:
    model = make_model("User", create=False, region=region, table_name=table, **options)
    backend.counter(model=model)
    backend.create(model)
    return model


@pytest.mark.modes("fast")
def test_api_setval_refuses_a_value_off_the_region_subsequence(make_model, backend):
    """NextId.setval/restart of a region counter to another region's value is refused (the API, not only the
    CLI), naming a value on the subsequence; a value on it is taken."""
    from pynamodb_autoinc.exceptions import OutOfBoundsError

    table = backend.table_name("user")
    User = _in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    User().save()  # 1
    counter, key = User.autoinc_options().counter, f"{table}@us-east-1"
    with pytest.raises(OutOfBoundsError, match="off the subsequence of region 'us-east-1'.*such as 7 \\(or 5\\)"):
        counter.setval(key, 6)
    with pytest.raises(OutOfBoundsError, match="off the subsequence"):
        counter.setval(key, 4, is_called=False)
    with pytest.raises(OutOfBoundsError, match="off the subsequence"):
        counter.restart(key, counter.stored_options(key), 8)
    assert counter.currval(key) == 1
    counter.setval(key, 5)
    user = User()
    user.save()
    assert user.id == 7


@pytest.mark.modes("fast")
def test_cli_set_refuses_off_subsequence_with_a_custom_start_and_step(make_model, backend, monkeypatch, capsys):
    """start 100, step 5, two regions: us-east-1 numbers 100, 110, ...; set 105 (eu-west-1's) is refused."""
    from tests.test_global_tables import counter_of, run_cli

    table = backend.table_name("user")
    User = _in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2], autoinc_start=100,
                      autoinc_min=100, autoinc_step=5)
    user = User()
    user.save()
    assert user.id == 100
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "105", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 1, err
    assert counter_of(User, f"{table}@us-east-1")[0] == 100
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "120", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 0, err


@pytest.mark.modes("gapless")
def test_cli_check_healthy_region_table_with_custom_start_and_step(make_model, backend, monkeypatch, capsys):
    """check of a healthy table, start 100 step 5, two regions: no holes, exit 0."""
    import json

    from tests.test_global_tables import run_cli

    table = backend.table_name("user")
    User = _in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2], autoinc_start=100,
                      autoinc_min=100, autoinc_step=5)
    for _ in range(3):
        User().save()  # 100, 110, 120
    for i in (105, 115):
        User(id=i).save()  # eu-west-1's
    code, out, err = run_cli(monkeypatch, capsys, User, "check", "--model", "MODEL", "--json")
    assert code == 0, err
    rows = {r["key"]: (r["items"], r["holes"], r["off_sequence"]) for r in json.loads(out)}
    assert rows == {f"{table}@us-east-1": (3, 0, 0), f"{table}@eu-west-1": (2, 0, 0)}


@pytest.mark.modes("fast", "gapless")
def test_an_appended_region_is_refused_in_a_transaction(make_model, backend, monkeypatch, mode):
    """TransactWrite.save() of a new item in a region appended before seed: SequenceMismatchError, nothing spent."""
    from pynamodb_autoinc import regions
    from pynamodb_autoinc.exceptions import SequenceMismatchError
    from tests.test_global_tables import SINGLE, counter_of, replicate_counters

    monkeypatch.setattr(regions, "describe_table", lambda connection, table: dict(SINGLE, TableName=table))
    table = backend.table_name("user")
    Two = _in_region(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2])
    for _ in range(3):
        Two().save()
    Three = _in_region(make_model, backend, "ap-south-1", table, autoinc_regions=REGIONS)
    replicate_counters(Two, Three)
    user = Three()
    with pytest.raises(SequenceMismatchError), TransactWrite(connection=Three._get_connection().connection) as tx:
        tx.save(user)
    assert user.id is None
    assert counter_of(Three, f"{table}@ap-south-1") == (None, None)


# -- configuration errors at class creation ------------------------------------------------------------


def test_counter_mixin_after_auto_increment_raises_configuration_error_itself():
    """CounterMixin after AutoIncrementMixin raises ConfigurationError when the class is created (not a
    RuntimeError wrapping it, as an error from __set_name__ is before Python 3.12)."""
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    meta = type("Meta", (), {"table_name": "t"})
    with pytest.raises(ConfigurationError, match="put CounterMixin before AutoIncrementMixin"):
        type("Bad", (AutoIncrementMixin, CounterMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "n": CounterAttribute()})


class _Stamped:
    """A user's mixin overriding save() (and delete())."""

    def save(self, *args: Any, **kwargs: Any) -> Any:
        return super().save(*args, **kwargs)  # type: ignore[misc]

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return super().delete(*args, **kwargs)  # type: ignore[misc]


def test_mixin_overriding_save_after_history_is_refused():
    """class Doc(HistoryMixin, Stamped, Model): Stamped.save would never run (HistoryMixin writes its own
    transaction), so the class is refused when it is created, naming the order that works."""
    hist_meta = type("Meta", (), {"table_name": "hist"})
    history = type("Hist", (Model,), {"Meta": hist_meta, "item": UnicodeAttribute(hash_key=True),
                                      "version": NumberAttribute(range_key=True),
                                      "deleted": BooleanAttribute(default=False)})
    meta = type("Meta", (), {"table_name": "doc", "history_model": history})
    with pytest.raises(ConfigurationError, match=r"class Doc\(_Stamped, HistoryMixin, Model\)"):
        type("Doc", (HistoryMixin, _Stamped, Model), {"Meta": meta, "url": UnicodeAttribute(hash_key=True),
                                                      "revision": VersionAttribute()})
    type("Doc", (_Stamped, HistoryMixin, Model), {"Meta": meta, "url": UnicodeAttribute(hash_key=True),
                                                  "revision": VersionAttribute()})


def test_mixin_overriding_save_after_counter_mixin_is_refused():
    """class Page(CounterMixin, Stamped, Model): Stamped.save would be skipped (CounterMixin writes an
    UpdateItem itself), so the class is refused when it is created."""
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    meta = type("Meta", (), {"table_name": "page"})
    with pytest.raises(ConfigurationError, match=r"class Page\(_Stamped, CounterMixin, Model\)"):
        type("Page", (CounterMixin, _Stamped, Model), {"Meta": meta, "url": UnicodeAttribute(hash_key=True),
                                                       "n": CounterAttribute()})
    type("Page", (_Stamped, CounterMixin, Model), {"Meta": meta, "url": UnicodeAttribute(hash_key=True),
                                                   "n": CounterAttribute()})


def test_counter_mixin_before_auto_increment_is_still_accepted():
    """class Order(CounterMixin, AutoIncrementMixin, Model), the documented order, is accepted."""
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    meta = type("Meta", (), {"table_name": "orders"})
    type("Order", (CounterMixin, AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                                              "n": CounterAttribute()})


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("fast", "block")
def test_threads_at_the_bound_take_what_is_left_and_overwrite_nothing(make_model, mode):
    """Fast and block modes, max 10, counter at 8, three threads: 9 and 10 are stored, the third gets
    SequenceExhaustedError and keeps no ID; saving it again is refused too."""
    Item = make_model("Item", autoinc_max=10, name=UnicodeAttribute())
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 8)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = _plain_threads([i.save for i in items])
    assert [type(e) for e in errors.values()] == [SequenceExhaustedError]
    failed, = errors
    assert items[failed].id is None
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == \
        sorted((i.id, i.name) for i in items if i.id is not None)
    assert ids(Item) == [9, 10]
    with pytest.raises(SequenceExhaustedError):
        items[failed].save()
    assert ids(Item) == [9, 10]


@pytest.mark.modes("query")
def test_query_strategy_counting_down_ignores_keys_outside_its_bounds(make_model):
    """Query strategy counting down from 100 (min 10): keys stored above the maximum or below the minimum are
    not the sequence's; new items get 100, then 99."""
    Item = make_model("Item", autoinc_step=-1, autoinc_start=100, autoinc_max=100, autoinc_min=10)
    Item("p", 500).save()
    Item("p", 3).save()
    first, second = Item(), Item()
    first.save()
    second.save()
    assert (first.id, second.id) == (100, 99)


@pytest.mark.modes("gapless")
def test_gapless_save_all_across_transactions_past_the_bound_says_how_many(make_model):
    """Gapless save_all() of 150 with 120 left: the first transaction (99) lands, the rest is refused naming how
    many were asked and how many are left; every saved instance holds a stored ID, the others none."""
    Item = make_model("Item", autoinc_gapless=True, autoinc_max=120)
    items = [Item() for _ in range(150)]
    with pytest.raises(SequenceExhaustedError, match="asked for 51 .*only 21 are left") as info:
        Item.save_all(items)
    assert isinstance(info.value, BulkSaveError)
    saved = sorted(getattr(i, "id") for i in info.value.saved)  # noqa: B009 - typed as a plain Model
    assert saved == ids(Item) == list(range(1, 100))
    assert all(getattr(i, "id") is None for i in info.value.unsaved)  # noqa: B009 - typed as a plain Model
    assert len(info.value.unsaved) == 51


# -- 2, 8 through CounterMixin.save_all ------------------------------------------------------------------


def _order_model(make_model: Any) -> Any:
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    return make_model("Order", bases=(CounterMixin,), name=UnicodeAttribute(null=True), n=CounterAttribute())


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_explicit_equal_to_new_overwrites_nothing(make_model):
    """CounterMixin: save_all([Order(id=1), Order()]) on a fresh counter does not let the explicit item's write
    replace the new item: ItemExistsError naming the explicit one, the new item stored as it was given."""
    Order = _order_model(make_model)
    explicit, new = Order(id=1, name="explicit"), Order(name="new")
    with pytest.raises(ItemExistsError, match="explicit Order with id=1") as info:
        Order.save_all([explicit, new])
    assert isinstance(info.value, BulkSaveError) and info.value.saved == [new]
    assert [(o.id, o.name) for o in Order.scan(consistent_read=True)] == [(1, "new")]


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_refuses_two_explicit_items_with_one_key(make_model):
    """CounterMixin: two explicit items with one key in a save_all() are refused before anything is sent."""
    Order = _order_model(make_model)
    with pytest.raises(ItemExistsError, match="have the same key"):
        Order.save_all([Order(id=5, name="a"), Order(name="new"), Order(id=5, name="b")])
    assert ids(Order) == [] and currval(Order) is None


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_refuses_a_float_id_before_anything_is_sent(make_model):
    """CounterMixin: save_all() with an explicit 2.5 raises InvalidIdError before any item is saved."""
    Order = _order_model(make_model)
    with pytest.raises(InvalidIdError):
        Order.save_all([Order(name="new"), Order(id=2.5)])
    assert ids(Order) == [] and currval(Order) is None


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_saves_explicit_and_new_items_apart(make_model):
    """CounterMixin: save_all() of a new item and an explicit ID apart from it saves both; counters start."""
    Order = _order_model(make_model)
    Order.save_all([Order(id=7, name="explicit"), Order(name="new")])
    assert sorted((o.id, o.name, o.n) for o in Order.scan(consistent_read=True)) == [(1, "new", 0),
                                                                                    (7, "explicit", 0)]


# -- HistoryMixin.save_all with explicit and new items --------------------------------------------------


@pytest.mark.parametrize("order", ["explicit-first", "new-first"])
def test_history_save_all_explicit_and_new_with_one_key_overwrite_nothing(backend, order):
    """HistoryMixin + auto IDs: save_all() of an explicit id=1 and a new item on a fresh counter stores one item
    under 1 with one version 1; the other is refused (ItemExistsError for the new one, VersionConflictError for
    the explicit new instance over the stored item), as a BulkSaveError."""
    Doc, history = _auto_doc(backend, autoinc_gapless=False)
    explicit, new = Doc(id=1, title="explicit"), Doc(title="new")
    items = [explicit, new] if order == "explicit-first" else [new, explicit]
    with pytest.raises(BulkSaveError) as info:
        Doc.save_all(items)
    if order == "explicit-first":
        assert isinstance(info.value, ItemExistsError)
    assert info.value.saved == items[:1] and info.value.unsaved == items[1:]
    stored = [(d.id, d.title, d.revision) for d in Doc.scan(consistent_read=True)]
    assert stored == [(1, items[0].title, 1)]
    assert [(h.item, h.version, h.title) for h in history.scan(consistent_read=True)] == [("1", 1, items[0].title)]


def test_history_save_all_refuses_a_float_id_before_anything_is_saved(backend):
    """HistoryMixin + auto IDs: save_all() with an explicit 2.5 raises InvalidIdError before any item is saved."""
    Doc, history = _auto_doc(backend, autoinc_gapless=False)
    with pytest.raises(InvalidIdError):
        Doc.save_all([Doc(title="new"), Doc(id=2.5)])
    assert ids(Doc) == [] and currval(Doc) is None


# -- 6, 7: shared gapless counters, reset ----------------------------------------------------------


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("gapless")
def test_two_models_sharing_a_gapless_counter_from_threads_number_once(make_model):
    """Two gapless models with one counter key, saved from threads of one process: every value once, no gap."""
    A = make_model("A", autoinc_gapless=True, autoinc_key="shared")
    B = make_model("B", autoinc_gapless=True, autoinc_key="shared")

    def work(model: Any) -> Any:
        return lambda: [model().save() for _ in range(3)]

    errors = _plain_threads([work(A), work(B), work(A), work(B)])
    assert errors == {}
    assert sorted(ids(A) + ids(B)) == list(range(1, 13))


@pytest.mark.modes("fast", "block")
def test_save_after_reset_counters_starts_again(make_model):
    """After testing.reset_counters(model), fast and block modes start again at 1 (no block kept)."""
    from pynamodb_autoinc.testing import reset_counters

    Item = make_model("Item")
    for _ in range(2):
        Item().save()
    for item in Item.scan():
        item.delete()
    assert reset_counters(Item) == 1
    item = Item()
    item.save()
    assert item.id == 1
