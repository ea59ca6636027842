"""``HistoryMixin``: every save of an item also writes its state, numbered 1, 2, 3, …, to a history model.

The item's :class:`~pynamodb.attributes.VersionAttribute` is the version
number. A save sends one ``TransactWriteItems`` holding the item's put
(conditioned on the version it was read at, as PynamoDB's optimistic locking
does) and the history put of the new version (conditioned on that version
not existing), so the item and its history never disagree and no version is
skipped. A save that lost to another writer raises
:class:`~pynamodb_autoinc.VersionConflictError`, or, given ``merge=``, reads
the stored item, lets the callback merge, and tries again.

The history model is an ordinary PynamoDB model::

    class PageVersion(Model):
        class Meta:
            table_name = "page-history"
        item = UnicodeAttribute(hash_key=True)       # the item's key, as text
        version = NumberAttribute(range_key=True)    # 1, 2, 3, …
        deleted = BooleanAttribute(default=False)    # True: the tombstone of a delete()
        title = UnicodeAttribute(null=True)          # copied from the item by name

Every other attribute it declares is copied from the item attribute of the
same name.
"""

from __future__ import annotations

import contextvars
import json
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple, Type, TypeVar, cast

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import CancellationReason
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import BatchWrite, Model
from pynamodb.pagination import ResultIterator

from . import _engine, regions, strategies
from ._budget import Budget
from ._checked import CheckedModel, refuse_order
from ._engine import Entry, Resend, Write, exists_advice
from ._options import options_for
from .attributes import CounterMixin
from .exceptions import (
    CONDITION_FAILED,
    TRANSIENT_REASONS,
    AutoIncrementError,
    ConfigurationError,
    GlobalTableError,
    HistoryWriteError,
    ItemExistsError,
    VersionConflictError,
    reasons_of,
)
from .mixin import AutoIncrementMixin, _claim, key_absent, put_kwargs, save_all, send_after_save
from .sequence import NUMBER_LIMIT, integer, number_text
from .strategies import Claim

_T = TypeVar("_T", bound="HistoryMixin")

if TYPE_CHECKING:
    _Base = Model
else:
    _Base = object

#: How long a save keeps resending a transaction that DynamoDB cancelled for a concurrent transaction
#: (``TransactionConflict``), or retrying merges, before giving up: 30 s, with a short backoff.
RETRIES = Budget(attempts=None, seconds=30.0, backoff=0.005)

Merge = Callable[[Any, Any], None]

# Set while HistoryMixin builds its write: any other write of the item would skip its history.
_writing: contextvars.ContextVar[bool] = contextvars.ContextVar("autoinc_history_writing", default=False)


class _Config:
    """What a model's history needs, checked once."""

    def __init__(self, model: Type[Model]) -> None:
        check_model(model)
        history = getattr(model.Meta, "history_model", None)
        if not (isinstance(history, type) and issubclass(history, Model)):
            raise ConfigurationError(
                f"{model.__name__} takes HistoryMixin but Meta.history_model is {history!r}; set it to the "
                "PynamoDB model storing the versions (see HistoryMixin)")
        version = model._version_attribute_name
        if version is None:
            raise ConfigurationError(
                f"{model.__name__} takes HistoryMixin but has no VersionAttribute; its version is the history's "
                "version number: declare revision = VersionAttribute()")
        if version == "version":
            raise ConfigurationError(
                f"{model.__name__}.version is its VersionAttribute, which hides HistoryMixin's version(n); "
                "rename it and keep the stored name: revision = VersionAttribute(attr_name='version')")
        attrs = history.get_attributes()
        hash_name, range_name = history._hash_keyname, history._range_keyname
        if hash_name is None or not isinstance(attrs[hash_name], UnicodeAttribute):
            raise ConfigurationError(
                f"{history.__name__} (history of {model.__name__}) needs a UnicodeAttribute hash key to hold "
                "the item's key, e.g. item = UnicodeAttribute(hash_key=True)")
        if range_name is None or not isinstance(attrs[range_name], NumberAttribute):
            raise ConfigurationError(
                f"{history.__name__} (history of {model.__name__}) needs a NumberAttribute range key to hold "
                "the version, e.g. version = NumberAttribute(range_key=True)")
        if not isinstance(attrs.get("deleted"), BooleanAttribute):
            raise ConfigurationError(
                f"{history.__name__} (history of {model.__name__}) needs deleted = BooleanAttribute(default=False) "
                "to mark the tombstone a delete() records")
        if issubclass(model, AutoIncrementMixin):
            opts = options_for(model)
            if opts.gapless or opts.strategy == "query":
                raise ConfigurationError(
                    f"{model.__name__}: HistoryMixin needs a new item's ID before its transaction is sent, and a "
                    "gapless or query-strategy ID can change when the transaction is resent; use fast mode "
                    "(Meta.autoinc_gapless = False) or blocks")
            if opts.sequence.cycle:
                raise ConfigurationError(
                    f"{model.__name__}: HistoryMixin keeps the versions of each key, and a cycling sequence "
                    "(Meta.autoinc_cycle) hands a deleted item's ID to a new item, whose version 1 is already in "
                    "that key's history, so its save would fail; leave autoinc_cycle off, or drop HistoryMixin")
        self.history: Type[Model] = history
        self.version = version
        item_attrs = model.get_attributes()
        self.copied = [name for name in attrs if name not in (hash_name, range_name, "deleted") and name in item_attrs]


