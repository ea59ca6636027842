"""The pynamodb-autoinc command line, end to end: real processes (each forked from one that imported the command
line, tests/cli_runner.py; CLI_FORK=0 starts each with python), real exit codes."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.models import Model

from pynamodb_autoinc import cli as cli_module
from pynamodb_autoinc.exceptions import (
    SequenceMismatchError,
)
from pynamodb_autoinc.sequence import SequenceOptions
from tests import cli_runner
from tests.helpers import REGIONS, auto_model, closed_port, region_model
from tests.test_pg_sequences import BROKEN, broken

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def moto_server() -> Iterator[str]:
    """moto's server on 127.0.0.1 (the CLI runs in another process, so in-process moto cannot serve it)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def endpoint(backend_name: str, request: pytest.FixtureRequest) -> str:
    """The server the command talks to: moto's or DynamoDB Local (``pytest --backend`` picks)."""
    if backend_name == "moto":
        return str(request.getfixturevalue("moto_server"))
    return str(request.getfixturevalue("dynamodb_local").url)


@functools.cache
def command() -> List[str]:
    """How to run the command line so that it runs this checkout's code.

    The installed console script is what an operator runs (it imports models
    from the current directory, not from its own sys.path), so it is used when
    it imports ``pynamodb_autoinc`` from this checkout. An install from another
    checkout (an editable install of a sibling work tree) would test that
    code instead: then ``python -m pynamodb_autoinc`` runs from this
    checkout's root, which puts this checkout first on sys.path.
    """
    script = Path(sys.executable).with_name("pynamodb-autoinc")
    if script.exists():
        where = subprocess.run([sys.executable, "-c", "import pynamodb_autoinc; print(pynamodb_autoinc.__file__)"],
                               capture_output=True, text=True, cwd=script.parent, timeout=60)
        if where.returncode == 0 and Path(where.stdout.strip()).resolve().parent.parent == ROOT:
            return [str(script)]
    return [sys.executable, "-m", "pynamodb_autoinc"]


class Cli:
    """Runs the command line against one endpoint with a fresh set of table names."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.prefix = f"cli-{uuid.uuid4().hex[:8]}"
        self.table = f"{self.prefix}-NextId"
        self.env = {**os.environ, "CLI_TEST_HOST": host, "CLI_TEST_PREFIX": self.prefix,
                    "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1"}

    def __call__(self, *args: str, table: bool = True) -> subprocess.CompletedProcess:
        argv = ["--host", self.host, "--region", "us-east-1"]
        if table:
            argv += ["--table", self.table]
        return cli_runner.run(command, [*argv, *args], env=self.env, cwd=ROOT)

    def models(self) -> Any:
        """The tests.cli_models module as the subprocess sees it, imported here with the same settings."""
        import importlib

        os.environ.update(CLI_TEST_HOST=self.host, CLI_TEST_PREFIX=self.prefix)
        import tests.cli_models as module

        return importlib.reload(module)


@pytest.fixture
def cli(endpoint: str) -> Cli:
    return Cli(endpoint)


@pytest.mark.backends()  # --help answers before any request
def test_help_for_every_command(cli):
    """Each subcommand answers --help with exit 0."""
    for command in ("create-table", "list", "describe", "get", "set", "restart", "alter", "seed", "check", "policy"):
        done = cli(command, "--help")
        assert done.returncode == 0, done.stderr
        assert "usage: pynamodb-autoinc" in done.stdout


def test_create_list_get_set(cli):
    """create-table waits for the table; set and get move one counter; list shows them all."""
    done = cli("create-table")
    assert done.returncode == 0 and f"created table '{cli.table}'" in done.stdout
    assert "exists" in cli("create-table").stdout
    assert cli("set", "41", "--key", "user").returncode == 0
    assert cli("set", "7", "--key", "order").returncode == 0
    assert cli("get", "user").stdout.strip() == "41"
    listing = cli("list").stdout.splitlines()
    assert listing[0].split() == ["KEY", "VALUE"]
    assert [line.split() for line in listing[1:]] == [["order", "7"], ["user", "41"]]
    assert json.loads(cli("list", "--json").stdout) == [{"key": "order", "value": 7}, {"key": "user", "value": 41}]


def put_raw_counter(cli: Cli, key: str, value: Any, **more: Any) -> None:
    """Write a counter item as another tool might: ``value`` is the DynamoDB attribute, e.g. {"N": "1.5"};
    ``more`` are other attributes of the item."""
    import boto3  # type: ignore[import-untyped, unused-ignore]

    client = boto3.client("dynamodb", endpoint_url=cli.host, region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
    client.put_item(TableName=cli.table, Item={"NextKey": {"S": key}, "NextId": value, **more})


def test_list_and_get_show_a_count_with_writer_attributes(cli):
    """A counter of NextId.increment, which carries one attribute per writer, lists and gets as its count."""
    cli("create-table")
    put_raw_counter(cli, "hits#2026-03", {"N": "3"}, NextW_0123456789ab={"N": "1772366400000"},
                    NextW_ba9876543210={"N": "1772366400001"})
    assert json.loads(cli("list", "--json").stdout) == [{"key": "hits#2026-03", "value": 3}]
    done = cli("get", "hits#2026-03")
    assert done.returncode == 0 and done.stdout.strip() == "3"


def test_list_marks_a_fractional_counter_and_lists_the_rest(cli):
    """list shows every counter; one holding a fraction is marked as not an integer, with the fix, and exits 3."""
    cli("create-table")
    cli("set", "41", "--key", "user")
    cli("set", "7", "--key", "order")
    put_raw_counter(cli, "half", {"N": "1.5"})
    done = cli("list")
    assert done.returncode == 3
    assert [line.split() for line in done.stdout.splitlines()[1:]] == [
        ["half", "1.5", "(not", "an", "integer)"], ["order", "7"], ["user", "41"]]
    assert "counter 'half' holds 1.5, not an integer" in done.stderr
    assert "pynamodb-autoinc set N --key half" in done.stderr


def test_list_json_marks_a_fractional_counter(cli):
    """list --json gives a counter holding a fraction no value, its stored attribute and the problem."""
    cli("create-table")
    cli("set", "7", "--key", "order")
    put_raw_counter(cli, "half", {"N": "1.5"})
    done = cli("list", "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout) == [
        {"key": "half", "value": None, "stored": {"N": "1.5"}, "problem": "not an integer"},
        {"key": "order", "value": 7},
    ]


def test_errors_exit_non_zero(cli):
    """A missing counter, a missing table and a bad model name each exit 1 with a message; bad usage exits 2."""
    missing_table = cli("get", "user")
    assert missing_table.returncode == 1 and "does not exist; create it with" in missing_table.stderr
    cli("create-table")
    missing = cli("get", "nobody")
    assert missing.returncode == 1 and "counter 'nobody' has no value yet" in missing.stderr
    bad_model = cli("seed", "--model", "no_such_module:User")
    assert bad_model.returncode == 1 and "cannot import 'no_such_module:User'" in bad_model.stderr
    assert cli("frobnicate").returncode == 2


def test_missing_counter_table_names_the_command_that_creates_it(cli):
    """A counter table that does not exist is an error naming the create-table command for it."""
    done = cli("get", "user")
    assert done.returncode == 1
    assert f"counter table '{cli.table}' at {cli.host} does not exist" in done.stderr
    assert f"--table {cli.table} create-table`" in done.stderr


def test_missing_model_table_is_named(cli):
    """seed on a model whose table does not exist names the model, the table and the endpoint."""
    done = cli("seed", "--model", "tests.cli_models:User", table=False)
    assert done.returncode == 1
    assert f"User's table '{cli.prefix}-users' at {cli.host} does not exist" in done.stderr


def test_get_names_the_command_that_fixes_a_fractional_counter(cli):
    """get on a counter holding a fraction says it is not an integer and how to set it from the command line."""
    cli("create-table")
    put_raw_counter(cli, "half", {"N": "1.5"})
    done = cli("get", "half")
    assert done.returncode == 1
    assert "not an integer" in done.stderr and "`pynamodb-autoinc set N --key half`" in done.stderr


def test_scoped_model_alone_names_no_counter(cli):
    """get --model on a model with one counter per scope value asks for the key and shows its form."""
    done = cli("get", "--model", "tests.cli_models:Issue", table=False)
    assert done.returncode == 1
    assert "keeps one counter per project" in done.stderr and f"'{cli.prefix}-issues#<project>'" in done.stderr


def test_check_refuses_a_model_numbered_per_period():
    """check refuses a model whose IDs restart each period, since it cannot tell their sequences apart."""
    done = Cli("http://127.0.0.1:9")("check", "--model", "tests.cli_models:Receipt", table=False)
    assert done.returncode == 1
    assert "Receipt numbers its IDs per period (Meta.autoinc_period = 'year')" in done.stderr


def test_segments_must_be_positive():
    """--segments 0 is bad usage (exit 2), not a failed scan."""
    done = Cli("http://127.0.0.1:9")("check", "--model", "tests.cli_models:User", "--segments", "0", table=False)
    assert done.returncode == 2 and "--segments: must be 1 or more, not 0" in done.stderr


def test_unreachable_endpoint_names_the_fix():
    """An endpoint nobody answers on is an error that says to check --host and the server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = Cli(f"http://127.0.0.1:{port}")("get", "user")
    assert done.returncode == 1
    assert "Could not connect" in done.stderr and "check the endpoint (--host" in done.stderr


