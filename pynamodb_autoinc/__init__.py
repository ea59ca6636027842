"""Integer IDs for PynamoDB models, like AUTO_INCREMENT or a PostgreSQL SEQUENCE."""

from importlib.metadata import PackageNotFoundError, version

from .attributes import CounterAttribute, CounterMixin
from .counter import NextId
from .exceptions import (
    AutoIncrementError,
    BulkSaveError,
    ConditionFailedError,
    ConfigurationError,
    ContentionError,
    CounterError,
    CounterTableMissingError,
    CounterValueError,
    GlobalTableError,
    HistoryWriteError,
    InvalidIdError,
    ItemExistsError,
    ItemWriteError,
    OutOfBoundsError,
    SequenceExhaustedError,
    SequenceMismatchError,
    TransactionCanceledError,
    UnassignedIdError,
    VersionConflictError,
    WriteOutcomeUnknownError,
)
from .history import HistoryMixin
from .mixin import AutoIncrementMixin
from .sequence import SequenceOptions
from .signals import after_save, before_save

try:
    __version__ = version("pynamodb-autoinc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "AutoIncrementError",
    "AutoIncrementMixin",
    "BulkSaveError",
    "ConditionFailedError",
    "ConfigurationError",
    "ContentionError",
    "CounterAttribute",
    "CounterError",
    "CounterMixin",
    "CounterTableMissingError",
    "CounterValueError",
    "GlobalTableError",
    "HistoryMixin",
    "HistoryWriteError",
    "InvalidIdError",
    "ItemExistsError",
    "ItemWriteError",
    "NextId",
    "OutOfBoundsError",
    "SequenceExhaustedError",
    "SequenceMismatchError",
    "SequenceOptions",
    "TransactionCanceledError",
    "UnassignedIdError",
    "VersionConflictError",
    "WriteOutcomeUnknownError",
    "after_save",
    "before_save",
]
