"""``HistoryMixin``: every save of an item also writes its state, numbered 1, 2, 3, …, to a history model."""

from __future__ import annotations

import contextvars
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple, Type, cast

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import CancellationReason
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator

from . import _engine, regions, strategies
from ._budget import Budget
from ._checked import CheckedModel, refuse_order
from ._engine import Entry, Resend, Write, describe, exists_advice
from ._keys import KEY_TYPES, attribute_for, check_length, item_text, text_in
from ._options import options_for
from .attributes import CounterMixin
from .exceptions import (
    CONDITION_FAILED,
    TRANSIENT_REASONS,
    AutoIncrementError,
    ConfigurationError,
    HistoryWriteError,
    InvalidKeyError,
    ItemExistsError,
    VersionConflictError,
    reasons_of,
)
from .mixin import AutoIncrementMixin, key_absent, put_kwargs, send_after_save
from .mixin import ModelBase as _Base
from .mixin import claim_for as _claim
from .sequence import NUMBER_LIMIT, integer
from .strategies import Claim

#: How long a save resends a transaction cancelled by a concurrent one or throttled, or retries merges.
RETRIES = Budget(attempts=None, seconds=30.0, backoff=0.005)

Merge = Callable[[Any, Any], None]

# set while HistoryMixin writes: any other write of the item would skip its history
_writing: contextvars.ContextVar[bool] = contextvars.ContextVar("autoinc_history_writing", default=False)

_CONFIG = "_autoinc_history_config"


class _Config:
    """What a model's history needs, checked when the class is created."""

    def __init__(self, model: Type[Model]) -> None:
        _check_bases(model)
        history, version = _history_model(model), _version_name(model)
        attrs, keys = history.get_attributes(), (history._hash_keyname, history._range_keyname)
        needs = [(keys[0], UnicodeAttribute, "item = UnicodeAttribute(hash_key=True) to hold the item's key"),
                 (keys[1], NumberAttribute, "version = NumberAttribute(range_key=True) to hold the version"),
                 ("deleted", BooleanAttribute, "deleted = BooleanAttribute(default=False) to mark a tombstone")]
        for key, kind, need in needs:
            if key is None or not isinstance(attrs.get(key), kind):
                raise ConfigurationError(f"{history.__name__} (history of {model.__name__}) needs {need}")
        for key in (model._hash_keyname, model._range_keyname):
            attribute = model.get_attributes().get(key or "")
            if attribute is not None and attribute.attr_type not in KEY_TYPES:
                raise ConfigurationError(f"{model.__name__}.{key} is a {type(attribute).__name__}, which DynamoDB "
                                         "does not take as a key, so its history has no key; use a string, number "
                                         "or binary attribute")
        if issubclass(model, AutoIncrementMixin):
            _check_ids(model)
        self.history, self.version = history, version
        self.copied = [n for n in attrs if n not in (*keys, "deleted") and n in model.get_attributes()]


def _check_bases(model: Type[Model]) -> None:
    """Refuse HistoryMixin after AutoIncrementMixin in the bases, and beside CounterMixin."""
    name, mro = model.__name__, model.__mro__
    if AutoIncrementMixin in mro and mro.index(AutoIncrementMixin) < mro.index(HistoryMixin):
        raise ConfigurationError(f"{name} lists AutoIncrementMixin first, so its saves skip the history; put "
                                 f"HistoryMixin first: class {name}(HistoryMixin, AutoIncrementMixin, Model)")
    if issubclass(model, CounterMixin):
        raise ConfigurationError(f"{name} takes both HistoryMixin and CounterMixin, which write the item in "
                                 "different requests (a transaction, an UpdateItem); use one of them")


def _history_model(model: Type[Model]) -> Type[Model]:
    """``model``'s ``Meta.history_model``, refused if it is no PynamoDB model class."""
    history = getattr(model.Meta, "history_model", None)
    if not (isinstance(history, type) and issubclass(history, Model)):
        raise ConfigurationError(f"{model.__name__} takes HistoryMixin but Meta.history_model is {history!r}; set it "
                                 "to the PynamoDB model storing the versions")
    return history


