"""Explorations as jobs, run on every core: each worker process has its own moto and its own world.

A job names a mode (:data:`tests.simulation.world.MODES`) rather than
carrying a world, so that a spawned worker can build it. ``SIM_WORKERS``
sets the number of worker processes (default: the number of CPUs, at most
4); ``SIM_WORKERS=1`` runs everything in the test's own process.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple

from moto import mock_aws

from .explore import Bounds, Replay, Stats, exhaust, run_once, sample
from .world import MODES, World


@dataclass(frozen=True)
class Job:
    """One exploration of one mode: every schedule within ``bounds``, or one random run per seed."""

    mode: str
    bounds: Optional[Bounds] = None
    seeds: Tuple[int, ...] = ()
    path: Optional[Tuple[int, ...]] = None
    share: Tuple[int, int] = (0, 1)
    stop_after: int = 1

    def run(self) -> Stats:
        parent = os.getppid()

        def orphaned() -> bool:
            return os.getppid() != parent  # the test process died: stop rather than run on

        with mock_aws():
            world = World(MODES[self.mode])
            try:
                if self.path is not None:
                    assert self.bounds is not None
                    stats = Stats()
                    stats.add(run_once(world, self.bounds, Replay(self.path)),
                              f"SIM_PATH={','.join(map(str, self.path))}")
                    return stats
                if self.bounds is not None:
                    return exhaust(world, self.bounds, self.stop_after, self.share, stop=orphaned)
                return sample(world, self.seeds, self.stop_after, stop=orphaned)
            finally:
                world.close()


def workers() -> int:
    return max(1, int(os.environ.get("SIM_WORKERS") or min(4, os.cpu_count() or 1)))


_pool: List[Executor] = []

#: One line per exploration run in this session, for the terminal summary (see conftest.py).
SUMMARY: List[str] = []


def note(label: str, stats: Stats) -> None:
    """Record (and print, visible with ``-s``) what an exploration covered."""
    line = f"{label}: {stats.summary()}"
    SUMMARY.append(line)
    print(line)


def failure_message(stats: Stats, command: str) -> str:
    """The failing runs, each with the command that replays it."""
    runs = "\n\n".join(f"replay: {replay} {command}\n{what}" for replay, what in stats.failures[:3])
    return f"{len(stats.failures)} failing run(s)\n{runs}"


def _executor() -> Executor:
    if not _pool:
        _pool.append(ProcessPoolExecutor(workers(), mp_context=multiprocessing.get_context("spawn")))
        atexit.register(_pool[0].shutdown)
    return _pool[0]


def _run(job: Job) -> Stats:
    return job.run()


def run_all(jobs: Sequence[Job]) -> Stats:
    """Run ``jobs`` on the worker processes (or here, with one worker) and add up what they covered."""
    total = Stats()
    in_process = workers() == 1 or len(jobs) == 1
    results = [job.run() for job in jobs] if in_process else list(_executor().map(_run, jobs))
    for result in results:
        total.merge(result)
    return total


def exhaustive(mode: str, bounds: Bounds, path: Optional[Sequence[int]] = None, stop_after: int = 1) -> Stats:
    """Every schedule of ``mode`` within ``bounds``, split over the workers (or only the run ``path``)."""
    if path is not None:
        return run_all([Job(mode, bounds, path=tuple(path))])
    count = workers()
    return run_all([Job(mode, bounds, share=(i, count), stop_after=stop_after) for i in range(count)])


def randomized(mode: str, seeds: Sequence[int], stop_after: int = 1) -> Stats:
    """One random run of ``mode`` per seed, the seeds dealt out to the workers."""
    count = min(workers(), len(seeds)) or 1
    return run_all([replace(Job(mode, stop_after=stop_after), seeds=tuple(seeds[i::count])) for i in range(count)])
