"""The pytest fixtures the package registers (``pynamodb_autoinc.pytest_plugin``), run as a user's suite would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
    """autoinc_counter_table creates the NextId table and deletes its counters after each test, so each of
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
