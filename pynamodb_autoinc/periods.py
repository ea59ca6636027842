"""Periods that restart a sequence or a count: ``"year"``, ``"month"``, ``"day"`` in UTC, labelled ``"2026"``,
``"2026-11"``, ``"2026-11-22"`` (sorting in time order). The time comes from :data:`clock`, which tests can freeze."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, Optional, Tuple, Type

from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.constants import ALL_NEW, UPDATED_NEW
from pynamodb.exceptions import UpdateError
from pynamodb.models import Model

from . import _transport
from ._budget import Budget, Clock, clock
from ._calendar import PERIODS, Period, check_period, label, parse
from .counter import Once, Refused, send_update
from .exceptions import ConfigurationError, CounterError, CounterValueError, HistoryWriteError, error_code
from .history import HistoryMixin
from .sequence import check_int, integer

#: How many times a count follows another process's reset of the period before it gives up.
MOVES = 8
_FOLLOWING = Budget(attempts=MOVES - 1, seconds=None, backoff=None)

__all__ = ["PERIODS", "Clock", "Period", "check_period", "clock", "increment_in_period", "label", "parse"]


def _attribute(model: Type[Model], option: str, name: Any, kind: Type[Attribute]) -> Any:
    """``model``'s attribute ``name`` if a ``kind`` outside the key and version, else a ConfigurationError."""
    fitting = {n: a for n, a in model.get_attributes().items() if isinstance(a, kind)
               and not isinstance(a, VersionAttribute) and not a.is_hash_key and not a.is_range_key}
    if not isinstance(name, str) or name not in fitting:
        choices = ", ".join(sorted(fitting))
        raise ConfigurationError(
            f"increment_in_period({model.__name__}, ...): {option}={name!r} must name a {kind.__name__} of "
            f"{model.__name__} outside its key; {'choose from ' + choices if choices else 'declare one'}")
    return fitting[name]


def _check_item(model: Any, hash_key: Any, range_key: Any) -> None:
    """Refuse a ``model`` that is no model class without history, or a key that does not fit it."""
    if not (isinstance(model, type) and issubclass(model, Model)):
        raise ConfigurationError(f"increment_in_period({model!r}, ...): the first argument must be a PynamoDB "
                                 "model class (the model of the item that counts), not an instance or a name")
    call, ranged = f"increment_in_period({model.__name__}, {hash_key!r}, ...)", model._range_keyname
    if hash_key is None:
        raise ConfigurationError(f"{call}: hash_key is None; pass the hash key of the item to count")
    if ranged is None and range_key is not None:
        raise ConfigurationError(f"{call}: {model.__name__} has no range key; pass the hash key alone")
    if ranged is not None and range_key is None:
        raise ConfigurationError(f"{call}: {model.__name__} has a range key ({ranged}); pass it after the hash key")
    if issubclass(model, HistoryMixin):
        raise HistoryWriteError(f"{call} would change a {model.__name__} without recording a version in its "
                                "history; keep the count on a model without HistoryMixin, or use NextId.increment")


def increment_in_period(model: Type[Model], hash_key: Any, range_key: Any = None, *, count_attribute: str,
                        period_attribute: str, period: str = "month", by: int = 1,
                        now: Optional[datetime] = None) -> int:
    """Count ``by`` events on an existing item of ``model``, restarting each period; return the count within the
    current period. The item keeps its count in ``count_attribute`` (a NumberAttribute) and its period's label in
    ``period_attribute`` (a UnicodeAttribute), e.g. ``request_count`` and ``active_period`` on an API key. No event
    is lost or counted twice, also when botocore resends a request or two processes reset the period at once.

    :raises model.DoesNotExist: the item does not exist
    :raises CounterValueError: ``by`` is not an int; the count would pass 38 digits, or holds no number
    :raises OutOfBoundsError: ``by`` has more than 38 digits
    :raises HistoryWriteError: ``model`` takes HistoryMixin (the count would change the item without a version)
    :raises ConfigurationError: the attributes are no NumberAttribute and UnicodeAttribute of ``model`` outside
        its key and version; ``model`` is no model class, the key does not fit it, or ``now`` is no datetime
    """
    _check_item(model, hash_key, range_key)
    check_int(f"increment_in_period({model.__name__}, {hash_key!r}, by={by!r})", by, rule="by must be an int",
              error=CounterValueError)
    return _transport.drive(_InPeriod(model, hash_key, range_key, count_attribute, period_attribute, period, now, by))


