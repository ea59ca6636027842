"""The errors of pynamodb-autoinc, under :class:`AutoIncrementError`: each a ``PynamoDBException`` with the DynamoDB
error in ``cause``; a failed item write is also the ``PutError`` or ``TransactWriteError`` of ``Model.save()``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Sequence

from pynamodb.exceptions import CancellationReason, PutError, PynamoDBException, TransactWriteError

if TYPE_CHECKING:
    from pynamodb.models import Model


def causes(exc: Optional[BaseException]) -> Iterator[BaseException]:
    """``exc`` and the errors behind it (``cause``, ``raise ... from``; not ``__context__``), outermost first."""
    visited = set()
    while exc is not None and id(exc) not in visited:
        visited.add(id(exc))
        yield exc
        exc = getattr(exc, "cause", None) or exc.__cause__


def error_responses(exc: Optional[BaseException]) -> List[dict]:
    """The botocore error responses behind ``exc``, outermost first."""
    return [response for e in causes(exc) if isinstance(response := getattr(e, "response", None), dict)]


def error_code(exc: Optional[BaseException], field: str = "Code") -> Optional[str]:
    """The DynamoDB error code (or ``field="Message"``) behind ``exc``, or None, also when no answer came."""
    return next((r["Error"][field] for r in error_responses(exc) if r.get("Error", {}).get(field)), None)


def returned_item(exc: Optional[BaseException]) -> Optional[Dict[str, Any]]:
    """The item a failed condition returned with ``exc`` (ALL_OLD), or None."""
    return next((dict(r["Item"]) for r in error_responses(exc) if "Item" in r), None)


#: The error of a write on an MRSC table that another region modifies at the same time.
REPLICATED_WRITE_CONFLICT = "ReplicatedWriteConflictException"
CONDITION_FAILED = "ConditionalCheckFailed"
CONFLICT = "TransactionConflict"
#: Cancellation reasons of an item that failed with nothing applied; sent again, it may pass.
TRANSIENT_REASONS = (CONFLICT, "ThrottlingError", "ProvisionedThroughputExceeded")


def reasons_of(exc: Optional[BaseException]) -> List[Optional[CancellationReason]]:
    """The cancellation reasons of a failed transaction, or []."""
    return next((list(reasons) for e in causes(exc) if (reasons := getattr(e, "cancellation_reasons", None))), [])


class AutoIncrementError(PynamoDBException):
    """The base of every error this library raises."""

    msg = "Auto-increment error"

    def __init__(self, msg: Optional[str] = None, cause: Optional[Exception] = None, *,
                 cancellation_reasons: Sequence[Optional[CancellationReason]] = (), **attributes: Any) -> None:
        while isinstance(cause, PynamoDBException) and cause.cause is not None:  # the botocore error, as PynamoDB's
            cause = cause.cause
        super().__init__(msg, cause)
        self._autoinc_reasons: List[Optional[CancellationReason]] = list(cancellation_reasons)
        self.__dict__.update(attributes)  # a subclass's own (last, recorded, attempted, current)

    @property
    def cause_response_code(self) -> Optional[str]:
        """The DynamoDB error code of the cause, or None (also when no answer came)."""
        return error_code(self.cause)

    @property
    def cause_response_message(self) -> Optional[str]:
        """The DynamoDB error message of the cause, or None."""
        return error_code(self.cause, "Message")

    @property
    def cancellation_reasons(self) -> List[Optional[CancellationReason]]:
        """The transaction's cancellation reasons, one per item as sent (empty if none)."""
        return self._autoinc_reasons


class ConfigurationError(AutoIncrementError, ValueError):
    """A model's ``Meta.autoinc_*`` options, or its attributes, are not usable."""


class GlobalTableError(ConfigurationError):
    """A model on a global table cannot keep its IDs unique as configured (see :mod:`pynamodb_autoinc.regions`)."""


class UnassignedIdError(AutoIncrementError, ValueError):
    """An item would be stored, or addressed, without its auto-increment ID."""


