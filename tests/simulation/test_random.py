"""Seeded random schedules, larger than the exhaustive bounds: 2-5 clients x 1-4 saves, up to 6 faults.

Every seed fixes its bounds, its fault rate and every choice, so a failing
seed replays exactly: ``SIM_SEED=<seed> python -m pytest tests/simulation -k
'random and <mode>'``. ``SIM_RANDOM_RUNS`` (default 2000, over the four
modes) and ``SIM_SEED_START`` (default 0) choose the window of seeds.
"""

from __future__ import annotations

import pytest

from . import jobs, settings

MODES = ("fast", "gapless", "block", "query")


@pytest.mark.parametrize("mode", MODES)
def test_random_schedules_keep_the_invariants(mode: str) -> None:
    """Random schedules with several faults keep every invariant (known bugs aside)."""
    seeds = settings.random_seeds(MODES.index(mode), len(MODES))
    stats = jobs.randomized(mode, seeds)
    jobs.note(f"random {mode} (seeds {seeds[0]}..{seeds[-1]})", stats)
    assert stats.runs == len(seeds) or stats.failures
    assert not stats.failures, jobs.failure_message(stats, f"python -m pytest tests/simulation -k 'random and {mode}'")
