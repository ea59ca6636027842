"""Every schedule within small bounds, with a fault at any request boundary, on the library's real code.

``save()`` in each mode: 3 clients x 2 saves. The other write paths (a
user's ``TransactWrite``, ``save_all()``, blocks near ``autoinc_max``): 2
clients, each doing every kind of operation of its workload once
(``settings.PATH_BOUNDS``). In all: at most one fault per run, at most two
preemptions, and at most two of the two together;
clients that have not sent anything yet are interchangeable, so only one of
them is offered (see ``explore._options``). Override the bounds with
``SIM_CLIENTS``, ``SIM_SAVES``, ``SIM_FAULTS``, ``SIM_PREEMPTIONS`` and
``SIM_BUDGET`` (``none``: unbounded); a failing run prints the ``SIM_PATH``
and the command that replay it.
"""

from __future__ import annotations

import functools

import pytest

from . import jobs, settings, world
from .explore import Bounds, Stats
from .scheduler import CONFLICT, CRASH, DROP, THROTTLE
from .world import MAX_RETRY_ATTEMPTS

#: ``Model.save()`` in each mode.
MODES = ("fast", "gapless", "block", "query")

#: The other write paths.
PATHS = ("tx-fast", "tx-gapless", "bulk-fast", "bulk-gapless", "block-max", "block-max-2", "cycle", "cycle-gapless")

#: Every sequence of up to three faults (more than botocore retries) on the requests of one operation.
ONE_SAVE = Bounds(clients=1, saves=1, faults=3)

#: The fewest schedules the default bounds explore per mode: hundreds for save(), scores for the others.
MIN_RUNS = {**{mode: 200 for mode in MODES}, **{mode: 40 for mode in PATHS}}


@functools.cache
def explored(mode: str) -> Stats:
    """The exhaustive exploration of ``mode`` (once per session, shared by the tests below)."""
    bounds = settings.exhaustive_bounds(mode)
    stats = jobs.exhaustive(mode, bounds, settings.replay_path())
    jobs.note(f"exhaustive {mode} ({bounds})", stats)
    return stats


@functools.cache
def fault_sequences(mode: str) -> Stats:
    stats = jobs.exhaustive(mode, ONE_SAVE)
    jobs.note(f"exhaustive {mode} ({ONE_SAVE})", stats)
    return stats


def replay(test: str, mode: str, bounds: Bounds) -> str:
    """The command that runs ``test`` of ``mode`` alone, with ``bounds``."""
    return f"{settings.bounds_env(bounds)} python -m pytest 'tests/simulation/test_exhaustive.py::{test}[{mode}]'"


def full_default_run(mode: str) -> bool:
    return settings.replay_path() is None and settings.exhaustive_bounds(mode) == settings.default_bounds(mode)


@pytest.mark.parametrize("mode", MODES + PATHS)
def test_every_schedule_keeps_the_invariants(mode: str) -> None:
    """Whatever the order of the requests and wherever a fault strikes, every invariant holds."""
    stats = explored(mode)
    command = replay("test_every_schedule_keeps_the_invariants", mode, settings.exhaustive_bounds(mode))
    assert not stats.failures, jobs.failure_message(stats, command)


@pytest.mark.parametrize("mode", MODES)
def test_fewer_faults_than_retries_never_fail_a_save(mode: str) -> None:
    """A throttle, lost answer or conflict is absorbed by the retries: every save that did not crash succeeds. The
    query strategy's one PutItem is the exception: resent after a lost answer, it cannot tell its own item from a
    racing writer's equal one (both read the same next value), so it may end unknown (the ID kept), never failed."""
    if settings.exhaustive_bounds(mode).faults > MAX_RETRY_ATTEMPTS:
        pytest.skip("more faults per run than botocore retries: a save may fail")
    stats = explored(mode)
    assert stats.outcomes["error"] == 0
    assert stats.outcomes["ok"] > 0
    if not world.MODES[mode].query:
        assert stats.outcomes["unknown"] == 0


@pytest.mark.parametrize("mode", MODES + PATHS)
def test_every_fault_kind_is_explored(mode: str) -> None:
    """The default exploration injects each kind of fault (a conflict where a transaction is sent) and covers
    many schedules, not a trivial few."""
    if not full_default_run(mode):
        pytest.skip("only the default bounds are known to cover every fault kind")
    stats = explored(mode)
    transactions = mode == "gapless" or world.MODES[mode].workload != "save"
    kinds = {CRASH, DROP, THROTTLE} | ({CONFLICT} if transactions else set())
    assert kinds <= set(stats.faults)
    assert stats.runs >= MIN_RUNS[mode]


#: The modes whose one save runs the schedules of another: cycle-gapless's first save (max 2) never wraps, so its
#: fault sequences are gapless's, request for request and outcome for outcome (179 schedules, 1594 requests).
#: Its wrap-around is explored with faults by test_every_schedule_keeps_the_invariants[cycle-gapless].
SAME_ONE_SAVE = {"cycle-gapless": "gapless"}


@pytest.mark.parametrize("mode", [mode for mode in MODES + PATHS if mode not in SAME_ONE_SAVE])
def test_every_fault_sequence_on_one_save(mode: str) -> None:
    """Up to three faults on one operation's requests, in every order: the invariants hold."""
    stats = fault_sequences(mode)
    command = replay("test_every_fault_sequence_on_one_save", mode, ONE_SAVE)
    assert not stats.failures, jobs.failure_message(stats, command)
