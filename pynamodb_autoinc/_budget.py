"""How long, and how often, a write may keep trying: one retry policy, and the library's one clock.

A :class:`Budget` says when to stop (after ``attempts`` lost tries and/or
``seconds``) and how long to wait between tries (exponential backoff with
full jitter, from ``backoff`` up to one second). :class:`Tries` counts one
loop's lost tries against a budget. Every sleep and every reading of the
time in the library, the calendar's included, goes through :data:`clock`,
which the simulation replaces with a virtual one and tests pin with
``clock.frozen(...)``.
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import ClassVar, Iterator, Optional

from .exceptions import ConfigurationError

#: The longest wait between two tries, in seconds.
MAX_WAIT = 1.0


class Clock:
    """The time as the library reads it, and how it sleeps (the simulation swaps in a subclass)."""

    _frozen: ClassVar[Optional[datetime]] = None
    """The time :meth:`frozen` pins, whichever clock runs (None: the real time)."""

    def now(self) -> datetime:
        """The current time in UTC (or the frozen time): what periods and writers' sequence numbers are read
        from."""
        return Clock._frozen or datetime.now(timezone.utc)

    def monotonic(self) -> float:
        """Seconds, for measuring how long a write has tried."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    @contextlib.contextmanager
    def frozen(self, at: datetime) -> Iterator[None]:
        """Pin :meth:`now` to ``at`` (a naive datetime is taken as UTC) inside the block."""
        before, Clock._frozen = Clock._frozen, utc(at)
        try:
            yield
        finally:
            Clock._frozen = before


clock: Clock = Clock()
"""The library's one clock."""


def utc(at: datetime) -> datetime:
    """``at`` in UTC (a naive datetime is taken as UTC).

    :raises ConfigurationError: ``at`` is not a datetime
    """
    if not isinstance(at, datetime):
        raise ConfigurationError(f"now={at!r} is not a datetime; pass a datetime (a naive one is taken as UTC), "
                                 "or None for the clock's time")
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)


def backoff_delay(base: float, attempt: int) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(1 s, base * 2**(attempt-1))]."""
    return random.uniform(0.0, min(MAX_WAIT, base * 2 ** (attempt - 1)))


@dataclass(frozen=True)
class Budget:
    """When a retrying loop stops, and how long it waits between tries.

    ``attempts``: how many lost tries are retried (None: no count);
    ``seconds``: for how long (None: no limit). The library's own budgets
    always set one; only a model's ``Meta.autoinc_timeout = None`` with no
    ``Meta.autoinc_retries`` asks to wait for ever, as PostgreSQL's
    ``lock_timeout = 0`` does. ``backoff`` None: the next try goes at once,
    with no sleep (a loop whose tries are not races: a scan's pages, a
    request sent again without what it was refused for).
    """

    attempts: Optional[int] = None
    seconds: Optional[float] = 10.0
    backoff: Optional[float] = 0.01

    def spent(self, losses: int, began: float) -> bool:
        """Whether a loop that lost ``losses`` tries since ``began`` (:data:`clock` time) must stop."""
        return (self.attempts is not None and losses > self.attempts) or (
            self.seconds is not None and clock.monotonic() - began >= self.seconds)

    def wait(self, losses: int) -> float:
        """The pause before the try after ``losses`` lost ones."""
        return 0.0 if self.backoff is None else backoff_delay(self.backoff, losses)

    def tries(self) -> Tries:
        """A fresh count of one loop's tries under this budget."""
        return Tries(self)


class Tries:
    """One loop's lost tries, counted against its :class:`Budget` from the moment it began."""

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
        """The tries of one loop, numbered from 1: ``for _ in budget.tries():`` goes round again (after the
        wait) each time the body does not leave the loop, until the budget is spent."""
        yield 1
        while self.lost():
            yield self.losses + 1