def check_model(cls: type) -> None:
    """Refuse a class whose bases would let a write skip its history; None for every other class.

    Looks at the class alone (no request, no ``Meta`` option read), so it can
    run when the class is created. A ``HistoryMixin`` model must list it
    before ``AutoIncrementMixin`` (whose ``save()`` would otherwise write the
    item without its version), and cannot take ``CounterMixin``.

    :raises ConfigurationError: the class cannot keep its history as declared
    """
    if not (isinstance(cls, type) and issubclass(cls, HistoryMixin)):
        return
    mro = cls.__mro__
    if AutoIncrementMixin in mro and mro.index(AutoIncrementMixin) < mro.index(HistoryMixin):
        raise ConfigurationError(
            f"{cls.__name__} lists AutoIncrementMixin before HistoryMixin, so its save() and save_all() would "
            "write the item without recording its version; put HistoryMixin first: "
            f"class {cls.__name__}(HistoryMixin, AutoIncrementMixin, Model)")
    if issubclass(cls, CounterMixin):
        raise ConfigurationError(
            f"{cls.__name__} takes both HistoryMixin and CounterMixin, which write the item in different "
            "requests (a transaction, an UpdateItem); use one of them")


def _config(model: Type[Model]) -> _Config:
    """``model``'s history settings, kept in the class's own ``__dict__`` (a WeakKeyDictionary would keep the
    class alive: the settings refer to it)."""
    config: Optional[_Config] = model.__dict__.get(_CONFIG)
    if config is None:
        config = _Config(model)
        setattr(model, _CONFIG, config)
    return config


_CONFIG = "_autoinc_history_config"


def item_key(hash_key: Any, range_key: Any = None) -> str:
    """The text an item's key is stored under in its history: the hash key, or ``[hash, range]`` in JSON.

    A number is written as DynamoDB stores it (7.0 and 7 are ``7``, 1e20 is
    ``100000000000000000000``, 2.50 is ``2.5``), so an item has one history
    however its key was typed.
    """
    if range_key is None:
        return number_text(hash_key) or str(hash_key)
    return "[" + ", ".join(number_text(part) or json.dumps(part, default=str) for part in (hash_key, range_key)) + "]"