def _version_name(model: Type[Model]) -> str:
    """The name of ``model``'s VersionAttribute, which numbers the versions; refused if none, or named ``version``."""
    name, version = model.__name__, model._version_attribute_name
    if version is None:
        raise ConfigurationError(f"{name} takes HistoryMixin but has no VersionAttribute, which numbers the "
                                 "versions: declare revision = VersionAttribute()")
    if version == "version":
        raise ConfigurationError(f"{name}.version is its VersionAttribute, which hides HistoryMixin's "
                                 "version(n); rename it: revision = VersionAttribute(attr_name='version')")
    return version


def _check_ids(model: Type[Model]) -> None:
    """Refuse an auto-increment ID that a resend may change (gapless, query strategy) or that a cycle reuses."""
    name, opts = model.__name__, options_for(model)
    if opts.gapless or opts.strategy == "query":
        raise ConfigurationError(f"{name}: HistoryMixin needs a new ID that no resend changes, unlike a "
                                 "gapless or query-strategy one; use fast mode or blocks")
    if opts.sequence.cycle:
        raise ConfigurationError(f"{name}: Meta.autoinc_cycle would give a new item a deleted item's ID and "
                                 "history; leave autoinc_cycle off, or drop HistoryMixin")


def _config(model: Type[Model]) -> _Config:
    """``model``'s history settings, in the class's own ``__dict__`` (a weak map would keep it alive)."""
    config: Optional[_Config] = model.__dict__.get(_CONFIG)
    if config is None:
        config = _Config(model)
        setattr(model, _CONFIG, config)
    return config


def item_key(hash_key: Any, range_key: Any = None) -> str:
    """The text an item's key is stored under in its history: the hash key, or ``[hash, range]`` in JSON; each
    value in the encoding of the attribute that stores a value of its type (see :mod:`pynamodb_autoinc._keys`): a
    number as DynamoDB stores it (7.0 is ``7``, 2.50 is ``2.5``), a datetime as a ``UTCDateTimeAttribute`` (a
    naive one as UTC), bytes in base64, so an item has one history however typed. A model's own
    :meth:`HistoryMixin.history_key` encodes by its key attributes."""
    values = (hash_key,) if range_key is None else (hash_key, range_key)
    try:
        return item_text([(attribute_for(value), value) for value in values])
    except ValueError as exc:
        raise InvalidKeyError(f"no history key for {values!r}: {exc}") from None


