"""The calendar of periods: labels of years, months and days in UTC, and the clock they are read from.

The public face of this module is :mod:`pynamodb_autoinc.periods`; it lives
here, below the counter, so that the counter can label its periods.
"""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime, timezone
from typing import Any, Iterator, Optional

from .exceptions import ConfigurationError

#: The ``strftime`` format of each period's label.
PERIODS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}


class Clock:
    """The UTC time used for periods; ``frozen()`` pins it for tests."""

    def __init__(self) -> None:
        self._frozen: Optional[datetime] = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The current time in UTC (or the frozen time)."""
        return self._frozen or datetime.now(timezone.utc)

    @contextlib.contextmanager
    def frozen(self, at: datetime) -> Iterator[None]:
        """Pin the clock to ``at`` (a naive datetime is taken as UTC) inside the block."""
        with self._lock:
            before, self._frozen = self._frozen, _utc(at)
        try:
            yield
        finally:
            with self._lock:
                self._frozen = before


clock: Clock = Clock()
"""The clock periods are read from. ``with clock.frozen(datetime(2026, 12, 31)):`` in tests."""


def _utc(at: datetime) -> datetime:
    if not isinstance(at, datetime):
        raise ConfigurationError(f"now={at!r} is not a datetime; pass a datetime (a naive one is taken as UTC), "
                                 "or None for the clock's time")
    return at.replace(tzinfo=timezone.utc) if at.tzinfo is None else at.astimezone(timezone.utc)


def check_period(period: Any) -> str:
    """``period`` if it is a known period name, else a ConfigurationError naming them."""
    if not isinstance(period, str) or period not in PERIODS:  # a list is unhashable: no dict lookup
        raise ConfigurationError(f"unknown period {period!r}; use one of {', '.join(map(repr, PERIODS))}")
    return str(period)


def is_label(period: str, text: str) -> bool:
    """Whether ``text`` is the label of a ``period`` (``"2026-11"`` of a month), as :func:`label` writes one."""
    try:
        return datetime.strptime(text, PERIODS[period]).strftime(PERIODS[period]) == text
    except ValueError:
        return False


def label(period: str, now: Optional[datetime] = None) -> str:
    """The label of the ``period`` that contains ``now`` (default: :data:`clock`), e.g. ``"2026-11"``."""
    return _utc(clock.now() if now is None else now).strftime(PERIODS[check_period(period)])
