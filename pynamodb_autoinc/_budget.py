"""How long and how often a write may keep trying (:class:`Budget`), and the library's one :data:`clock`, which
every sleep and reading of the time goes through (the simulation swaps in a virtual one)."""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import ClassVar, Iterator, List, Optional, Tuple

from . import _bridge
from .exceptions import ConfigurationError


class Clock:
    """The time as the library reads it, and how it sleeps."""

    _frozen: ClassVar[List[Tuple[object, datetime]]] = []  # the blocks of frozen() not ended yet, the newest last

    def now(self) -> datetime:
        """The current time in UTC (or the time the newest :meth:`frozen` block still running pins): what periods
        are read from."""
        frozen = Clock._frozen
        return frozen[-1][1] if frozen else datetime.now(timezone.utc)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``: the thread blocks; an awaited call awaits :func:`asyncio.sleep`."""
        if _bridge.awaiting():
            import asyncio

            _bridge.wait(asyncio.sleep(seconds))
        else:
            time.sleep(seconds)

    @contextlib.contextmanager
    def frozen(self, at: datetime) -> Iterator[None]:
        """Pin :meth:`now` to ``at`` (a naive datetime is taken as UTC) inside the block. Blocks may nest or overlap
        (in threads): the newest block still running wins, and the clock runs again once every block has ended."""
        entry = (object(), utc(at))
        Clock._frozen = [*Clock._frozen, entry]
        try:
            yield
        finally:
            Clock._frozen = [e for e in Clock._frozen if e is not entry]


clock: Clock = Clock()


def utc(at: datetime) -> datetime:
    """``at`` in UTC (a naive datetime is taken as UTC); raises ConfigurationError if it is not a datetime."""
    if not isinstance(at, datetime):
        raise ConfigurationError(f"now={at!r} is not a datetime; pass a datetime (naive: UTC), or None for the clock")
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)


def backoff_delay(base: float, attempt: int) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(1 s, base * 2**(attempt-1))]."""
    return random.uniform(0.0, min(1.0, base * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class Budget:
    """A retrying loop stops after ``attempts`` lost tries or ``seconds`` (None: no limit); ``backoff`` None:
    no wait between tries."""

    attempts: Optional[int] = None
    seconds: Optional[float] = 10.0
    backoff: Optional[float] = 0.01

    def spent(self, losses: int, began: float) -> bool:
        """Whether a loop that lost ``losses`` tries since ``began`` (:data:`clock` time) must stop."""
        return (self.attempts is not None and losses > self.attempts) or (
            self.seconds is not None and clock.monotonic() - began >= self.seconds)

    def wait(self, losses: int) -> float:
        return 0.0 if self.backoff is None else backoff_delay(self.backoff, losses)

    def tries(self) -> Tries:
        return Tries(self)


class Tries:
    """``for _ in budget.tries():`` goes round again (after the wait) until the body leaves or the budget is spent."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.began = clock.monotonic()
        self.losses = 0

    @property
    def elapsed(self) -> float:
        return clock.monotonic() - self.began

    def lost(self) -> bool:
        """Count a lost try; return whether another is allowed (after the budget's wait, slept here)."""
        self.losses += 1
        if self.budget.spent(self.losses, self.began):
            return False
        if self.budget.backoff is not None:
            clock.sleep(self.budget.wait(self.losses))
        return True

    def __iter__(self) -> Iterator[int]:
        yield 1
        while self.lost():
            yield self.losses + 1