def seed_users(cli: Cli, ids: List[Any]) -> Any:
    models = cli.models()
    models.User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    with models.User.batch_write() as batch:
        for i in ids:
            if isinstance(i, int):
                batch.save(models.User(id=i, name=f"u{i}"))
    for i in ids:  # an ID no save accepts (2.5): stored as another program would have stored it
        if not isinstance(i, int):
            models.User._get_connection().put_item(str(i), attributes={"name": {"S": f"u{i}"}})
    return models


def test_seed_raises_the_counter_only(cli):
    """seed sets the counter to the largest stored ID, and never lowers it on a re-run."""
    models = seed_users(cli, [3, 17, 5])
    cli("create-table", table=False)
    done = cli("seed", "--model", "tests.cli_models:User", table=False)
    assert done.returncode == 0, done.stderr
    assert f"{cli.prefix}-user: raised to 17" in done.stdout
    again = cli("seed", "--model", "tests.cli_models:User", table=False)
    assert f"{cli.prefix}-user: already at or above 17" in again.stdout
    user = models.User(name="next")
    user.save()
    assert user.id == 18


def test_seed_writes_to_the_table_named_by_table(cli):
    """seed with --table moves the counter in that table, as get and set do."""
    seed_users(cli, [3, 17, 5])
    cli("create-table")
    done = cli("seed", "--model", "tests.cli_models:User")
    assert done.returncode == 0, done.stderr
    assert cli("get", f"{cli.prefix}-user").stdout.strip() == "17"


def test_set_refuses_to_go_below_stored_ids(cli):
    """set with --model refuses a value below the largest stored ID unless --force."""
    seed_users(cli, [1, 2, 9])
    cli("create-table", table=False)
    refused = cli("set", "4", "--model", "tests.cli_models:User", table=False)
    assert refused.returncode == 1
    assert "already stores id=9" in refused.stderr and "Use --force" in refused.stderr
    forced = cli("set", "4", "--model", "tests.cli_models:User", "--force", table=False)
    assert forced.returncode == 0
    assert cli("get", "--model", "tests.cli_models:User", table=False).stdout.strip() == "4"


def seed_countdown(cli: Cli, ids: List[int]) -> Any:
    """Store Countdown items with these IDs (100, 95, 90, ... is its sequence) and create the counter table."""
    models = cli.models()
    models.Countdown.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    with models.Countdown.batch_write() as batch:
        for i in ids:
            batch.save(models.Countdown(id=i))
    cli("create-table", table=False)
    return models


def test_set_refuses_to_go_above_stored_ids_counting_down(cli):
    """set with --model refuses a value above the smallest stored ID of a descending sequence."""
    seed_countdown(cli, [100, 95, 60])
    refused = cli("set", "70", "--model", "tests.cli_models:Countdown", table=False)
    assert refused.returncode == 1
    assert "counts down (Meta.autoinc_step = -5)" in refused.stderr
    assert "already stores id=60" in refused.stderr and "above that" in refused.stderr
    assert "Set it to 60 or lower" in refused.stderr and "Use --force" in refused.stderr
    assert "has no value yet" in cli("get", "--model", "tests.cli_models:Countdown", table=False).stderr


