"""The ``NextId`` counter model and the requests that move a counter.

One table holds many counters, one item per data-type key::

    {"NextKey": "user", "NextId": 3}     # the last value handed out

Every request a counter ever receives is built in this module.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any, Dict, Optional, Type, TypeVar, cast

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.constants import KEY, UPDATED_NEW
from pynamodb.exceptions import GetError, PynamoDBException, UpdateError
from pynamodb.models import Model

from .exceptions import AutoIncrementError, CounterError, CounterTableMissingError, CounterValueError

_C = TypeVar("_C", bound="NextId")

#: The ``Meta`` settings that decide which endpoint a table is reached through.
CONNECTION_SETTINGS = (
    "region",
    "host",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "connect_timeout_seconds",
    "read_timeout_seconds",
    "max_retry_attempts",
    "max_pool_connections",
    "extra_headers",
)


class NextId(Model):
    """The shared counter table: one item per data-type key.

    Subclass it to use another table name or endpoint, and name the subclass
    in a model's ``Meta.autoinc_counter``. Connection settings that the
    subclass's ``Meta`` does not set are taken from the model using it.
    """

    class Meta:
        table_name = "NextId"

    next_key = UnicodeAttribute(hash_key=True, attr_name="NextKey")
    next_id = NumberAttribute(null=True, attr_name="NextId")

    #: The connection settings this class's ``Meta`` sets itself.
    _autoinc_own_settings: frozenset = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = cls.__dict__.get("Meta")
        if meta is not None and not getattr(cls, "_autoinc_bound", False):
            # Runs before PynamoDB's metaclass fills in defaults, so what is
            # on Meta now is what the user wrote.
            cls._autoinc_own_settings = frozenset(s for s in CONNECTION_SETTINGS if s in vars(meta))

    # -- operations -----------------------------------------------------

    @classmethod
    def nextval(cls, key: str, *, step: int = 1, start: int = 1) -> int:
        """Advance counter ``key`` by ``step`` and return the new value, in one request.

        A missing counter starts at ``start``. Values are never handed out
        twice; a value whose item is never written leaves a gap.
        """
        attr = cls.next_id
        try:
            data = cls._get_connection().update_item(
                key,
                actions=[attr.set((attr | (start - step)) + step)],
                condition=attr.does_not_exist() | attr.is_type(),
                return_values=UPDATED_NEW,
            )
        except UpdateError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                cls.currval(key)  # raises, naming what the counter holds
                raise cls._not_a_number(key, exc) from exc
            raise cls._request_failed("advance", key, exc) from exc
        return cls._integer(key, data["Attributes"][attr.attr_name]["N"])

    @classmethod
    def currval(cls, key: str) -> Optional[int]:
        """The last value handed out by counter ``key`` (a consistent read), or None."""
        try:
            data = cls._get_connection().get_item(key, consistent_read=True)
        except GetError as exc:
            raise cls._request_failed("read", key, exc) from exc
        raw = data.get("Item", {}).get(cls.next_id.attr_name)
        if raw is None:
            return None
        if "N" not in raw:
            raise cls._not_a_number(key, None, raw)
        return cls._integer(key, raw["N"])

    @classmethod
    def setval(cls, key: str, value: int) -> None:
        """Set counter ``key`` so that the next value is ``value + step``."""
        cls(next_key=key, next_id=int(value)).save()

    @classmethod
    def swap_kwargs(cls, key: str, expected: Optional[int], value: int) -> Dict[str, Any]:
        """The TransactWriteItems ``Update`` that moves ``key`` from ``expected`` to ``value``.

        ``expected=None`` means the counter item must not exist yet.
        """
        attr = cls.next_id
        condition = cls.next_key.does_not_exist() if expected is None else attr == expected
        return cast(Dict[str, Any], cls._get_connection().get_operation_kwargs(
            key,
            key=KEY,
            actions=[attr.set(value)],
            condition=condition,
            return_values_on_condition_failure="ALL_OLD",
        ))

    # -- errors ---------------------------------------------------------

    @classmethod
    def _integer(cls, key: str, number: str) -> int:
        value = Decimal(number)
        if value != value.to_integral_value():
            raise cls._not_a_number(key, None, {"N": number})
        return int(value)

    @classmethod
    def _not_a_number(cls, key: str, cause: Optional[Exception], raw: Any = "non-number") -> CounterValueError:
        return CounterValueError(
            f"counter {key!r} in table {cls.Meta.table_name!r} holds {raw!r}, not an integer; "
            f"set it to the largest ID in use with {cls.__name__}.setval({key!r}, N)",
            cause,
        )

    @classmethod
    def _request_failed(cls, verb: str, key: str, exc: PynamoDBException) -> AutoIncrementError:
        if exc.cause_response_code == "ResourceNotFoundException":
            return CounterTableMissingError(
                f"counter table {cls.Meta.table_name!r} does not exist; create it with "
                f"{cls.__name__}.create_table(billing_mode='PAY_PER_REQUEST', wait=True)",
                exc,
            )
        return CounterError(f"could not {verb} counter {key!r} in table {cls.Meta.table_name!r}: {exc}", exc)


def bind_counter(counter: Type[_C], model: Type[Model]) -> Type[_C]:
    """``counter`` as reached with ``model``'s connection settings.

    Settings that ``counter``'s own ``Meta`` sets win; the others come from
    ``model.Meta``. Returns ``counter`` itself when nothing differs.
    """
    overrides = {
        name: getattr(model.Meta, name)
        for name in CONNECTION_SETTINGS
        if name not in counter._autoinc_own_settings
        and hasattr(model.Meta, name)
        and getattr(model.Meta, name) != getattr(counter.Meta, name, None)
    }
    if not overrides:
        return counter
    key = (counter, tuple(sorted((k, repr(v)) for k, v in overrides.items())))
    bound = _BOUND.get(key)
    if bound is None:
        meta = type("Meta", (counter.Meta,), {"table_name": counter.Meta.table_name, **overrides})
        bound = cast(Type[_C], type(counter.__name__, (counter,), {
            "Meta": meta,
            "__module__": counter.__module__,
            "__qualname__": counter.__qualname__,
            "_autoinc_bound": True,
        }))
        _BOUND[key] = bound
    return bound


_BOUND: Dict[Any, Any] = {}


def new_request_token() -> str:
    """A fresh ClientRequestToken for one TransactWriteItems attempt."""
    return uuid.uuid4().hex
