"""The refusal of mixed modes on one counter (a gapless model beside a fast one) holds in a forked child: a gunicorn
worker, or ``multiprocessing`` with the ``fork`` start method, keeps the classes its parent defined, so a class it
defines in the other mode on their counter is refused there too. Class creation sends nothing: no backend."""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import ConfigurationError

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs os.fork (Linux)"),
              # Python 3.12 warns of a fork in a process with threads (xdist's); the child runs no thread's code
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")]


def counter_user(name: str, key: str, **meta: Any) -> Any:
    """A model class called ``name`` numbering ``id`` from counter ``key``."""
    attrs = {"Meta": type("Meta", (), {"table_name": name.lower(), "region": "us-east-1", "autoinc_key": key,
                                       **meta}),
             "id": NumberAttribute(hash_key=True), "__module__": __name__}
    return type(name, (AutoIncrementMixin, Model), attrs)


def define_fast(key: str) -> str:
    """In this process: define a fast model on counter ``key``; say whether it was refused."""
    try:
        counter_user("Receipt", key)
    except ConfigurationError as exc:
        return f"refused: {exc}"
    return "accepted"


def in_forked_child(key: str) -> str:
    """What :func:`define_fast` says in a child made with ``os.fork()``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe and leave at once, running none of pytest's code
        code = 0
        try:
            os.write(write, define_fast(key).encode())
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as answer:
        said = answer.read()
    os.waitpid(pid, 0)
    return said


def test_a_forked_child_refuses_a_fast_model_on_its_parents_gapless_counter():
    """A gapless model defined before ``os.fork()``: the child refuses a fast model on its counter, as the parent
    would."""
    invoice = counter_user("Invoice", "fork-shared", autoinc_gapless=True)
    said = in_forked_child("fork-shared")
    assert said.startswith("refused: Receipt: counter 'fork-shared' is also used by Invoice")
    assert invoice.autoinc_options().gapless


def test_a_multiprocessing_fork_worker_refuses_a_fast_model_on_its_parents_gapless_counter():
    """The same in a worker of ``multiprocessing`` with the ``fork`` start method."""
    keep = counter_user("Invoice", "fork-pool", autoinc_gapless=True)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        said = pool.apply(define_fast, ("fork-pool",))
    assert said.startswith("refused: Receipt: counter 'fork-pool' is also used by Invoice")
    assert keep.autoinc_options().gapless


def test_a_forked_child_accepts_a_fast_model_on_a_counter_its_parent_did_not_use():
    """The child refuses only what the parent would: a fast model on another counter is accepted."""
    counter_user("Invoice", "fork-gapless", autoinc_gapless=True)
    assert in_forked_child("fork-other") == "accepted"


def test_the_parent_keeps_its_registry_after_a_fork():
    """After a fork the parent still refuses a fast model on its gapless counter."""
    counter_user("Invoice", "fork-parent", autoinc_gapless=True)
    in_forked_child("fork-unrelated")
    assert define_fast("fork-parent").startswith("refused:")
