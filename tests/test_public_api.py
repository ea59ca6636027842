"""The public surface: what ``pynamodb_autoinc`` exports, what it leaves alone, and what a class is refused."""

from __future__ import annotations

import warnings
from typing import Any, Dict

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.models import Model
from pynamodb.transactions import Transaction
from pynamodb.transactions import TransactWrite as PynamoTransactWrite

import pynamodb_autoinc
from pynamodb_autoinc import AutoIncrementMixin, HistoryMixin, ModelOptions, TransactWrite
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    UnassignedIdError,
)

pytestmark = pytest.mark.modes("fast", "gapless")


def test_all_is_short_and_sorted():
    """``__all__`` is sorted, holds about twelve names, and every name in it exists."""
    names = pynamodb_autoinc.__all__
    assert names == sorted(names, key=lambda n: (n[0].islower(), n))
    assert len(names) <= 14
    assert all(hasattr(pynamodb_autoinc, name) for name in names)


def test_errors_are_not_exported_from_the_top_level():
    """No error class is in the top-level ``__all__``: they live in ``pynamodb_autoinc.exceptions``."""
    assert not [n for n in pynamodb_autoinc.__all__ if n.endswith("Error")]
    assert "AutoIncrementError" in pynamodb_autoinc.exceptions.__all__


@pytest.mark.parametrize("name", ["ItemExistsError", "ContentionError", "AutoIncrementError"])
def test_old_top_level_error_names_warn_and_still_work(name):
    """An error imported from the top level, as 0.2 allowed, is the same class, with a DeprecationWarning."""
    with pytest.warns(DeprecationWarning, match="import it from pynamodb_autoinc.exceptions"):
        error = getattr(pynamodb_autoinc, name)
    assert error is getattr(pynamodb_autoinc.exceptions, name)


def test_unknown_top_level_name_is_an_attribute_error():
    """A name that never existed raises AttributeError, not a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            pynamodb_autoinc.Nope  # noqa: B018


def test_importing_the_library_leaves_pynamodb_transactions_alone():
    """PynamoDB's TransactWrite and Transaction keep their own methods: nothing is patched process-wide."""
    for cls, name in ((PynamoTransactWrite, "save"), (PynamoTransactWrite, "_commit"), (Transaction, "__exit__")):
        assert cls.__dict__[name].__module__ == "pynamodb.transactions"
    assert issubclass(TransactWrite, PynamoTransactWrite)


def test_plain_transact_write_refuses_a_new_item(make_model):
    """PynamoDB's own TransactWrite given a new auto-ID item refuses it, naming the library's TransactWrite."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    item = Item(name="x")
    connection = Item._get_connection().connection
    with pytest.raises(UnassignedIdError, match="use pynamodb_autoinc.TransactWrite"), \
            PynamoTransactWrite(connection=connection) as tx:
        tx.save(item)
    assert item.id is None
    assert list(Item.scan(consistent_read=True)) == []


def test_library_transact_write_saves_a_new_item(make_model):
    """The library's TransactWrite gives a new item its ID and stores it."""
    Item = make_model("Item", name=UnicodeAttribute(null=True))
    item = Item(name="x")
    with TransactWrite(connection=Item._get_connection().connection) as tx:
        tx.save(item)
    assert item.id == 1
    assert Item.get(1).name == "x"


def test_autoinc_options_returns_the_public_type(make_model):
    """``Model.autoinc_options()`` returns a ModelOptions, the type users annotate with."""
    Item = make_model("Item")
    opts: ModelOptions = Item.autoinc_options()
    assert isinstance(opts, ModelOptions)


