"""The command line's exit statuses, each of them, as docs/cli.md lists them: 0 done, 1 an error (one line on
stderr), 2 bad usage, 3 a problem found in the data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import cli as cli_module
from tests.helpers import closed_port
from tests.test_cli import importable, reach, run

DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def exit_codes_paragraph() -> str:
    """The paragraph of docs/cli.md that lists the exit statuses, on one line."""
    text = DOCS.read_text()
    found = re.search(r"^Exit codes:.*?(?=\n\n)", text, re.M | re.S)
    assert found, "docs/cli.md lists no exit codes"
    return " ".join(found.group().split())


@pytest.mark.modes("fast")
def test_0_when_the_command_is_done(make_model, backend, capsys, credentials):
    """A command that did its work exits 0."""
    counter = make_model("Item").autoinc_options().counter
    counter.setval("done", 3)
    code, out, err = run(capsys, *reach(backend), "--table", counter.Meta.table_name, "get", "done")
    assert (code, out.strip(), err) == (0, "3", "")


@pytest.mark.modes("fast")
def test_1_for_an_error_named_in_one_line_on_stderr(make_model, backend, capsys, credentials):
    """An error (here a counter that does not exist) exits 1 with one line on stderr that names the fix."""
    counter = make_model("Item").autoinc_options().counter
    code, out, err = run(capsys, *reach(backend), "--table", counter.Meta.table_name, "get", "nobody")
    assert (code, out) == (1, "")
    assert err.startswith("error: counter 'nobody' has no value yet") and len(err.strip().splitlines()) == 1


@pytest.mark.backends()  # refused before any request
@pytest.mark.parametrize("argv", [["frobnicate"], ["list", "--frobnicate"], ["set", "seven", "--key", "k"],
                                  ["seed"], ["get", "--model", "a:A", "--model", "b:B"]],
                         ids=["command", "option", "value", "no model", "two models"])
def test_2_for_bad_usage(capsys, argv):
    """Bad usage (an unknown command or option, a value of the wrong kind, no model where one is needed, several
    where one is taken) exits 2, before any request."""
    code, _, err = run(capsys, "--host", f"http://127.0.0.1:{closed_port()}", *argv)
    assert code == 2 and "usage: pynamodb-autoinc" in err


def duplicates(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """A number outside the key stored twice: a duplicate."""
    model = make_model("Numbered", key=UnicodeAttribute(hash_key=True), number=NumberAttribute(null=True),
                       autoinc_attribute="number")
    for key in "ab":
        model(key=key, number=1).save()
    model.autoinc_options().counter.setval(model.autoinc_options().key, 1)
    return ["check", "--model", importable(monkeypatch, "Numbered", model)]


def gapless_hole(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """A gapless model storing 1 and 3: a hole."""
    model = make_model("Gapless", autoinc_gapless=True)
    for _ in range(3):
        model().save()
    model.get(2).delete()
    return ["check", "--model", importable(monkeypatch, "Gapless", model)]


def behind(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """A counter set back behind its stored IDs."""
    model = make_model("Behind")
    for _ in range(3):
        model().save()
    model.autoinc_options().counter.setval(model.autoinc_options().key, 1)
    return ["check", "--model", importable(monkeypatch, "Behind", model)]


def fraction(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """A counter holding 1.5."""
    counter = make_model("Item").autoinc_options().counter
    counter._get_connection().connection.update_item(
        counter.Meta.table_name, "half", actions=[counter.next_id.set(1.5)])
    return ["--table", counter.Meta.table_name, "list"]


def other_options(make_model: Any, monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """A counter recording max 50, described with a model of max 100."""
    model = make_model("Small", autoinc_max=50)
    model().save()
    bigger = make_model("Big", create=False, table_name=model.Meta.table_name,
                        autoinc_key=model.autoinc_options().key, autoinc_max=100)
    return ["describe", "--model", importable(monkeypatch, "Big", bigger)]


PROBLEMS: Dict[str, Callable[[Any, pytest.MonkeyPatch], List[str]]] = {
    "check: duplicates": duplicates, "check: holes in a gapless model": gapless_hole,
    "check: a counter behind its stored IDs": behind, "list: a counter holding no integer": fraction,
    "describe: other options than its model": other_options}


@pytest.mark.modes("fast")
@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_3_for_each_problem_found_in_the_data(make_model, monkeypatch, backend, capsys, credentials, problem):
    """Each problem docs/cli.md lists under exit status 3 exits 3, with the report on stdout in full."""
    code, out, err = run(capsys, *reach(backend), *PROBLEMS[problem](make_model, monkeypatch))
    assert code == 3, (out, err)
    assert out.strip()
    assert problem.split(": ")[1] in exit_codes_paragraph()


@pytest.mark.backends()
def test_the_docs_and_the_help_list_every_exit_status():
    """docs/cli.md and ``--help`` name each status: 0 done, 1 an error, 2 bad usage, 3 problems in the data, with
    every problem of status 3."""
    paragraph = exit_codes_paragraph()
    for status in ("0 done", "1 error", "2 bad usage", "3 problems found in the data"):
        assert status in paragraph, status
    for problem in PROBLEMS:
        assert problem.split(": ")[1] in paragraph, problem
    for status in ("0 done", "1 an error", "2 bad usage", "3 a problem found in the data"):
        assert status in cli_module.EPILOG, status
    assert "behind its stored IDs" in cli_module.EPILOG
