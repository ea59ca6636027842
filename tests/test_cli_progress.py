"""The progress line of seed's and check's scans: on a terminal only, redrawn in place a few times a second."""

from __future__ import annotations

import io
import json
import sys
from typing import Any, List

import pytest

from pynamodb_autoinc._cli_progress import INTERVAL, Progress, progress
from tests.test_cli import importable, reach, run


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Ticking:
    """A clock that reads ``now``, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.backends()
def test_the_line_is_redrawn_at_most_once_per_interval():
    """A thousand items within one interval draw the line once; the next item after the interval redraws it,
    in place (a carriage return, no new line), with the count, the rate and the segments done."""
    stream, clock = Terminal(), Ticking()
    shown = Progress(stream, 4, shown=True, clock=clock)
    for _ in range(1000):
        shown.item()
    assert stream.getvalue().count("\r") == 1
    clock.now += INTERVAL * 2
    shown.segment()
    last = stream.getvalue().split("\r")[-1]
    assert "\n" not in stream.getvalue()
    assert last.startswith("scanned 1,000 items (2,000 items/s), 1/4 segments done")


@pytest.mark.backends()
def test_close_draws_the_last_line_and_ends_it():
    """close() draws the final figures at once and ends the line, blanking what a longer line left."""
    stream, clock = Terminal(), Ticking()
    shown = Progress(stream, 2, shown=True, clock=clock)
    shown.item()
    clock.now += 1
    for _ in range(2):
        shown.segment()
    shown.close()
    assert stream.getvalue().endswith("\rscanned 1 items (1 items/s), 2/2 segments done\n")


@pytest.mark.backends()
@pytest.mark.parametrize("stream, quiet", [(io.StringIO(), False), (Terminal(), True)], ids=["no tty", "--json"])
def test_quiet_off_a_terminal_and_under_json(stream, quiet):
    """Off a terminal, or with --json, the scan prints no progress at all."""
    hidden = progress(3, quiet=quiet, stream=stream)
    hidden.item()
    hidden.segment()
    hidden.close()
    assert stream.getvalue() == ""


def scanned(make_model: Any, monkeypatch: pytest.MonkeyPatch, backend: Any, capsys: Any, *argv: str) -> List[str]:
    """The lines ``check`` (or ``seed``) with ``argv`` writes to a terminal's stderr, over 5 stored items."""
    model = make_model("Item")
    for _ in range(5):
        model().save()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code, out, _ = run(capsys, *reach(backend), *argv, "--model", importable(monkeypatch, "Scanned", model))
    assert code == 0, terminal.getvalue()
    if "--json" in argv:
        assert [row["items"] for row in json.loads(out)] == [5]
    return terminal.getvalue().split("\r")


@pytest.mark.modes("fast")
@pytest.mark.parametrize("command", ["check", "seed"])
def test_a_scan_shows_its_progress_on_a_terminal(make_model, monkeypatch, backend, capsys, credentials, command):
    """check and seed on a terminal end their scan with the line of items scanned and segments done."""
    lines = scanned(make_model, monkeypatch, backend, capsys, command, "--segments", "2")
    assert lines[-1].startswith("scanned 5 items") and lines[-1].endswith(", 2/2 segments done\n")


@pytest.mark.modes("fast")
def test_check_json_shows_no_progress_on_a_terminal(make_model, monkeypatch, backend, capsys, credentials):
    """check --json stays quiet on a terminal's stderr: its output is for a program."""
    assert scanned(make_model, monkeypatch, backend, capsys, "check", "--json") == [""]
