"""Review of the tool modules (cli, testing) as a demanding user drives them: bad input is refused with the
command's exit codes naming the fix, --dry-run refuses what the command refuses, seed never leaves a counter
where saves fail, and the test helpers reach the endpoint they name and leave nothing behind."""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any, List

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import NextId, testing
from pynamodb_autoinc import cli as cli_module
from pynamodb_autoinc.exceptions import CounterTableMissingError
from pynamodb_autoinc.sequence import SequenceOptions


class Plain(Model):
    """A model without AutoIncrementMixin: it keeps no counter."""

    class Meta:
        table_name = "review4-plain"
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(capsys: Any, *argv: str) -> Any:
    """The command line in this process: (exit status, stdout, stderr); bad usage exits through SystemExit."""
    code: Any
    try:
        code = cli_module.main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def where(backend: Any) -> List[str]:
    """The global options that reach the test's backend."""
    host = backend.meta.get("host")
    return [*(["--host", host] if host else []), "--region", "us-east-1"]


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, os.environ.get(name, "local"))


# -- the command line ----------------------------------------------------------------------------------------


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
    assert "Plain (tests.test_tools_review4:PlainModel) does not use AutoIncrementMixin" in err


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
        code, out, err = run(capsys, *where(backend), "set", "5", "--key", "plain", "--no-is-called", *dry)
        assert code == 1 and "cannot tell" in err and "--model" in err, (dry, out, err)
    assert counter.currval("plain") == 3


def test_set_dry_run_refuses_a_value_outside_the_recorded_bounds(backend, capsys, credentials):
    """set --dry-run of a value past the bounds the counter records is refused as set refuses it."""
    counter = backend.counter()
    counter.setval("tickets", 3, sequence=SequenceOptions(1, 1, 1, 50))
    for dry in (["--dry-run"], []):
        code, _, err = run(capsys, *where(backend), "set", "60", "--key", "tickets", *dry)
        assert code == 1 and "value 60 is out of bounds for sequence 'tickets' (1..50)" in err, (dry, err)
    assert counter.currval("tickets") == 3


def test_set_dry_run_no_is_called_shows_the_recorded_step(backend, capsys, credentials):
    """set 40 --no-is-called --dry-run on a counter recording step 1 would store 39; nothing is written."""
    counter = backend.counter()
    counter.setval("tickets", 3, sequence=SequenceOptions(1, 1, 1, 50))
    code, out, err = run(capsys, *where(backend), "set", "40", "--key", "tickets", "--no-is-called", "--dry-run")
    assert code == 0, err
    assert "value 3 -> 39" in out and "the next value would be 40" in out
    assert counter.currval("tickets") == 3


# -- testing ------------------------------------------------------------------------------------------------------


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


# -- seed on a cycling sequence -----------------------------------------------------------------------------------


def cycling(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A model cycling through 1..50, importable as tests.test_tools_review4:Cycling."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    monkeypatch.setattr(sys.modules[__name__], "Cycling", model, raising=False)
    return model


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
        code, out, err = run(capsys, *where(backend), "seed", "--model", f"{__name__}:Cycling", *dry)
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
    code, out, err = run(capsys, *where(backend), "seed", "--model", f"{__name__}:Cycling")
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
        code, out, err = run(capsys, *where(backend), "seed", "--model", f"{__name__}:Bounded", *dry)
        assert code == 1, out
        assert f"id values outside its sequence's bounds (1..50): 70 under counter {opts.key!r}" in err
        assert "autoinc_max" in err and "nothing was moved" in err
    assert opts.counter.currval(opts.key) == 3
    item = model()
    item.save()
    assert item.id == 4


# -- check on a cycling sequence ----------------------------------------------------------------------------------


def checked(capsys: Any, backend: Any) -> Any:
    """`check --json` of tests.test_tools_review4:Cycling: (exit status, the one counter's row)."""
    code, out, err = run(capsys, *where(backend), "check", "--model", f"{__name__}:Cycling", "--json")
    assert code in (0, 3), err
    rows = json.loads(out)
    assert len(rows) == 1
    return code, rows[0]


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
