"""save_all(): many new instances, one counter request per batch, never an overwrite."""

from __future__ import annotations

from typing import Any, List

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import AttributeNullError
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    CounterAttribute,
    CounterMixin,
    HistoryMixin,
    after_save,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    BulkSequenceExhaustedError,
    BulkWriteOutcomeUnknownError,
    InvalidIdError,
    ItemExistsError,
    SequenceExhaustedError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
)
from tests.helpers import auto_history_doc, auto_model, currval, doc_history, ids


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


def _order_model(make_model: Any) -> Any:
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    return make_model("Order", bases=(CounterMixin,), name=UnicodeAttribute(null=True), n=CounterAttribute())


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


@pytest.mark.modes("fast", "gapless")
def test_str_id_save_all_explicit_equal_to_new_is_refused(make_model):
    """A str ID (autoinc_format): an explicit ID equal to the one a new item gets is refused in save_all."""
    Item = make_model("Item", sku=UnicodeAttribute(hash_key=True), autoinc_attribute="sku",
                      autoinc_format="S-{value:04d}", name=UnicodeAttribute(null=True))
    explicit, new = Item("S-0001", name="explicit"), Item(name="new")
    with pytest.raises(ItemExistsError):
        Item.save_all([explicit, new])
    assert [i.sku for i in Item.scan(consistent_read=True)] == []


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


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_stopped_by_a_failed_update_says_which_were_saved(make_model):
    """CounterMixin: save_all() of a new item and a stored item read before another writer saved it (its version
    condition fails) raises BulkSaveError whose ``saved`` holds the new item, which landed, and ``unsaved`` the
    stale one, instead of PynamoDB's bare UpdateError, which hid that the new item was stored."""
    Order = make_model("Order", bases=(CounterMixin,), name=UnicodeAttribute(null=True), n=CounterAttribute(),
                       revision=VersionAttribute())
    first = Order(name="a")
    first.save()
    stale = Order.get(first.id, consistent_read=True)
    first.name = "b"
    first.save()
    new, stale.name = Order(name="new"), "c"
    with pytest.raises(BulkSaveError, match="1 of 2 saved; UpdateError") as info:
        Order.save_all([new, stale])
    assert info.value.saved == [new] and info.value.unsaved == [stale]
    assert sorted((o.id, o.name) for o in Order.scan(consistent_read=True)) == [(1, "b"), (2, "new")]


@pytest.mark.modes("fast", "gapless")
def test_counter_mixin_save_all_stopped_at_its_new_items_lists_the_explicit_ones_unsaved(make_model):
    """CounterMixin: save_all() whose new item takes the key of a stored item (a counter behind it) raises
    BulkSaveError; the explicit item of the call, never sent, is in ``unsaved`` with the new one."""
    Order = _order_model(make_model)
    Order(id=1, name="stored").save()
    new, explicit = Order(name="new"), Order(id=5, name="explicit")
    with pytest.raises(BulkSaveError, match="already exists") as info:
        Order.save_all([new, explicit])
    assert info.value.saved == [] and info.value.unsaved == [new, explicit]
    assert [(o.id, o.name) for o in Order.scan(consistent_read=True)] == [(1, "stored")]


