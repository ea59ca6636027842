"""The command line's release changes: --version, global options anywhere, --model everywhere, --dry-run,
a clean error for an endpoint that is not DynamoDB, plain-text help, and the bound on --segments."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, Iterator, List

import pytest
from pynamodb.attributes import NumberAttribute

import pynamodb_autoinc
from tests import cli_runner, test_cli
from tests.test_cli import ROOT, Cli, command, seed_users, tickets

# the command-line fixtures of tests/test_cli.py: moto's server (or DynamoDB Local), and a Cli on it
moto_server = test_cli.moto_server
endpoint = test_cli.endpoint
cli = test_cli.cli

COMMANDS = ("create-table", "list", "describe", "get", "set", "restart", "alter", "seed", "check", "policy")


def raw_counters(runner: Cli, table: str = "NextId") -> List[Dict[str, Any]]:
    """Every counter item of this test (its keys start with its prefix), as stored: value and options alike."""
    import boto3  # type: ignore[import-untyped, unused-ignore]

    client = boto3.client("dynamodb", endpoint_url=runner.host, region_name="us-east-1",
                          aws_access_key_id="local", aws_secret_access_key="local")
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    mine = [item for item in items if item["NextKey"]["S"].startswith(runner.prefix)]
    return sorted(mine, key=lambda item: item["NextKey"]["S"])


def run(runner: Cli, *argv: str) -> subprocess.CompletedProcess:
    """Run the command line with exactly ``argv`` (no options put before the command)."""
    return cli_runner.run(command, argv, env=runner.env, cwd=ROOT)


# -- --version, help ------------------------------------------------------------------------------------------


def test_version_prints_the_package_version():
    """--version prints `pynamodb-autoinc <version>` from pynamodb_autoinc.__version__ and exits 0."""
    done = run(Cli("http://127.0.0.1:9"), "--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"pynamodb-autoinc {pynamodb_autoinc.__version__}"


@pytest.mark.parametrize("argv", [[], *[[c] for c in COMMANDS]], ids=["main", *COMMANDS])
def test_help_is_plain_text(argv):
    """No help page shows reStructuredText markup (``literal`` or :role:`target`)."""
    done = run(Cli("http://127.0.0.1:9"), *argv, "--help")
    assert done.returncode == 0, done.stderr
    assert "``" not in done.stdout and ":class:" not in done.stdout and ":func:" not in done.stdout


def test_help_names_the_model_with_the_option():
    """seed's help shows --model, and calls the positional model deprecated."""
    done = run(Cli("http://127.0.0.1:9"), "seed", "--help")
    assert "--model MODEL" in done.stdout and "deprecated" in done.stdout


# -- global options after the command ---------------------------------------------------------------------------


def test_global_options_after_the_command(cli):
    """--host, --region and --table given after the command work as before it."""
    cli("create-table")
    cli("set", "41", "--key", "user")
    done = run(cli, "list", "--json", "--host", cli.host, "--region", "us-east-1", "--table", cli.table)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"key": "user", "value": 41}]


