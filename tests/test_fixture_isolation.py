"""Fixtures that leave a database as they found it (issue 44): ``testing.leave_counters_as_found()`` and the
pytest fixtures built on it delete the counters a test created and no other, also with an application's counters
on the same DynamoDB Local, and under pytest-xdist with two workers sharing it."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Any, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import NextId, testing
from pynamodb_autoinc.exceptions import ConfigurationError
from tests.helpers import auto_model

pytest_plugins = ["pytester"]

ROOT = str(Path(__file__).resolve().parent.parent)


def app_counter(counter: Any, value: int = 41) -> str:
    """A counter of "the application", set before the test: one the test's fixtures must keep."""
    key = f"app-{uuid.uuid4().hex[:8]}"
    counter.setval(key, value)
    return key


def test_a_block_deletes_the_counters_it_created_and_keeps_the_others(make_model, backend):
    """In each mode, the counters a block's saves create (in this thread and in another) are deleted after it,
    an application's counter is kept with its value, and a save in the next block starts at 1 again."""
    counter = backend.counter()
    app = app_counter(counter)
    model = make_model("Item")  # its counter key: its table's name, unique
    other = make_model("Other")
    before = set(counter.keys())
    for _ in range(2):
        with testing.leave_counters_as_found(model) as scope:
            first = model()
            first.save()
            worker = threading.Thread(target=lambda: other().save())
            worker.start()
            worker.join()
            assert first.id == 1
        assert set(counter.keys()) == before and counter.currval(app) == 41
        assert app in scope.found and not set(scope.removed) & before
        for made in (model, other):
            for item in made.scan():
                item.delete()


@pytest.mark.modes()
def test_a_counter_found_is_left_as_the_block_advanced_it(backend):
    """A counter the table held before the block, advanced by a save in it, is left advanced (42, not set back to
    41: another writer could have moved it too, and the item saved as 42 is still there); it is not deleted."""
    counter = backend.counter()
    key = app_counter(counter)
    model = auto_model(backend, "Shared", {"id": NumberAttribute(hash_key=True)}, autoinc_key=key,
                       autoinc_gapless=True)
    with testing.leave_counters_as_found(model) as scope:
        model().save()
    assert counter.currval(key) == 42 and scope.removed == [] and scope.kept == []


@pytest.mark.modes()
def test_a_created_counter_another_writer_moves_before_the_delete_is_kept(backend):
    """A counter the block created that another writer advances after it was read for deletion is left (the
    delete's condition fails on the changed item), and reported in ``kept``."""
    counter = backend.counter()
    key = f"raced-{uuid.uuid4().hex[:8]}"
    raced: List[int] = []

    def rival(_: Any, operation_name: str, table_name: str, **__: Any) -> None:
        if operation_name == "DeleteItem" and table_name == counter.Meta.table_name and not raced:
            raced.append(counter.nextval(key))

    try:
        with testing.leave_counters_as_found(counter=counter) as scope:
            counter.nextval(key)
            pre_dynamodb_send.connect(rival)
    finally:
        pre_dynamodb_send.disconnect(rival)
    assert raced == [2] and scope.kept == [key] and scope.removed == []
    assert counter.currval(key) == 2


@pytest.mark.backends("moto")
def test_a_block_on_a_missing_table_deletes_what_it_created_and_leaves_the_table(backend):
    """With no counter table when the block starts, the counters saved after the test made it are deleted after
    the block, and the table is left."""
    own = type("Counters", (NextId,), {"Meta": type("Meta", (), {"table_name": "block-counters",
                                                                 "region": "us-east-1"})})
    model = auto_model(backend, "Late", {"id": NumberAttribute(hash_key=True)}, counter_table=False,
                       autoinc_counter=own, autoinc_gapless=False)
    counter = model.autoinc_options().counter
    with testing.leave_counters_as_found(model) as scope:
        assert scope.found == frozenset()
        testing.create_counter_table(model)
        model().save()
    assert counter.exists() and counter.keys() == [] and scope.removed == [model.autoinc_options().key]


@pytest.mark.modes()
def test_in_table_counters_of_a_block_are_deleted_and_the_models_items_kept(backend):
    """For a model keeping its counters in its own table, the block deletes the counter item it created, not the
    model's items, and not a counter of that table it found."""
    model = auto_model(backend, "Doc", {"key": UnicodeAttribute(hash_key=True), "number": NumberAttribute(null=True)},
                       counter_table=False, autoinc_counter_in_table=True, autoinc_attribute="number",
                       autoinc_key="docs", autoinc_gapless=False)
    counter = model.autoinc_options().counter
    counter.setval("found", 7)
    with testing.leave_counters_as_found(model) as scope:
        model(key="a").save()
    assert scope.removed == ["docs"] and counter.keys() == ["found"]
    assert [item.key for item in model.scan() if not item.key.startswith("__autoinc__")] == ["a"]


