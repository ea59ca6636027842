"""The whole promise, under random sequences of every public operation and transport faults (issue 29).

``pytest tests/model``: on moto, within the CI budget (the ``ci`` profile's
derandomized examples); ``pytest tests/model --soak``: new examples each run,
20 times as many, longer sequences; ``--backend local``: a smaller run on
DynamoDB Local, with bounds at the 38-digit limit, where numbers are
validated for real.

To measure the check on a scratch copy of the library around a defect it
already finds, ``MODEL_SKIP=rule,...`` turns rules off and
``MODEL_TOLERATE=check,...`` ends an example quietly where a named check or
rule fails (both empty in the suite). ``MODEL_EXAMPLES=n`` runs ``n`` examples
(``python -m tests.model.planted`` runs the check against planted bugs).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.hypothesis_setup import budget, worlds
from tests.model.machine import PromiseMachine


def test_the_promise_holds_under_any_sequence_of_operations_and_faults(backend_name: str,
                                                                       request: pytest.FixtureRequest) -> None:
    """Every operation, with faults at the transport, keeps the promise the reference states."""
    check(backend_name, request, "sync")


@pytest.mark.backends("moto")
def test_the_promise_holds_through_the_async_driver(backend_name: str, request: pytest.FixtureRequest) -> None:
    """The same, each rule's library call run as an awaited call runs it (``await instance.asave()`` and the
    others: the async driver), an interrupt fault cancelling the task (the threads' rules stay threads)."""
    pytest.importorskip("aiobotocore", reason="the async driver needs aiobotocore: pip install '.[async]'")
    check(backend_name, request, "async")


def check(backend_name: str, request: pytest.FixtureRequest, driver: str) -> None:
    """Run the machine on ``backend_name`` with ``driver``."""
    machine: Any = type("Machine", (PromiseMachine,), {
        "driver": driver,
        "world": staticmethod(worlds(backend_name, request)),
        "big": True if backend_name == "local" else None,
        "use_faults": backend_name == "moto",
        "in_process": backend_name == "moto",
        "skip": frozenset(filter(None, os.environ.get("MODEL_SKIP", "").split(","))),
        "tolerate": frozenset(filter(None, os.environ.get("MODEL_TOLERATE", "").split(","))),
    })
    # the grown alphabet (every DynamoDB answer, several faults a step, retries on and off) costs about twice as
    # much per example: half the examples keep CI's time; HYPOTHESIS_PROFILE=full or soak, or MODEL_EXAMPLES=n
    chosen = budget(backend_name, moto=80 if driver == "sync" else 30, local=4)
    if os.environ.get("MODEL_EXAMPLES"):  # a planted bug's budget (tests/model/planted.py), or a longer run
        chosen = settings(chosen, max_examples=int(os.environ["MODEL_EXAMPLES"]))
    if os.environ.get("MODEL_SHRINK") == "0":  # a catch is enough
        chosen = settings(chosen, phases=[Phase.explicit, Phase.reuse, Phase.generate])
    if os.environ.get("MODEL_PACKAGE"):  # the package the run must test (a planted copy)
        import pynamodb_autoinc
        assert pynamodb_autoinc.__file__.startswith(os.environ["MODEL_PACKAGE"]), pynamodb_autoinc.__file__
    run_state_machine_as_test(machine, settings=chosen)
