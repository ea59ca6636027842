"""Period labels (years, months, days in UTC) from the library's clock; public as :mod:`pynamodb_autoinc.periods`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from . import _budget
from .exceptions import ConfigurationError

#: The ``strftime`` format of each period's label.
PERIODS = {"year": "%Y", "month": "%Y-%m", "day": "%Y-%m-%d"}


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
    """The label of the ``period`` that contains ``now`` (default: the library's clock), e.g. ``"2026-11"``."""
    return _budget.utc(_budget.clock.now() if now is None else now).strftime(PERIODS[check_period(period)])