class HistoryMixin(_Base, metaclass=CheckedModel):
    """Keeps every saved state of an item, versions 1, 2, 3, … with no gap, in ``Meta.history_model``.

    Put it first in the bases (``class Page(HistoryMixin, Model)``, or before
    ``AutoIncrementMixin``: the other order is refused, see
    :func:`check_model`), declare a ``VersionAttribute`` (not named
    ``version``, which would hide :meth:`version`) and name the history
    model in ``Meta.history_model``.

    A new instance's first save is conditioned on its key being free, so it
    never overwrites a stored item, also one stored without a version (before
    the model took HistoryMixin); such an item, read and saved, becomes
    version 1. Batch writes, however made, are refused.
    """

    @classmethod
    def _autoinc_check_class(cls) -> None:
        """Refuse bases that would skip the history, and a ``Meta.history_model`` or version that cannot hold it."""
        check_model(cls)
        for method in ("save", "delete"):
            refuse_order(cls, HistoryMixin, method,
                         "it would never run: HistoryMixin writes the item and its version in its own transaction")
        _Config(cls)

    def save(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True,
             merge: Optional[Merge] = None) -> Dict[str, Any]:
        """Write the item and its new version in one transaction.

        :param merge: called as ``merge(mine, stored)`` when another writer
            saved first: update ``mine`` from ``stored`` (the item as it is
            now); the save is then tried again on top of the stored version.
        :raises VersionConflictError: another writer saved first (and no ``merge``)
        :raises HistoryWriteError: the transaction failed otherwise (``condition``, a recreated key, ...)
        """
        if not add_version_condition:
            raise ConfigurationError(
                f"{type(self).__name__}.save(add_version_condition=False) would let two saves claim one "
                "version; a history save always checks the version (pass merge= to resolve conflicts)")
        return self._write(condition, deleted=False, merge=merge)

    def delete(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True) -> Any:
        """Delete the item and record its tombstone (``deleted=True``) as the next version, in one transaction.

        :raises VersionConflictError: the item was saved by another writer since it was read
        """
        if not add_version_condition:
            raise ConfigurationError(
                f"{type(self).__name__}.delete(add_version_condition=False): a history delete always checks the "
                "version, so its tombstone follows the state it deletes")
        return self._write(condition, deleted=True)

    def update(self, actions: List[Action], condition: Optional[Condition] = None, *,
               add_version_condition: bool = True) -> Any:
        """Refused: an ``UpdateItem`` would raise the version without recording it; set the attributes and
        call :meth:`save`."""
        raise HistoryWriteError(f"{type(self).__name__}.update() would change the item without recording a "
                                "version; set the attributes on the instance and call save()")

    def __init__(self, hash_key: Any = None, range_key: Any = None, _user_instantiated: bool = True,
                 **attributes: Any) -> None:
        super().__init__(hash_key, range_key, _user_instantiated=_user_instantiated, **attributes)
        # read from the table (get, query, scan): a first save of an item stored without a version adopts it
        self._autoinc_read = not _user_instantiated

    def deserialize(self, attribute_values: Dict[str, Dict[str, Any]]) -> None:
        super().deserialize(attribute_values)
        self._autoinc_read = True  # refresh()

    def serialize(self, null_check: bool = True) -> Dict[str, Dict[str, Any]]:
        # PynamoDB's BatchWrite, however made, puts what this returns
        self._only_from_history("A batch write (BatchWrite.save()) or serialize()")
        return super().serialize(null_check=null_check)

    def _get_keys(self) -> Dict[str, Any]:
        # PynamoDB's BatchWrite deletes by what this returns
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

    @classmethod
    def save_all(cls, instances: Iterable[Model]) -> None:
        """Save the instances one by one, in order, each with :meth:`save` (its own transaction).

        :raises BulkSaveError: a save failed; ``saved`` and ``unsaved`` say which instances landed
        """
        save_all(cls, instances)

    @classmethod
    def _autoinc_alone(cls, item: Model) -> Optional[Callable[[], Any]]:
        """``save_all()`` writes each item with its own :meth:`save`, which records its version."""
        cls._refuse_strong()  # before the first item is saved
        return item.save

    @classmethod
    def batch_write(cls: Type[_T], auto_commit: bool = True) -> BatchWrite[_T]:
        """Refused: a batch write cannot carry the version condition nor the history put."""
        raise HistoryWriteError(f"{cls.__name__}.batch_write() cannot record versions (no condition, no "
                                "transaction); save the instances one by one with save()")

    def history_key(self) -> str:
        """The key this item's versions are stored under in the history model."""
        return item_key(*self._key_values())

    def versions(self, *, consistent_read: bool = False, page_size: Optional[int] = None) -> ResultIterator[Model]:
        """This item's versions, newest first (a paged PynamoDB iterator of history model instances)."""
        return type(self).history(*self._key_values(), consistent_read=consistent_read, page_size=page_size)

    def version(self, number: int, *, consistent_read: bool = False) -> Model:
        """Version ``number`` of this item, a history model instance.

        :raises DoesNotExist: (the history model's) there is no such version
        """
        history = _config(type(self)).history
        return history.get(self.history_key(), number, consistent_read=consistent_read)

    @classmethod
    def history(cls, hash_key: Any, range_key: Any = None, *, consistent_read: bool = False,
                page_size: Optional[int] = None, last_evaluated_key: Optional[Dict[str, Any]] = None,
                ) -> ResultIterator[Model]:
        """The versions of the item with this key, newest first; a paged iterator (``last_evaluated_key``)."""
        history = _config(cls).history
        return history.query(item_key(hash_key, range_key), scan_index_forward=False,
                             consistent_read=consistent_read, page_size=page_size,
                             last_evaluated_key=last_evaluated_key)

    # -- internals --------------------------------------------------------------

    def _only_from_history(self, what: str) -> None:
        if not _writing.get():
            raise HistoryWriteError(f"{what} of a {type(self).__name__} would change the item without recording "
                                    "a version; use its save() or delete() (or save_all()), which write the item "
                                    "and its version in one transaction")

    @classmethod
    def _refuse_strong(cls) -> None:
        """Refuse, before a value is spent, a model whose tables are MRSC global tables: a history write is a
        transaction, which they do not support."""
        if not issubclass(cls, AutoIncrementMixin):
            return  # nothing is spent: DynamoDB itself refuses the transaction
        opts = options_for(cls)
        if opts.single_region_writes:
            return
        regions.effective(opts)  # describes the tables once per process
        if regions.strong(opts):
            raise GlobalTableError(
                f"{cls.__name__}: HistoryMixin writes the item and its version in one TransactWriteItems, which "
                "global tables in multi-region strong consistency (MRSC) do not support; keep the history of "
                "this model on a table that is not MRSC, or drop HistoryMixin")

    def _key_values(self) -> Tuple[Any, Any]:
        cls = type(self)
        return (getattr(self, cls._hash_keyname or ""),
                getattr(self, cls._range_keyname) if cls._range_keyname else None)

    def _write(self, condition: Optional[Condition], *, deleted: bool, merge: Optional[Merge] = None) -> Dict[str, Any]:
        """Write the item (or delete it) and its next version as one write of the engine."""
        model, config = type(self), _config(type(self))
        self._refuse_strong()
        opts = options_for(model) if issubclass(model, AutoIncrementMixin) and not deleted else None
        is_new = opts is not None and getattr(self, opts.attribute) is None
        if deleted and getattr(self, config.version) is None:
            if getattr(self, "_autoinc_read", False):
                raise HistoryWriteError(f"{type(self).__name__}.delete() of an item stored without a version "
                                        "(before the model took HistoryMixin) has no version to follow; save() it "
                                        "first (version 1), then delete it")
            raise HistoryWriteError(f"{type(self).__name__}.delete() of an instance never saved or read has no "
                                    "version to follow; read the item (Model.get) and delete that instance")
        # the signals' receivers run inside the write too: one may serialize() the item (to log or publish it)
        writing = _writing.set(True)
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