def _scoped_model(make_model: Any, counted: bool, **meta: Any) -> Any:
    """An Order numbering ``seq`` (outside its key ``pk``) per ``group``; ``counted``: with CounterMixin."""
    extra: Any = {"bases": (CounterMixin,), "n": CounterAttribute()} if counted else {}
    return make_model("Order", pk=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                      group=UnicodeAttribute(null=True), autoinc_attribute="seq", autoinc_scope="group", **extra,
                      **meta)


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("counted", [False, True], ids=["plain", "counter-mixin"])
def test_save_all_refuses_a_tracked_explicit_id_without_its_scope_value_before_writing(make_model, counted):
    """With ``Meta.autoinc_track_explicit`` (and a period), save_all() of a new item, an explicit ID and an
    explicit ID whose scope value is None (no counter to track it on) raises UnassignedIdError naming the scope
    attribute before anything is written: nothing is stored and the new item keeps no ID. (CounterMixin stored
    the new item and the first explicit one, then raised the bare error, which did not say so.)"""
    Order = _scoped_model(make_model, counted, autoinc_track_explicit=True, autoinc_period="year")
    new, explicit, bad = Order(pk="a", group="g"), Order(pk="b", group="g", seq=7), Order(pk="c", seq=8)
    with pytest.raises(UnassignedIdError, match="Order.group is None, but seq is numbered per group"):
        Order.save_all([new, explicit, bad])
    assert new.seq is None
    assert list(Order.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("counted", [False, True], ids=["plain", "counter-mixin"])
def test_save_all_refuses_a_new_item_without_its_scope_value_in_every_mode(make_model, counted):
    """save_all() of two new items, the second without its scope value, raises UnassignedIdError naming the
    scope attribute, as save() does, in every mode (fast and block mode raised a BulkSaveError), before a value
    is claimed or anything is written."""
    Order = _scoped_model(make_model, counted)
    first, bad = Order(pk="a", group="g"), Order(pk="b")
    with pytest.raises(UnassignedIdError, match="Order.group is None, but seq is numbered per group"):
        Order.save_all([first, bad])
    assert (first.seq, bad.seq) == (None, None)
    assert list(Order.scan(consistent_read=True)) == []
    opts = Order.autoinc_options()
    assert opts.counter.currval(opts.counter_key(first, None)) is None


@pytest.mark.modes("fast", "block")  # HistoryMixin refuses gapless mode
def test_history_save_all_stopped_by_an_item_without_its_scope_value_says_which_were_saved(make_model, backend):
    """HistoryMixin.save_all() (one save per instance): a new item without its scope value, after one that was
    saved, raises BulkSaveError whose ``saved`` holds the first instance and ``unsaved`` the other, which keeps
    no ID."""
    Doc = make_model("Doc", bases=(HistoryMixin,), pk=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                     group=UnicodeAttribute(null=True), revision=VersionAttribute(), autoinc_attribute="seq",
                     autoinc_scope="group", history_model=doc_history(backend))
    first, bad = Doc(pk="a", group="g"), Doc(pk="b")
    with pytest.raises(BulkSaveError, match="1 of 2 saved; Doc.group is None") as info:
        Doc.save_all([first, bad])
    assert info.value.saved == [first] and info.value.unsaved == [bad]
    assert (first.seq, bad.seq) == (1, None)
    assert [(d.pk, d.seq) for d in Doc.scan(consistent_read=True)] == [("a", 1)]


@pytest.mark.parametrize("order", ["explicit-first", "new-first"])
def test_history_save_all_explicit_and_new_with_one_key_overwrite_nothing(backend, order):
    """HistoryMixin + auto IDs: save_all() of an explicit id=1 and a new item on a fresh counter stores one item
    under 1 with one version 1; the other is refused (ItemExistsError for the new one, VersionConflictError for
    the explicit new instance over the stored item), as a BulkSaveError."""
    Doc, history = auto_history_doc(backend, autoinc_gapless=False)
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
    Doc, history = auto_history_doc(backend, autoinc_gapless=False)
    with pytest.raises(InvalidIdError):
        Doc.save_all([Doc(title="new"), Doc(id=2.5)])
    assert ids(Doc) == [] and currval(Doc) is None


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
def test_history_save_all_stopped_by_a_pynamodb_error_says_which_were_saved(backend):
    """``HistoryMixin.save_all()`` (one save per instance) stopped at its second instance by PynamoDB's
    ``AttributeNullError`` raises ``BulkSaveError`` whose ``saved`` holds the first instance, which landed, and
    ``unsaved`` the rest, instead of the bare error, which hid that the first was stored."""
    Doc = auto_model(backend, "Doc", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(),
                                  "revision": VersionAttribute()},
                 bases=(HistoryMixin, AutoIncrementMixin), history_model=doc_history(backend), autoinc_gapless=False)
    first, broken, last = Doc(name="a"), Doc(), Doc(name="c")
    with pytest.raises(BulkSaveError, match="1 of 3 saved; AttributeNullError") as caught:
        Doc.save_all([first, broken, last])
    assert caught.value.saved == [first] and caught.value.unsaved == [broken, last]
    assert first.id == 1 and broken.id is None and last.id is None


