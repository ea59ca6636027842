"""CounterAttribute: a number raised by every save() and update(), with no read (on moto and DynamoDB Local)."""

from __future__ import annotations

from typing import Any, List

import pytest
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import AttributeNullError, UpdateError
from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    CounterAttribute,
    CounterMixin,
    TransactWrite,
    after_save,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    BulkSaveError,
    ConfigurationError,
    CounterValueError,
    UnassignedIdError,
)
from pynamodb_autoinc.iam import required_actions
from tests.helpers import auto_model, stored_names
from tests.test_faults import Faults


def plain_model(backend: Any, **attrs: Any) -> Any:
    """A plain ``CounterMixin, Model`` keyed by a string, its table created."""
    meta = type("Meta", (), {"table_name": backend.table_name("page"), **backend.meta})
    model = type("Page", (CounterMixin, Model), {
        "Meta": meta, "url": UnicodeAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "views": CounterAttribute(), **attrs})
    backend.create(model)
    return model


def stored(model: Any, key: Any) -> Any:
    return model.get(key, consistent_read=True)


def test_new_item_starts_at_start(backend):
    """The first save() of a new item stores the counter's start value."""
    Page = plain_model(backend, stock=CounterAttribute(start=100, delta=-1))
    page = Page("a")
    page.save()
    assert (page.views, page.stock) == (0, 100)
    assert (stored(Page, "a").views, stored(Page, "a").stock) == (0, 100)


def test_save_of_existing_item_raises_by_delta(backend):
    """Each save() of an existing item raises the counter by its delta, and the instance holds the stored value."""
    Page = plain_model(backend, stock=CounterAttribute(start=100, delta=-1))
    page = Page("a")
    page.save()
    page.save()
    page.save()
    assert (page.views, page.stock) == (2, 98)
    assert (stored(Page, "a").views, stored(Page, "a").stock) == (2, 98)


def test_save_does_not_trust_a_stale_instance(backend):
    """A save() from an instance holding an old counter value raises the stored value, it does not write its own."""
    Page = plain_model(backend)
    first, second = Page("a"), Page("a")
    first.save()
    second.save()
    first.save()
    assert first.views == 2
    assert stored(Page, "a").views == 2


def test_save_sends_no_read(backend, requests):
    """save() of an existing item is one UpdateItem: no GetItem, no PutItem."""
    Page = plain_model(backend)
    Page("a").save()
    requests.clear()
    page = Page("a", title="t")
    page.save()
    assert [op for op, _ in requests] == ["UpdateItem"]


def test_save_writes_and_removes_other_attributes(backend):
    """save() sets the other attributes to the instance's values and removes those that are None."""
    Page = plain_model(backend)
    Page("a", title="old").save()
    page = stored(Page, "a")
    page.title = "new"
    page.save()
    assert stored(Page, "a").title == "new"
    page.title = None
    page.save()
    assert stored(Page, "a").title is None
    assert stored(Page, "a").views == 2


def test_update_raises_counter(backend):
    """update() of another attribute raises the counter too, and the instance reflects both."""
    Page = plain_model(backend)
    page = Page("a")
    page.save()
    page.update(actions=[Page.title.set("hello")])
    assert (page.title, page.views) == ("hello", 1)
    assert stored(Page, "a").views == 1


def test_update_naming_the_counter_wins(backend):
    """An update() whose actions set the counter itself is sent as given (the counter is not raised twice)."""
    Page = plain_model(backend)
    page = Page("a")
    page.save()
    page.update(actions=[Page.views.set(40)])
    assert page.views == 40
    assert stored(Page, "a").views == 40


def test_update_of_missing_item_starts_counter(backend):
    """update() creating an item (DynamoDB upserts) gives the new item its counter at start."""
    Page = plain_model(backend, stock=CounterAttribute(start=10, delta=5))
    page = Page("b")
    page.update(actions=[Page.title.set("x")])
    assert page.stock == 10
    assert stored(Page, "b").stock == 10


def test_condition_failure_leaves_counter(backend):
    """A save() whose condition fails raises UpdateError and leaves the stored counter alone."""
    Page = plain_model(backend)
    page = Page("a")
    page.save()
    with pytest.raises(UpdateError):
        page.save(condition=Page.title == "nope")
    assert stored(Page, "a").views == 0


