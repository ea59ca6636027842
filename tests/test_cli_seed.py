"""``pynamodb-autoinc seed``: it records the sequence's options on a counter it moves (as ``set`` does), counts the
IDs of every model sharing the counter, and seeds a cycling sequence that came round where its IDs end."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import SequenceMismatchError
from tests import test_cli
from tests.test_cli import importable, reach, run
from tests.test_cli_check import ELSEWHERE, client, declared, stored

# the command-line fixtures of tests/test_cli.py: moto's server (or DynamoDB Local), and the URL of either
moto_server = test_cli.moto_server
endpoint = test_cli.endpoint


def stored_counter(model: Any) -> Dict[str, Any]:
    """The model's counter item as stored, its key left out."""
    opts = model.autoinc_options()
    item = opts.counter._get_connection().get_item(*opts.counter._item_key(opts.key), consistent_read=True)
    return {name: value for name, value in item.get("Item", {}).items() if name != "NextKey"}


def with_ids(make_model: Any, name: str, *ids: int, **meta: Any) -> Any:
    model = make_model(name, **meta)
    with model.batch_write() as batch:
        for i in ids:
            batch.save(model(id=i))
    return model


@pytest.mark.modes("fast")
def test_seed_records_the_options_on_a_counter_it_creates(make_model, monkeypatch, capsys, backend, credentials):
    """seed of a model storing 1, 4 and 7, whose counter does not exist: the counter it creates holds 7 and records
    the model's options, as set does; the dry run says it would record them."""
    model = with_ids(make_model, "Seeded", 1, 4, 7)
    spec, opts = importable(monkeypatch, "Seeded", model), model.autoinc_options()
    code, out, err = run(capsys, *reach(backend), "seed", "--model", spec, "--dry-run")
    assert code == 0, err
    assert f"would be raised to 7 (from none), recording its options {opts.sequence.encode()}" in out
    code, out, err = run(capsys, *reach(backend), "seed", "--model", spec)
    assert code == 0, err
    item = stored_counter(model)
    assert (item["NextId"], item["NextOptions"]) == ({"N": "7"}, {"S": opts.sequence.encode()})


@pytest.mark.modes("fast")
def test_a_seeded_counter_refuses_a_model_with_other_options(make_model, monkeypatch, capsys, backend, credentials):
    """After seed created the counter, a model sharing its key with another step is refused
    (SequenceMismatchError), as after set: the seeded counter guards its configuration."""
    model = with_ids(make_model, "Seeded", 1, 4, 7)
    assert run(capsys, *reach(backend), "seed", "--model", importable(monkeypatch, "Seeded", model))[0] == 0
    other = make_model("Stepped", create=False, table_name=model.Meta.table_name,
                       autoinc_key=model.autoinc_options().key, autoinc_step=2)
    with pytest.raises(SequenceMismatchError):
        other().save()
    item = model()
    item.save()
    assert item.id == 8


@pytest.mark.modes("fast")
def test_describe_shows_the_options_of_a_seeded_counter(make_model, monkeypatch, capsys, backend, credentials):
    """describe without a model lists a counter seed created with its start, step and bounds."""
    model = with_ids(make_model, "Seeded", 1, 4, 7, autoinc_max=100)
    assert run(capsys, *reach(backend), "seed", "--model", importable(monkeypatch, "Seeded", model))[0] == 0
    counter = model.autoinc_options().counter
    code, out, err = run(capsys, *reach(backend), "--table", counter.Meta.table_name, "describe", "--json")
    assert code == 0, err
    (row,) = [row for row in json.loads(out) if row["key"] == model.autoinc_options().key]
    assert (row["start"], row["step"], row["min"], row["max"], row["last_value"]) == (1, 1, 1, 100, 7)