def test_set_accepts_a_value_below_stored_ids_counting_down(cli):
    """set with --model takes a value at or below the smallest stored ID of a descending sequence."""
    models = seed_countdown(cli, [100, 95, 60])
    done = cli("set", "50", "--model", "tests.cli_models:Countdown", table=False)
    assert done.returncode == 0, done.stderr
    assert cli("get", "--model", "tests.cli_models:Countdown", table=False).stdout.strip() == "50"
    item = models.Countdown()
    item.save()
    assert item.id == 45


def test_seed_lowers_a_descending_counter_to_the_smallest_id(cli):
    """seed moves a descending sequence's counter down to its smallest stored ID, once."""
    models = seed_countdown(cli, [100, 95, 60])
    done = cli("seed", "--model", "tests.cli_models:Countdown", table=False)
    assert done.returncode == 0, done.stderr
    assert f"{cli.prefix}-countdown: lowered to 60" in done.stdout
    again = cli("seed", "--model", "tests.cli_models:Countdown", table=False)
    assert f"{cli.prefix}-countdown: already at or below 60" in again.stdout
    item = models.Countdown()
    item.save()
    assert item.id == 55


def test_seed_never_raises_a_descending_counter(cli):
    """seed leaves a descending counter that is already below the smallest stored ID where it is."""
    seed_countdown(cli, [100, 95, 60])
    assert cli("set", "30", "--model", "tests.cli_models:Countdown", table=False).returncode == 0
    done = cli("seed", "--model", "tests.cli_models:Countdown", table=False)
    assert done.returncode == 0, done.stderr
    assert f"{cli.prefix}-countdown: already at or below 60" in done.stdout
    assert cli("get", "--model", "tests.cli_models:Countdown", table=False).stdout.strip() == "30"


def test_check_reports_holes_and_duplicates(cli):
    """check summarises each counter; holes in a gapless model exit 3."""
    models = cli.models()
    models.Invoice.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for i in (1, 2, 4, 7):
        models.Invoice(id=i).save()
    done = cli("check", "--model", "tests.cli_models:Invoice", table=False)
    assert done.returncode == 3
    row = done.stdout.splitlines()[1].split()
    assert row[:6] == [f"{cli.prefix}-invoices", "4", "1", "7", "0", "3"]
    assert "(first: 3, 5..6)" in done.stdout


def test_check_of_a_gapless_counter_shared_by_two_models_counts_both(cli):
    """Two gapless models numbering one counter together: check of either counts the other's IDs (defined in the
    same module), so they are no holes, and exits 0."""
    models = cli.models()
    cli("create-table", table=False)
    for model in (models.Sale, models.Refund):
        model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for model in (models.Sale, models.Refund, models.Sale, models.Sale, models.Refund):
        model().save()
    done = cli("check", "--model", "tests.cli_models:Sale", "--json", table=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)
    assert row["holes"] == 0 and row["items"] == 5


def test_check_and_seed_leave_out_text_ids_that_are_no_ids_the_library_writes(cli):
    """A model holding its IDs as text counts "3", but not "007" nor "1e3" (other keys than "7" and "1000", set by
    hand): check leaves them out and says so, and seed moves the counter to 3, not to 1000."""
    models = cli.models()
    cli("create-table", table=False)
    models.Code.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for code in ("1", "2", "3", "007", "1e3"):
        models.Code(id=code).save()
    done = cli("check", "--model", "tests.cli_models:Code", "--json", table=False)
    assert "note: 2 items of Code hold no integer id; left out" in done.stderr
    assert [(row["items"], row["max"], row["holes"]) for row in json.loads(done.stdout)] == [(3, 3, 0)]
    done = cli("seed", "--model", "tests.cli_models:Code", table=False)
    assert done.returncode == 0, done.stderr
    assert models.Code.autoinc_options().counter.currval(models.Code.autoinc_options().key) == 3


def test_check_scoped_model_is_clean(cli):
    """check groups a scoped model by counter key; a clean table exits 0."""
    models = cli.models()
    cli("create-table", table=False)
    models.Issue.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for project in "ABA":
        models.Issue(project=project).save()
    done = cli("check", "--model", "tests.cli_models:Issue", "--json", table=False)
    assert done.returncode == 0, done.stderr
    report = {r["key"]: (r["items"], r["max"], r["holes"]) for r in json.loads(done.stdout)}
    assert report == {f"{cli.prefix}-issues#A": (2, 2, 0), f"{cli.prefix}-issues#B": (1, 1, 0)}


def test_check_notes_items_whose_id_is_not_an_integer(cli):
    """check leaves out an item whose ID is no integer and says so on stderr."""
    seed_users(cli, [1, 2.5, 2])
    done = cli("check", "--model", "tests.cli_models:User", "--json", table=False)
    assert done.returncode == 0, done.stderr
    assert "note: 1 item of User holds no integer id; left out" in done.stderr
    assert [row["items"] for row in json.loads(done.stdout)] == [2]


def test_check_counts_holes_below_a_huge_id_without_building_the_range(cli):
    """check counts the holes below a stored ID of 10**12 arithmetically and names them as one range."""
    seed_users(cli, [1, 2, 10**12])
    done = cli("check", "--model", "tests.cli_models:User", "--json", table=False)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["holes"], row["hole_ranges"]) == (10**12 - 3, [[3, 10**12 - 1]])


def test_check_follows_a_descending_sequence_step_by_step(cli):
    """check looks for holes along start, start + step, ... of a negative step, in sequence order."""
    seed_countdown(cli, [100, 90, 75])
    done = cli("check", "--model", "tests.cli_models:Countdown", table=False)
    assert done.returncode == 0, done.stderr
    row = done.stdout.splitlines()[1].split()
    assert row[:6] == [f"{cli.prefix}-countdown", "3", "75", "100", "0", "3"]
    assert "(first: 95, 85..80)" in done.stdout


def test_check_counts_values_off_the_sequence_apart_from_holes(cli):
    """check counts stored values that are not on the sequence (between steps, or before the start) apart."""
    seed_countdown(cli, [100, 95, 73, 105])
    done = cli("check", "--model", "tests.cli_models:Countdown", "--json", table=False)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert (row["holes"], row["off_sequence"], row["first_off_sequence"]) == (0, 2, [73, 105])


@given(start=st.integers(-20, 20), step=st.integers(-4, 4).filter(bool),
       values=st.lists(st.integers(-60, 60), min_size=1, max_size=8))
