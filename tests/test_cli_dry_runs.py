"""Every ``--dry-run`` answers as its command then does: the same refusal, or the value, options and next value
the command leaves, over bounds, cycling sequences, values out of range and past 38 digits."""

from __future__ import annotations

import re
from typing import Any, List, Optional

import pytest

from pynamodb_autoinc.exceptions import SequenceExhaustedError
from pynamodb_autoinc.sequence import SequenceOptions
from tests.test_cli import importable, reach, run

CYCLING = SequenceOptions(1, 1, 1, 50, True)
#: Values around the bounds of 1..50, and around the 38 digits a DynamoDB number holds.
VALUES = [-1, 0, 1, 2, 49, 50, 51, 10**37, 10**38 - 1, 10**38, 10**40, -(10**38) + 1, -(10**38)]
SHOWN = re.compile(r"value (.+?) -> (\S+), options (.+?) -> (.+?)(; the next value would be (-?\d+)|; the "
                   r"sequence would then be exhausted)?\. Nothing was written")


def compare(capsys: Any, argv: List[str], read: Any, following: Any) -> None:
    """Run ``argv`` with --dry-run, then without: the same exit status; a refusal's same message and nothing
    written; else the dry run's value and next value are what the command left (``read()``, ``following()``)."""
    before = read()
    dry = run(capsys, *argv, "--dry-run")
    assert read() == before, "the dry run wrote"
    done = run(capsys, *argv)
    assert dry[0] == done[0], (argv, dry, done)
    if done[0] != 0:
        assert dry[2] == done[2], argv
        assert read() == before
        return
    shown = SHOWN.search(dry[1])
    assert shown, dry[1]
    after = read()
    assert shown.group(2) == (after["NextId"]["N"] if "NextId" in after else "none"), (argv, dry[1], after)
    expected: Optional[int] = following()
    assert (None if shown.group(6) is None else int(shown.group(6))) == expected, (argv, dry[1])


def raw(counter: Any, key: str) -> Any:
    item = counter._get_connection().get_item(key, consistent_read=True).get("Item", {})
    return {name: value for name, value in item.items() if name != "NextKey"}


def next_of(counter: Any, key: str, sequence: Optional[SequenceOptions]) -> Any:
    """The value the counter hands out next (taking it), None when it is exhausted or records no options."""
    if sequence is None:
        return None
    try:
        return counter.nextval(key, sequence)
    except SequenceExhaustedError:
        return None


@pytest.mark.parametrize("is_called", [[], ["--no-is-called"]], ids=["is-called", "no-is-called"])
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("recorded", [CYCLING, SequenceOptions(1, 3, 1, 50), None], ids=["cycle", "step3", "none"])
def test_set_dry_run_agrees_with_set(backend, capsys, credentials, value, is_called, recorded):
    """set --key on a counter recording a cycling 1..50, a 1, 4, ..., 49 or no options: the dry run refuses what
    set refuses, and otherwise shows the value set stores and the value the next save takes (after 50 of the
    cycling one: 1, not 51)."""
    counter = backend.counter()
    counter.setval("k", 3, sequence=recorded)
    argv = [*reach(backend), "set", str(value), "--key", "k", *is_called]
    compare(capsys, argv, lambda: raw(counter, "k"), lambda: next_of(counter, "k", recorded))


@pytest.mark.modes("fast")
@pytest.mark.parametrize("argv", [["set", "50"], ["set", "51"], ["set", "1", "--force"], ["set", "30"],
                                  ["set", "50", "--no-is-called"], ["restart", "--with", "50"],
                                  ["restart", "--with", "1", "--force"], ["restart", "--with", "0"],
                                  ["restart", "--with", "51"], ["alter"]], ids=" ".join)
def test_a_models_dry_run_agrees_with_its_command(make_model, monkeypatch, capsys, backend, credentials, argv):
    """set, restart and alter --model of a cycling 1..50 model holding IDs 1..5: the dry run refuses what the
    command refuses (stored IDs, bounds) and otherwise shows what it leaves, including the wrap after 50."""
    model = make_model("Cycling", autoinc_max=50, autoinc_cycle=True)
    spec = importable(monkeypatch, "Wrapping", model)
    for _ in range(5):
        model().save()
    opts = model.autoinc_options()

    def following() -> Any:
        return next_of(opts.counter, opts.key, opts.sequence)

    compare(capsys, [*reach(backend), *argv, "--model", spec], lambda: raw(opts.counter, opts.key), following)


@pytest.mark.modes("fast")
def test_seed_dry_run_agrees_with_seed_on_every_counter(make_model, monkeypatch, capsys, backend, credentials):
    """seed --dry-run over counters behind, level with and ahead of their furthest IDs names the same moves
    seed then makes."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute

    model = make_model("Scoped", autoinc_scope="team", autoinc_attribute="id",
                       team=UnicodeAttribute(hash_key=True), id=NumberAttribute(range_key=True))
    spec = importable(monkeypatch, "Scoped", model)
    with model.batch_write() as batch:
        for team, ids in (("a", (1, 4)), ("b", (2, 3)), ("c", (7,))):
            for i in ids:
                batch.save(model(team=team, id=i))
    counter, key = model.autoinc_options().counter, model.autoinc_options().key
    counter.setval(f"{key}#a", 2)
    counter.setval(f"{key}#b", 3)
    counter.setval(f"{key}#c", 9)
    dry = run(capsys, *reach(backend), "seed", "--model", spec, "--dry-run")
    done = run(capsys, *reach(backend), "seed", "--model", spec)
    assert dry[0] == done[0] == 0, (dry, done)
    said = {line.split(": ")[1]: line for line in dry[1].splitlines() if line.startswith("dry run: ") and "#" in line}
    assert "would be raised to 4 (from 2)" in said[f"{key}#a"] and f"{key}#a: raised to 4" in done[1]
    assert "would stay at 3" in said[f"{key}#b"] and f"{key}#b: already at or above 3" in done[1]
    assert "would stay at 9" in said[f"{key}#c"] and f"{key}#c: already at or above 7" in done[1]
    assert [counter.currval(f"{key}#{team}") for team in "abc"] == [4, 3, 9]

