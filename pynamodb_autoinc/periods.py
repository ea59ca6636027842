"""Periods that restart a sequence or a count: ``"year"``, ``"month"``, ``"day"``, in UTC.

A period is labelled with its year, so it never collides with the same month
of another year: ``"2026"``, ``"2026-11"``, ``"2026-11-22"``. Labels sort in
time order. The time comes from :data:`clock`, which tests can freeze.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Dict, Optional, Type

from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from . import _transport
from ._budget import Budget
from ._calendar import PERIODS, Clock, check_period, clock, label
from .counter import Once, _Refused, _Resent, check_by, send_update
from .exceptions import ConfigurationError, CounterError

#: How many times a count follows another process's reset of the period before it gives up.
MOVES = 8

#: Those tries, each at once.
_FOLLOWING = Budget(attempts=MOVES - 1, seconds=None, backoff=None)

__all__ = ["PERIODS", "Clock", "check_period", "clock", "increment_in_period", "label"]


def _attribute(model: Type[Model], option: str, name: Any, kind: Type[Attribute]) -> Any:
    """The attribute ``name`` of ``model`` that ``option`` names, if it is a ``kind`` outside the key.

    :raises ConfigurationError: naming the attributes that would do
    """
    attribute = model.get_attributes().get(name) if isinstance(name, str) else None
    if not isinstance(attribute, kind) or attribute.is_hash_key or attribute.is_range_key:
        fits = sorted(n for n, a in model.get_attributes().items()
                      if isinstance(a, kind) and not a.is_hash_key and not a.is_range_key)
        raise ConfigurationError(
            f"increment_in_period({model.__name__}, ...): {option}={name!r} must name a {kind.__name__} of "
            f"{model.__name__} outside its key; {'choose from ' + ', '.join(fits) if fits else 'declare one'}")
    return attribute


def increment_in_period(
    model: Type[Model],
    hash_key: Any,
    range_key: Any = None,
    *,
    count_attribute: str,
    period_attribute: str,
    period: str = "month",
    by: int = 1,
    now: Optional[datetime] = None,
) -> int:
    """Count one event on an existing item of ``model``, restarting the count each period.

    The item keeps its count in ``count_attribute`` (a NumberAttribute) and the
    label of the period it counts in ``period_attribute`` (a
    UnicodeAttribute), e.g. ``request_count`` and ``active_period`` on an API
    key. Returns the count within the current period, ``by`` included.

    The first request adds ``by`` if the stored period is the current one.
    Otherwise the second sets the count to ``by`` and the period to the current
    one, on the condition that the stored period is still an older one, so of
    two processes that reset at the same moment only one wins; the loser's
    event is then added by a third request. No event is ever lost or counted
    twice, also when botocore resends a request whose answer was lost: the
    requests of one call carry one sequence number of the thread's writer
    (as :meth:`NextId.increment` does), in an attribute ``NextW_<writer id>``
    of the item, so a resend of the request that was applied is recognised
    and not counted again. Those attributes are removed an hour after their
    writer's last count.

    :raises model.DoesNotExist: the item does not exist
    :raises CounterValueError: ``by`` is not an int
    :raises ConfigurationError: ``count_attribute`` does not name a NumberAttribute, or ``period_attribute``
        a UnicodeAttribute, of the model outside its key
    """
    check_by(f"increment_in_period({model.__name__}, {hash_key!r}, by={by!r})", by)
    attrs = model.get_attributes()
    count = _attribute(model, "count_attribute", count_attribute, NumberAttribute)
    stored = _attribute(model, "period_attribute", period_attribute, UnicodeAttribute)
    current = label(period, now)
    hash_attr = attrs[str(model._hash_keyname)]
    connection = model._get_connection()
    serialized_hash, serialized_range = model._serialize_keys(hash_key, range_key)
    meta = model.Meta
    once = Once((getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name, serialized_hash,
                 serialized_range), f"{model.__name__} {hash_key!r}")

    def send(actions: Any, condition: Condition, return_values: Optional[str]) -> Dict[str, Any]:
        return send_update(connection.connection, connection.get_operation_kwargs(
            serialized_hash, range_key=serialized_range, actions=actions, condition=condition,
            return_values=return_values, return_values_on_condition_failure="ALL_OLD"))

    def update(actions: Any, condition: Condition, result: Optional[int] = None) -> Optional[int]:
        try:
            data = once.send(send, actions, condition, "UPDATED_NEW")
        except _Resent as resent:
            return _count(resent.item)  # applied by an earlier send of this call: the count as it is now
        except _Refused:
            return None
        return result if result is not None else _count(data["Attributes"])

    def _count(item: Dict[str, Any]) -> int:
        return int(Decimal(item[count.attr_name]["N"]))

    for _ in _FOLLOWING.tries():
        value = update([count.set(count + by)], hash_attr.exists() & (stored == current))
        if value is not None:
            return value
        value = update([count.set(by), stored.set(current)],
                       hash_attr.exists() & (stored.does_not_exist() | (stored < current)), result=by)
        if value is not None:
            return value
        # Neither held: the item is missing, or its period is not older than ours.
        item = _transport.get(connection.connection, meta.table_name, serialized_hash, serialized_range)
        if item is None:
            raise model.DoesNotExist(f"{model.__name__} {hash_key!r} does not exist; create it before counting")
        seen = item.get(stored.attr_name, {}).get("S")
        if seen is None or seen > current:
            raise CounterError(
                f"{model.__name__} {hash_key!r}: {period_attribute} holds {seen!r}, which is not an older period "
                f"than {current!r} (is this clock behind the one that wrote it?)"
            )
        # Another process reset it to the current period: count there.
    raise CounterError(f"{model.__name__} {hash_key!r}: its period moved under {MOVES} requests in a row; the event "
                       "was not counted, try again")