class _Versioned(Write):
    """A history save or delete for the engine: the item's put (or delete) and the put of its next version.

    It is sent again, with a new ``ClientRequestToken``, while a concurrent
    transaction holds one of its items (``TransactionConflict``) or it was throttled, and, given
    ``merge``, after a lost version: the stored item is read, ``merge`` updates
    the instance from it, and the write is built again on top of the stored
    version; both for up to :data:`RETRIES`. Its failures name the version it
    would have been.
    """

    def __init__(self, item: HistoryMixin, config: _Config, condition: Optional[Condition], deleted: bool,
                 claims: List[Claim], merge: Optional[Merge]) -> None:
        super().__init__(item._get_connection().connection, [], [Entry(item, claims[0], 0)] if claims else [],
                         purpose="transaction", retry=False)
        self.item, self.config, self.condition, self.deleted, self.merge = item, config, condition, deleted, merge
        self.tries = RETRIES.tries()
        self.build()

    def build(self) -> None:
        """The item's put (or delete) and its next version's put, from the instance as it is now."""
        item, config, model, deleted = self.item, self.config, type(self.item), self.deleted
        self.old: Optional[int] = getattr(item, config.version)
        old, condition = self.old, self.condition
        if (old or 0) + 1 >= NUMBER_LIMIT:  # DynamoDB would refuse the number (moto stores it)
            raise HistoryWriteError(
                f"{model.__name__} {item.history_key()!r}: version {(old or 0) + 1} has more digits than a "
                "DynamoDB number holds exactly (38), so it cannot be recorded; nothing was written")
        if self.claims:
            condition = key_absent(item, condition)
        elif not deleted and old is None:
            # PynamoDB conditions a first save on the version attribute only, which an item stored before the
            # model took HistoryMixin lacks too: condition on the key
            key = model._hash_key_attribute()
            first = key.exists() if getattr(item, "_autoinc_read", False) else key.does_not_exist()
            condition = first if condition is None else first & condition
        state: Dict[str, Any] = {name: None if deleted else getattr(item, name) for name in config.copied}
        record = config.history(item.history_key(), (old or 0) + 1, deleted=deleted, **state)
        self.puts = [record.get_save_kwargs_from_instance(
            condition=config.history._range_key_attribute().does_not_exist())]
        self.deletes = [item.get_delete_kwargs_from_instance(condition=condition)] if deleted else []
        if not deleted:
            self.puts.insert(0, put_kwargs(item, condition))

    def verdict(self, exc: Exception) -> Any:
        if any(r is not None and r.code in TRANSIENT_REASONS for r in reasons_of(exc)) and self.tries.lost():
            return Resend()  # a concurrent transaction held an item, or it was throttled: nothing applied, send again
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
            self.build()  # on top of the stored version
            return Resend()

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        return self.failure(exc, reasons_of(exc), [])

    def failure(self, exc: Exception, reasons: List[Optional[CancellationReason]],
                blocking: List[int]) -> AutoIncrementError:
        item, old, new, config = self.item, self.old, (self.old or 0) + 1, self.config
        name = f"{type(item).__name__} {item.history_key()!r}"
        codes = [getattr(r, "code", None) for r in reasons]
        if codes[:1] != [CONDITION_FAILED]:
            if codes[1:2] == [CONDITION_FAILED]:
                return HistoryWriteError(
                    f"{name}: version {new} is already in {config.history.__name__}: the key was deleted and is "
                    "being created again, or the history was written outside HistoryMixin; a deleted key's "
                    "history ends with its tombstone, so give the new item another key", exc)
            return HistoryWriteError(f"{name}: the transaction writing version {new} failed: {exc}", exc)
        raw = reasons[0].raw_item  # type: ignore[union-attr]
        if self.claims and raw is not None:  # the new auto-increment ID's item exists already
            claim = self.claims[0]
            return ItemExistsError(f"{type(item).__name__} with {claim.opts.attribute}={claim.value!r}: "
                                   f"{exists_advice(self.entries[0])}; nothing was written, no version "
                                   f"recorded{self.spent()}", exc, cancellation_reasons=reasons)
        if self.deletes:
            return VersionConflictError(
                f"{name}: delete (tombstone version {new}) lost: the item was saved or deleted by another writer "
                f"since this instance was read at version {old}, or the condition passed did not hold; "
                "nothing was deleted; read the item again", exc, attempted=new)
        version_attr = type(item).get_attributes()[config.version].attr_name
        current = integer(raw.get(version_attr, {}).get("N")) if raw else None
        if current is not None and current != old:
            return VersionConflictError(
                f"{name}: lost version {new} to another writer; the item is at version {current}, this "
                f"instance was read at version {old}; read the item again, or pass merge= to save() to "
                "merge and retry", exc, attempted=new, current=current)
        if old is None and raw:
            return VersionConflictError(
                f"{name}: version 1 lost: the item already exists (version {current}); read it and save that "
                "instance, or pass merge= to save()", exc, attempted=new, current=current)
        if old is not None and not raw:
            return VersionConflictError(f"{name}: version {new} lost: the item was deleted by another writer", exc,
                                        attempted=new)
        return HistoryWriteError(f"{name}: the condition passed did not hold; nothing was written", exc)


__all__ = ["HistoryMixin", "check_model", "item_key"]