def test_check_hole_count_matches_the_sequence_spelled_out(start, step, values):
    """check's arithmetic hole count and ranges agree with listing the sequence value by value."""
    from pynamodb_autoinc._cli_report import audit
    from pynamodb_autoinc.sequence import SequenceOptions

    report = audit(values, SequenceOptions(start, step, -1000, 1000))
    sequence = [start + i * step for i in range(100)]
    on = [v for v in values if v in sequence]
    spelled = sequence[:max(map(sequence.index, on)) + 1] if on else []
    holes = [v for v in spelled if v not in values]
    assert report["holes"] == len(holes)
    named = [v for first, last in report["hole_ranges"] for v in range(first, last + (1 if step > 0 else -1), step)]
    assert named == holes[:len(named)]
    assert report["off_sequence"] == len(values) - len(on)


# -- sequences: describe, restart, alter, set --no-is-called ------------------------------------

def tickets(cli: Cli, saves: int) -> Any:
    """The Ticket model (a CYCLE sequence 1..50) with ``saves`` items saved, and the counter table created."""
    models = cli.models()
    models.Ticket.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    cli("create-table", table=False)
    for _ in range(saves):
        models.Ticket().save()
    return models


def test_describe_shows_each_counters_sequence(cli):
    """describe --json lists key, table, options, last value, values left and models, as pg_sequences does."""
    tickets(cli, 3)
    done = cli("describe", "--json", "--model", "tests.cli_models:Ticket", table=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{
        "key": f"{cli.prefix}-tickets", "table": "NextId", "start": 1, "step": 1, "min": 1, "max": 50,
        "cycle": True, "last_value": 3, "left": 47, "models": ["Ticket"]}]
    table = cli("describe", "--model", "tests.cli_models:Ticket", table=False).stdout.splitlines()
    assert table[0].split() == ["KEY", "TABLE", "START", "STEP", "MIN", "MAX", "CYCLE", "LAST", "LEFT", "MODELS"]
    assert table[1].split() == [f"{cli.prefix}-tickets", "NextId", "1", "1", "1", "50", "yes", "3", "47", "Ticket"]


def test_describe_reports_a_model_disagreeing_with_its_counter(cli):
    """A model whose Meta changed since the counter recorded its options: exit 3, the difference and the fix."""
    tickets(cli, 1)
    done = cli("describe", "--model", "tests.cli_models:BigTicket", table=False)
    assert done.returncode == 3
    assert "max 50 (here 100)" in done.stderr
    assert "pynamodb-autoinc alter --model tests.cli_models:BigTicket" in done.stderr


def test_alter_records_the_changed_options(cli):
    """alter records the model's new options, keeping the counter's value; the changed model then saves."""
    models = tickets(cli, 2)
    big = models.BigTicket()
    with pytest.raises(SequenceMismatchError):
        big.save()
    done = cli("alter", "--model", "tests.cli_models:BigTicket", table=False)
    assert done.returncode == 0, done.stderr
    assert "now runs under start=1 step=1 min=1 max=100 cycle" in done.stdout and "was:" in done.stdout
    big.save()
    assert big.id == 3
    assert cli("describe", "--model", "tests.cli_models:BigTicket", table=False).returncode == 0


def test_restart_refuses_to_hand_out_stored_ids_unless_forced(cli):
    """restart at the start while 1..3 are stored is refused; --with 4 is taken; --force restarts anyway."""
    models = tickets(cli, 3)
    refused = cli("restart", "--model", "tests.cli_models:Ticket", table=False)
    assert refused.returncode == 1
    assert "already stores id=3" in refused.stderr and "--force" in refused.stderr
    done = cli("restart", "--model", "tests.cli_models:Ticket", "--with", "10", table=False)
    assert done.returncode == 0, done.stderr
    ticket = models.Ticket()
    ticket.save()
    assert ticket.id == 10
    forced = cli("restart", "--model", "tests.cli_models:Ticket", "--force", table=False)
    assert forced.returncode == 0, forced.stderr
    assert cli("get", "--model", "tests.cli_models:Ticket", table=False).stdout.strip() == "0"


def test_restart_outside_the_bounds_is_refused(cli):
    """restart --with a value past the maximum: exit 1, the bounds named."""
    tickets(cli, 1)
    done = cli("restart", "--model", "tests.cli_models:Ticket", "--with", "51", table=False)
    assert done.returncode == 1
    assert "out of bounds" in done.stderr and "1..50" in done.stderr


def test_set_no_is_called_makes_the_value_the_next_one(cli):
    """set 20 --no-is-called: the next save gets 20 (PostgreSQL's setval(..., false))."""
    models = tickets(cli, 1)
    done = cli("set", "20", "--no-is-called", "--model", "tests.cli_models:Ticket", table=False)
    assert done.returncode == 0, done.stderr
    ticket = models.Ticket()
    ticket.save()
    assert ticket.id == 20


def test_set_past_the_models_bounds_is_refused(cli):
    """set with --model checks the value against the model's bounds: 51 is past Ticket's maximum 50."""
    tickets(cli, 1)
    done = cli("set", "51", "--model", "tests.cli_models:Ticket", table=False)
    assert done.returncode == 1
    assert "value 51 is out of bounds" in done.stderr
    assert cli("get", "--model", "tests.cli_models:Ticket", table=False).stdout.strip() == "1"


@pytest.mark.modes("fast")
def test_cli_set_refuses_off_subsequence_with_a_custom_start_and_step(make_model, backend, monkeypatch, capsys):
    """start 100, step 5, two regions: us-east-1 numbers 100, 110, ...; set 105 (eu-west-1's) is refused."""
    from tests.test_global_tables import counter_of, run_cli

    table = backend.table_name("user")
    User = region_model(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2], autoinc_start=100,
                      autoinc_min=100, autoinc_step=5)
    user = User()
    user.save()
    assert user.id == 100
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "105", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 1, err
    assert counter_of(User, f"{table}@us-east-1")[0] == 100
    code, _, err = run_cli(monkeypatch, capsys, User, "set", "120", "--model", "MODEL", "--key", f"{table}@us-east-1")
    assert code == 0, err


