"""The knobs of a simulation run, read from the environment.

``SIM_SEED``
    run only this seed in the random tests (replays a failure exactly);
``SIM_SEED_START``, ``SIM_RANDOM_RUNS``
    the random tests run seeds ``SIM_SEED_START`` .. ``+SIM_RANDOM_RUNS``,
    dealt out over the modes (default 0 and 2000);
``SIM_PATH``
    run only this schedule (comma-separated choice indices, as printed by a
    failing exhaustive test);
``SIM_CLIENTS``, ``SIM_SAVES``, ``SIM_FAULTS``, ``SIM_PREEMPTIONS``, ``SIM_BUDGET``
    the bounds of the exhaustive tests (``none``: unbounded);
``SIM_WORKERS``
    worker processes (default: the CPUs, at most 4).
"""

from __future__ import annotations

import os
from typing import List, Optional

from .explore import Bounds


def _int(name: str, default: Optional[int]) -> Optional[int]:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    return None if raw in ("none", "inf", "all") else int(raw)


def _given(name: str, default: int) -> int:
    value = _int(name, default)
    return default if value is None else value


#: 3 clients x 2 saves, at most one fault, at most 2 preemptions, and both together at most 2.
DEFAULT_BOUNDS = Bounds(clients=3, saves=2, faults=1, preemptions=2, budget=2)


def exhaustive_bounds() -> Bounds:
    """:data:`DEFAULT_BOUNDS`, or what the environment says instead."""
    return Bounds(
        clients=_given("SIM_CLIENTS", DEFAULT_BOUNDS.clients),
        saves=_given("SIM_SAVES", DEFAULT_BOUNDS.saves),
        faults=_given("SIM_FAULTS", DEFAULT_BOUNDS.faults),
        preemptions=_int("SIM_PREEMPTIONS", DEFAULT_BOUNDS.preemptions),
        budget=_int("SIM_BUDGET", DEFAULT_BOUNDS.budget),
    )


def bounds_env(bounds: Bounds) -> str:
    """The environment that sets the exhaustive tests to ``bounds``."""
    def show(value: Optional[int]) -> str:
        return "none" if value is None else str(value)

    return (f"SIM_CLIENTS={bounds.clients} SIM_SAVES={bounds.saves} SIM_FAULTS={bounds.faults} "
            f"SIM_PREEMPTIONS={show(bounds.preemptions)} SIM_BUDGET={show(bounds.budget)}")


def replay_path() -> Optional[List[int]]:
    raw = os.environ.get("SIM_PATH", "").strip()
    return [int(i) for i in raw.split(",") if i.strip()] if raw else None


def random_seeds(mode_index: int, modes: int) -> List[int]:
    """The seeds of one mode's random test: ``SIM_SEED`` alone, or its share of the window."""
    seed = _int("SIM_SEED", None)
    if seed is not None:
        return [seed]
    start = _given("SIM_SEED_START", 0)
    runs = _given("SIM_RANDOM_RUNS", 2000)
    per_mode = max(1, runs // modes)
    return list(range(start + mode_index * per_mode, start + (mode_index + 1) * per_mode))
