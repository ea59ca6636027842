"""The knobs of a simulation run, read from the environment.

``SIM_SEED``
    run only this seed in the random tests (replays a failure exactly);
``SIM_SEED_START``, ``SIM_RANDOM_RUNS``
    the random tests run seeds ``SIM_SEED_START`` .. ``+SIM_RANDOM_RUNS``
    (default 0 and 580; 2320 with ``pytest --soak``), dealt out over the
    modes in the order and proportions of :data:`RANDOM_WEIGHTS`: by
    default 125 seeds to each mode of ``save()`` (seeds 0..499), 10 to each
    other write path (``--soak``: 500 and 40);
``SIM_PATH``
    run only this schedule (comma-separated choice indices, as printed by a
    failing exhaustive test);
``SIM_CLIENTS``, ``SIM_SAVES``, ``SIM_FAULTS``, ``SIM_PREEMPTIONS``, ``SIM_BUDGET``
    the bounds of the exhaustive tests (``none``: unbounded), overriding
    each mode's own (:func:`default_bounds`); ``SIM_SAVES`` counts operations
    per client (a save, a transaction, a ``save_all()``);
``SIM_WORKERS``
    worker processes (default: the CPUs, at most 4).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

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

#: The other write paths, smaller: 2 clients, each doing every kind of operation of its workload once
#: (a transaction committed, cancelled and abandoned; a batch and a failing batch), or 2 saves near the
#: sequence's max.
PATH_BOUNDS: Dict[str, Bounds] = {
    "tx-fast": Bounds(clients=2, saves=3, faults=1, preemptions=2, budget=2),
    "tx-gapless": Bounds(clients=2, saves=3, faults=1, preemptions=2, budget=2),
    "bulk-fast": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
    "bulk-gapless": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
    "block-max": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
    # a refused block request returns the counter, so what is left is reserved next with no read in between
    "block-max-2": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
    "cycle": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
    "cycle-gapless": Bounds(clients=2, saves=2, faults=1, preemptions=2, budget=2),
}

#: The share of the random seeds each mode gets, in the order their windows follow each other.
RANDOM_WEIGHTS: Dict[str, int] = {
    "fast": 500, "gapless": 500, "block": 500, "query": 500,
    "tx-fast": 40, "tx-gapless": 40, "bulk-fast": 40, "bulk-gapless": 40, "block-max": 40, "block-max-2": 40,
    "cycle": 40, "cycle-gapless": 40,
}


def default_bounds(mode: str) -> Bounds:
    """The exhaustive bounds of ``mode`` when the environment sets none."""
    return PATH_BOUNDS.get(mode, DEFAULT_BOUNDS)


def exhaustive_bounds(mode: str) -> Bounds:
    """``mode``'s :func:`default_bounds`, or what the environment says instead."""
    default = default_bounds(mode)
    return Bounds(
        clients=_given("SIM_CLIENTS", default.clients),
        saves=_given("SIM_SAVES", default.saves),
        faults=_given("SIM_FAULTS", default.faults),
        preemptions=_int("SIM_PREEMPTIONS", default.preemptions),
        budget=_int("SIM_BUDGET", default.budget),
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


#: The random runs of a default session: a quarter of :data:`SOAK_RANDOM_RUNS`. The exhaustive tests prove every
#: schedule within their bounds, test_save_replays and test_write_path_replays replay the schedules and seeds that
#: found bugs; these sample larger runs.
RANDOM_RUNS = 580

#: The random runs of ``pytest --soak``: :data:`RANDOM_WEIGHTS` as they are.
SOAK_RANDOM_RUNS = sum(RANDOM_WEIGHTS.values())


def random_seeds(mode: str) -> List[int]:
    """The seeds of one mode's random test: ``SIM_SEED`` alone, or its share of the window."""
    seed = _int("SIM_SEED", None)
    if seed is not None:
        return [seed]
    start = _given("SIM_SEED_START", 0)
    runs = _given("SIM_RANDOM_RUNS", RANDOM_RUNS)
    total = sum(RANDOM_WEIGHTS.values())
    for name, weight in RANDOM_WEIGHTS.items():
        count = max(1, runs * weight // total)
        if name == mode:
            return list(range(start, start + count))
        start += count
    raise KeyError(mode)
