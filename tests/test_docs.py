"""The documentation site (docs/) says what the code does: its options, its errors, and code that runs.

Every ```python block of a page runs, in order and in one namespace, inside moto's ``mock_aws()``, except
a block preceded by ``<!-- no-run: why -->``; a block preceded by ``<!-- needs: a, b -->`` runs once
``pynamodb_autoinc`` exports those names, and is skipped (saying so) until then.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import pynamodb_autoinc
import pynamodb_autoinc.exceptions
from pynamodb_autoinc import testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "pynamodb_autoinc"

BLOCK = re.compile(r"(?:<!-- (no-run|needs):?([^>]*)-->\n)?```python\n(.*?)```", re.S)


def blocks(page: Path) -> List[Tuple[Optional[str], str, str]]:
    """The page's python blocks as (marker, marker argument, code)."""
    return [(m.group(1), (m.group(2) or "").strip(), m.group(3)) for m in BLOCK.finditer(page.read_text())]


PAGES = sorted(p for p in DOCS.glob("*.md") if any(kind != "no-run" for kind, _, _ in blocks(p)))


def options_read_by_code() -> set:
    """Every ``autoinc_*`` Meta option the package reads: ``Meta.autoinc_x`` and ``"autoinc_x":`` keys."""
    names = set()
    for source in PACKAGE.glob("*.py"):
        text = source.read_text()
        names.update(re.findall(r"Meta\.(autoinc_[a-z_]+)\b", text))
        names.update(re.findall(r"^\s*\"(autoinc_[a-z_]+)\":", text, re.M))
    return names


def test_options_page_lists_every_option_the_code_reads():
    """Each Meta.autoinc_* option the package reads has a row on the options page."""
    page = (DOCS / "options.md").read_text()
    listed = set(re.findall(r"^\| `(autoinc_[a-z_]+)`", page, re.M)) | set(
        re.findall(r"^\| `autoinc_[a-z_]+`, `(autoinc_[a-z_]+)`", page, re.M))
    assert options_read_by_code() - listed == set()


def test_options_page_lists_no_option_the_code_ignores():
    """Each option row on the options page names an option the package reads."""
    page = (DOCS / "options.md").read_text()
    listed = set(re.findall(r"`(autoinc_[a-z_]+)`", page.split("`HistoryMixin` reads")[0]))
    assert listed - options_read_by_code() == set()


def test_options_page_lists_history_model():
    """The option HistoryMixin reads, Meta.history_model, is on the options page."""
    assert "| `history_model` |" in (DOCS / "options.md").read_text()


def test_errors_page_lists_every_error_class():
    """Each exception class defined in pynamodb_autoinc.exceptions has a row on the errors page."""
    module = pynamodb_autoinc.exceptions
    classes = {name for name, value in vars(module).items()
               if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module.__name__}
    page = (DOCS / "errors.md").read_text()
    assert {name for name in classes if f"| `{name}`" not in page} == set()


def test_every_page_is_in_a_toctree():
    """Every page of docs/ is reachable from the index."""
    index = (DOCS / "index.md").read_text()
    pages = {p.stem for p in DOCS.glob("*.md")} | {p.stem for p in DOCS.glob("*.rst")}
    assert {p for p in pages - {"index"} if f"\n{p}\n" not in index} == set()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    """A fresh moto DynamoDB, credentials for it, and this process's autoinc state forgotten."""
    from moto import mock_aws

    for name, value in (("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "testing"),
                        ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("DYNAMODB_HOST", raising=False)
    testing.reset_state()
    with mock_aws():
        yield
    testing.reset_state()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_code_runs(page: Path, aws: None):
    """The page's python blocks run, in order, on moto, and their assertions hold."""
    namespace: Dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    waiting = []
    for number, (kind, argument, code) in enumerate(blocks(page), 1):
        if kind == "no-run":
            continue
        if kind == "needs":
            missing = [n.strip() for n in argument.split(",") if not hasattr(pynamodb_autoinc, n.strip())]
            if missing:
                waiting.append(f"block {number} needs {', '.join(missing)}")
                continue
        exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)  # noqa: S102
    if waiting:
        pytest.skip(f"{page.name}: the rest ran; skipped until pynamodb_autoinc exports them: {'; '.join(waiting)}")
