"""The rules conftest.py applies to the parametrization: a test runs once per mode and backend that matter to it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


@pytest.fixture
def run(pytester: pytest.Pytester):
    """Run a test module under this project's conftest, on moto (its models make no tables); return the outcome."""

    def go(source: str, *args: str) -> pytest.RunResult:
        pytester.makeconftest(CONFTEST)
        pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n    modes\n    backends\n    engine\n")
        pytester.makepyfile(test_module=source)
        return pytester.runpytest_inprocess("--backend", "moto", "-p", "no:cacheprovider", *args)

    return go


def test_a_test_marked_modes_none_runs_once(run):
    """A test marked ``modes()`` whose models set their own mode is one test, not one per mode."""
    result = run("""
import pytest

@pytest.mark.modes()
def test_pinned(make_model, mode):
    assert mode is None
    make_model("Item", create=False, autoinc_gapless=True)
""")
    result.assert_outcomes(passed=1)


def test_an_unmarked_test_whose_models_set_their_mode_is_an_error(run):
    """A test run once per mode whose every model sets its own mode errors, naming the modes() marker."""
    result = run("""
def test_pinned(make_model):
    make_model("Item", create=False, autoinc_gapless=True)
""")
    result.assert_outcomes(passed=4, errors=4)
    result.stdout.fnmatch_lines(["*mark it @pytest.mark.modes() to run it once*"])


def test_a_model_without_a_mode_in_a_test_marked_modes_none_is_an_error(run):
    """A test marked ``modes()`` that builds a model without a mode option fails, naming the fix."""
    result = run("""
import pytest

@pytest.mark.modes()
def test_unpinned(make_model):
    make_model("Item", create=False)
""")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*sets no autoinc_gapless, autoinc_block or autoinc_strategy*"])


def test_a_parameter_marked_modes_none_runs_once(run):
    """A parameter marked ``modes()`` runs once; the test's other parameters run in every mode."""
    result = run("""
import pytest

@pytest.mark.parametrize("options", [{}, pytest.param({"autoinc_gapless": True}, marks=pytest.mark.modes())])
def test_options(make_model, options):
    make_model("Item", create=False, **options)
""")
    result.assert_outcomes(passed=5)


def test_a_test_marked_backends_none_runs_on_one_backend(run):
    """A test marked ``backends()`` runs on the first chosen backend only."""
    result = run("""
import pytest

@pytest.mark.backends()
def test_any(backend):
    assert backend.name == "moto"
""", "--backend", "local")
    result.assert_outcomes(passed=1)


def test_a_test_marked_for_an_unchosen_backend_is_deselected(run):
    """A test marked ``backends("local")`` is deselected when only moto is chosen."""
    result = run("""
import pytest

@pytest.mark.backends("local")
def test_local(backend):
    pass
""")
    result.assert_outcomes()
    result.stdout.fnmatch_lines(["*1 deselected*"])


def test_backend_moto_deselects_the_tests_that_need_dynamodb_local(run):
    """With ``--backend moto``, a test marked ``engine`` or using a DynamoDB Local fixture (``local``) is
    deselected, not skipped with a message; a test on the ``backend`` fixture runs on moto."""
    result = run("""
import pytest

@pytest.mark.engine
def test_engine():
    pass

def test_local(local):
    pass

def test_either(backend):
    assert backend.name == "moto"
""")
    result.assert_outcomes(passed=1, deselected=2)
