"""``pynamodb-autoinc check`` tells the truth: each stored item counted once, whatever classes share its table;
the IDs of every model sharing a counter, wherever --host or a home region sends them; a cycling sequence read
through its wraps; a counter behind its IDs named with its repair; formats that show part of the period."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, List, Tuple

import pytest
from pynamodb.attributes import DiscriminatorAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from tests import test_cli
from tests.helpers import closed_port
from tests.test_cli import importable, reach, run

# the command-line fixtures of tests/test_cli.py: moto's server (or DynamoDB Local), and the URL of either
moto_server = test_cli.moto_server
endpoint = test_cli.endpoint


def checked(capsys: Any, *argv: str) -> Tuple[int, List[Dict[str, Any]], str]:
    """``check --json`` with ``argv``: (exit status, the rows, stderr)."""
    code, out, err = run(capsys, *argv, "--json")
    return code, (json.loads(out) if out.strip() else []), err


# -- each item once ------------------------------------------------------------------------------------------------


@pytest.mark.modes("gapless")
def test_a_plain_subclass_sharing_the_table_is_not_counted_twice(make_model, monkeypatch, capsys, backend,
                                                                credentials):
    """User and ``class AdminUser(User): pass`` store 1, 2, 3 in one table under one counter: check counts each
    item once (no duplicates, no holes) and exits 0."""
    User = make_model("User")
    AdminUser = type("AdminUser", (User,), {})
    for model in (User, AdminUser, User):
        model().save()
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, "Users", User))
    assert code == 0, err
    assert [(row["items"], row["duplicates"], row["holes"]) for row in rows] == [(3, [], 0)]


def polymorphic(backend: Any) -> Tuple[Any, Any]:
    """Shape and Circle(Shape), told apart by a DiscriminatorAttribute, numbered by one gapless counter."""
    meta = type("Meta", (), {"table_name": backend.table_name("shapes"), "autoinc_gapless": True, **backend.meta})

    class Shape(AutoIncrementMixin, Model, discriminator="shape"):
        Meta = meta  # type: ignore[assignment]  # the backend's settings
        id = NumberAttribute(hash_key=True)
        kind = DiscriminatorAttribute()

    class Circle(Shape, discriminator="circle"):
        pass

    backend.counter(model=Shape)
    backend.create(Shape)
    return Shape, Circle


@pytest.mark.modes()
def test_polymorphic_models_sharing_a_table_are_counted_once(monkeypatch, capsys, backend, credentials):
    """Shape and Circle (a DiscriminatorAttribute) store 1, 2, 3 in one table: check of either counts each item
    once and exits 0."""
    shape, circle = polymorphic(backend)
    for model in (shape, circle, shape):
        model().save()
    for name, model in (("Shape", shape), ("Circle", circle)):
        code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, name, model))
        assert code == 0, (name, err)
        assert [(row["items"], row["duplicates"], row["holes"]) for row in rows] == [(3, [], 0)], name


# -- shared counters, --host and home regions ----------------------------------------------------------------------


def client(host: str, region: str = "us-east-1") -> Any:
    import boto3  # type: ignore[import-untyped, unused-ignore]

    return boto3.client("dynamodb", endpoint_url=host, region_name=region, aws_access_key_id="local",
                        aws_secret_access_key="local")


def stored(host: str, region: str, table: str, ids: Iterable[int]) -> None:
    """Table ``table`` at ``host`` in ``region`` (hash key ``id``, a number) holding ``ids``, put by hand."""
    dynamodb = client(host, region)
    dynamodb.create_table(TableName=table, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
                          BillingMode="PAY_PER_REQUEST")
    for i in ids:
        dynamodb.put_item(TableName=table, Item={"id": {"N": str(i)}})


def counter_at(host: str, region: str, key: str, value: int, table: str = "NextId") -> None:
    """Counter ``key`` at ``value`` in the counter table at ``host`` in ``region`` (created if missing)."""
    dynamodb = client(host, region)
    if table not in dynamodb.list_tables()["TableNames"]:
        dynamodb.create_table(TableName=table, KeySchema=[{"AttributeName": "NextKey", "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": "NextKey", "AttributeType": "S"}],
                              BillingMode="PAY_PER_REQUEST")
    dynamodb.put_item(TableName=table, Item={"NextKey": {"S": key}, "NextId": {"N": str(value)}})


#: The endpoint the models of these tests name in their Meta, as a production endpoint would be: nobody answers.
ELSEWHERE = f"http://127.0.0.1:{closed_port()}"


def declared(name: str, table: str, **meta: Any) -> Any:
    """A model class whose Meta sends it elsewhere (:data:`ELSEWHERE`): only --host reaches its data."""
    settings = {"table_name": table, "host": ELSEWHERE, "region": "us-east-1", **meta}
    return type(name, (AutoIncrementMixin, Model), {"Meta": type("Meta", (), settings),
                                                    "id": NumberAttribute(hash_key=True)})


@pytest.mark.backends("moto")
def test_check_host_counts_every_model_sharing_the_counter(endpoint, monkeypatch, capsys, credentials):
    """Sale and Refund share a gapless counter; their Meta names another endpoint. check --host, where Sale stores
    1, 3, 4 and Refund 2, 5 (the counter at 5), counts both tables there: no holes, exit 0."""
    prefix = f"shared-{uuid.uuid4().hex[:8]}"
    ledger = {"autoinc_key": f"{prefix}-ledger", "autoinc_gapless": True}
    Sale, Refund = declared("Sale", f"{prefix}-sales", **ledger), declared("Refund", f"{prefix}-refunds", **ledger)
    stored(endpoint, "us-east-1", Sale.Meta.table_name, [1, 3, 4])
    stored(endpoint, "us-east-1", Refund.Meta.table_name, [2, 5])
    counter_at(endpoint, "us-east-1", f"{prefix}-ledger", 5)
    importable(monkeypatch, "Refund", Refund)
    code, rows, err = checked(capsys, "--host", endpoint, "check", "--model", importable(monkeypatch, "Sale", Sale))
    assert code == 0, (err, rows)
    assert [(row["items"], row["holes"], row["last_value"]) for row in rows] == [(5, 0, 5)]


@pytest.mark.backends("moto")
def test_check_host_reads_a_home_regions_counter_there(endpoint, monkeypatch, capsys, credentials):
    """A gapless model in eu-west-1 cycling through 1..50, homed on us-east-1 (Meta.autoinc_home_host another
    endpoint), which came round (41..50 and 1..3 stored, the counter at 3): check --host reads the home region's
    counter at that host, so 4..40 are no holes: exit 0."""
    table = f"homed-{uuid.uuid4().hex[:8]}"
    Homed = declared("Homed", table, region="eu-west-1", autoinc_home_region="us-east-1", autoinc_max=50,
                     autoinc_cycle=True, autoinc_gapless=True,
                     autoinc_home_host=ELSEWHERE)
    stored(endpoint, "eu-west-1", table, [*range(41, 51), 1, 2, 3])
    counter_at(endpoint, "us-east-1", table, 3)
    code, rows, err = checked(capsys, "--host", endpoint, "check", "--model", importable(monkeypatch, "Homed", Homed))
    assert code == 0, err
    assert [(row["items"], row["holes"], row["last_value"]) for row in rows] == [(13, 0, 3)]


# -- cycles ----------------------------------------------------------------------------------------------------------


@pytest.mark.modes("gapless")
def test_a_wrapped_cycle_with_no_counter_yet_shows_no_false_holes(make_model, monkeypatch, capsys, backend,
                                                                 credentials):
    """A gapless sequence cycling through 1..50 whose table holds 41..50 and 1..3 and whose counter is missing
    (a table moved onto the library): check reads the stored IDs as a ring ending at 3, so 4..40 are no holes,
    notes the missing counter with its repair (seed), and exits 0."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    with model.batch_write() as batch:
        for i in (*range(41, 51), 1, 2, 3):
            batch.save(model(id=i))
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, "Cycling", model))
    assert code == 0, err
    assert [(row["items"], row["holes"], row["behind"]) for row in rows] == [(13, 0, True)]
    assert "note: counter" in err and "holds no value, behind its stored IDs" in err
    assert "seed --model tests.test_cli:Cycling" in err