@pytest.mark.modes("gapless")
def test_cli_check_healthy_region_table_with_custom_start_and_step(make_model, backend, monkeypatch, capsys):
    """check of a healthy table, start 100 step 5, two regions: no holes, exit 0."""
    import json

    from tests.test_global_tables import run_cli

    table = backend.table_name("user")
    User = region_model(make_model, backend, "us-east-1", table, autoinc_regions=REGIONS[:2], autoinc_start=100,
                      autoinc_min=100, autoinc_step=5)
    for _ in range(3):
        User().save()  # 100, 110, 120
    for i in (105, 115):
        User(id=i).save()  # eu-west-1's
    code, out, err = run_cli(monkeypatch, capsys, User, "check", "--model", "MODEL", "--json")
    assert code == 0, err
    rows = {r["key"]: (r["items"], r["holes"], r["off_sequence"]) for r in json.loads(out)}
    assert rows == {f"{table}@us-east-1": (3, 0, 0), f"{table}@eu-west-1": (2, 0, 0)}


#: The model ``test_check_reads_ids_stored_under_a_dotted_name`` hands the command line by name.
Dotted: Any = None


@pytest.mark.modes()
def test_check_reads_ids_stored_under_a_dotted_name(backend, capsys):
    """``pynamodb-autoinc check`` counts the stored IDs of a model whose ID attribute is stored under a
    dotted name (``attr_name="ticket.no"``): the dot is part of the name, so no item is left out as one
    without an integer ID."""
    global Dotted
    Dotted = auto_model(backend, "Dotted", {"key": UnicodeAttribute(hash_key=True),
                                            "number": NumberAttribute(null=True, attr_name="ticket.no")},
                        counter_table=False, autoinc_attribute="number", autoinc_gapless=True)
    backend.counter(model=Dotted)
    for key in "abc":
        Dotted(key=key).save()
    host = ["--host", backend.meta["host"]] if "host" in backend.meta else []
    code = cli_module.main([*host, "--region", "us-east-1", "check", "--model", f"{__name__}:Dotted", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [(r["items"], r["max"], r["holes"]) for r in json.loads(out)] == [(3, 3, 0)]


class Plain(Model):
    """A model without AutoIncrementMixin: it keeps no counter."""

    class Meta:
        table_name = "plain"
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


# -- in this process: repairs of broken counters, and dry runs that agree with the command ----------------------

def run(capsys: Any, *argv: str) -> Tuple[Any, str, str]:
    """The command line in this process: (exit status, stdout, stderr); bad usage exits through SystemExit."""
    from pynamodb_autoinc import cli as cli_module

    code: Any
    try:
        code = cli_module.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def reach(backend: Any) -> List[str]:
    """The global options that reach the test's backend."""
    host = backend.meta.get("host")
    return [*(["--host", host] if host else []), "--region", "us-east-1"]


def cycling(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A model cycling through 1..50, importable as tests.test_cli:Cycling."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    monkeypatch.setattr(sys.modules[__name__], "Cycling", model, raising=False)
    return model


def checked(capsys: Any, backend: Any) -> Any:
    """`check --json` of tests.test_cli:Cycling: (exit status, the one counter's row)."""
    code, out, err = run(capsys, *reach(backend), "check", "--model", f"{__name__}:Cycling", "--json")
    assert code in (0, 3), err
    rows = json.loads(out)
    assert len(rows) == 1
    return code, rows[0]


@pytest.mark.parametrize("option", ["--read-capacity", "--write-capacity"])
def test_create_table_refuses_a_capacity_below_one(capsys, option):
    """create-table --read-capacity 0 (or --write-capacity -3) is bad usage, exit 2, before any request."""
    for value in ("0", "-3"):
        code, _, err = run(capsys, "--host", f"http://127.0.0.1:{closed_port()}", "create-table",
                           "--billing-mode", "PROVISIONED", option, value)
        assert code == 2 and f"{option}: must be 1 or more, not {int(value)}" in err


def test_a_host_that_is_no_url_names_the_fix(capsys, credentials):
    """--host notaurl: exit 1, one line saying to give --host as a URL, no traceback."""
    code, _, err = run(capsys, "--host", "notaurl", "--region", "us-east-1", "get", "k")
    assert code == 1
    assert "Invalid endpoint: notaurl" in err and "give --host (or the model's Meta.host) as a URL" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["get"], ["set", "5"], ["seed"], ["check"], ["describe"], ["alter"],
                                  ["restart"]], ids=lambda argv: argv[0])
def test_a_model_without_autoinc_is_refused(capsys, monkeypatch, argv):
    """A counter command given a model that does not use AutoIncrementMixin exits 1 naming it, before any
    request (rather than reading a counter named after its table)."""
    monkeypatch.setattr(sys.modules[__name__], "PlainModel", Plain, raising=False)
    code, _, err = run(capsys, "--host", f"http://127.0.0.1:{closed_port()}", *argv, "--model",
                       f"{__name__}:PlainModel")
    assert code == 1, err
    assert "Plain (tests.test_cli:PlainModel) does not use AutoIncrementMixin" in err


def test_policy_still_takes_a_model_without_autoinc(capsys, monkeypatch):
    """policy prints the policy of a plain model (PutItem on its table)."""
    monkeypatch.setattr(sys.modules[__name__], "PlainModel", Plain, raising=False)
    code, out, err = run(capsys, "policy", "--model", f"{__name__}:PlainModel")
    assert code == 0, err
    assert '"dynamodb:PutItem"' in out


def test_set_dry_run_refuses_no_is_called_without_recorded_options(backend, capsys, credentials):
    """set --no-is-called --dry-run on a counter recording no options is refused (exit 1) as set is, since
    neither can tell the step; nothing is written."""
    counter = backend.counter()
    counter.setval("plain", 3)
    for dry in (["--dry-run"], []):
        code, out, err = run(capsys, *reach(backend), "set", "5", "--key", "plain", "--no-is-called", *dry)
        assert code == 1 and "cannot tell" in err and "--model" in err, (dry, out, err)
    assert counter.currval("plain") == 3


def test_set_dry_run_refuses_a_value_outside_the_recorded_bounds(backend, capsys, credentials):
    """set --dry-run of a value past the bounds the counter records is refused as set refuses it."""
    counter = backend.counter()
    counter.setval("tickets", 3, sequence=SequenceOptions(1, 1, 1, 50))
    for dry in (["--dry-run"], []):
        code, _, err = run(capsys, *reach(backend), "set", "60", "--key", "tickets", *dry)
        assert code == 1 and "value 60 is out of bounds for sequence 'tickets' (1..50)" in err, (dry, err)
    assert counter.currval("tickets") == 3


def test_set_dry_run_no_is_called_shows_the_recorded_step(backend, capsys, credentials):
    """set 40 --no-is-called --dry-run on a counter recording step 1 would store 39; nothing is written."""
    counter = backend.counter()
    counter.setval("tickets", 3, sequence=SequenceOptions(1, 1, 1, 50))
    code, out, err = run(capsys, *reach(backend), "set", "40", "--key", "tickets", "--no-is-called", "--dry-run")
    assert code == 0, err
    assert "value 3 -> 39" in out and "the next value would be 40" in out
    assert counter.currval("tickets") == 3


@pytest.mark.modes("fast")
def test_seed_leaves_a_wrapped_cycling_counter_where_it_is(make_model, monkeypatch, capsys, backend, credentials):
    """seed does not move a cycling counter that has come round (at 3, items 41..50 and 1..3 stored) to the
    largest stored ID, 50, from where the next save would wrap onto the stored 1; dry run or not, the counter
    stays and the next save takes 4."""
    model = cycling(make_model, monkeypatch)
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 40, sequence=opts.sequence)
    for _ in range(13):
        model().save()
    for dry in (["--dry-run"], []):
        code, out, err = run(capsys, *reach(backend), "seed", "--model", f"{__name__}:Cycling", *dry)
        assert code == 0, err
        assert f"{opts.key}: left at 3: the sequence cycles" in out and "set N --model" in out
        assert opts.counter.currval(opts.key) == 3
    item = model()
    item.save()
    assert item.id == 4


