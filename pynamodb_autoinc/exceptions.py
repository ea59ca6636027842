"""The errors raised by pynamodb-autoinc, all rooted in :class:`AutoIncrementError`.

Every error subclasses :class:`pynamodb.exceptions.PynamoDBException`, keeps
the underlying DynamoDB error in ``cause`` and, where a transaction was
cancelled, the reasons in ``cancellation_reasons`` (aligned with the items as
they were sent). Errors of a failed item write also subclass the PynamoDB error
that a plain ``Model.save()`` would have raised (``PutError`` or
``TransactWriteError``), so existing ``except`` clauses keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from pynamodb.exceptions import (
    CancellationReason,
    PutError,
    PynamoDBException,
    TransactWriteError,
)

if TYPE_CHECKING:
    from pynamodb.models import Model


def error_responses(exc: Optional[BaseException]) -> List[dict]:
    """The botocore error responses behind ``exc`` (PynamoDB causes, ``raise ... from``), outermost first.

    An exception raised while another was being handled is not followed back
    to it: the earlier one's error code is not this failure's.
    """
    found, visited = [], set()
    while exc is not None and id(exc) not in visited:
        visited.add(id(exc))
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            found.append(response)
        exc = getattr(exc, "cause", None) or exc.__cause__
    return found


def error_code(exc: Optional[BaseException]) -> Optional[str]:
    """The DynamoDB error code behind ``exc`` (``ConditionalCheckFailedException``, ...), or None.

    Unlike PynamoDB's ``cause_response_code`` it does not fail on a cause
    that has no response (a connection closed before any answer).
    """
    return next((r["Error"]["Code"] for r in error_responses(exc) if r.get("Error", {}).get("Code")), None)


def error_message(exc: Optional[BaseException]) -> Optional[str]:
    """The DynamoDB error message behind ``exc``, or None."""
    return next((r["Error"]["Message"] for r in error_responses(exc) if r.get("Error", {}).get("Message")), None)


def returned_item(exc: Optional[BaseException]) -> Optional[Dict[str, Any]]:
    """The item a failed condition returned with ``exc`` (ALL_OLD), or None."""
    return next((dict(r["Item"]) for r in error_responses(exc) if "Item" in r), None)


#: The DynamoDB error a write gets on an MRSC table when another region modifies the item at the same time.
REPLICATED_WRITE_CONFLICT = "ReplicatedWriteConflictException"
#: The cancellation reason of an item whose condition failed.
CONDITION_FAILED = "ConditionalCheckFailed"
#: The cancellation reason of an item that a concurrent transaction touched.
CONFLICT = "TransactionConflict"
#: The cancellation reasons of an item that failed for the moment, with nothing applied: a concurrent
#: transaction touched it, or the table's (or partition's) throughput was exceeded. Sent again, it may pass.
TRANSIENT_REASONS = (CONFLICT, "ThrottlingError", "ProvisionedThroughputExceeded")


def reasons_of(exc: Optional[BaseException]) -> List[Optional[CancellationReason]]:
    """The cancellation reasons of a failed transaction, or [] when there are none."""
    while exc is not None:
        reasons = getattr(exc, "cancellation_reasons", None)
        if reasons:
            return list(reasons)
        exc = getattr(exc, "cause", None) or exc.__cause__
    return []


class AutoIncrementError(PynamoDBException):
    """The base of every error this library raises."""

    msg = "Auto-increment error"

    def __init__(
        self,
        msg: Optional[str] = None,
        cause: Optional[Exception] = None,
        *,
        cancellation_reasons: Sequence[Optional[CancellationReason]] = (),
    ) -> None:
        # Keep the botocore error itself, so cause_response_code works as on PynamoDB's errors.
        while isinstance(cause, PynamoDBException) and cause.cause is not None:
            cause = cause.cause
        super().__init__(msg, cause)
        self._autoinc_reasons: List[Optional[CancellationReason]] = list(cancellation_reasons)

    @property
    def cause_response_code(self) -> Optional[str]:
        """The DynamoDB error code of the cause, or None (also when no answer ever came)."""
        return error_code(self.cause)

    @property
    def cause_response_message(self) -> Optional[str]:
        """The DynamoDB error message of the cause, or None."""
        return error_message(self.cause)

    @property
    def cancellation_reasons(self) -> List[Optional[CancellationReason]]:
        """The transaction's cancellation reasons, one per item as sent (empty if none)."""
        return self._autoinc_reasons


