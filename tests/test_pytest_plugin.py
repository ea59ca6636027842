"""The pytest fixtures the package registers (``pynamodb_autoinc.pytest_plugin``), run as a user's suite would."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest

from tests.helpers import closed_port

pytest_plugins = ["pytester"]

HEADER = '''
import pytest
from moto import mock_aws
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.pytest_plugin import autoinc_counter_table, autoinc_fresh_counters  # noqa: F401


class Ticket(AutoIncrementMixin, Model):
    class Meta:
        table_name = "plugin-tickets"
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


@pytest.fixture
def aws():
    with mock_aws():
        yield
'''


ROOT = str(Path(__file__).resolve().parent.parent)


def outcome(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str) -> pytest.RunResult:
    """Run ``tests`` (after HEADER) in a fresh pytest process: moto must be imported before any botocore
    session is made, which this process cannot promise. It imports this checkout's package (not another
    install of it that the machine may have)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    pytester.makepyfile(test_plugin_use=HEADER + tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_fresh_counters_without_a_counter_table_tears_down_cleanly(pytester, monkeypatch):
    """autoinc_fresh_counters in a test that made no NextId table (its models keep no counter there) passes
    with no error at teardown: there is no counter to reset, only this process's memory."""
    result = outcome(pytester, monkeypatch, '''
def test_no_counter_table(aws, autoinc_fresh_counters):
    assert True
''')
    result.assert_outcomes(passed=1, errors=0)


def test_counter_table_fixture_starts_each_test_at_one(pytester, monkeypatch):
    """autoinc_counter_table creates the NextId table and deletes the counters each test created, so each of
    two tests' first new item gets ID 1 (the model's table is made afresh by each test)."""
    result = outcome(pytester, monkeypatch, '''
@pytest.mark.parametrize("run", [1, 2])
def test_first_id(aws, autoinc_counter_table, run):
    Ticket.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    ticket = Ticket()
    ticket.save()
    assert ticket.id == 1
''')
    result.assert_outcomes(passed=2)


def test_counter_table_before_moto_leaves_the_real_counters_and_names_the_fix(pytester, monkeypatch, local):
    """With AWS_ENDPOINT_URL_DYNAMODB at a DynamoDB Local standing in for the real database, a test requesting
    autoinc_counter_table before its moto fixture errors at setup, naming the fixture order and
    testing.dynamodb(); the counters of that database's NextId table are untouched."""
    real = local.counter()
    real.setval("orders", 41)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local.meta["host"])
    result = outcome(pytester, monkeypatch, '''
def test_first_id(autoinc_counter_table, aws):
    Ticket.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    Ticket().save()
''')
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*request your moto fixture before autoinc_counter_table*testing.dynamodb*"])
    kept = real.keys()  # other tests share this table
    assert "orders" in kept and real.currval("orders") == 41


def test_fresh_counters_before_moto_is_refused_at_setup(pytester, monkeypatch):
    """autoinc_fresh_counters requested before the moto fixture, NextId reaching AWS, errors at setup naming
    the fixture order, before the test runs (its teardown would run after moto has stopped)."""
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    result = outcome(pytester, monkeypatch, '''
def test_nothing(autoinc_fresh_counters, aws):
    raise AssertionError("never run")
''')
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*request your moto fixture before autoinc_fresh_counters*"])


@pytest.mark.parametrize("config", ["none", "endpoint"])
def test_the_documented_recipe_runs_with_no_region_set(pytester, monkeypatch, tmp_path, config):
    """docs/testing.md's pytest module (its fixture on testing.dynamodb(), a model without Meta.region) passes
    on a machine with no AWS_DEFAULT_REGION, no AWS_ENDPOINT_URL_DYNAMODB and either no AWS config file or one
    whose endpoint_url names another endpoint (a closed port), which the moto block does not reach."""
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    if config == "endpoint":
        (tmp_path / "config").write_text(f"[default]\nendpoint_url = http://127.0.0.1:{closed_port()}\n")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    page = (Path(ROOT) / "docs" / "testing.md").read_text()
    recipe = re.search(r"<!-- no-run: a pytest test module.*?-->\n```python\n(.*?)```", page, re.S)
    assert recipe is not None, "docs/testing.md shows no pytest module"
    result = outcome(pytester, monkeypatch, recipe.group(1))
    result.assert_outcomes(passed=1)


def test_a_moto_test_after_a_host_test_reaches_moto_not_the_host(pytester, monkeypatch, dynamodb_local, local):
    """In one pytest run, a test on testing.dynamodb(host) (DynamoDB Local) and then one on testing.dynamodb()
    (moto), each with autoinc_counter_table: the second reaches moto (the host's counter is not there, and its
    save's counter is not on the host), and the first leaves the host's counter as it found it."""
    counter = local.counter()
    app = f"app-{uuid.uuid4().hex[:8]}"
    counter.setval(app, 41)
    monkeypatch.setenv("DYNAMODB_HOST", local.meta["host"])
    result = outcome(pytester, monkeypatch, f'''
import os

from pynamodb_autoinc import NextId, testing


@pytest.fixture
def on_host():
    with testing.dynamodb(os.environ["DYNAMODB_HOST"]):
        yield


@pytest.fixture
def on_moto():
    with testing.dynamodb():
        yield


def test_1_host(on_host, autoinc_counter_table):
    assert NextId.currval({app!r}) == 41


def test_2_moto(on_moto, autoinc_counter_table):
    assert NextId.currval({app!r}) is None
    Ticket.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    Ticket().save()
    assert "amazonaws.com" in NextId._get_connection().connection.client.meta.endpoint_url
    assert NextId.currval("plugin-tickets") == 1
''')
    result.assert_outcomes(passed=2)
    assert counter.currval(app) == 41 and counter.currval("plugin-tickets") is None
