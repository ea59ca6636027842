"""pynamodb_autoinc.testing: the helpers reach the endpoint and the table a model uses."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, testing
from pynamodb_autoinc.exceptions import ConfigurationError


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