def test_transact_update_raises_counter(backend):
    """TransactWrite.update() raises the counter as update() does."""
    Page = plain_model(backend)
    page = Page("a")
    page.save()
    with TransactWrite(connection=Page._get_connection().connection) as tx:
        tx.update(page, actions=[Page.title.set("t")])
    assert stored(Page, "a").views == 1


def test_with_version_attribute(backend):
    """With a VersionAttribute, save() is conditioned on the version: a stale instance is refused, counter unchanged."""
    Page = plain_model(backend, version=VersionAttribute())
    page = Page("a")
    page.save()
    stale = stored(Page, "a")
    page.save()
    assert (page.version, page.views) == (2, 1)
    with pytest.raises(UpdateError):
        stale.save()
    assert (stored(Page, "a").version, stored(Page, "a").views) == (2, 1)


@pytest.mark.modes("fast", "gapless")
def test_with_auto_increment(make_model):
    """With AutoIncrementMixin, a new item gets its ID and the start value; a later save raises the counter."""
    Order = make_model("Order", bases=(CounterMixin,), name=UnicodeAttribute(null=True),
                       edits=CounterAttribute(start=1))
    order = Order(name="x")
    order.save()
    assert (order.id, order.edits) == (1, 1)
    order.name = "y"
    order.save()
    assert order.edits == 2
    got = stored(Order, 1)
    assert (got.name, got.edits) == ("y", 2)


def test_save_of_a_new_auto_item_leaves_the_save_all_hook_alone(make_model, monkeypatch):
    """save() of a new CounterMixin auto-ID item puts its counters at start itself: _autoinc_alone, the hook
    save_all() calls for each item (which another mixin may extend), is not called."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute(start=1))
    hooked = []
    monkeypatch.setattr(Order, "_autoinc_alone", classmethod(lambda cls, item: hooked.append(item)))
    order = Order()
    order.save()
    assert (order.id, order.edits) == (1, 1)
    assert hooked == []


@pytest.mark.modes("fast")
def test_signals_on_update_path(make_model):
    """save() of an existing auto-increment item, sent as an UpdateItem, still sends before_save and after_save."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute())
    order = Order()
    order.save()
    seen = []

    def before(sender: Any, instance: Any, is_new: bool, **_: Any) -> None:
        seen.append(("before", is_new, instance.edits))

    def after(sender: Any, instance: Any, is_new: bool, **_: Any) -> None:
        seen.append(("after", is_new, instance.edits))

    with before_save.connected_to(before, sender=Order), after_save.connected_to(after, sender=Order):
        order.save()
    assert seen == [("before", False, 0), ("after", False, 1)]