def _doc_history(backend: Any) -> Any:
    meta = type("Meta", (), {"table_name": backend.table_name("doc-history"), **backend.meta})
    model = type("DocVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


@pytest.mark.modes("fast", "block")
@pytest.mark.parametrize("extension", ["history", "counters"])
def test_save_all_of_an_extension_refuses_another_models_instances(make_model, backend, mode, extension):
    """``save_all()`` of a HistoryMixin or CounterMixin model refuses an instance of another model before
    anything is written, as ``AutoIncrementMixin.save_all()`` does, instead of saving it through that
    instance's own ``save()`` (the call named one model and wrote another)."""
    if extension == "history":
        Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=_doc_history(backend),
                         title=UnicodeAttribute(null=True))
    else:
        Doc = make_model("Doc", bases=(CounterMixin,), views=CounterAttribute(), title=UnicodeAttribute(null=True))
    Other = make_model("Other")
    with pytest.raises(TypeError, match="save_all\\(\\) of Doc was given a Other"):
        Doc.save_all([Doc(title="mine"), Other(id=5)])
    assert list(Other.scan(consistent_read=True)) == []
    assert list(Doc.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_an_explicit_id_equal_to_a_new_one(make_model, mode):
    """save_all() of an explicit id=1 and a new item on a fresh counter refuses the explicit one; nothing is
    overwritten or ids, and gapless mode spends nothing."""
    Item = make_model("Item", name=UnicodeAttribute())
    explicit, new = Item(id=1, name="explicit"), Item(name="new")
    with pytest.raises(ItemExistsError, match="explicit Item with id=1") as info:
        Item.save_all([explicit, new])
    assert isinstance(info.value, BulkSaveError) and info.value.saved == []
    assert new.id is None and ids(Item) == []
    assert currval(Item) == (1 if mode == "fast" else None)


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_two_explicit_items_with_one_key(make_model):
    """Two explicit items with the same key in one save_all() are refused before anything is sent."""
    Item = make_model("Item", name=UnicodeAttribute())
    with pytest.raises(BulkSaveError, match="id=5 and Item with id=5 have the same key"):
        Item.save_all([Item(id=5, name="a"), Item(name="new"), Item(id=5, name="b")])
    assert ids(Item) == [] and currval(Item) is None


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_the_same_instance_twice_before_spending(make_model):
    """save_all([a, b, a]) is refused before any value is spent."""
    Item = make_model("Item")
    a, b = Item(), Item()
    with pytest.raises(BulkSaveError, match="given twice"):
        Item.save_all([a, b, a])
    assert [a.id, b.id] == [None, None]
    assert ids(Item) == [] and currval(Item) is None


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
    assert ids(Item) == [] and currval(Item) is None


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
    """save_all() of 101 new items: the first transaction gets no answer, nor do the probes resending it. The error
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
    tokens = {token for operation, token in faults.sent if operation == "TransactWriteItems"}
    assert len(tokens) == 1  # the first transaction, its retry and its probes (one token); the next never sent


# -- DynamoDB's limits: 100 items and 4 MB per transaction, 400 KB per item, 2,048 / 1,024 bytes per key value --

def _sent(requests: List[Any]) -> List[Any]:
    """The requests that read or write items (not the tables' descriptions)."""
    return [op for op, _ in requests if op != "DescribeTable"]


#: a value that makes an item of about 300 KB: fifteen of them pass 4 MB, one transaction's limit
BIG = "x" * 300_000


@pytest.mark.modes("fast", "gapless")
def test_save_all_splits_transactions_at_4_mb(make_model, requests):
    """Fifteen 300 KB items (4.5 MB) are sent in two transactions, each under 4 MB, and all are stored."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    users = [User(name=BIG) for _ in range(15)]
    requests.clear()
    User.save_all(users)
    assert [op for op, _ in requests].count("TransactWriteItems") == 2
    assert [u.id for u in users] == list(range(1, 16))
    assert sorted(u.id for u in User.scan(consistent_read=True)) == list(range(1, 16))


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "gapless")
def test_save_all_past_4_mb_is_stored_by_dynamodb_local(make_model):
    """On DynamoDB Local, which enforces 4 MB per transaction, fifteen 300 KB items are all stored."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    users = [User(name=BIG) for _ in range(15)]
    User.save_all(users)
    assert sorted(u.id for u in User.scan(consistent_read=True)) == list(range(1, 16))


@pytest.mark.modes("fast", "gapless")
def test_save_all_refuses_an_item_past_400_kb_before_claiming(make_model, requests):
    """An item past 400 KB is refused by name, limit and size before any item is read or written: no value spent."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    users = [User(name="a"), User(name="x" * 410_000), User(name="c")]
    requests.clear()
    with pytest.raises(BulkSaveError, match=r"0 of 3 saved; User with id=None \(item 2 of 3\) is 410,\d{3} bytes, "
                                            r"past DynamoDB's limit on an item, attribute names and values "
                                            r"\(409,600 bytes\)") as info:
        User.save_all(users)
    assert info.value.saved == [] and info.value.unsaved == users
    assert _sent(requests) == [] and [u.id for u in users] == [None, None, None]
    assert currval(User) is None and ids(User) == []


@pytest.mark.modes("fast")
def test_save_all_refuses_a_partition_key_value_past_2048_bytes(make_model, requests):
    """A partition key value past 2,048 bytes is refused, naming that limit, before any request."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(null=True),
                       autoinc_attribute="number")
    requests.clear()
    with pytest.raises(BulkSaveError, match=r"the partition key value of Issue with .*\(item 1 of 1\) is 2,049 "
                                            r"bytes, past DynamoDB's limit on a partition key value \(2,048 bytes\)"):
        Issue.save_all([Issue(project="p" * 2049)])
    assert _sent(requests) == []


@pytest.mark.modes("fast")
def test_save_all_refuses_a_sort_key_value_past_1024_bytes(make_model, requests):
    """A sort key value past 1,024 bytes is refused, naming that limit, before any request."""
    Page = make_model("Page", slug=UnicodeAttribute(range_key=True))
    requests.clear()
    with pytest.raises(BulkSaveError, match=r"the sort key value of Page with .*\(item 2 of 2\) is 1,025 bytes, "
                                            r"past DynamoDB's limit on a sort key value \(1,024 bytes\)"):
        Page.save_all([Page(slug="a"), Page(slug="é" * 512 + "b")])
    assert _sent(requests) == [] and currval(Page) is None


@pytest.mark.modes("fast")
def test_stored_counter_mixin_item_in_save_all_sends_bulk_signals(make_model):
    """save_all() of a stored CounterMixin item (updated on its own) sends before_save and after_save with
    operation "bulk", as for every other item of the call."""
    Order = _order_model(make_model)
    stored = Order(name="a")
    stored.save()
    stored.name = "b"
    events: List[Any] = []
    with before_save.connected_to(lambda s, **kw: events.append(("before", kw["operation"])), sender=Order), \
            after_save.connected_to(lambda s, **kw: events.append(("after", kw["operation"])), sender=Order):
        Order.save_all([stored])
    assert events == [("before", "bulk"), ("after", "bulk")]


@pytest.mark.modes()
def test_history_items_in_save_all_send_bulk_signals(backend):
    """save_all() of HistoryMixin items (each saved on its own), new and stored, sends before_save and after_save
    with operation "bulk", and the new one still gets its ID."""
    Doc, _ = auto_history_doc(backend, autoinc_gapless=False)
    stored = Doc(title="a")
    stored.save()
    stored.title, new = "b", Doc(title="new")
    events: List[Any] = []
    with before_save.connected_to(lambda s, **kw: events.append(("before", kw["operation"])), sender=Doc), \
            after_save.connected_to(lambda s, **kw: events.append(("after", kw["operation"])), sender=Doc):
        Doc.save_all([stored, new])
    assert events == [("before", "bulk"), ("after", "bulk")] * 2
    assert new.id == 2 and sorted(d.title for d in Doc.scan(consistent_read=True)) == ["b", "new"]
