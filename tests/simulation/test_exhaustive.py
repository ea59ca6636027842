"""Every schedule of 3 clients x 2 saves, with a fault at any request boundary, on the library's real code.

The default bounds (``settings.exhaustive_bounds``): at most one fault per
run, at most two preemptions, and at most two of the two together; clients
that have not sent anything yet are interchangeable, so only one of them is
offered (see ``explore._options``). Override them with ``SIM_CLIENTS``,
``SIM_SAVES``, ``SIM_FAULTS``, ``SIM_PREEMPTIONS`` and ``SIM_BUDGET``
(``none``: unbounded); a failing run prints the ``SIM_PATH`` that replays it.
"""

from __future__ import annotations

import functools

import pytest

from . import jobs, settings
from .explore import Bounds, Stats
from .scheduler import CONFLICT, CRASH, DROP, THROTTLE
from .world import MAX_RETRY_ATTEMPTS

MODES = ("fast", "gapless", "block", "query")

#: Every sequence of up to three faults (more than botocore retries) on the requests of one save.
ONE_SAVE = Bounds(clients=1, saves=1, faults=3)


@functools.cache
def explored(mode: str) -> Stats:
    """The exhaustive exploration of ``mode`` (once per session, shared by the tests below)."""
    bounds = settings.exhaustive_bounds()
    stats = jobs.exhaustive(mode, bounds, settings.replay_path())
    jobs.note(f"exhaustive {mode} ({bounds})", stats)
    return stats


@functools.cache
def fault_sequences(mode: str) -> Stats:
    stats = jobs.exhaustive(mode, ONE_SAVE)
    jobs.note(f"exhaustive {mode} ({ONE_SAVE})", stats)
    return stats


def replay(mode: str, bounds: Bounds) -> str:
    return f"{settings.bounds_env(bounds)} python -m pytest tests/simulation -k 'every_schedule and {mode}'"


def full_default_run() -> bool:
    return settings.replay_path() is None and settings.exhaustive_bounds() == settings.DEFAULT_BOUNDS


@pytest.mark.parametrize("mode", MODES)
def test_every_schedule_keeps_the_invariants(mode: str) -> None:
    """Whatever the order of the requests and wherever a fault strikes, every invariant holds."""
    stats = explored(mode)
    assert not stats.failures, jobs.failure_message(stats, replay(mode, settings.exhaustive_bounds()))


@pytest.mark.parametrize("mode", MODES)
def test_fewer_faults_than_retries_never_fail_a_save(mode: str) -> None:
    """A throttle, lost answer or conflict is absorbed by the retries: every save that did not crash succeeds."""
    if settings.exhaustive_bounds().faults > MAX_RETRY_ATTEMPTS:
        pytest.skip("more faults per run than botocore retries: a save may fail")
    stats = explored(mode)
    assert stats.outcomes["error"] == 0
    assert stats.outcomes["ok"] > 0


@pytest.mark.parametrize("mode", MODES)
def test_every_fault_kind_is_explored(mode: str) -> None:
    """The default exploration injects each kind of fault and covers hundreds of schedules, not a trivial few."""
    if not full_default_run():
        pytest.skip("only the default bounds are known to cover every fault kind")
    stats = explored(mode)
    kinds = {CRASH, DROP, THROTTLE} | ({CONFLICT} if mode == "gapless" else set())
    assert kinds <= set(stats.faults)
    assert stats.runs >= 200


@pytest.mark.parametrize("mode", MODES)
def test_every_fault_sequence_on_one_save(mode: str) -> None:
    """Up to three faults on one save's requests, in every order: the invariants hold (known bugs aside)."""
    stats = fault_sequences(mode)
    assert not stats.failures, jobs.failure_message(stats, replay(mode, ONE_SAVE))
