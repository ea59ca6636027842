"""The testing module: testing.dynamodb(), reset_counters() and reset_state() as a test suite uses them."""

from __future__ import annotations

import os
import sys
from typing import Any, List

import pytest
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    NextId,
    testing,
)
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    CounterTableMissingError,
)
from pynamodb_autoinc.testing import reset_counters
from tests.helpers import auto_model, closed_port


@pytest.mark.backends()  # no request is sent
def test_dynamodb_without_moto_names_the_install(monkeypatch):
    """testing.dynamodb() with no host and moto not installed raises the library's ConfigurationError naming
    the extra to install (not a bare ModuleNotFoundError), and leaves the environment as it found it."""
    monkeypatch.setitem(sys.modules, "moto", None)  # `import moto` fails, as where it is not installed
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError, match=r"pip install 'pynamodb-autoinc\[demo\]'"), testing.dynamodb():
        pass  # pragma: no cover - never entered
    assert "AWS_ACCESS_KEY_ID" not in os.environ


class ByName(GlobalSecondaryIndex):
    class Meta:
        index_name = "by-name"
        projection = AllProjection()

    name = UnicodeAttribute(hash_key=True)


def test_create_counter_table_of_an_in_table_counter_creates_the_models_table(backend):
    """For a model keeping its counters in its own table, create_counter_table(Model) creates that table as
    Model.create_table does, with its index: a query of the index then finds the saved item."""
    meta = type("Meta", (), {"table_name": backend.table_name("tagged"), "autoinc_counter_in_table": True,
                             "autoinc_attribute": "id", **backend.meta})
    model: Any = type("Tagged", (AutoIncrementMixin, Model), {
        "Meta": meta, "pk": UnicodeAttribute(hash_key=True), "id": NumberAttribute(null=True),
        "name": UnicodeAttribute(null=True), "by_name": ByName()})
    counter = testing.create_counter_table(model)
    assert counter.Meta.table_name == model.Meta.table_name
    model(pk="a", name="x").save()
    assert [item.pk for item in model.by_name.query("x")] == ["a"]


@pytest.mark.modes("fast")
def test_reset_counters_of_a_model_reaches_its_counter(make_model):
    """reset_counters(Model) deletes the counters of the table the model uses: the next save starts at 1."""
    model = make_model("Item")
    for _ in range(3):
        model().save()
    assert testing.reset_counters(model) >= 1
    model.get(1).delete()
    item = model()
    item.save()
    assert item.id == 1



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


@pytest.mark.modes()
def test_reset_counters_of_an_in_table_counter_whose_hash_key_name_holds_a_dot(backend):
    """``testing.reset_counters`` finds and deletes the counters kept in a model's own table also when the
    table's hash key is stored under a dotted name; the next save starts again from 1."""
    Doc = auto_model(backend, "Doc", {
        "key": UnicodeAttribute(hash_key=True, attr_name="doc.key"),
        "number": NumberAttribute(null=True),
    }, counter_table=False, autoinc_counter_in_table=True, autoinc_attribute="number", autoinc_key="docs",
        autoinc_gapless=False)
    first = Doc(key="a")
    first.save()
    assert first.number == 1
    assert reset_counters(Doc) == 1
    again = Doc(key="b")
    again.save()
    assert again.number == 1


@pytest.mark.backends()  # no backend: the block names its own endpoint
def test_dynamodb_block_sends_a_model_without_host_to_the_host(monkeypatch):
    """Inside testing.dynamodb(host), NextId (no Meta.host) is reached at host, not at AWS."""
    port = closed_port()
    monkeypatch.setattr(NextId, "_connection", None)
    monkeypatch.delenv(testing.ENDPOINT_VARIABLE, raising=False)
    with testing.dynamodb(f"http://127.0.0.1:{port}"), pytest.raises(Exception) as caught:
        testing.create_counter_table()
    monkeypatch.setattr(NextId, "_connection", None)
    assert f"127.0.0.1:{port}" in str(caught.value) and "amazonaws" not in str(caught.value)


@pytest.mark.backends()
@pytest.mark.parametrize("host", [None, "http://127.0.0.1:9"], ids=["moto", "host"])
def test_dynamodb_block_leaves_the_environment_as_it_found_it(monkeypatch, host):
    """What testing.dynamodb() sets in the environment (credentials, region, endpoint) is unset after it; what
    was set before is kept."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", testing.ENDPOINT_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")
    with testing.dynamodb(host):
        assert os.environ["AWS_ACCESS_KEY_ID"] and os.environ["AWS_DEFAULT_REGION"] == "eu-west-3"
    assert "AWS_ACCESS_KEY_ID" not in os.environ and "AWS_SECRET_ACCESS_KEY" not in os.environ
    assert testing.ENDPOINT_VARIABLE not in os.environ and os.environ["AWS_DEFAULT_REGION"] == "eu-west-3"


@pytest.mark.backends("moto")
def test_reset_counters_on_a_missing_table_names_it_and_still_forgets_state(backend, monkeypatch):
    """reset_counters() on a counter table that does not exist raises CounterTableMissingError naming the
    table and the fix, and still resets this process's memory."""
    counter = backend.counter()
    counter.delete_table()
    resets: List[int] = []
    monkeypatch.setattr(testing, "reset_state", lambda: resets.append(1))
    with pytest.raises(CounterTableMissingError, match="counter table 'NextId' does not exist.*create_counter_table"):
        testing.reset_counters(counter=counter)
    assert resets == [1]


@pytest.mark.backends("moto")
def test_create_counter_table_made_meanwhile_by_another_process_waits_for_it(backend, monkeypatch):
    """create_counter_table() whose table another process (an xdist worker) created between its check and its
    create (DynamoDB answers ResourceInUseException) waits for that table instead of failing."""
    counter = backend.counter()  # the table the other process made
    answers = iter([False])  # the first check saw no table
    monkeypatch.setattr(counter, "exists", classmethod(lambda cls: next(answers, True)))
    assert testing.create_counter_table(counter=counter) is counter