class HistoryMixin(_Base, metaclass=CheckedModel):
    """Keeps every saved state of an item, versions 1, 2, 3, … with no gap, in ``Meta.history_model``. Put it
    first in the bases, declare a ``VersionAttribute`` (not named ``version``, which would hide :meth:`version`)
    and name the history model, an ordinary PynamoDB model::

        class PageVersion(Model):
            class Meta:
                table_name = "page-history"
            item = UnicodeAttribute(hash_key=True)       # the item's key, as text
            version = NumberAttribute(range_key=True)    # 1, 2, 3, …
            deleted = BooleanAttribute(default=False)    # True: the tombstone of a delete()
            title = UnicodeAttribute(null=True)          # copied from the item attribute of the same name

    A save is one ``TransactWriteItems`` of the item, conditioned on the version it was read at, and its new
    version; an item stored before the model took HistoryMixin becomes version 1. Batch writes are refused.
    """

    @classmethod
    def _autoinc_check_class(cls) -> None:
        for method in ("save", "delete"):
            refuse_order(cls, HistoryMixin, method,
                         "it would never run: HistoryMixin writes the item and its version in its own transaction")
        setattr(cls, _CONFIG, _Config(cls))

    def save(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True,
             merge: Optional[Merge] = None) -> Dict[str, Any]:
        """Write the item and its new version in one transaction.

        :param merge: ``merge(mine, stored)`` updates ``mine`` when another writer saved first; the save is retried
        :raises VersionConflictError: another writer saved first (and no ``merge``)
        :raises HistoryWriteError: the transaction failed otherwise (``condition``, a recreated key, ...)
        """
        return self._write(condition, add_version_condition, deleted=False, merge=merge)

    def delete(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True) -> Any:
        """Delete the item and record its tombstone (``deleted=True``) as the next version, in one transaction;
        :class:`~pynamodb_autoinc.exceptions.VersionConflictError` if another writer saved it since it was read."""
        return self._write(condition, add_version_condition, deleted=True)

    def update(self, actions: List[Action], condition: Optional[Condition] = None, *,
               add_version_condition: bool = True) -> Any:
        """Refused: an ``UpdateItem`` would change the item without recording a version."""
        raise HistoryWriteError(f"{type(self).__name__}.update() would change the item without recording a "
                                "version; set the attributes and call save()")

    def __init__(self, hash_key: Any = None, range_key: Any = None, _user_instantiated: bool = True,
                 **attributes: Any) -> None:
        super().__init__(hash_key, range_key, _user_instantiated=_user_instantiated, **attributes)
        self._autoinc_read = not _user_instantiated

    def deserialize(self, attribute_values: Dict[str, Dict[str, Any]]) -> None:
        super().deserialize(attribute_values)
        self._autoinc_read = True  # refresh()

    def serialize(self, null_check: bool = True) -> Dict[str, Dict[str, Any]]:
        self._only_from_history("A batch write (BatchWrite.save()) or serialize()")
        return super().serialize(null_check=null_check)

    def _get_keys(self) -> Dict[str, Any]:
        self._only_from_history("A batch delete (BatchWrite.delete())")
        return cast(Dict[str, Any], super()._get_keys())

    def get_save_kwargs_from_instance(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        self._only_from_history("TransactWrite.save()")
        return super().get_save_kwargs_from_instance(*args, **kwargs)

    def get_update_kwargs_from_instance(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        self._only_from_history("TransactWrite.update()")
        return super().get_update_kwargs_from_instance(*args, **kwargs)

    def get_delete_kwargs_from_instance(self, *args: Any, **kwargs: Any) -> Dict[str, Any]:
        self._only_from_history("TransactWrite.delete()")
        return super().get_delete_kwargs_from_instance(*args, **kwargs)

    save_all = AutoIncrementMixin.__dict__["save_all"]  # the one save_all(); _autoinc_alone saves each item

    @classmethod
    def _autoinc_alone(cls, item: Model) -> Optional[Callable[[], Any]]:
        cls._refuse_strong()  # before the first item is saved
        return item.save

    @classmethod
    def batch_write(cls, auto_commit: bool = True) -> NoReturn:
        """Refused: a batch write cannot carry the version condition nor the history put."""
        raise HistoryWriteError(f"{cls.__name__}.batch_write() cannot record versions; save the instances one by "
                                "one with save()")

    def history_key(self) -> str:
        """The key this item's versions are stored under in the history model: the text of the item's key in its
        attributes' encoding (the same for a value as given and as read back), at most 2,048 bytes."""
        return _history_key(type(self), *self._key_values())

    def versions(self, *, consistent_read: bool = False, page_size: Optional[int] = None) -> ResultIterator[Model]:
        """This item's versions, newest first (a paged PynamoDB iterator of history model instances)."""
        return type(self).history(*self._key_values(), consistent_read=consistent_read, page_size=page_size)

    def version(self, number: int, *, consistent_read: bool = False) -> Model:
        """Version ``number`` of this item, a history model instance (the history model's ``DoesNotExist`` if none)."""
        return _config(type(self)).history.get(self.history_key(), number, consistent_read=consistent_read)

    @classmethod
    def history(cls, hash_key: Any, range_key: Any = None, *, consistent_read: bool = False,
                page_size: Optional[int] = None, last_evaluated_key: Optional[Dict[str, Any]] = None,
                ) -> ResultIterator[Model]:
        """The versions of the item with this key, newest first; a paged iterator (``last_evaluated_key``)."""
        return _config(cls).history.query(_history_key(cls, hash_key, range_key), scan_index_forward=False,
                                          consistent_read=consistent_read, page_size=page_size,
                                          last_evaluated_key=last_evaluated_key)

    def _only_from_history(self, what: str) -> None:
        if not _writing.get():
            raise HistoryWriteError(f"{what} of a {type(self).__name__} would change the item without recording "
                                    "a version; use its save() or delete() (or save_all())")

    @classmethod
    def _refuse_strong(cls) -> None:
        """Refuse, before a value is spent, a model on MRSC global tables (no transactions there)."""
        if issubclass(cls, AutoIncrementMixin) and not (opts := options_for(cls)).single_region_writes:
            regions.refuse_transactions(opts, f"{cls.__name__}: HistoryMixin",
                                        "keep this model on a table that is not MRSC, or drop HistoryMixin")

    def _key_values(self) -> Tuple[Any, Any]:
        cls = type(self)
        return (getattr(self, cls._hash_keyname or ""),
                getattr(self, cls._range_keyname) if cls._range_keyname else None)

    def _write(self, condition: Optional[Condition], add_version_condition: bool, *, deleted: bool,
               merge: Optional[Merge] = None) -> Dict[str, Any]:
        model, config = type(self), _config(type(self))
        if not add_version_condition:
            raise ConfigurationError(f"{model.__name__}.{'delete' if deleted else 'save'}(add_version_condition=False)"
                                     ": a history write always checks the version, so that two writes cannot claim "
                                     "one version (pass merge= to save() to resolve conflicts)")
        self._refuse_strong()
        opts = options_for(model) if issubclass(model, AutoIncrementMixin) and not deleted else None
        is_new = opts is not None and getattr(self, opts.attribute) is None
        if deleted and getattr(self, config.version) is None:
            what = ("an item stored without a version; save() it first (version 1)"
                    if getattr(self, "_autoinc_read", False) else
                    "an instance never saved or read; read the item (Model.get) and delete that instance")
            raise HistoryWriteError(f"{model.__name__}.delete() has no version to follow for {what}")
        writing = _writing.set(True)  # the signals' receivers may serialize() the item too
        try:
            claims = _claim(self, opts, is_new, "save") if opts is not None else []  # clears a new one's version
            with strategies.held(claims):
                write = _Versioned(self, config, condition, deleted, claims, merge)
            _engine.commit(write)
            if deleted:
                setattr(self, config.version, write.old + 1)  # type: ignore[operator]
            else:
                self.update_local_version_attribute()
            if opts is not None:
                send_after_save(model, instance=self, is_new=is_new, operation="save")
        finally:
            _writing.reset(writing)
        return {}


def _history_key(model: Type[Model], hash_key: Any, range_key: Any) -> str:
    """The history key of ``model``'s item with this key, in the encoding of its key attributes; refused
    (:class:`InvalidKeyError`) for a value they would not store, or past DynamoDB's 2,048 bytes."""
    attributes = model.get_attributes()
    names = [name for name in (model._hash_keyname, model._range_keyname) if name]
    parts = list(zip(names, (hash_key, range_key)))
    for name, value in parts:
        text_in(model, name, value, "the history key")  # refuses a value the attribute would not store, naming it
    key = item_text([(attributes[name], value) for name, value in parts])
    check_length(key, f"{model.__name__}: the history key",
                 "it holds the item's hash and range keys, so it can pass the limit where the item's own key does "
                 "not; shorten the key values")
    return key


class _Versioned(Write):
    """A history save or delete for the engine, resent within :data:`RETRIES`; failures name the version."""

    def __init__(self, item: HistoryMixin, config: _Config, condition: Optional[Condition], deleted: bool,
                 claims: List[Claim], merge: Optional[Merge]) -> None:
        super().__init__(item._get_connection().connection, [], [Entry(item, claims[0], 0)] if claims else [],
                         purpose="transaction", retry=False)
        self.item, self.config, self.condition, self.deleted, self.merge = item, config, condition, deleted, merge
        self.tries = RETRIES.tries()
        self.build()

    def build(self) -> None:
        item, config, model, deleted = self.item, self.config, type(self.item), self.deleted
        self.old: Optional[int] = getattr(item, config.version)
        old, condition = self.old, self.condition
        if (old or 0) + 1 >= NUMBER_LIMIT:  # DynamoDB would refuse the number (moto stores it)
            raise HistoryWriteError(f"{model.__name__} {item.history_key()!r}: version {(old or 0) + 1} has more "
                                    "digits than a DynamoDB number holds exactly (38); nothing was written")
        if self.claims:
            condition = key_absent(item, condition)
        elif not deleted and old is None:
            # PynamoDB conditions on the version only, which an item stored before HistoryMixin lacks too
            key = model._hash_key_attribute()
            first = key.exists() if getattr(item, "_autoinc_read", False) else key.does_not_exist()
            condition = first if condition is None else first & condition
        state: Dict[str, Any] = {name: None if deleted else getattr(item, name) for name in config.copied}
        record = config.history(item.history_key(), (old or 0) + 1, deleted=deleted, **state)
        version = record.get_save_kwargs_from_instance(condition=config.history._range_key_attribute().does_not_exist())
        self.puts = [version] if deleted else [put_kwargs(item, condition), version]
        self.deletes = [item.get_delete_kwargs_from_instance(condition=condition)] if deleted else []

    def verdict(self, exc: Exception) -> Any:
        if any(r is not None and r.code in TRANSIENT_REASONS for r in reasons_of(exc)):
            if self.tries.lost():
                return Resend()  # a concurrent transaction held an item, or it was throttled: nothing applied
            raise self.failure(exc, reasons_of(exc), [])  # the history's own budget is spent
        try:
            return super().verdict(exc)
        except VersionConflictError as lost:
            if self.merge is None or not self.tries.lost():
                raise
            item = self.item
            try:
                stored = type(item).get(*item._key_values(), consistent_read=True)
            except type(item).DoesNotExist:
                raise lost from None  # deleted: nothing to merge with
            self.merge(item, stored)
            name = self.config.version
            if getattr(stored, name) is None:  # stored without a version (before HistoryMixin): adopt it as 1
                item.attribute_values.pop(name, None)
                item._autoinc_read = True
            else:
                setattr(item, name, getattr(stored, name))
            if isinstance(item, AutoIncrementMixin):  # a new save of the merged state: its receivers run again
                _claim(item, options_for(type(item)), False, "save")
            self.build()
            return Resend()

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        return self.failure(exc, reasons_of(exc), [])

    def failure(self, exc: Exception, reasons: List[Optional[CancellationReason]],
                blocking: List[int]) -> AutoIncrementError:
        item, old, new = self.item, self.old, (self.old or 0) + 1
        name = f"{type(item).__name__} {item.history_key()!r}"
        codes = [getattr(r, "code", None) for r in reasons]
        if codes[:1] != [CONDITION_FAILED]:
            if codes[1:2] == [CONDITION_FAILED]:
                return HistoryWriteError(f"{name}: version {new} is already in {self.config.history.__name__}: a "
                                         "deleted key is created again, or the history was written outside "
                                         "HistoryMixin; give the new item another key", exc)
            return HistoryWriteError(f"{name}: the transaction writing version {new} failed: {exc}", exc)
        raw = reasons[0].raw_item  # type: ignore[union-attr]
        if self.claims and raw is not None:  # the new auto-increment ID's item exists already
            return ItemExistsError(f"{describe(item)}: "
                                   f"{exists_advice(self.entries[0])}; nothing was written, no version "
                                   f"recorded{self.spent()}", exc, cancellation_reasons=reasons)
        if self.deletes:
            return VersionConflictError(f"{name}: delete (tombstone version {new}) lost: the item was saved or "
                                        f"deleted by another writer since version {old}, or the condition failed; "
                                        "read it again", exc, attempted=new)
        version_attr = type(item).get_attributes()[self.config.version].attr_name
        current = integer(raw.get(version_attr, {}).get("N")) if raw else None
        if current is not None and current != old:
            return VersionConflictError(f"{name}: lost version {new} to another writer; the item is at version "
                                        f"{current}, this instance was read at {old}; read the item again, or pass "
                                        "merge= to save()", exc, attempted=new, current=current)
        if old is None and raw:
            return VersionConflictError(f"{name}: version 1 lost: the item exists (version {current}); read it first, "
                                        "or pass merge= to save()", exc, attempted=new, current=current)
        if old is not None and not raw:
            return VersionConflictError(f"{name}: version {new} lost: the item was deleted by another writer", exc,
                                        attempted=new)
        return HistoryWriteError(f"{name}: the condition passed did not hold; nothing was written", exc)


__all__ = ["HistoryMixin", "item_key"]