@pytest.mark.backends()
def test_a_block_ended_after_moto_stopped_is_refused_and_sends_nothing(monkeypatch):
    """A block whose counters are reached at AWS when it ends (its moto block ended first) deletes nothing: it
    raises ConfigurationError and sends no request."""
    monkeypatch.setattr(NextId, "_connection", None)
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    block = testing.leave_counters_as_found()
    with testing.dynamodb():
        testing.create_counter_table()
        block.__enter__()
        NextId.nextval("made")
    sent: List[str] = []

    def record(_: Any, operation_name: str, **__: Any) -> None:
        sent.append(operation_name)

    with pre_dynamodb_send.connected_to(record), pytest.raises(ConfigurationError, match="refused.*moto"):
        block.__exit__(None, None, None)
    monkeypatch.setattr(NextId, "_connection", None)
    assert sent == []


# --- the pytest fixtures, in a pytest process of their own, on this session's DynamoDB Local --------------------

HEADER = '''
import os
import time
from pathlib import Path

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, NextId, testing
from pynamodb_autoinc.pytest_plugin import autoinc_counter_table, autoinc_fresh_counters  # noqa: F401

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")
STEM = os.environ["STEM"] + "-" + WORKER
SYNC = Path(os.environ.get("SYNC_DIR", "."))


class Ticket(AutoIncrementMixin, Model):
    class Meta:
        table_name = STEM
        autoinc_key = STEM
        autoinc_gapless = True

    id = NumberAttribute(hash_key=True)


@pytest.fixture
def local():
    with testing.dynamodb(os.environ["DYNAMODB_HOST"]):
        Ticket.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        yield
        Ticket.delete_table()


def wait_for(name):
    deadline = time.monotonic() + 90
    while not (SYNC / name).exists():
        assert time.monotonic() < deadline, f"{name} never came"
        time.sleep(0.05)
'''


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, host: str, tests: str,
        *args: str, **env: str) -> pytest.RunResult:
    """Run ``tests`` (after HEADER) in a fresh pytest process importing this checkout, at DynamoDB ``host``."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("DYNAMODB_HOST", host)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)  # this suite's own worker, if it runs under xdist
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_isolation_use=HEADER + tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("fixture", ["autoinc_counter_table", "autoinc_fresh_counters"])
def test_each_fixture_keeps_a_counter_it_did_not_create(pytester, monkeypatch, dynamodb_local, local, fixture):
    """An application's counter on the DynamoDB Local a test runs on survives a test using the fixture, with its
    value; the counter the test's save created is gone after it, so a second test starts at 1 again."""
    counter = local.counter()
    app = app_counter(counter)
    stem = f"iso-{uuid.uuid4().hex[:8]}"
    result = run(pytester, monkeypatch, dynamodb_local.url, f'''
@pytest.mark.parametrize("run", [1, 2])
def test_save(local, {fixture}, run):
    testing.create_counter_table()
    ticket = Ticket()
    ticket.save()
    assert ticket.id == 1
    assert NextId.currval({app!r}) == 41
    Ticket.get(1).delete()
''', STEM=stem)
    result.assert_outcomes(passed=2)
    assert counter.currval(app) == 41 and counter.currval(f"{stem}-main") is None


def test_two_xdist_workers_on_one_dynamodb_local_keep_each_others_counters(pytester, monkeypatch, dynamodb_local,
                                                                           local, tmp_path):
    """``pytest -n 2`` on one DynamoDB Local: worker gw0's test ends (its fixture cleaning up) while gw1's is
    between two gapless saves; gw1's counter is still there (its second ID is 2) and so is the application's."""
    counter = local.counter()
    app = app_counter(counter)
    stem = f"xd-{uuid.uuid4().hex[:8]}"
    result = run(pytester, monkeypatch, dynamodb_local.url, f'''
@pytest.fixture
def done():
    yield
    (SYNC / f"done-{{WORKER}}").touch()  # after the counter fixture's teardown, which runs first


def test_own_counters(local, done, autoinc_counter_table):
    first = Ticket()
    first.save()
    (SYNC / f"saved-{{WORKER}}").touch()
    if WORKER == "gw0":
        wait_for("saved-gw1")  # gw1 has a counter when gw0's fixture cleans up
    else:
        wait_for("done-gw0")
        second = Ticket()
        second.save()
        assert (first.id, second.id) == (1, 2)
    assert NextId.currval({app!r}) == 41
''', "-n", "2", "--dist", "each", STEM=stem, SYNC_DIR=str(tmp_path))
    result.assert_outcomes(passed=2)
    assert counter.currval(app) == 41
    assert [counter.currval(f"{stem}-{worker}") for worker in ("gw0", "gw1")] == [None, None]
