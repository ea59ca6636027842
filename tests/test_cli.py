"""The pynamodb-autoinc command line, end to end: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator, List

import pytest

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
    """moto's server or DynamoDB Local, as ``--backend`` chooses (conftest parametrizes ``backend_name``)."""
    if backend_name == "moto":
        return str(request.getfixturevalue("moto_server"))
    return str(request.getfixturevalue("dynamodb_local").url)


class Cli:
    """Runs ``python -m pynamodb_autoinc`` against one endpoint with a fresh set of table names."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.prefix = f"cli-{uuid.uuid4().hex[:8]}"
        self.table = f"{self.prefix}-NextId"
        self.env = {**os.environ, "CLI_TEST_HOST": host, "CLI_TEST_PREFIX": self.prefix,
                    "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1"}

    def __call__(self, *args: str, table: bool = True) -> subprocess.CompletedProcess:
        # the installed console script, as an operator runs it (it imports models from the current directory)
        script = Path(sys.executable).with_name("pynamodb-autoinc")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "pynamodb_autoinc"]
        argv = [*command, "--host", self.host, "--region", "us-east-1"]
        if table:
            argv += ["--table", self.table]
        return subprocess.run([*argv, *args], capture_output=True, text=True, env=self.env, cwd=ROOT, timeout=300)

    def models(self) -> Any:
        """The tests.cli_models module as the subprocess sees it, imported here with the same settings."""
        import importlib

        os.environ.update(CLI_TEST_HOST=self.host, CLI_TEST_PREFIX=self.prefix)
        import tests.cli_models as module

        return importlib.reload(module)


@pytest.fixture
def cli(endpoint: str) -> Cli:
    return Cli(endpoint)


def test_help_for_every_command(cli):
    """Each subcommand answers --help with exit 0."""
    for command in ("create-table", "list", "get", "set", "seed", "check"):
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


def test_errors_exit_non_zero(cli):
    """A missing counter, a missing table and a bad model name each exit 1 with a message; bad usage exits 2."""
    missing_table = cli("get", "user")
    assert missing_table.returncode == 1 and "does not exist; create it with" in missing_table.stderr
    cli("create-table")
    missing = cli("get", "nobody")
    assert missing.returncode == 1 and "counter 'nobody' has no value yet" in missing.stderr
    bad_model = cli("seed", "no_such_module:User")
    assert bad_model.returncode == 1 and "cannot import 'no_such_module:User'" in bad_model.stderr
    assert cli("frobnicate").returncode == 2


def seed_users(cli: Cli, ids: List[int]) -> Any:
    models = cli.models()
    models.User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    with models.User.batch_write() as batch:
        for i in ids:
            batch.save(models.User(id=i, name=f"u{i}"))
    return models


def test_seed_raises_the_counter_only(cli):
    """seed sets the counter to the largest stored ID, and never lowers it on a re-run."""
    models = seed_users(cli, [3, 17, 5])
    cli("create-table", table=False)
    done = cli("seed", "tests.cli_models:User", table=False)
    assert done.returncode == 0, done.stderr
    assert f"{cli.prefix}-user: raised to 17" in done.stdout
    again = cli("seed", "tests.cli_models:User", table=False)
    assert f"{cli.prefix}-user: already at or above 17" in again.stdout
    user = models.User(name="next")
    user.save()
    assert user.id == 18


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


def test_check_reports_holes_and_duplicates(cli):
    """check summarises each counter; holes in a gapless model exit 3."""
    models = cli.models()
    models.Invoice.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for i in (1, 2, 4, 7):
        models.Invoice(id=i).save()
    done = cli("check", "tests.cli_models:Invoice", table=False)
    assert done.returncode == 3
    row = done.stdout.splitlines()[1].split()
    assert row[:6] == [f"{cli.prefix}-invoices", "4", "1", "7", "0", "3"]
    assert "(first: 3, 5, 6)" in done.stdout


def test_check_scoped_model_is_clean(cli):
    """check groups a scoped model by counter key; a clean table exits 0."""
    models = cli.models()
    cli("create-table", table=False)
    models.Issue.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    for project in "ABA":
        models.Issue(project=project).save()
    done = cli("check", "tests.cli_models:Issue", "--json", table=False)
    assert done.returncode == 0, done.stderr
    report = {r["key"]: (r["items"], r["max"], r["holes"]) for r in json.loads(done.stdout)}
    assert report == {f"{cli.prefix}-issues#A": (2, 2, 0), f"{cli.prefix}-issues#B": (1, 1, 0)}