class ConfigurationError(AutoIncrementError, ValueError):
    """A model's ``Meta.autoinc_*`` options, or its attributes, are not usable."""


class GlobalTableError(ConfigurationError):
    """A model on a DynamoDB global table cannot keep its IDs unique as configured (see
    :mod:`pynamodb_autoinc.regions`): choose a multi-region scheme, or fix the one chosen."""


class UnassignedIdError(AutoIncrementError, ValueError):
    """An item would be stored without its auto-increment ID."""


class InvalidIdError(AutoIncrementError, TypeError):
    """An ID set on an instance by hand is not a value the auto-increment attribute can hold."""


class CounterError(AutoIncrementError):
    """The counter could not hand out a value."""


class CounterTableMissingError(CounterError):
    """The counter table does not exist."""


class CounterValueError(CounterError, TypeError):
    """The counter item holds something that is not a number."""


class SequenceExhaustedError(CounterError):
    """The sequence has reached its end bound (``Meta.autoinc_max``, or ``autoinc_min`` going down) and does
    not cycle: nothing was spent."""

    last: Optional[int]
    """The counter's value when it was refused (None: the counter was new, or not known)."""

    def __init__(self, msg: Optional[str] = None, cause: Optional[Exception] = None, *,
                 last: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(msg, cause, **kwargs)
        self.last = last


class OutOfBoundsError(AutoIncrementError, ValueError):
    """A value given for a sequence (``setval``, a restart) lies outside its bounds; nothing was changed."""


class SequenceMismatchError(ConfigurationError):
    """The counter item records other sequence options than this model's: processes disagree about them.

    ``recorded`` holds what the counter item records.
    """

    recorded: Optional[str]

    def __init__(self, msg: Optional[str] = None, cause: Optional[Exception] = None, *,
                 recorded: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(msg, cause, **kwargs)
        self.recorded = recorded


class ContentionError(CounterError):
    """Too many writers raced for the same counter; the retries ran out."""


class ItemWriteError(AutoIncrementError, PutError):
    """The item carrying a new ID could not be written."""


class BulkSaveError(ItemWriteError):
    """Part of a ``save_all()`` failed; ``saved`` and ``unsaved`` say which instances landed."""

    saved: List[Model]
    unsaved: List[Model]


class WriteOutcomeUnknownError(ItemWriteError):
    """The item write got no answer, and checking whether it landed failed too.

    The item may be stored under the ID the instance still holds: read it
    before saving again, or the record may be stored twice.
    """


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

    attempted: Optional[int]
    current: Optional[int]

    def __init__(self, msg: Optional[str] = None, cause: Optional[Exception] = None, *,
                 attempted: Optional[int] = None, current: Optional[int] = None, **kwargs: Any) -> None:
        super().__init__(msg, cause, **kwargs)
        self.attempted, self.current = attempted, current


class BulkItemExistsError(BulkSaveError, ItemExistsError):
    """``save_all()`` was given two items with the same key (an explicit ID equal to another explicit one, or
    to a value the call hands a new instance); nothing of the transaction holding them was sent."""


class BulkSequenceExhaustedError(BulkSaveError, SequenceExhaustedError):
    """``save_all()`` asked a sequence for more values than are left before its end bound; nothing was spent
    for them."""


class BulkWriteOutcomeUnknownError(BulkSaveError, WriteOutcomeUnknownError):
    """A transaction of ``save_all()`` got no answer, and checking whether it landed failed too: its new
    instances (in ``unsaved``) keep their IDs, under which they may be stored; read them before saving again.
    The instances after it were not sent and keep no ID."""


__all__ = [
    "AutoIncrementError",
    "BulkItemExistsError",
    "BulkSaveError",
    "BulkSequenceExhaustedError",
    "BulkWriteOutcomeUnknownError",
    "ConditionFailedError",
    "ConfigurationError",
    "ContentionError",
    "CounterError",
    "CounterTableMissingError",
    "CounterValueError",
    "GlobalTableError",
    "HistoryWriteError",
    "InvalidIdError",
    "ItemExistsError",
    "ItemWriteError",
    "OutOfBoundsError",
    "SequenceExhaustedError",
    "SequenceMismatchError",
    "TransactionCanceledError",
    "UnassignedIdError",
    "VersionConflictError",
    "WriteOutcomeUnknownError",
]