@pytest.mark.modes("fast")
def test_seed_still_seeds_a_new_cycling_counter(make_model, monkeypatch, capsys, backend, credentials):
    """seed sets a cycling model's counter that holds no value yet to the largest stored ID."""
    model = cycling(make_model, monkeypatch)
    with model.batch_write() as batch:
        for i in (3, 17, 5):
            batch.save(model(id=i))
    opts = model.autoinc_options()
    code, out, err = run(capsys, *reach(backend), "seed", "--model", f"{__name__}:Cycling")
    assert code == 0, err
    assert f"{opts.key}: raised to 17" in out and opts.counter.currval(opts.key) == 17


@pytest.mark.modes("fast")
def test_seed_refuses_to_move_a_counter_outside_the_bounds(make_model, monkeypatch, capsys, backend, credentials):
    """A stored ID past Meta.autoinc_max (saved with its ID given) is not a place for the counter: seed exits 1
    naming the value, the bounds and the fix, and moves no counter (the next save still takes 4)."""
    model = make_model("Bounded", autoinc_max=50)
    monkeypatch.setattr(sys.modules[__name__], "Bounded", model, raising=False)
    for _ in range(3):
        model().save()
    model(id=70).save()
    opts = model.autoinc_options()
    for dry in (["--dry-run"], []):
        code, out, err = run(capsys, *reach(backend), "seed", "--model", f"{__name__}:Bounded", *dry)
        assert code == 1, out
        assert f"id values outside its sequence's bounds (1..50): 70 under counter {opts.key!r}" in err
        assert "autoinc_max" in err and "nothing was moved" in err
    assert opts.counter.currval(opts.key) == 3
    item = model()
    item.save()
    assert item.id == 4


@pytest.mark.modes("gapless")
def test_check_reads_a_wrapped_cycling_sequence_as_a_ring(make_model, monkeypatch, capsys, backend, credentials):
    """check on a gapless sequence cycling through 1..50 that came round (at 3, items 41..50 and 1..3 stored)
    finds no holes: 4..40 are the values the next pass takes, not values skipped; exit 0."""
    model = cycling(make_model, monkeypatch)
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 40, sequence=opts.sequence)
    for _ in range(13):
        model().save()
    code, row = checked(capsys, backend)
    assert (code, row["items"], row["holes"], row["off_sequence"]) == (0, 13, 0, 0)


@pytest.mark.modes("gapless")
def test_check_finds_holes_across_a_cycling_sequences_wrap(make_model, monkeypatch, capsys, backend, credentials):
    """Within a wrapped ring, a missing item is a hole, also where the ring wraps: with 45, 50 and 1 deleted
    from 41..50, 1..3, check counts 3 holes, shows them in sequence order (45, then 50..1) and exits 3."""
    model = cycling(make_model, monkeypatch)
    opts = model.autoinc_options()
    opts.counter.setval(opts.key, 40, sequence=opts.sequence)
    for _ in range(13):
        model().save()
    for gone in (45, 50, 1):
        model.get(gone).delete()
    code, row = checked(capsys, backend)
    assert (code, row["holes"], row["hole_ranges"]) == (3, 3, [[45, 45], [50, 1]])


@pytest.mark.modes("gapless")
def test_check_audits_a_cycling_sequence_that_has_not_come_round_as_before(make_model, monkeypatch, capsys, backend,
                                                                          credentials):
    """A cycling sequence that has not come round yet is audited as one that does not cycle: at 10 with items
    1..10 it has no holes; with 5 deleted it has one (exit 3); with 10 deleted too, the furthest stored item
    is 9, so 10 is not counted (as without a cycle)."""
    model = cycling(make_model, monkeypatch)
    for _ in range(10):
        model().save()
    assert checked(capsys, backend)[1]["holes"] == 0
    model.get(5).delete()
    code, row = checked(capsys, backend)
    assert (code, row["holes"], row["hole_ranges"]) == (3, 1, [[5, 5]])
    model.get(10).delete()
    assert checked(capsys, backend)[1]["hole_ranges"] == [[5, 5]]
def importable(monkeypatch: pytest.MonkeyPatch, name: str, model: Any) -> str:
    """``model`` importable as ``tests.test_cli:<name>``; returns that spec."""
    monkeypatch.setattr(sys.modules[__name__], name, model, raising=False)
    return f"{__name__}:{name}"


def counter_item(model: Any) -> Dict[str, Any]:
    """The model's counter item as stored (its key attribute left out)."""
    opts = model.autoinc_options()
    item = opts.counter._get_connection().get_item(*opts.counter._item_key(opts.key), consistent_read=True)
    return {name: value for name, value in item.get("Item", {}).items() if name != "NextKey"}


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, os.environ.get(name, "local"))


REPAIRS = {
    "set": ["set", "10", "--model"],
    "set --no-is-called": ["set", "10", "--no-is-called", "--model"],
    "restart": ["restart", "--with", "10", "--model"],
}

