"""Fixtures of the simulation tests, and a terminal summary of what the explorations covered."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest
from moto import mock_aws

from .world import MODES, World


@pytest.fixture
def make_world() -> Iterator[Callable[..., World]]:
    """``make_world("gapless")``, or ``make_world(Mode(...), model=..., save=... or workload=...)``: a world in this
    process's moto."""
    made: List[World] = []

    def make(mode: Any = "fast", **kwargs: Any) -> World:
        world = World(MODES[mode] if isinstance(mode, str) else mode, **kwargs)
        made.append(world)
        return world

    with mock_aws():
        yield make
        for world in made:
            world.close()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from .jobs import SUMMARY

    if SUMMARY:
        terminalreporter.section("deterministic simulation: what was explored")
        for line in SUMMARY:
            terminalreporter.write_line(line)