@pytest.mark.modes("fast")
def test_save_all_with_auto_increment(make_model):
    """save_all(): new instances start at start, existing ones are raised by delta."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute())
    old = Order()
    old.save()
    new = Order()
    Order.save_all([new, old])
    assert (new.edits, old.edits) == (0, 1)
    assert (stored(Order, new.id).edits, stored(Order, old.id).edits) == (0, 1)


def test_failed_new_auto_increment_save_restores_counter(backend):
    """A new auto-increment instance whose put is refused keeps its counter as it was (None)."""
    meta = type("Meta", (), {"table_name": backend.table_name("order"), **backend.meta})
    Order: Any = type("Order", (CounterMixin, AutoIncrementMixin, Model), {
        "Meta": meta, "id": NumberAttribute(hash_key=True), "n": CounterAttribute()})
    backend.counter(model=Order)
    backend.create(Order)
    order = Order()
    with pytest.raises(Exception):  # noqa: B017 - any refusal: the point is what the instance holds after
        order.save(condition=Order.n == 5)
    assert order.n is None


def test_model_without_mixin_is_refused():
    """A CounterAttribute on a model without CounterMixin is refused when the class is made, naming the fix."""
    with pytest.raises(ConfigurationError, match=r"class Bad\(CounterMixin"):
        type("Bad", (Model,), {"Meta": type("Meta", (), {"table_name": "t"}),
                               "k": UnicodeAttribute(hash_key=True), "n": CounterAttribute()})


def test_mixin_after_auto_increment_is_refused():
    """CounterMixin placed after AutoIncrementMixin is refused: a new item would miss its start value."""
    with pytest.raises(ConfigurationError, match="before AutoIncrementMixin"):
        type("Bad", (AutoIncrementMixin, CounterMixin, Model), {
            "Meta": type("Meta", (), {"table_name": "t"}), "id": NumberAttribute(hash_key=True),
            "n": CounterAttribute()})


@pytest.mark.parametrize("kwargs", [{"delta": 0}, {"delta": 1.5}, {"start": "0"}, {"start": True},
                                    {"hash_key": True}])
def test_bad_arguments(kwargs):
    """start and delta must be integers (delta non-zero), and a counter cannot be a key."""
    with pytest.raises(ConfigurationError):
        CounterAttribute(**kwargs)


@pytest.mark.parametrize("kwargs", [{"start": 10**38}, {"delta": -(10**38)}, {"start": -(10**38) + 1, "delta": 5}])
def test_numbers_past_38_digits_are_refused(kwargs):
    """A start, a delta, or the start - delta every first write sends, of more than 38 digits is refused when the
    attribute is declared (DynamoDB would refuse every write)."""
    with pytest.raises(ConfigurationError, match="38"):
        CounterAttribute(**kwargs)


@pytest.mark.backends()
def test_a_value_past_38_digits_is_refused_as_it_is_built(backend):
    """views.set(10**38) is refused with CounterValueError, before anything is sent."""
    Page = plain_model(backend)
    with pytest.raises(CounterValueError, match="38"):
        Page("a").update([Page.views.set(10**38)])


@pytest.mark.backends("local")
def test_a_counter_rising_past_38_digits_is_the_librarys_error(backend):
    """A save that would raise a counter past 38 digits raises CounterValueError (DynamoDB refuses the number;
    moto stores it), and the stored counter stays as it was."""
    Page = plain_model(backend, pages=CounterAttribute(delta=2))
    page = Page("a")
    page.save()
    page.update([Page.pages.set(10**38 - 1)])
    with pytest.raises(CounterValueError, match="38"):
        page.save()  # 10**38 + 1: 39 significant digits
    assert stored(Page, "a").pages == 10**38 - 1


def test_iam_names_update_item(backend):
    """The IAM helper grants UpdateItem on the table of a model with counters."""
    Page = plain_model(backend)
    assert required_actions(Page) == {Page.Meta.table_name: {"dynamodb:UpdateItem"}}


def test_resent_update_counts_twice(backend):
    """Documented at-least-once: an UpdateItem applied whose answer was lost is resent and raises the counter twice."""
    Page = plain_model(backend)
    page = Page("a")
    page.save()
    fault = Faults(Page)
    try:
        fault.inject("UpdateItem", "drop-after-commit")
        page.save()
    finally:
        fault.remove()
    assert fault.count("UpdateItem") == 2
    assert page.views == 2
    assert stored(Page, "a").views == 2


def test_counter_mixin_after_auto_increment_raises_configuration_error_itself():
    """CounterMixin after AutoIncrementMixin raises ConfigurationError when the class is created (not a
    RuntimeError wrapping it, as an error from __set_name__ is before Python 3.12)."""
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    meta = type("Meta", (), {"table_name": "t"})
    with pytest.raises(ConfigurationError, match="put CounterMixin before AutoIncrementMixin"):
        type("Bad", (AutoIncrementMixin, CounterMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "n": CounterAttribute()})


def test_counter_mixin_before_auto_increment_is_still_accepted():
    """class Order(CounterMixin, AutoIncrementMixin, Model), the documented order, is accepted."""
    from pynamodb_autoinc import CounterAttribute, CounterMixin

    meta = type("Meta", (), {"table_name": "orders"})
    type("Order", (CounterMixin, AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                                              "n": CounterAttribute()})


class _Audited(Model):
    """A user's base class whose update() also records, in an attribute it does not declare, that the item
    was written."""

    def update(self, actions: Any, condition: Any = None, **kwargs: Any) -> Any:
        return super().update(list(actions) + [Path(["audited"]).set(1)], condition, **kwargs)


@pytest.mark.modes()
def test_counter_mixin_update_runs_an_update_override_of_a_later_base(backend):
    """``CounterMixin.update()`` (and ``save()`` of a stored item, which updates it) goes on to the
    ``update()`` of a base listed after CounterMixin, as ``super().update()`` does: its actions are sent in
    the same UpdateItem as the counters'."""
    meta = type("Meta", (), {"table_name": backend.table_name("stat"), **backend.meta})
    Stat: Any = type("Stat", (CounterMixin, _Audited), {
        "Meta": meta, "key": UnicodeAttribute(hash_key=True), "views": CounterAttribute()})
    backend.create(Stat)
    # the same table, read as a plain model that declares the attribute
    Raw: Any = type("Raw", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                      "audited": NumberAttribute(null=True)})
    for write in (lambda s: s.save(), lambda s: s.update([Stat.views.add(2)])):
        stat = Stat(key="s")
        stat.save()  # a new item, or the stored one written over
        Raw("s").update([Raw.audited.remove()])
        write(stat)
        assert Raw.get("s", consistent_read=True).audited == 1