@pytest.mark.modes()
def test_seed_counts_the_ids_of_every_model_sharing_the_counter(monkeypatch, capsys, backend, credentials):
    """Sale (1, 2) and Refund (3, 9) share a counter: seed --model Sale moves it to 9, past Refund's IDs too, so
    Sale's next save takes 10 rather than Refund's 3."""
    key = f"ledger-{uuid.uuid4().hex[:8]}"
    models = [type(name, (AutoIncrementMixin, Model), {
        "Meta": type("Meta", (), {"table_name": backend.table_name(name.lower()), "autoinc_key": key,
                                  "autoinc_gapless": True, **backend.meta}),
        "id": NumberAttribute(hash_key=True)}) for name in ("Sale", "Refund")]
    backend.counter(model=models[0])
    for model, ids in zip(models, ((1, 2), (3, 9))):
        backend.create(model)
        for i in ids:
            model(id=i).save()
    code, out, err = run(capsys, *reach(backend), "seed", "--model", importable(monkeypatch, "Sale", models[0]))
    assert code == 0, err
    assert f"{key}: raised to 9" in out
    sale = models[0]()
    sale.save()
    assert sale.id == 10


@pytest.mark.modes("fast")
def test_seed_puts_a_new_cycling_counter_where_its_wrapped_ids_end(make_model, monkeypatch, capsys, backend,
                                                                  credentials):
    """A sequence cycling through 1..50 whose table holds 41..50 and, after a wrap, 1..3, with no counter: seed
    creates it at 3, where the IDs end (not at 50, from where the next save would wrap onto the stored 1); the
    next save takes 4."""
    model = with_ids(make_model, "Cycling", *range(41, 51), 1, 2, 3, autoinc_max=50, autoinc_cycle=True)
    code, out, err = run(capsys, *reach(backend), "seed", "--model", importable(monkeypatch, "Cycling", model))
    assert code == 0, err
    assert f"{model.autoinc_options().key}: raised to 3" in out
    item = model()
    item.save()
    assert item.id == 4


@pytest.mark.modes("fast")
def test_seed_names_where_a_cycling_counter_behind_its_ids_should_be(make_model, monkeypatch, capsys, backend,
                                                                    credentials):
    """A cycling counter set back to 1 behind its IDs 41..50, 1..3: seed leaves it (it never moves a cycling
    counter that holds a value) and names `set 3 --model ... --key ...`, where the IDs end."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 40, sequence=opts.sequence)
    for _ in range(13):
        model().save()
    opts.counter.setval(opts.key, 1)
    spec = importable(monkeypatch, "Cycling", model)
    code, out, err = run(capsys, *reach(backend), "seed", "--model", spec)
    assert code == 0, err
    assert "left at 1: it is behind its stored IDs (the next value it hands out, 2, is stored)" in out
    assert f"`pynamodb-autoinc set 3 --model {spec} --key {opts.key}`" in out
    assert opts.counter.currval(opts.key) == 1


@pytest.mark.backends("moto")
def test_seed_host_moves_a_home_regions_counter_there(endpoint, monkeypatch, capsys, credentials):
    """A model in eu-west-1 homed on us-east-1, whose Meta names other endpoints, storing 1..4 at --host: seed
    --host creates the counter in the home region's counter table at that host, at 4."""
    table = f"homed-{uuid.uuid4().hex[:8]}"
    Homed = declared("Homed", table, region="eu-west-1", autoinc_home_region="us-east-1", autoinc_home_host=ELSEWHERE)
    stored(endpoint, "eu-west-1", table, [1, 2, 3, 4])
    home = client(endpoint, "us-east-1")
    if "NextId" not in home.list_tables()["TableNames"]:
        home.create_table(TableName="NextId", KeySchema=[{"AttributeName": "NextKey", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "NextKey", "AttributeType": "S"}],
                          BillingMode="PAY_PER_REQUEST")
    code, out, err = run(capsys, "--host", endpoint, "seed", "--model", importable(monkeypatch, "Homed", Homed))
    assert code == 0, err
    item = home.get_item(TableName="NextId", Key={"NextKey": {"S": table}}, ConsistentRead=True)["Item"]
    assert item["NextId"] == {"N": "4"}