#: The broken counters a dry run is compared on: one of each kind.
SOME_BROKEN = ["a fraction", "a string", "a value past the maximum", "no value", "options held as a number"]


@pytest.mark.modes("fast")
@pytest.mark.parametrize("repair", ["set", "restart"])
@pytest.mark.parametrize("state", sorted(BROKEN))
def test_set_and_restart_repair_a_counter_in_any_state(make_model, monkeypatch, capsys, backend, aws_credentials,
                                                       state, repair):
    """set and restart overwrite whatever a broken counter holds (a fraction, a string, a value outside the
    bounds or of 40 digits, junk beside it, options that are no sequence): exit 0, and the next save takes the
    value they announced."""
    model = broken(make_model, state)
    spec = importable(monkeypatch, "Broken", model)
    code, out, err = run(capsys, *reach(backend), *REPAIRS[repair], spec)
    assert code == 0, err
    following = int(re.findall(r"-?\d+", out)[-1]) if "next value" in out else 13
    item = model()
    item.save()
    assert item.id == following == (13 if repair == "set" else 10)


@pytest.mark.modes("fast")
@pytest.mark.parametrize("command", [*sorted(REPAIRS), "alter"])
@pytest.mark.parametrize("state", SOME_BROKEN)
def test_a_dry_run_shows_what_the_command_then_does(make_model, monkeypatch, capsys, backend, aws_credentials,
                                                    state, command):
    """--dry-run of set, restart and alter on a counter in any state says what the command then does: the
    same refusal (exit status and message), or the counter's value and options the command leaves."""
    model = broken(make_model, state)
    spec = importable(monkeypatch, "Broken", model)
    argv = REPAIRS.get(command, ["alter", "--model"])
    before = counter_item(model)
    dry = run(capsys, *reach(backend), *argv, spec, "--dry-run")
    assert counter_item(model) == before, "the dry run wrote"
    done = run(capsys, *reach(backend), *argv, spec)
    assert dry[0] == done[0], (dry, done)
    if done[0] != 0:
        assert dry[2] == done[2]
        assert counter_item(model) == before
        return
    shown = re.search(r"value (.+?) -> (\S+), options (.+) -> (.+?)(; the next value would be (-?\d+))?\. Nothing",
                      dry[1])
    assert shown, dry[1]
    after = counter_item(model)
    assert shown.group(2) == (after["NextId"]["N"] if "NextId" in after else "none")
    assert shown.group(4) == after["NextOptions"]["S"]
    if shown.group(6) is not None:
        item = model()
        item.save()
        assert item.id == int(shown.group(6))


@pytest.mark.modes("fast")
@pytest.mark.parametrize("state", sorted(BROKEN))
def test_seed_dry_run_shows_what_seed_then_does(make_model, monkeypatch, capsys, backend, aws_credentials, state):
    """seed --dry-run on a counter in any state, with IDs 1 and 4 stored, says what seed then does: the same
    refusal, or the move (or stay) seed then makes, and where the counter then stands."""
    model = broken(make_model, state)
    spec = importable(monkeypatch, "Broken", model)
    with model.batch_write() as batch:
        for i in (1, 4):
            batch.save(model(id=i))
    before = counter_item(model)
    dry = run(capsys, *reach(backend), "seed", "--model", spec, "--dry-run")
    assert counter_item(model) == before, "the dry run wrote"
    done = run(capsys, *reach(backend), "seed", "--model", spec)
    assert dry[0] == done[0], (dry, done)
    if done[0] != 0:
        assert dry[2] == done[2]
        return
    key = model.autoinc_options().key
    would = re.search(rf"dry run: {key}: would (be raised to 4|stay at (\S+),)", dry[1])
    assert would, dry[1]
    after = counter_item(model)
    if would.group(1).startswith("be raised"):
        assert f"{key}: raised to 4" in done[1] and after["NextId"] == {"N": "4"}
    else:
        assert f"{key}: already at or above 4" in done[1] and after["NextId"]["N"] == would.group(2)


def two_orders(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> Tuple[Any, Any]:
    """Order (counter key ``orders``, up to 50) and EuOrder, another model whose
    counter key is ``orders#eu`` (up to 100), one item of each saved; importable from this module."""
    table = f"orders-{uuid.uuid4().hex[:8]}"
    Order = make_model("Order", autoinc_key="orders", autoinc_max=50, table_name=table)
    EuOrder = make_model("EuOrder", autoinc_key="orders#eu", autoinc_max=100, table_name=f"{table}-eu")
    Order().save()
    EuOrder().save()
    importable(monkeypatch, "Order", Order)
    importable(monkeypatch, "EuOrder", EuOrder)
    return Order, EuOrder


@pytest.mark.modes("fast")
def test_describe_takes_only_the_models_own_counter(make_model, monkeypatch, capsys, backend, aws_credentials):
    """describe --model Order shows counter 'orders' alone, not EuOrder's 'orders#eu' (whose key merely starts
    with Order's), and finds no disagreement: exit 0."""
    two_orders(make_model, monkeypatch)
    code, out, err = run(capsys, *reach(backend), "describe", "--model", f"{__name__}:Order", "--json")
    assert code == 0, err
    assert [(row["key"], row["max"], row["models"]) for row in json.loads(out)] == [("orders", 50, ["Order"])]


@pytest.mark.modes("fast")
def test_describe_of_a_scoped_model_takes_one_part_per_scope(make_model, monkeypatch, capsys, backend,
                                                             aws_credentials):
    """A model numbered per region_code keeps 'orders#<region_code>': describe takes 'orders#x', and leaves
    'orders' (no scope value) and 'orders#x#y' (two parts) alone."""
    Order = make_model("Order", autoinc_key="orders", autoinc_scope="region_code", autoinc_attribute="id",
                       region_code=UnicodeAttribute(hash_key=True), id=NumberAttribute(range_key=True))
    Order(region_code="x").save()
    counter = Order.autoinc_options().counter
    for other in ("orders", "orders#x#y"):
        counter.setval(other, 3)
    code, out, err = run(capsys, *reach(backend), "describe", "--model", importable(monkeypatch, "Order", Order),
                         "--json")
    assert code == 0, err
    assert [row["key"] for row in json.loads(out)] == ["orders#x"]


@pytest.mark.modes("fast")
@pytest.mark.parametrize("command", [["alter"], ["restart", "--force"], ["set", "3", "--force"], ["get"]])
def test_a_key_that_is_not_the_models_is_refused(make_model, monkeypatch, capsys, backend, aws_credentials,
                                                 command):
    """--model Order --key orders#eu names EuOrder's counter: alter, restart, set and get refuse it (exit 1),
    naming Order's key, and EuOrder's counter keeps its options and value."""
    _, EuOrder = two_orders(make_model, monkeypatch)
    counter = EuOrder.autoinc_options().counter
    before = counter.read("orders#eu")
    key = ["orders#eu"] if command == ["get"] else ["--key", "orders#eu"]
    code, _, err = run(capsys, *reach(backend), *command, "--model", f"{__name__}:Order", *key)
    assert code == 1
    assert "counter 'orders#eu' is not one of Order's, whose counter keys are 'orders'" in err
    assert counter.read("orders#eu") == before


# -- messages, --verbose, and the answers' check ---------------------------------------------------------------


@pytest.mark.backends("moto")
def test_the_fix_for_a_missing_counter_table_at_a_models_host_works(moto_server, capsys, aws_credentials):
    """A model with Meta.host whose counter table is missing: the save's CounterTableMissingError names the
    command that creates it at that host (NextId.create_table would look for a region, not the host), and
    running that command lets the save through."""
    from pynamodb_autoinc import AutoIncrementMixin, NextId
    from pynamodb_autoinc.exceptions import CounterTableMissingError

    table = f"counters-{uuid.uuid4().hex[:8]}"
    counter = type("Counters", (NextId,), {"Meta": type("Meta", (), {"table_name": table})})
    meta = type("Meta", (), {"table_name": f"hosted-{uuid.uuid4().hex[:8]}", "host": moto_server,
                             "region": "us-east-1", "autoinc_counter": counter})
    model: Any = type("Hosted", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True)})
    model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    with pytest.raises(CounterTableMissingError) as missing:
        model().save()
    message = str(missing.value)
    assert "NextId.create_table_for(Model)" in message and f"{counter.__name__}.create_table(" not in message
    command = re.search(r"`pynamodb-autoinc (create-table)` \(with ([^)]*)\)", message)
    assert command, message
    code, _, err = run(capsys, *command.group(2).split(), command.group(1))
    assert code == 0, err
    item = model()
    item.save()
    assert item.id == 1