class _InPeriod(_transport.Exchange[int]):
    """:func:`increment_in_period`'s requests: add within the current period; refused, judge the period the item
    holds (as a period, not as text), then count on in it or restart the count, on the condition that it still
    holds that period; refused again, read the item and judge once more."""

    errors = (Refused,)

    def __init__(self, model: Type[Model], hash_key: Any, range_key: Any, count_attribute: str, period_attribute: str,
                 period: str, now: Optional[datetime], by: int) -> None:
        self.count = _attribute(model, "count_attribute", count_attribute, NumberAttribute)
        self.stored = _attribute(model, "period_attribute", period_attribute, UnicodeAttribute)
        self.name, self.keys = f"{model.__name__} {hash_key!r}", model._serialize_keys(hash_key, range_key)
        self.period = Period.containing(period, now)
        self.model, self.period_attribute, self.current, self.by = model, period_attribute, self.period.label, by
        self.connection, meta = model._get_connection(), model.Meta
        self.once = Once((getattr(meta, "host", None), getattr(meta, "region", None), meta.table_name, *self.keys),
                         self.name, lambda actions, condition, values: self.connection.get_operation_kwargs(
                             *self.keys, actions=actions, condition=condition, return_values=values,
                             return_values_on_condition_failure="ALL_OLD"), self.send)
        self.exists = model.get_attributes()[str(model._hash_keyname)].exists()  # the item is there to count on
        # a count raises the version, so a save of an instance read before fails instead of writing an old count
        version = model._version_attribute_name
        self.versioned = [model.get_attributes()[version].add(1)] if version else []
        self.seen: Optional[str] = self.current  # the text the item holds as its period, as far as this call knows
        self.restart, self.judged, self.tries = False, False, _FOLLOWING.tries()

    def request(self) -> Tuple[str, Dict[str, Any]]:
        count, stored, seen = self.count, self.stored, self.seen
        actions = [count.set(self.by if self.restart else count + self.by)]
        if seen != self.current:  # a restart, or the current period written another way ("2026-9")
            actions.append(stored.set(self.current))
        held = stored.does_not_exist() if seen is None else stored == seen
        # moto leaves an attribute that an update did not change out of UPDATED_NEW; DynamoDB names it
        self.once.aim([*actions, *self.versioned], self.exists & held, ALL_NEW if self.by == 0 else UPDATED_NEW)
        return self.once.request()

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return send_update(self.connection.connection, kwargs)
        except UpdateError as exc:
            if error_code(exc) != "ValidationException":
                raise
            raise CounterValueError(f"{self.name}: {self.count.attr_name} would pass 38 digits, or holds no number "
                                    f"({exc.cause_response_message}); nothing was counted. Set it to a number within "
                                    "the limit", exc) from exc

    def failed(self, refused: Refused) -> Optional[Dict[str, Any]]:
        """Refused: judge the period the item holds, from the item the refusal returned or (after a lost restart)
        from a read. Resent: the item as it is now."""
        try:
            return self.once.failed(refused)  # None: sent again at once, without the idle writers' attributes
        except Refused:
            pass
        if self.judged and not self.tries.lost():
            raise CounterError(f"{self.name}: its period moved under {MOVES} requests in a row; the event was not "
                               "counted, try again") from None
        item = refused.item if not self.judged else None  # another process moved the period: read where to
        if not item:
            item = _transport.get(self.connection.connection, self.model.Meta.table_name, *self.keys)
        if not item:
            raise self.model.DoesNotExist(f"{self.name} does not exist; create it before counting") from None
        self.judge(item.get(self.stored.attr_name))
        self.judged = True
        return None

    def judge(self, raw: Optional[Dict[str, Any]]) -> None:
        """From the period the item holds (``raw``, as stored), decide the next request: count on within it when it
        is the current period, restart the count when it is none, an older one or one of another length (the
        count restarts in the new period: nothing is merged), or refuse a later one."""
        seen = None if raw is None else raw.get("S")
        held = parse(seen)
        if raw is not None and held is None:
            raise CounterError(f"{self.name}: {self.period_attribute} holds {seen if seen is not None else raw!r}, "
                               "which names no period (a year '2026', a month '2026-11' or a day '2026-11-22'); "
                               "set it to the period of the count, or remove it") from None
        if held is not None and self.period.precedes(held):
            raise CounterError(f"{self.name}: {self.period_attribute} holds {seen!r}, which is not an older period "
                               f"than {self.current!r} (is this clock behind the one that wrote it?)") from None
        self.seen, self.restart = seen, held != self.period

    def applied(self, data: Dict[str, Any]) -> int:
        item = self.once.applied(data)["Attributes"]  # a resend's: the whole item as it is now
        if self.restart and self.count.attr_name not in item:  # UPDATED_NEW may leave out a count a restart kept
            return self.by
        count = integer((raw := item[self.count.attr_name]).get("N"))
        if count is None:
            raise CounterValueError(f"{self.name}: the event was counted, but {self.count.attr_name} holds {raw}, "
                                    "not an integer; set it to a whole number")
        return count
