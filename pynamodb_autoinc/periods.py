"""Periods that restart a sequence or a count: ``"year"``, ``"month"``, ``"day"``, in UTC.

A period is labelled with its year, so it never collides with the same month
of another year: ``"2026"``, ``"2026-11"``, ``"2026-11-22"``. Labels sort in
time order. The time comes from :data:`clock`, which tests can freeze.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Dict, Optional, Tuple, Type

from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute
from pynamodb.constants import GET_ITEM, UPDATE_ITEM
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
    count = _attribute(model, "count_attribute", count_attribute, NumberAttribute)
    stored = _attribute(model, "period_attribute", period_attribute, UnicodeAttribute)
    current = label(period, now)
    keys = model._serialize_keys(hash_key, range_key)
    meta = model.Meta
    once = Once((getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name, *keys),
                f"{model.__name__} {hash_key!r}")
    exchange = _InPeriod(model, f"{model.__name__} {hash_key!r}", keys, once, (count, stored, period_attribute),
                         current, by)
    try:
        return _transport.drive(exchange)
    except _Resent as resent:
        return exchange.counted(resent.item)  # applied by an earlier send of this call: the count as it is now


class _InPeriod(_transport.Exchange[int]):
    """:func:`increment_in_period`'s requests: add within the period, else reset it, else read the item and
    count again in the period another process reset it to."""

    errors = (_Refused,)

    def __init__(self, model: Type[Model], name: str, keys: Tuple[Any, Any], once: Once,
                 attributes: Tuple[Any, Any, str], current: str, by: int) -> None:
        self.model, self.name, self.keys, self.once, self.current, self.by = model, name, keys, once, current, by
        self.count, self.stored, self.period_attribute = attributes
        self.connection = model._get_connection()
        self.exists = model.get_attributes()[str(model._hash_keyname)].exists()  # the item is there to count on
        self.step, self.tries = 0, _FOLLOWING.tries()

    def request(self) -> Tuple[str, Dict[str, Any]]:
        count, stored, current, exists = self.count, self.stored, self.current, self.exists
        if self.step == 0:
            return UPDATE_ITEM, {"actions": [count.set(count + self.by)], "condition": exists & (stored == current)}
        if self.step == 1:
            return UPDATE_ITEM, {"actions": [count.set(self.by), stored.set(current)],
                                 "condition": exists & (stored.does_not_exist() | (stored < current))}
        return GET_ITEM, {}

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        hash_key, range_key = self.keys
        if operation == GET_ITEM:
            item = _transport.get(self.connection.connection, self.model.Meta.table_name, hash_key, range_key)
            raise _Refused(item or {}, None)  # neither update held: the item as it is (nothing: missing)
        return self.once.write(
            lambda actions, condition, values: self.connection.get_operation_kwargs(
                hash_key, range_key=range_key, actions=actions, condition=condition, return_values=values,
                return_values_on_condition_failure="ALL_OLD"),
            lambda kwargs: send_update(self.connection.connection, kwargs),
            kwargs["actions"], kwargs["condition"], "UPDATED_NEW")

    def failed(self, refused: _Refused) -> None:
        """Refused: send the next request; after the read, count again (within :data:`_FOLLOWING`)."""
        if self.step < 2:
            self.step += 1
            return
        name = self.name
        if not refused.item:
            raise self.model.DoesNotExist(f"{name} does not exist; create it before counting") from None
        seen = refused.item.get(self.stored.attr_name, {}).get("S")
        if seen is None or seen > self.current:
            raise CounterError(
                f"{name}: {self.period_attribute} holds {seen!r}, which is not an older period "
                f"than {self.current!r} (is this clock behind the one that wrote it?)"
            ) from None
        # Another process reset it to the current period: count there.
        self.step = 0
        if not self.tries.lost():
            raise CounterError(f"{name}: its period moved under {MOVES} requests in a row; the event was not "
                               "counted, try again") from None

    def applied(self, data: Dict[str, Any]) -> int:
        return self.by if self.step == 1 else self.counted(data["Attributes"])

    def counted(self, item: Dict[str, Any]) -> int:
        return int(Decimal(item[self.count.attr_name]["N"]))
