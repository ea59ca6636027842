"""Integer IDs for PynamoDB models, like AUTO_INCREMENT or a PostgreSQL SEQUENCE."""

from __future__ import annotations

import warnings
from typing import Any

from . import exceptions
from ._options import ModelOptions
from ._version import __version__ as __version__
from .attributes import CounterAttribute, CounterMixin
from .counter import NextId
from .history import HistoryMixin
from .mixin import AutoIncrementMixin, TransactWrite
from .sequence import SequenceOptions
from .signals import after_save, before_save, contention_failed, race_lost

__all__ = [
    "AutoIncrementMixin",
    "CounterAttribute",
    "CounterMixin",
    "HistoryMixin",
    "ModelOptions",
    "NextId",
    "SequenceOptions",
    "TransactWrite",
    "after_save",
    "before_save",
    "contention_failed",
    "race_lost",
]


def __getattr__(name: str) -> Any:
    """The errors 0.2 exported here, from :mod:`pynamodb_autoinc.exceptions` with a warning (for one release)."""
    if name in exceptions.__all__:
        warnings.warn(f"pynamodb_autoinc.{name} has moved: import it from pynamodb_autoinc.exceptions (the "
                      "top-level name goes away in 0.4)", DeprecationWarning, stacklevel=2)
        return getattr(exceptions, name)
    raise AttributeError(f"module 'pynamodb_autoinc' has no attribute {name!r}")