class Stamped:
    """A user's mixin that overrides save()."""

    def save(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        self.stamp = "stamped"
        return super().save(*args, **kwargs)  # type: ignore[misc]


def test_mixin_overriding_save_after_autoincrementmixin_is_refused_at_class_creation():
    """A base that overrides save() after AutoIncrementMixin is refused when the class is made, with the fix."""
    with pytest.raises(ConfigurationError, match=r"put Stamped before AutoIncrementMixin, e.g. "
                                                 r"class Doc\(Stamped, AutoIncrementMixin, Model\)"):
        class Doc(AutoIncrementMixin, Stamped, Model):
            class Meta:
                table_name = "docs"
            id = NumberAttribute(hash_key=True)
            stamp = UnicodeAttribute(null=True)


def test_mixin_overriding_save_before_autoincrementmixin_runs_for_new_items(make_model):
    """A base that overrides save() placed before AutoIncrementMixin runs for a new item, which gets its ID."""
    base = make_model("Doc", stamp=UnicodeAttribute(null=True))

    class Doc(Stamped, base):  # type: ignore[misc, valid-type]
        class Meta(base.Meta):  # type: ignore[name-defined]
            pass

    doc = Doc()
    doc.save()
    assert doc.id == 1
    assert Doc.get(1).stamp == "stamped"


def test_abstract_base_without_a_table_is_not_checked():
    """A base class without Meta.table_name is not checked; its concrete subclass is."""
    class Base(AutoIncrementMixin, Model):
        id = NumberAttribute(hash_key=True)

    with pytest.raises(ConfigurationError, match="unknown Meta option 'autoinc_nope'"):
        class Concrete(Base):
            class Meta:
                table_name = "concrete"
                autoinc_nope = 1


def test_scope_on_a_model_whose_id_is_the_only_key_is_refused():
    """Meta.autoinc_scope on a model keyed by the ID alone is refused when the class is made: scopes would
    collide."""
    with pytest.raises(ConfigurationError, match="the item's key does not hold it"):
        class Issue(AutoIncrementMixin, Model):
            class Meta:
                table_name = "issues"
                autoinc_scope = "project"
            id = NumberAttribute(hash_key=True)
            project = UnicodeAttribute()


def test_scope_outside_the_items_key_is_refused():
    """A scope that is not the item's other key attribute is refused: two scopes would share a key."""
    with pytest.raises(ConfigurationError, match="number 'number' per 'tenant'"):
        class Issue(AutoIncrementMixin, Model):
            class Meta:
                table_name = "issues"
                autoinc_scope = "project"
                autoinc_attribute = "number"
            tenant = UnicodeAttribute(hash_key=True)
            number = NumberAttribute(range_key=True)
            project = UnicodeAttribute()


def test_scope_on_the_other_key_attribute_is_accepted():
    """A scope that is the item's hash key numbers the range key per parent, and is accepted."""
    class Issue(AutoIncrementMixin, Model):
        class Meta:
            table_name = "issues"
            autoinc_scope = "project"
            autoinc_attribute = "number"
        project = UnicodeAttribute(hash_key=True)
        number = NumberAttribute(range_key=True)

    assert Issue.autoinc_options().scope == ("project",)


@pytest.mark.modes("fast")
def test_nextval_without_a_sequence_follows_the_recorded_options(make_model):
    """``NextId.nextval(key)`` with no sequence follows the options the counter records (a custom start)."""
    Item = make_model("Item", autoinc_start=100, autoinc_step=5)
    Item().save()
    opts = Item.autoinc_options()
    assert opts.counter.nextval(opts.key) == 105
    assert opts.counter.reserve(opts.key, 2) == [110, 115]


@pytest.mark.modes()
@pytest.mark.backends("moto")
def test_testing_dynamodb_runs_the_block_on_moto():
    """``testing.dynamodb()`` with no host runs its block on a fresh in-process moto: a counter table made in
    one block is not there in the next."""
    from pynamodb_autoinc import NextId, testing

    class Local(NextId):
        class Meta:
            table_name = "NextId"
            region = "us-east-1"

    with testing.dynamodb():
        testing.create_counter_table(counter=Local)
        assert Local.exists()
    with testing.dynamodb():
        assert not Local.exists()


def test_mixin_listed_after_a_model_class_is_refused():
    """AutoIncrementMixin after a Model subclass in the bases (where Model's save() would shadow it) is refused
    when the class is made."""
    class Base(Model):
        pass

    with pytest.raises(ConfigurationError, match=r"list the library's mixins first.*class Doc\(AutoIncrementMixin, "
                                                 r"Base\)"):
        class Doc(Base, AutoIncrementMixin):
            class Meta:
                table_name = "docs"
            id = NumberAttribute(hash_key=True)


@pytest.mark.modes("gapless")
def test_memory_per_counter_key_is_bounded(make_model, monkeypatch):
    """A process saving under many scope keys remembers at most REMEMBERED counters, and a forgotten one is
    read again, so the sequence goes on."""
    from pynamodb_autoinc import strategies

    monkeypatch.setattr(strategies, "REMEMBERED", 3)
    Line = make_model("Line", order=UnicodeAttribute(hash_key=True), n=NumberAttribute(range_key=True),
                      autoinc_attribute="n", autoinc_scope="order")
    for order in "abcdef":
        Line(order=order).save()
    assert len(strategies._memory().seen) == 3
    again = Line(order="a")
    again.save()
    assert again.n == 2


@pytest.mark.modes()
def test_scan_takes_the_parameters_of_pynamodb_scan():
    """``AutoIncrementMixin.scan`` takes the installed PynamoDB's ``Model.scan`` parameters, with their defaults."""
    import inspect

    def shape(method: Any) -> list:
        return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]

    assert shape(AutoIncrementMixin.scan) == shape(Model.scan)


class _Stamped:
    """A user's mixin overriding save() (and delete())."""

    def save(self, *args: Any, **kwargs: Any) -> Any:
        return super().save(*args, **kwargs)  # type: ignore[misc]

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        return super().delete(*args, **kwargs)  # type: ignore[misc]


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
