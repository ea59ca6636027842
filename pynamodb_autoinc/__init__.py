"""Integer IDs for PynamoDB models, like AUTO_INCREMENT or a PostgreSQL SEQUENCE."""

__version__ = "0.1.0"

from .bulk import BulkSaveError
from .counter import NextId
from .exceptions import (
    AutoIncrementError,
    ConditionFailedError,
    ConfigurationError,
    ContentionError,
    CounterError,
    CounterTableMissingError,
    CounterValueError,
    InvalidIdError,
    ItemExistsError,
    ItemWriteError,
    SequenceExhaustedError,
    TransactionCanceledError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
)
from .mixin import AutoIncrementMixin
from .signals import after_save, before_save

__all__ = [
    "AutoIncrementError",
    "AutoIncrementMixin",
    "BulkSaveError",
    "ConditionFailedError",
    "ConfigurationError",
    "ContentionError",
    "CounterError",
    "CounterTableMissingError",
    "CounterValueError",
    "InvalidIdError",
    "ItemExistsError",
    "ItemWriteError",
    "NextId",
    "SequenceExhaustedError",
    "TransactionCanceledError",
    "UnassignedIdError",
    "WriteOutcomeUnknownError",
    "after_save",
    "before_save",
]
