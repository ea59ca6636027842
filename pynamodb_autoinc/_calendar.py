"""Periods (years, months, days in UTC) as spans of time, and their labels; public as :mod:`pynamodb_autoinc.periods`.

A label names a period (``"2026"``, ``"2026-11"``, ``"2026-11-22"``); two labels are compared through the periods
they name (:func:`parse`), never as text: ``"2026-9"`` is September, before ``"2026-10"``, and a month is neither
before nor after the year that holds it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional, Tuple

from . import _budget
from .exceptions import ConfigurationError

#: The ``strftime`` format of each period's label.
PERIODS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}

_KINDS = ("year", "month", "day")  # by the number of parts of a label
_LABEL = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", re.ASCII)


def check_period(period: Any) -> str:
    """``period`` if it is a known period name, else a ConfigurationError naming them."""
    if not isinstance(period, str) or period not in PERIODS:  # a list is unhashable: no dict lookup
        raise ConfigurationError(f"unknown period {period!r}; use one of {', '.join(map(repr, PERIODS))}")
    return str(period)


@dataclass(frozen=True)
class Period:
    """A year, month or day in UTC, as the span of time from :attr:`start` up to (not including) :attr:`end`.
    Equal periods are equal spans; :meth:`precedes` orders two periods of any lengths."""

    kind: str
    start: datetime  # timezone-aware, UTC, at the period's first instant

    @classmethod
    def containing(cls, kind: str, now: Optional[datetime] = None) -> Period:
        """The ``kind`` of period (``"year"``, ``"month"``, ``"day"``) that holds ``now`` (default: the clock)."""
        kind = check_period(kind)
        at = _budget.utc(_budget.clock.now() if now is None else now)
        parts = (at.year, at.month if kind != "year" else 1, at.day if kind == "day" else 1)
        return cls(kind, datetime(*parts, tzinfo=timezone.utc))

    @property
    def end(self) -> datetime:
        """The first instant after the period (the last instant datetime holds, for the last day of year 9999)."""
        year, month = self.start.year, self.start.month
        try:
            if self.kind == "year":
                return self.start.replace(year=year + 1)
            if self.kind == "month":
                return self.start.replace(year=year + month // 12, month=month % 12 + 1)
            return datetime.fromordinal(self.start.toordinal() + 1).replace(tzinfo=timezone.utc)
        except (ValueError, OverflowError):
            return datetime.max.replace(tzinfo=timezone.utc)

    @property
    def label(self) -> str:
        """The period's label as the library writes it: ``"2026"``, ``"2026-11"`` or ``"2026-11-22"``."""
        parts = [f"{self.start.year:04d}", f"{self.start.month:02d}", f"{self.start.day:02d}"]
        return "-".join(parts[:_KINDS.index(self.kind) + 1])

    def precedes(self, other: Period) -> bool:
        """Whether this period ends before ``other`` starts (a month does not precede its own year, nor follow it)."""
        return self.end <= other.start

    def contains(self, at: datetime) -> bool:
        """Whether the instant ``at`` (naive: UTC) lies within this period."""
        return self.start <= _budget.utc(at) < self.end


def parse(text: Any) -> Optional[Period]:
    """The period a label names, or None when ``text`` names none. A month or day may leave out its leading zero
    (``"2026-9"`` is September 2026); the year has four digits."""
    found = _LABEL.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return None
    year, month, day = (int(part) if part is not None else 1 for part in found.groups())
    try:
        start = datetime(year, month, day, tzinfo=timezone.utc)
    except ValueError:  # month 13, February 30, year 0000
        return None
    return Period(_KINDS[sum(part is not None for part in found.groups()) - 1], start)


def is_label(period: str, text: str) -> bool:
    """Whether ``text`` is the label of a ``period`` (``"2026-11"`` of a month), as :func:`label` writes one."""
    named = parse(text)
    return named is not None and named.kind == period and named.label == text


def apart(period: str) -> Tuple[str, ...]:
    """Labels of ``period`` each one digit away from the first (``"2026-11"``: ``"2026-12"``, ``"2026-01"``,
    ``"2027-11"``, ``"2036-11"``, ``"2126-11"``, ``"3026-11"``), so that a format writing them all apart shows every
    digit of a label: the whole period."""
    dates = [(2026, 11, 22), (2027, 11, 22), (2036, 11, 22), (2126, 11, 22), (3026, 11, 22)]
    if period != "year":
        dates += [(2026, 12, 22), (2026, 1, 22)]
    if period == "day":
        dates += [(2026, 11, 23), (2026, 11, 12)]
    return tuple(label(period, datetime(*date, tzinfo=timezone.utc)) for date in dates)


def label(period: str, now: Optional[datetime] = None) -> str:
    """The label of the ``period`` that contains ``now`` (default: the library's clock), e.g. ``"2026-11"``."""
    return Period.containing(period, now).label