@pytest.mark.modes()
def test_a_value_stored_again_after_a_wrap_is_no_duplicate(monkeypatch, capsys, backend, credentials):
    """Two tables sharing a counter cycling through 1..5 (Sale stores 1..5 of the first pass, Refund 1 and 2 of
    the second, the counter at 2): 1 and 2 are repeats after a wrap, not duplicates: exit 0."""
    ledger = {"autoinc_key": f"ring-{uuid.uuid4().hex[:8]}", "autoinc_max": 5, "autoinc_cycle": True,
              "autoinc_gapless": True, **backend.meta}
    models = [type(name, (AutoIncrementMixin, Model), {
        "Meta": type("Meta", (), {"table_name": backend.table_name(name.lower()), **ledger}),
        "id": NumberAttribute(hash_key=True)}) for name in ("Sale", "Refund")]
    backend.counter(model=models[0])
    for model in models:
        backend.create(model)
    for model, count in zip(models, (5, 2)):
        for _ in range(count):
            model().save()
    importable(monkeypatch, "Refund", models[1])
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, "Sale", models[0]))
    assert code == 0, err
    assert [(row["items"], row["duplicates"], row["repeats"], row["holes"]) for row in rows] == [(7, [], [1, 2], 0)]


# -- a counter behind its IDs ----------------------------------------------------------------------------------------


