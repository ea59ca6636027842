"""``CounterAttribute``: a number the table raises on every write, like the AWS Java SDK's ``@DynamoDbAtomicCounter``
(a resent request whose answer was lost may raise it twice)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Type, cast

from pynamodb.attributes import Attribute, NumberAttribute
from pynamodb.constants import ALL_NEW, UPDATE_ITEM
from pynamodb.exceptions import UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model

from . import _transport
from ._checked import CheckedModel, overrides_after, refuse_order
from ._engine import describe as _describe
from ._options import options_for
from .exceptions import ConfigurationError, CounterValueError, error_code
from .mixin import AutoIncrementMixin, claim_for, send_after_save
from .sequence import NUMBER_LIMIT, is_int

if TYPE_CHECKING:
    _Base = Model

    class _IntegerAttribute(Attribute[int]):
        """A NumberAttribute that holds an int, for type checkers."""
else:
    _Base = object
    _IntegerAttribute = NumberAttribute


class CounterAttribute(_IntegerAttribute):
    """A number attribute that every ``save()`` and ``update()`` raises by ``delta`` (negative counts down), with
    no read; a new item stores ``start``. ``None`` until written; never a key; needs :class:`CounterMixin`."""

    def __init__(self, *, start: int = 0, delta: int = 1, **kwargs: Any) -> None:
        if not is_int(start) or not is_int(delta) or delta == 0:
            raise ConfigurationError(f"CounterAttribute(start={start!r}, delta={delta!r}): start must be an integer "
                                     "and delta a non-zero one, e.g. start=0, delta=1 (or -1 to count down)")
        if max(abs(start), abs(delta), abs(start - delta)) >= NUMBER_LIMIT:
            raise ConfigurationError(f"CounterAttribute(start={start!r}, delta={delta!r}): every write would pass the "
                                     "38 digits a DynamoDB number holds exactly; choose smaller numbers")
        if kwargs.get("hash_key") or kwargs.get("range_key"):
            raise ConfigurationError("CounterAttribute cannot be a key (a key cannot change); use a NumberAttribute")
        super().__init__(**{"null": True, **kwargs})
        self.start, self.delta = start, delta

    if not TYPE_CHECKING:  # typed as Attribute[int].__get__; checked at run time only
        def __get__(self, instance: Any, owner: Any) -> Any:
            # refused as PynamoDB creates the class (from __set_name__ it would be a RuntimeError before Python 3.12)
            if instance is None and isinstance(owner, type) and issubclass(owner, Model) \
                    and not issubclass(owner, CounterMixin):
                raise ConfigurationError(
                    f"{owner.__name__}.{self.attr_name} is a CounterAttribute, which a plain Model.save() would "
                    f"overwrite; declare class {owner.__name__}(CounterMixin, ..., Model)")
            return super().__get__(instance, owner)

    def serialize(self, value: Any) -> Any:
        """The number as DynamoDB takes it; anything but an int is refused, so no write stores a fraction."""
        if not is_int(value):
            raise CounterValueError(f"CounterAttribute {self.attr_name!r} counts in whole steps, but was given "
                                    f"{type(value).__name__} {value!r}; use an int, e.g. {self.attr_name}.add(1)")
        if abs(value) >= NUMBER_LIMIT:
            raise CounterValueError(f"CounterAttribute {self.attr_name!r} was given {value}, past the 38 digits a "
                                    "DynamoDB number holds exactly; use a smaller number")
        return super().serialize(value)

    def raised(self) -> Action:
        """The action raising this counter: ``SET c = if_not_exists(c, start - delta) + delta``."""
        return self.set((self | (self.start - self.delta)) + self.delta)


def counters(model: Type[Model]) -> Dict[str, CounterAttribute]:
    """The counter attributes of ``model``, by Python attribute name."""
    return {name: attr for name, attr in model.get_attributes().items() if isinstance(attr, CounterAttribute)}


def _at_start(item: Any, fields: Dict[str, CounterAttribute]) -> None:
    """Set each counter attribute in ``fields`` (name to attribute) of a new ``item`` to its start."""
    for name, attr in fields.items():
        setattr(item, name, attr.start)


class CounterMixin(_Base, metaclass=CheckedModel):
    """Makes a model's :class:`CounterAttribute` values rise on every ``save()`` and ``update()``, with no read;
    put it first in the bases (also before ``AutoIncrementMixin``)::

        class Page(CounterMixin, Model):
            class Meta:
                table_name = "pages"
            url = UnicodeAttribute(hash_key=True)
            views = CounterAttribute()                    # 0, 1, 2, ...
            stock = CounterAttribute(start=100, delta=-1)  # 100, 99, 98, ...
    """

    @classmethod
    def _autoinc_check_class(cls) -> None:
        mro = cls.__mro__
        if AutoIncrementMixin in mro and mro.index(AutoIncrementMixin) < mro.index(CounterMixin):
            raise ConfigurationError(f"{cls.__name__}: put CounterMixin before AutoIncrementMixin, class {cls.__name__}"
                                     "(CounterMixin, AutoIncrementMixin, Model), so a new item's counters start")
        refuse_order(cls, CounterMixin, "save", "it would be skipped: CounterMixin writes the item with an UpdateItem")
        name = cls.autoinc_options().attribute if issubclass(cls, AutoIncrementMixin) else None
        if name in counters(cls):
            raise ConfigurationError(f"{cls.__name__}: the auto-increment attribute {name!r} is a CounterAttribute, "
                                     "which every save sets, so no instance would be new; make it a "
                                     "NumberAttribute(null=True), or name another in Meta.autoinc_attribute")

    def update(self, actions: List[Action], condition: Optional[Condition] = None, *,
               add_version_condition: bool = True) -> Any:
        """``Model.update``, with every counter not named in ``actions`` raised by its delta; the instance then
        holds the stored values (``ALL_NEW``)."""
        actions = self._with_counters(actions)
        if overrides_after(type(self), CounterMixin, "update"):
            return super().update(actions, condition, add_version_condition=add_version_condition)
        if not actions:
            raise TypeError("the value of `actions` is expected to be a non-empty list")
        kwargs = self.get_update_kwargs_from_instance(actions, condition, add_version_condition=add_version_condition)
        try:
            data = _transport.send(self._get_connection().connection, UPDATE_ITEM, {**kwargs, "ReturnValues": ALL_NEW})
        except UpdateError as exc:
            names = ", ".join(repr(a.attr_name) for a in counters(type(self)).values())
            # DynamoDB: "... 38 significant digits ..." or "Number overflow"; DynamoDB Local: "... 38 digits"
            said = str(exc.cause_response_message or "")
            if not names or error_code(exc) != "ValidationException" or ("38" not in said and "overflow" not in said):
                raise
            raise CounterValueError(f"{_describe(self)}: a counter ({names}) would pass the 38 digits a DynamoDB "
                                    "number holds exactly; nothing was written. Set it lower", exc) from exc
        stored = self._get_discriminator_class(data["Attributes"])
        if stored and stored is not type(self):
            raise ValueError(f"Cannot update this item from the returned class: {stored.__name__}")
        self.deserialize(data["Attributes"])
        return data

    def get_update_kwargs_from_instance(self, actions: List[Action], condition: Optional[Condition] = None,
                                        return_values_on_condition_failure: Optional[str] = None, *,
                                        add_version_condition: bool = True) -> Dict[str, Any]:
        return super().get_update_kwargs_from_instance(  # TransactWrite.update(): the counters rise there too
            self._with_counters(actions), condition, return_values_on_condition_failure,
            add_version_condition=add_version_condition)

    def save(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True) -> Dict[str, Any]:
        """Write the instance in one ``UpdateItem`` that raises its counters and sets (or, when ``None``, removes)
        every other declared attribute; a new ``AutoIncrementMixin`` instance is put, its counters at ``start``."""
        if isinstance(self, AutoIncrementMixin) and getattr(self, type(self).autoinc_options().attribute) is None:
            fields = counters(type(self))
            before = {name: getattr(self, name) for name in fields}
            _at_start(self, fields)  # as save_all() puts a new item
            try:
                return super().save(condition, add_version_condition=add_version_condition)
            except BaseException:
                for name, value in before.items():
                    setattr(self, name, value)
                raise
        self._before_update("save")
        return self._update_fields(condition, add_version_condition)

    def _before_update(self, operation: str) -> None:
        """Before the ``UpdateItem``: ``before_save`` (``operation``: ``"save"``, or ``"bulk"`` in ``save_all()``),
        ID tracking and the checks a put would make."""
        if isinstance(self, AutoIncrementMixin):
            claim_for(self, type(self).autoinc_options(), False, operation)
        self.serialize(null_check=True)

    def _update_fields(self, condition: Optional[Condition] = None, add_version_condition: bool = True, *,
                       operation: str = "save") -> Dict[str, Any]:
        """The ``UpdateItem`` of ``save()`` (or ``save_all()``) for an item that has its ID, then ``after_save``."""
        cls = type(self)
        skip = {cls._hash_keyname, cls._range_keyname, cls._version_attribute_name, *counters(cls)}
        serialized = self.serialize(null_check=False)
        actions: List[Action] = [attr.set(getattr(self, name)) if attr.attr_name in serialized else attr.remove()
                                 for name, attr in cls.get_attributes().items() if name not in skip]
        data = self.update(actions, condition, add_version_condition=add_version_condition)  # adds the counters
        if isinstance(self, AutoIncrementMixin):
            send_after_save(cls, instance=self, is_new=False, operation=operation)
        return data

    @classmethod
    def save_all(cls, instances: Iterable[Model]) -> None:
        """``save_all()``; a new instance that is not stored gets its counters back as they were (they were set
        to ``start`` for its put), as after a failed ``save()``. One that may be stored keeps its ID and them."""
        items = list(instances)
        attribute = options_for(cls).attribute if issubclass(cls, AutoIncrementMixin) else None
        fields = counters(cls)
        before = [(item, {name: getattr(item, name) for name in fields}) for item in items
                  if attribute is not None and isinstance(item, cls) and getattr(item, attribute) is None]
        try:
            cast(Any, super()).save_all(items)
        except BaseException:
            for item, values in before:
                if getattr(item, str(attribute)) is None:  # its ID was given back: nothing of it was stored
                    for name, value in values.items():
                        setattr(item, name, value)
            raise

    @classmethod
    def _autoinc_alone(cls, item: Any) -> Optional[Callable[[], Any]]:
        """A new item is put with the others, counters at ``start``; one with its ID is updated after them."""
        if getattr(item, options_for(cls).attribute) is None:
            _at_start(item, counters(type(item)))
            return None
        item._before_update("bulk")
        return functools.partial(item._update_fields, operation="bulk")

    def _with_counters(self, actions: List[Action]) -> List[Action]:
        named = {".".join(getattr(action.values[0], "path", [])) for action in actions}
        return list(actions) + [attr.raised() for attr in counters(type(self)).values() if attr.attr_name not in named]


__all__ = ["CounterAttribute", "CounterMixin", "counters"]
