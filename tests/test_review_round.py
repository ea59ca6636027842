"""Review of the round that merged the engine-built history write, the one send point and the queue's swap
templates: behaviour checked through the public API only."""

from __future__ import annotations

import json
from typing import Any, List, Tuple

import pytest
from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.expressions.operand import Path
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    CounterAttribute,
    CounterMixin,
    HistoryMixin,
    after_save,
    before_save,
    cli,
)
from pynamodb_autoinc.testing import reset_counters


def _model(backend: Any, name: str, attrs: dict, **meta: Any) -> Any:
    meta_cls = type("Meta", (), {"table_name": backend.table_name(name.lower()), **backend.meta, **meta})
    model = type(name, (AutoIncrementMixin, Model), {"Meta": meta_cls, **attrs})
    backend.create(model)
    return model


@pytest.mark.modes()
def test_query_strategy_range_key_stored_under_a_dotted_name(backend):
    """The query strategy reads the partition's last range key also when its name in the table holds a dot
    (``attr_name="seq.no"``): a dot in a stored name is part of the name, not a path into a map."""
    Line = _model(backend, "Line", {
        "order": UnicodeAttribute(hash_key=True),
        "number": NumberAttribute(range_key=True, attr_name="seq.no"),
    }, autoinc_strategy="query", autoinc_attribute="number")
    numbers = []
    for _ in range(3):
        line = Line(order="o-1")
        line.save()
        numbers.append(line.number)
    assert numbers == [1, 2, 3]


@pytest.mark.modes()
def test_reset_counters_of_an_in_table_counter_whose_hash_key_name_holds_a_dot(backend):
    """``testing.reset_counters`` finds and deletes the counters kept in a model's own table also when the
    table's hash key is stored under a dotted name; the next save starts again from 1."""
    Doc = _model(backend, "Doc", {
        "key": UnicodeAttribute(hash_key=True, attr_name="doc.key"),
        "number": NumberAttribute(null=True),
    }, autoinc_counter_in_table=True, autoinc_attribute="number", autoinc_key="docs", autoinc_gapless=False)
    first = Doc(key="a")
    first.save()
    assert first.number == 1
    assert reset_counters(Doc) == 1
    again = Doc(key="b")
    again.save()
    assert again.number == 1


#: The model ``test_check_reads_ids_stored_under_a_dotted_name`` hands the command line by name.
Dotted: Any = None


@pytest.mark.modes()
def test_check_reads_ids_stored_under_a_dotted_name(backend, capsys):
    """``pynamodb-autoinc check`` counts the stored IDs of a model whose ID attribute is stored under a
    dotted name (``attr_name="ticket.no"``): the dot is part of the name, so no item is left out as one
    without an integer ID."""
    global Dotted
    Dotted = _model(backend, "Dotted", {"key": UnicodeAttribute(hash_key=True),
                                        "number": NumberAttribute(null=True, attr_name="ticket.no")},
                    autoinc_attribute="number", autoinc_gapless=True)
    backend.counter(model=Dotted)
    for key in "abc":
        Dotted(key=key).save()
    host = ["--host", backend.meta["host"]] if "host" in backend.meta else []
    code = cli.main([*host, "--region", "us-east-1", "check", "--model", f"{__name__}:Dotted", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [(r["items"], r["max"], r["holes"]) for r in json.loads(out)] == [(3, 3, 0)]


@pytest.mark.modes()
def test_signal_receivers_may_serialize_a_history_item(backend):
    """A ``before_save`` or ``after_save`` receiver may call ``instance.serialize()`` on a HistoryMixin
    model's instance (to log it, or to publish it): the save goes through, in its one transaction with the
    version, and each receiver saw the item as it is written (the version it is saved as, after it)."""
    history_meta = type("Meta", (), {"table_name": backend.table_name("page-history"), **backend.meta})
    history: Any = type("PageVersion", (Model,), {
        "Meta": history_meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(history)
    meta = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history,
                             "autoinc_gapless": False, **backend.meta})
    Page = type("Page", (HistoryMixin, AutoIncrementMixin, Model), {
        "Meta": meta, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(Page)
    backend.counter(model=Page)
    seen: List[Tuple[str, Any]] = []

    def before(sender: Any, instance: Any, **_: Any) -> None:
        if sender is Page and instance.id is not None:
            seen.append(("before", instance.serialize()["title"]))

    def after(sender: Any, instance: Any, **_: Any) -> None:
        if sender is Page:
            seen.append(("after", instance.serialize()["revision"]))

    with before_save.connected_to(before), after_save.connected_to(after):
        page = Page(title="one")
        page.save()
        page.title = "two"
        page.save()
    assert seen == [("after", {"N": "1"}), ("before", {"S": "two"}), ("after", {"N": "2"})]
    assert [v.title for v in history.query(page.history_key(), consistent_read=True)] == ["one", "two"]


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