@pytest.mark.modes("fast")
def test_a_counter_behind_its_ids_is_named_with_seed(make_model, monkeypatch, capsys, backend, credentials):
    """A counter set back to 1 below the stored 1..3: check marks it behind, names `seed --model` (with the
    options that reach it) on stderr, and exits 3; seed then puts it right and check exits 0."""
    model = make_model("Item")
    for _ in range(3):
        model().save()
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 1)
    spec = importable(monkeypatch, "Behind", model)
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", spec)
    assert code == 3
    assert [(row["last_value"], row["behind"]) for row in rows] == [(1, True)]
    assert f"counter {opts.key!r} is at 1, behind its stored IDs" in err
    assert f"`pynamodb-autoinc {' '.join(reach(backend))} seed --model {spec}`" in err
    assert run(capsys, *reach(backend), "seed", "--model", spec)[0] == 0
    assert checked(capsys, *reach(backend), "check", "--model", spec)[0] == 0


@pytest.mark.modes("fast")
def test_a_cycling_counter_behind_its_ids_is_named_with_set(make_model, monkeypatch, capsys, backend, credentials):
    """A counter cycling through 1..50, which came round to 3 (41..50, 1..3 stored), set back to 1: its next value,
    2, is stored; check names `set 3 --model ... --key ...` (seed leaves a cycling counter alone), exits 3, and
    that command puts it right."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 40, sequence=opts.sequence)
    for _ in range(13):
        model().save()
    opts.counter.setval(opts.key, 1)
    spec = importable(monkeypatch, "Cycling", model)
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", spec)
    assert code == 3
    assert [(row["holes"], row["behind"]) for row in rows] == [(0, True)]
    assert "the next value it hands out, 2, is stored" in err
    fix = f"set 3 --model {spec} --key {opts.key}"
    assert fix in err
    assert run(capsys, *reach(backend), *fix.split())[0] == 0
    assert checked(capsys, *reach(backend), "check", "--model", spec)[0] == 0


# -- a format that shows part of the period --------------------------------------------------------------------------


def monthly(make_model: Any, fmt: str, *, in_key: bool = True) -> Any:
    """A model numbering per month through ``fmt``: its hash key, or a text attribute beside a number key."""
    attrs = {"id": UnicodeAttribute(hash_key=True)} if in_key else {
        "pk": NumberAttribute(hash_key=True), "id": UnicodeAttribute(null=True)}
    return make_model("Monthly", autoinc_attribute="id", autoinc_period="month", autoinc_format=fmt, **attrs)


@pytest.mark.modes("fast")
def test_a_format_showing_part_of_the_period_is_refused(make_model, monkeypatch, capsys, backend, credentials):
    """A model numbering per month whose format shows the year alone (``INV-{period:.4}-{value:06d}``, outside
    the key): its IDs do not say which month's counter they are on, so check refuses it (exit 1) rather than
    leaving every item out and exiting 0."""
    model = monthly(make_model, "INV-{period:.4}-{value:06d}", in_key=False)
    model(pk=1).save()
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, "Monthly", model))
    assert code == 1, rows
    assert "shows only part of the period" in err and "'INV-{period:.4}-{value:06d}'" in err


@pytest.mark.modes("gapless")
def test_a_format_showing_the_period_whole_in_a_later_field_is_read(make_model, monkeypatch, capsys, backend,
                                                                   credentials):
    """``{period:.4}/{value}/{period}`` shows the year first and the whole month after: check reads each ID
    from the whole month (2026-01's 1, 2026-11's 1 and 2): 3 items, no holes, exit 0."""
    from datetime import datetime

    from pynamodb_autoinc.periods import clock

    model = monthly(make_model, "{period:.4}/{value}/{period}")
    for month, count in ((1, 1), (11, 2)):
        with clock.frozen(datetime(2026, month, 5)):
            for _ in range(count):
                model().save()
    code, rows, err = checked(capsys, *reach(backend), "check", "--model", importable(monkeypatch, "Monthly", model))
    assert code == 0, err
    key = model.autoinc_options().key
    assert [(row["key"], row["items"], row["holes"]) for row in rows] == [(f"{key}#2026-01", 1, 0),
                                                                            (f"{key}#2026-11", 2, 0)]
    assert "left out" not in err