class InvalidIdError(AutoIncrementError, TypeError):
    """An ID set by hand is not a value the auto-increment attribute can hold."""


class InvalidKeyError(AutoIncrementError, ValueError):
    """A value cannot be written into a counter key (``Meta.autoinc_scope``) or a history key: its attribute would
    not store it as given, or the key would pass DynamoDB's 2,048 bytes for a partition key; nothing was sent."""


class CounterError(AutoIncrementError):
    """The counter could not hand out a value."""


class CounterTableMissingError(CounterError):
    """The counter table does not exist."""


class CounterValueError(CounterError, TypeError):
    """A counter holds, or would be given, something that is not an integer DynamoDB can store."""


class SequenceExhaustedError(CounterError):
    """The sequence reached its end bound (``Meta.autoinc_max``, or ``autoinc_min`` going down) and does not
    cycle; nothing was spent. ``last`` is the counter's value (None: new, or not known)."""

    last: Optional[int] = None


class OutOfBoundsError(AutoIncrementError, ValueError):
    """A value given for a sequence (``setval``, a restart) lies outside its bounds; nothing was changed."""


class SequenceMismatchError(ConfigurationError):
    """The counter item records (in ``recorded``) other sequence options than this model's."""

    recorded: Optional[str] = None


class ContentionError(CounterError):
    """Too many writers raced for the same counter; the retries ran out."""


class ItemWriteError(AutoIncrementError, PutError):
    """The item carrying a new ID could not be written."""


class BulkSaveError(ItemWriteError):
    """Part of a ``save_all()`` failed; ``saved`` and ``unsaved`` say which instances landed."""

    saved: List[Model]
    unsaved: List[Model]


class WriteOutcomeUnknownError(ItemWriteError):
    """The write got no answer, nor did the check whether it landed: the item may be stored under the ID the
    instance still holds. Read it before saving again."""


class ItemExistsError(ItemWriteError):
    """An item with the new key already exists: nothing was overwritten."""


class ConditionFailedError(ItemWriteError):
    """The condition passed to ``save()`` did not hold: nothing was written."""


class TransactionCanceledError(AutoIncrementError, TransactWriteError):
    """A user's ``TransactWrite`` holding new auto-increment items was cancelled."""


class HistoryWriteError(AutoIncrementError, TransactWriteError):
    """A ``HistoryMixin`` save or delete was not written: the item and its history are unchanged."""


class VersionConflictError(HistoryWriteError):
    """Another writer saved (or deleted) the item first; ``attempted`` is the version this write would have
    been, ``current`` the version stored now (None: deleted, or unknown)."""

    attempted: Optional[int] = None
    current: Optional[int] = None


class BulkItemExistsError(BulkSaveError, ItemExistsError):
    """``save_all()`` was given two items with one key; nothing of the transaction holding them was sent."""


class BulkSequenceExhaustedError(BulkSaveError, SequenceExhaustedError):
    """``save_all()`` asked a sequence for more values than are left; nothing was spent for them."""


class BulkWriteOutcomeUnknownError(BulkSaveError, WriteOutcomeUnknownError):
    """A ``save_all()`` transaction got no answer: its new instances (in ``unsaved``) keep the IDs they may be
    stored under; the instances after it were not sent and keep no ID."""


__all__ = [
    "AutoIncrementError", "BulkItemExistsError", "BulkSaveError", "BulkSequenceExhaustedError",
    "BulkWriteOutcomeUnknownError", "ConditionFailedError", "ConfigurationError", "ContentionError", "CounterError",
    "CounterTableMissingError", "CounterValueError", "GlobalTableError", "HistoryWriteError", "InvalidIdError",
    "InvalidKeyError", "ItemExistsError", "ItemWriteError", "OutOfBoundsError", "SequenceExhaustedError",
    "SequenceMismatchError", "TransactionCanceledError", "UnassignedIdError", "VersionConflictError",
    "WriteOutcomeUnknownError",
]