def test_global_option_before_the_command_is_kept(cli):
    """A global option given before the command is not reset by the command's own copy of it."""
    cli("create-table")
    cli("set", "7", "--key", "order")
    done = run(cli, "--table", cli.table, "get", "order", "--host", cli.host, "--region", "us-east-1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "7"


# -- --model everywhere ---------------------------------------------------------------------------------------


def test_check_takes_the_model_as_an_option(cli):
    """check --model names the model; no deprecation note is printed."""
    seed_users(cli, [1, 2])
    done = cli("check", "--model", "tests.cli_models:User", "--json", table=False)
    assert done.returncode == 0, done.stderr
    assert [row["items"] for row in json.loads(done.stdout)] == [2]
    assert "Deprecat" not in done.stderr


def test_a_positional_model_still_works_with_a_deprecation_note(cli):
    """check MODEL (the old form) still runs, and says on stderr to use --model."""
    seed_users(cli, [1, 2])
    done = cli("check", "tests.cli_models:User", "--json", table=False)
    assert done.returncode == 0, done.stderr
    assert [row["items"] for row in json.loads(done.stdout)] == [2]
    assert "DeprecationWarning" in done.stderr and "check --model tests.cli_models:User" in done.stderr


def test_policy_takes_the_model_as_an_option():
    """policy --model prints the model's policy."""
    done = Cli("http://127.0.0.1:9")("policy", "--model", "tests.cli_models:User", table=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Version"] == "2012-10-17"


def test_a_missing_model_is_bad_usage():
    """seed without a model exits 2, naming --model."""
    done = Cli("http://127.0.0.1:9")("seed", table=False)
    assert done.returncode == 2 and "name the model with --model" in done.stderr


def test_a_model_named_twice_differently_is_bad_usage():
    """seed A --model B exits 2: the model is named twice."""
    done = Cli("http://127.0.0.1:9")("seed", "tests.cli_models:User", "--model", "tests.cli_models:Invoice",
                                     table=False)
    assert done.returncode == 2 and "named twice" in done.stderr


# -- --dry-run ---------------------------------------------------------------------------------------------------


def test_set_dry_run_writes_nothing(cli):
    """set --dry-run prints the counter's old and new value and options, and the counter table is unchanged."""
    tickets(cli, 3)
    before = raw_counters(cli)
    done = cli("set", "20", "--model", "tests.cli_models:Ticket", "--dry-run", table=False)
    assert done.returncode == 0, done.stderr
    assert f"counter '{cli.prefix}-tickets' would be set: value 3 -> 20" in done.stdout
    assert "the next value would be 21" in done.stdout and "Nothing was written" in done.stdout
    assert raw_counters(cli) == before


def test_set_dry_run_still_refuses_what_set_refuses(cli):
    """set --dry-run behind the stored IDs is refused as set is (exit 1), and writes nothing."""
    tickets(cli, 3)
    before = raw_counters(cli)
    done = cli("set", "1", "--model", "tests.cli_models:Ticket", "--dry-run", table=False)
    assert done.returncode == 1 and "already stores id=3" in done.stderr
    assert raw_counters(cli) == before


def test_restart_dry_run_writes_nothing(cli):
    """restart --dry-run prints the value and options it would record, and writes nothing."""
    tickets(cli, 3)
    before = raw_counters(cli)
    done = cli("restart", "--model", "tests.cli_models:Ticket", "--with", "10", "--dry-run", table=False)
    assert done.returncode == 0, done.stderr
    assert "would be restarted: value 3 -> 9" in done.stdout and "the next value would be 10" in done.stdout
    assert raw_counters(cli) == before


def test_alter_dry_run_writes_nothing(cli):
    """alter --dry-run prints the options it would record (old -> new), and writes nothing."""
    tickets(cli, 2)
    before = raw_counters(cli)
    done = cli("alter", "--model", "tests.cli_models:BigTicket", "--dry-run", table=False)
    assert done.returncode == 0, done.stderr
    assert "options start=1 step=1 min=1 max=50 cycle -> start=1 step=1 min=1 max=100 cycle" in done.stdout
    assert raw_counters(cli) == before


def test_seed_dry_run_writes_nothing(cli):
    """seed --dry-run says which counter it would raise, and to what, and leaves the counter unset."""
    seed_users(cli, [3, 17, 5])
    cli("create-table", table=False)
    done = cli("seed", "--model", "tests.cli_models:User", "--dry-run", table=False)
    assert done.returncode == 0, done.stderr
    assert f"{cli.prefix}-user: would be raised to 17 (from none)" in done.stdout
    assert raw_counters(cli) == []


# -- an endpoint that is not DynamoDB -------------------------------------------------------------------------------


@pytest.fixture(params=[200, 404, 501, 503], ids=["200", "404", "501", "503"])
def html_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """An HTTP server answering every request with an HTML page and this status."""
    status = request.param

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            body = b"<!DOCTYPE html><html><body><h1>Not here</h1></body></html>"
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = answer

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("argv", [["get", "user"], ["list"], ["create-table"]], ids=["get", "list", "create"])
def test_an_html_endpoint_is_one_clean_error(html_server, argv):
    """An endpoint answering HTML: exit 1, one line naming the endpoint and saying it is not DynamoDB."""
    done = Cli(html_server)(*argv)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"the endpoint {html_server} did not answer as DynamoDB" in lines[0]
    assert "<html" not in done.stderr.lower() and "Traceback" not in done.stderr


# -- --segments ---------------------------------------------------------------------------------------------------


def test_segments_above_dynamodbs_limit_are_bad_usage():
    """--segments 1,000,001 exits 2, naming DynamoDB's limit of 1,000,000 segments."""
    done = Cli("http://127.0.0.1:9")("check", "--model", "tests.cli_models:User", "--segments", "1000001",
                                     table=False)
    assert done.returncode == 2 and "must be at most 1,000,000" in done.stderr


@pytest.mark.modes("fast")
def test_many_segments_use_a_bounded_thread_pool(make_model, monkeypatch, capsys):
    """check --segments 64 scans every segment with at most 16 threads."""
    from concurrent.futures import ThreadPoolExecutor

    from pynamodb_autoinc import _cli_ids
    from pynamodb_autoinc import cli as cli_module

    User = make_model("User", id=NumberAttribute(hash_key=True))
    for _ in range(5):
        User().save()
    pools: List[int] = []

    class Recording(ThreadPoolExecutor):
        def __init__(self, max_workers: int) -> None:
            pools.append(max_workers)
            super().__init__(max_workers=max_workers)

    monkeypatch.setattr(_cli_ids, "ThreadPoolExecutor", Recording)
    monkeypatch.setattr(sys.modules[__name__], "Scanned", User, raising=False)
    code = cli_module.main(["check", "--model", f"{__name__}:Scanned", "--segments", "64", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert pools == [16]
    assert [row["items"] for row in json.loads(out.out)] == [5]