@pytest.mark.backends()  # no request is answered
def test_list_without_an_endpoint_names_region_and_host(monkeypatch, capsys, aws_credentials):
    """list with no region and no host anywhere: exit 1, naming both --region and --host."""
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    code, _, err = run(capsys, "list")
    assert code == 1
    assert "--region" in err and "--host" in err


@pytest.mark.modes("fast")
@pytest.mark.parametrize("flag, levels", [([], set()), (["-v"], {"INFO"}), (["-vv"], {"INFO", "DEBUG"}),
                                          (["--verbose"], {"INFO"})], ids=["quiet", "-v", "-vv", "--verbose"])
def test_verbose_shows_the_librarys_log(make_model, monkeypatch, capsys, backend, aws_credentials, flag, levels):
    """-v shows the library's log at INFO on stderr (what the command changed), -vv at DEBUG too; without it
    stderr stays empty. The option may also follow the command."""
    model = make_model("Item")
    spec = importable(monkeypatch, "Logged", model)
    for where in ("before", "after"):
        argv = [*reach(backend), *flag, "set", "5", "--model", spec] if where == "before" else \
            [*reach(backend), "set", "5", "--model", spec, *flag]
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        shown = {line.split()[0] for line in err.splitlines()}
        assert shown == levels, (where, err)
        if levels:
            assert f"INFO pynamodb_autoinc.counter: counter '{model.autoinc_options().key}'" in err
    assert logging.getLogger("pynamodb_autoinc").handlers == []


@pytest.mark.modes("fast")
def test_a_command_replaces_nothing_of_pynamodb_and_leaves_no_handler(make_model, monkeypatch, capsys, backend,
                                                                      aws_credentials):
    """While a command runs, pynamodb.connection.base.get_session is PynamoDB's own; after it, the model's and
    its counter's clients carry no handler of the command's."""
    import pynamodb.connection.base as base
    from pynamodb.signals import pre_dynamodb_send

    from pynamodb_autoinc import cli as cli_module

    model = make_model("Item")
    spec = importable(monkeypatch, "Checked", model)
    original, seen = base.get_session, []

    def record(*_: Any, **__: Any) -> None:
        seen.append(base.get_session is original)

    with pre_dynamodb_send.connected_to(record):
        code, _, err = run(capsys, *reach(backend), "seed", "--model", spec)
    assert code == 0, err
    assert seen and all(seen)
    for table in (model, model.autoinc_options().counter):
        events = table._get_connection().connection.client.meta.events
        handlers = list(events._emitter._handlers.prefix_search("before-parse.dynamodb.Scan"))
        assert cli_module._check_answer not in handlers


@pytest.mark.modes("fast")
def test_describe_of_an_in_table_counter_whose_table_is_missing_names_the_models_table(make_model, monkeypatch,
                                                                                    capsys, backend, aws_credentials):
    """describe --model of a model keeping its counters in its own table (autoinc_counter_in_table), that table
    missing, names the model's table and does not offer create-table, which would make a counter table there."""
    Ledger = make_model("Ledger", create=False, pk=UnicodeAttribute(hash_key=True),
                        num=NumberAttribute(null=True), autoinc_attribute="num", autoinc_counter_in_table=True)
    code, _, err = run(capsys, *reach(backend), "describe", "--model", importable(monkeypatch, "Ledger", Ledger))
    assert code != 0
    assert f"Ledger's table {Ledger.Meta.table_name!r}" in err
    assert "create-table" not in err


@pytest.mark.modes("fast")
@pytest.mark.parametrize("state", SOME_BROKEN[:2])
def test_describe_lists_the_healthy_counters_and_names_a_broken_one(make_model, monkeypatch, capsys, backend,
                                                                    aws_credentials, state):
    """describe beside a broken counter still lists every other counter, names the broken one with its fix on
    stderr, and exits 3."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    opts.counter.setval("healthy", 7)
    code, out, err = run(capsys, *reach(backend), "--table", opts.counter.Meta.table_name, "describe", "--json")
    assert code == 3, err
    assert [(row["key"], row["last_value"]) for row in json.loads(out)] == [("healthy", 7)]
    assert repr(opts.key) in err and "pynamodb-autoinc set" in err