@pytest.mark.modes()
def test_counter_mixin_update_of_a_new_instance_names_the_fix(backend):
    """A ``CounterMixin`` model's ``update()`` of a new auto-increment instance (which sends its own
    ``UpdateItem``) is refused with ``UnassignedIdError`` naming save(), and creates no item."""
    Page = auto_model(backend, "Page", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True),
                                    "views": CounterAttribute()}, bases=(CounterMixin, AutoIncrementMixin))
    page = Page(name="home")
    with pytest.raises(UnassignedIdError, match=r"save\(\) it first"):
        page.update(actions=[Page.name.set("index")])
    assert page.id is None and stored_names(Page) == []


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


def test_counter_attribute_refuses_a_fraction(backend):
    """A CounterAttribute cannot be added to or set to a fraction: refused when the action is built."""
    meta = type("Meta", (), {"table_name": backend.table_name("pages"), **backend.meta})
    page: Any = type("Page", (CounterMixin, Model), {
        "Meta": meta, "url": UnicodeAttribute(hash_key=True), "views": CounterAttribute()})
    with pytest.raises(CounterValueError, match="'views' counts in whole steps, but was given float 1.5"):
        page.views.add(1.5)
    with pytest.raises(CounterValueError, match="bool True"):
        page.views.set(True)


def _failing_save_all(model: Any, items: List[Any]) -> BulkSaveError:
    """``model.save_all(items)`` with its transaction refused (a conflict, no retry left); the error raised."""
    faults = Faults(model, model.autoinc_options().counter)
    faults.inject("TransactWriteItems", "cancel:TransactionConflict:0")
    try:
        with pytest.raises(BulkSaveError) as raised:
            model.save_all(items)
    finally:
        faults.remove()
    return raised.value


@pytest.mark.modes("fast", "gapless")
def test_a_failed_save_all_gives_new_items_their_counters_back(make_model):
    """save_all() whose transaction fails leaves each new instance's counters as they were before (None), as a
    failed save() does: they were never stored."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute(start=1), autoinc_retries=0)
    new, other = Order(), Order()
    error = _failing_save_all(Order, [new, other])
    assert error.saved == [] and [(o.id, o.edits) for o in (new, other)] == [(None, None), (None, None)]
    assert list(Order.scan(consistent_read=True)) == []


@pytest.mark.modes("fast")
def test_a_failed_save_all_leaves_stored_items_counters_as_stored(make_model):
    """save_all() whose transaction of new items fails sends no update of an item that has its ID: its counter
    stays as stored, on the instance and in the table."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute(), autoinc_retries=0)
    old = Order()
    old.save()
    _failing_save_all(Order, [Order(), Order(), old])
    assert (old.edits, stored(Order, old.id).edits) == (0, 0)


@pytest.mark.modes("fast")
def test_a_save_all_refused_before_sending_gives_counters_back(make_model):
    """save_all() refused before anything is sent (a required attribute missing) leaves new instances' counters
    as they were."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute(), name=UnicodeAttribute())
    fine, missing = Order(name="a"), Order()
    with pytest.raises(AttributeNullError):
        Order.save_all([fine, missing])
    assert (fine.edits, missing.edits) == (None, None)


@pytest.mark.modes("fast")
def test_save_all_of_stored_items_sends_bulk_signals(make_model):
    """save_all() of an item that has its ID sends before_save and after_save with operation "bulk", as it does
    for new items, not "save"."""
    Order = make_model("Order", bases=(CounterMixin,), edits=CounterAttribute())
    old = Order()
    old.save()
    seen = []

    def before(sender: Any, instance: Any, operation: str, **_: Any) -> None:
        seen.append(("before", operation))

    def after(sender: Any, instance: Any, operation: str, **_: Any) -> None:
        seen.append(("after", operation))

    with before_save.connected_to(before, sender=Order), after_save.connected_to(after, sender=Order):
        Order.save_all([old])
    assert seen == [("before", "bulk"), ("after", "bulk")]
    assert old.edits == 1
