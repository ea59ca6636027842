"""Seeded random schedules, larger than the exhaustive bounds: 2-5 clients x 1-4 operations, up to 6 faults.

Every seed fixes its bounds, its fault rate and every choice, so a failing
seed replays exactly: ``SIM_SEED=<seed> python -m pytest
'tests/simulation/test_random.py::test_random_schedules_keep_the_invariants[<mode>]'``.
``SIM_RANDOM_RUNS`` (default 580: 125 for each mode of ``save()``, 10 for
each other write path; 2320 with ``pytest --soak``) and ``SIM_SEED_START``
(default 0) choose the window of seeds (``settings.random_seeds``).
"""

from __future__ import annotations

import pytest

from . import jobs, settings

MODES = tuple(settings.RANDOM_WEIGHTS)


@pytest.mark.parametrize("mode", MODES)
def test_random_schedules_keep_the_invariants(mode: str) -> None:
    """Random schedules with several faults keep every invariant."""
    seeds = settings.random_seeds(mode)
    stats = jobs.randomized(mode, seeds)
    jobs.note(f"random {mode} (seeds {seeds[0]}..{seeds[-1]})", stats)
    assert stats.runs == len(seeds) or stats.failures
    command = f"python -m pytest 'tests/simulation/test_random.py::test_random_schedules_keep_the_invariants[{mode}]'"
    assert not stats.failures, jobs.failure_message(stats, command)
