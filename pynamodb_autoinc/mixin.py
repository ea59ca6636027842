"""``AutoIncrementMixin``: how a model with an auto-increment ID is written, by ``save()``, ``save_all()``,
``TransactWrite.save()`` and ``batch_write()`` (see docs/architecture.md, "mixin")."""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Type, TypeVar

from pynamodb.constants import ITEM, PUT
from pynamodb.exceptions import PutError
from pynamodb.expressions.condition import Condition
from pynamodb.models import BatchWrite, Model
from pynamodb.pagination import ResultIterator
from pynamodb.transactions import TransactWrite as _PynamoTransactWrite

from . import _bulk, _engine, _group, _transport, regions, strategies
from ._aio import AsyncSaves, AsyncTransaction
from ._checked import CheckedModel, refuse_order
from ._engine import Entry, Write
from ._item import STORED, check_explicit, explicit_failure, track
from ._options import OPTIONS_CACHE, Options, check_options, options_for
from ._transact import Hook, operations
from .counter import RESERVED_PREFIX
from .exceptions import (
    AutoIncrementError,
    BulkSaveError,
    SequenceExhaustedError,
    TransactionCanceledError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
)
from .signals import after_save, before_save
from .strategies import Claim

_T = TypeVar("_T", bound=Model)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    ModelBase = Model
else:
    ModelBase = object
"""The base of the library's model mixins: ``Model`` to a type checker, ``object`` at run time."""

# for the library's before_save receiver: the write's claims so far, and whether a gapless claim must read its counter
_pending: contextvars.ContextVar[Optional[Tuple[List[Claim], bool]]] = contextvars.ContextVar(
    "autoinc_pending", default=None)


class AutoIncrementMixin(AsyncSaves, ModelBase, metaclass=CheckedModel):
    """Gives a PynamoDB model an integer ID assigned on its first save; put it before ``Model`` in the bases and
    configure it in ``Meta``::

        class User(AutoIncrementMixin, Model):
            class Meta:
                table_name = "users"
                autoinc_key = "user"        # counter key (default: table_name)
                autoinc_gapless = False     # True: no value is ever spent without its item
            id = NumberAttribute(hash_key=True)

    An instance whose auto-increment attribute is ``None`` is new: saving it claims the next value and writes
    the item only if no item with its key exists. Any other save is an ordinary PynamoDB save.
    """

    @classmethod
    def autoinc_options(cls) -> Options:
        """This model's validated ``Meta.autoinc_*`` options (checked when the class is created)."""
        return options_for(cls)

    @classmethod
    def _autoinc_check_class(cls) -> None:
        refuse_order(cls, AutoIncrementMixin, "save",
                     "it would be skipped for new instances, which this mixin writes itself")
        check_options(cls)

    def save(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True) -> Dict[str, Any]:
        """Save the item; a new instance first gets its ID and is stored as a new item, version 1.

        :raises ItemExistsError: an item with the new key exists (nothing overwritten)
        :raises ConditionFailedError: ``condition`` did not hold
        :raises ContentionError: the counter (or partition) race was lost too many times
        """
        model = type(self)
        opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
        if not opts.numbered:  # a base class without a table, a model without a hash key: PynamoDB's own save
            return super().save(condition, add_version_condition=add_version_condition)
        is_new = getattr(self, opts.attribute) is None
        claims = claim_for(self, opts, is_new, "save")
        if not claims:
            try:
                with _transport.followed(model._get_connection().connection):
                    data = super().save(condition, add_version_condition=add_version_condition)
            except PutError as exc:  # PynamoDB's own: named as the library's errors name a write
                if isinstance(exc, AutoIncrementError):
                    raise
                # named as the engine names a write, with the condition that failed: the caller's or the version's
                raise explicit_failure(self, exc, condition, add_version_condition) from exc
        else:
            try:  # whatever ends the write; the engine commits or releases the claim
                connection = (model._get_connection().connection if opts.home_region is None or not opts.gapless
                              else regions.write_connection(model, opts))
                put = put_kwargs(self, key_absent(self, condition), add_version_condition)
                write = Write(connection, [put], [Entry(self, claims[0], 0)], purpose="save")
                claim = claims[0]  # a lone gapless save joins its process's other threads' saves on the counter
                joins = claim.kind == "swap" and claim.opts.attribute == model._hash_keyname
                data = _group.joined(write) if joins else _engine.commit(write)
            except BaseException as exc:
                strategies.abandoned(claims, exc)
                raise
            self.update_local_version_attribute()
        send_after_save(model, instance=self, is_new=is_new, operation="save")
        return data

    def get_save_kwargs_from_instance(self, condition: Optional[Condition] = None,
                                      return_values_on_condition_failure: Optional[str] = None) -> Dict[str, Any]:
        opts = options_for(type(self))
        if not opts.numbered:  # a model the mixin leaves to PynamoDB
            return super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        saving = _saving.get()
        transaction = saving[0] if saving is not None and saving[1] is self else None
        is_new = getattr(self, opts.attribute) is None
        if transaction is None:
            if is_new:
                raise UnassignedIdError(f"{type(self).__name__} has no {opts.attribute} yet; it can only be saved with "
                                        "save(), save_all() or the library's TransactWrite: use "
                                        "pynamodb_autoinc.TransactWrite in place of PynamoDB's")
            return super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        hook = transaction._autoinc_hook = transaction._autoinc_hook or Hook(transaction)
        if any(entry.instance is self for entry, _ in hook.entries):
            raise TransactionCanceledError(f"TransactWrite.save(): {_engine.describe(self)} was given to this "
                                           "transaction twice; save each instance once. Nothing was sent")
        claims = claim_for(self, opts, is_new, "transaction", hook.claims(),
                        fresh=transaction._client_request_token is not None)
        with strategies.held(claims):
            if claims:
                condition = key_absent(self, condition)
                return_values_on_condition_failure = "ALL_OLD"
            kwargs = super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        if hook.claimed_in is None and any(c.kind != "counter" for c in claims):
            hook.claimed_in = operations(transaction) + 1
        hook.entries.append((Entry(self, claims[0] if claims else None, len(transaction._put_items)), is_new))
        return kwargs

    @classmethod
    def _instantiate(cls: Type[_T], attribute_values: Dict[str, Dict[str, Any]]) -> _T:
        # an item read from the table (get, query, scan, batch_get): saving it again is an edit
        instance = super()._instantiate(attribute_values)
        mark_stored(instance)
        return instance

    def deserialize(self, attribute_values: Dict[str, Dict[str, Any]]) -> None:
        super().deserialize(attribute_values)  # refresh()
        mark_stored(self)

    def serialize(self, null_check: bool = True) -> Dict[str, Dict[str, Any]]:
        if null_check:
            model = type(self)
            opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
            if getattr(self, opts.attribute) is None:
                raise UnassignedIdError(f"{model.__name__} has no {opts.attribute} yet; a new instance gets its ID "
                                        "from save(), save_all() or TransactWrite.save(), not from a batch write")
        return super().serialize(null_check=null_check)

    def _get_hash_range_key_serialized_values(self) -> Tuple[Any, Optional[Any]]:
        self._refuse_unassigned_key()  # update(), delete(), refresh(), TransactWrite.update()/delete()
        return super()._get_hash_range_key_serialized_values()

    def _get_serialized_keys(self) -> Tuple[Any, Any]:
        self._refuse_unassigned_key()  # BatchWrite.delete()
        return super()._get_serialized_keys()

    def _refuse_unassigned_key(self) -> None:
        model, attribute = type(self), options_for(type(self)).attribute
        if getattr(self, attribute) is None and attribute in (model._hash_keyname, model._range_keyname):
            raise UnassignedIdError(f"{model.__name__} has no {attribute} yet, so no stored item has its key; save() "
                                    f"it first, or set {attribute} to the ID of the stored item you mean")

    @classmethod
    def scan(cls: Type[_T], filter_condition: Optional[Condition] = None, segment: Optional[int] = None,
             total_segments: Optional[int] = None, limit: Optional[int] = None,
             last_evaluated_key: Optional[Dict[str, Dict[str, Any]]] = None, page_size: Optional[int] = None,
             consistent_read: Optional[bool] = None, index_name: Optional[str] = None,
             rate_limit: Optional[float] = None, attributes_to_get: Optional[Sequence[str]] = None,
             ) -> ResultIterator[_T]:
        """``Model.scan``, leaving out the counter items of ``Meta.autoinc_counter_in_table``."""
        if getattr(cls.Meta, "autoinc_counter_in_table", False) is True:
            hide = ~cls._hash_key_attribute().startswith(RESERVED_PREFIX)
            filter_condition = hide if filter_condition is None else hide & filter_condition
        return super().scan(filter_condition, segment=segment, total_segments=total_segments, limit=limit,
                            last_evaluated_key=last_evaluated_key, page_size=page_size, consistent_read=consistent_read,
                            index_name=index_name, rate_limit=rate_limit, attributes_to_get=attributes_to_get)

    @classmethod
    def save_all(cls, instances: Iterable[Model]) -> None:
        """Save many instances in TransactWriteItems of up to 100; new ones get their IDs with one counter request
        per counter key (the query strategy and ``HistoryMixin`` save one by one). Two with one key are refused unsent.

        :raises InvalidIdError: an explicit ID is not an integer (nothing sent)
        :raises UnassignedIdError: an item lacks a scope value its counter key needs (nothing sent)
        :raises BulkSaveError: a transaction failed, or two items share a key (:class:`BulkItemExistsError`);
            ``saved`` and ``unsaved`` say what landed (new unsaved ones keep no ID, unless the outcome is unknown)
        """
        items = list(instances)
        opts = options_for(cls) if issubclass(cls, AutoIncrementMixin) else None
        new = _bulk.refuse_unsendable(cls, items, opts)
        alone = _bulk.alone_writes(cls, items)
        batched = [item for item in items if id(item) not in alone]
        transactions = _Transactions(cls, opts, batched, items, new) if opts is not None and batched else None
        saved: List[Model] = []
        try:
            if transactions is not None:
                transactions.write(saved)
            _bulk.write_alone(cls, items, alone, saved, new)
        except Exception as exc:
            if isinstance(exc, BulkSaveError) or not (saved or isinstance(exc, AutoIncrementError)):
                raise  # nothing landed: the error a save would raise
            raise _bulk.partly_saved(cls, items, saved, exc) from exc

    @classmethod
    def _autoinc_alone(cls, item: Model) -> Optional[Callable[[], Any]]:
        """How a mixin extends :meth:`save_all`: None to put ``item`` in the transactions, or its own write."""
        return None

    @classmethod
    def batch_write(cls: Type[_T], auto_commit: bool = True) -> BatchWrite[_T]:
        return _BatchWrite(cls, auto_commit=auto_commit)


def as_new(instance: Model) -> None:
    """Clear a version copied from a stored item: PynamoDB's ``version = N`` never holds for a new key."""
    name = type(instance)._version_attribute_name
    if name and getattr(instance, name) is not None:
        instance.attribute_values[name] = None


def key_absent(instance: Model, condition: Optional[Condition] = None) -> Condition:
    """The condition that no item with ``instance``'s key exists, ANDed with ``condition``."""
    absent: Condition = type(instance)._hash_key_attribute().does_not_exist()
    return absent if condition is None else absent & condition


def put_kwargs(instance: Model, condition: Optional[Condition], add_version_condition: bool = True) -> Dict[str, Any]:
    """The PutItem arguments for ``instance``, asking for the old item if a condition fails."""
    args, kwargs = Model._get_save_args(instance, condition=condition, add_version_condition=add_version_condition)
    kwargs.update(key=ITEM, return_values_on_condition_failure="ALL_OLD")
    return dict(type(instance)._get_connection().get_operation_kwargs(*args, **kwargs))


def mark_stored(instance: Model) -> None:
    """``instance`` holds a stored item's ID: saving it again is an edit."""
    model = type(instance)
    opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
    instance.__dict__[STORED] = getattr(instance, opts.attribute)


def send_after_save(sender: type, *, instance: Model, **kwargs: Any) -> None:
    """Mark a committed instance stored and send ``after_save``, logging (never raising) a receiver's failure."""
    mark_stored(instance)
    if kwargs.get("operation") == "save" and _bulk.BULK_ITEM.get() is instance:
        kwargs["operation"] = "bulk"  # save_all() wrote it with its own save
    try:
        after_save.send(sender, instance=instance, **kwargs)
    except Exception:
        log.exception("an after_save receiver of %s failed; the write had committed", sender.__name__)


def claim_for(instance: Model, opts: Options, is_new: bool, operation: str, pending: Optional[List[Claim]] = None,
              *, fresh: bool = False) -> List[Claim]:
    """Send before_save; return the claim the library's receiver took (an empty list: none)."""
    if operation == "save" and _bulk.BULK_ITEM.get() is instance:
        operation = "bulk"  # save_all() writes it with its own save
    claims: List[Claim] = list(pending or [])
    before = len(claims)
    token = _pending.set((claims, fresh))
    try:
        before_save.send(type(instance), instance=instance, is_new=is_new, operation=operation)
    except BaseException:
        for claim in claims[before:]:
            claim.release()
        raise
    finally:
        _pending.reset(token)
    taken = claims[before:]
    if getattr(instance, opts.attribute) is None:
        raise UnassignedIdError(f"{type(instance).__name__}.{opts.attribute} is still None after before_save: the "
                                "library's receiver did not run (is the signal muted, or assign_id disconnected?)")
    if not taken:
        check_explicit(instance, opts)
        track([instance], opts)
    return taken


def assign_id(sender: Type[Model], *, instance: Model, operation: str, **_: Any) -> None:
    """The library's ``before_save`` receiver, run last: claim a new instance's ID unless a receiver set one."""
    if not isinstance(instance, AutoIncrementMixin):
        return
    model = type(instance)
    opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
    if getattr(instance, opts.attribute) is not None:
        return  # an explicit ID
    if operation == "bulk" and _bulk.BULK_ITEM.get() is not instance:
        return  # save_all()'s transactions, which claim the IDs of a whole batch at once
    if operation == "batch":
        raise UnassignedIdError(f"{model.__name__} has no {opts.attribute} yet: a batch write cannot carry the "
                                "condition that keeps a new ID from overwriting an item; save new instances with "
                                "save(), save_all() or TransactWrite.save()")
    pending = _pending.get()
    if pending is None:
        return  # sent by hand, outside a save: nobody would own the claim
    claims, fresh = pending
    as_new(instance)
    claims.append(strategies.take(instance, opts, claims, fresh=fresh))


assign_id._autoinc_runs_last = True  # type: ignore[attr-defined]
before_save.connect(assign_id, weak=False)


class _Transactions:
    """The transactions of one ``save_all()``: ``batch`` is checked as each put would be when it is made, and
    :meth:`write` stores it."""

    def __init__(self, cls: Type[Model], opts: Options, batch: List[Model], items: List[Model],
                 new: Set[int]) -> None:
        self.cls, self.opts, self.batch, self.items, self.new = cls, opts, batch, items, new
        if len(batch) > 1 and any(id(item) in new for item in batch):
            regions.refuse_transactions(opts, f"{cls.__name__}.save_all()", "save the instances one by one")
        for item in batch:
            before_save.send(type(item), instance=item, is_new=id(item) in new, operation="bulk")
        self.explicit = [item for item in batch if getattr(item, opts.attribute) is not None]
        self.fresh = [item for item in batch if getattr(item, opts.attribute) is None]
        self.new_ids = {id(item) for item in self.fresh}
        for item in self.explicit:
            check_explicit(item, opts)
        for item in batch:  # as each put would, before anything is claimed or sent
            _bulk.refuse_nulls(item, opts)
        groups = _bulk.groups(opts, self.fresh)
        for item in self.fresh:
            as_new(item)
        self.keys: Dict[Any, Model] = {}
        for item in batch:
            _bulk.distinct(cls, item, self.keys, items, [], self.new_ids)
        sizes = _bulk.measure(cls, opts, batch, items)  # before the counter moves, for track or a claim
        track(self.explicit, opts)
        self.chunks = _bulk.chunks(opts, batch, self.explicit, groups, sizes)

    def write(self, saved: List[Model]) -> None:
        """Claim the new IDs and send the transactions, appending to ``saved`` the items that landed; a failure
        gives back every ID not stored, unless its transaction's outcome is unknown."""
        claims: List[Claim] = []
        unknown: List[Model] = []  # the items of a transaction that got no answer: they may be stored
        try:
            if not self.opts.gapless and self.fresh:
                claims.extend(strategies.take_spent(self.fresh, self.opts))
                for taken in claims:  # every value is known: check them all before anything is sent
                    _bulk.distinct(self.cls, taken.instance, self.keys, self.items, saved, self.new_ids)
            spent = {id(c.instance): c for c in claims}
            for claiming, chunk in self.chunks:  # a transaction that fits is written even if a later one will not
                try:
                    self._send(claiming, chunk, spent, claims, saved)
                except BaseException as exc:  # its IDs stay where the transaction may be stored (an interrupt too)
                    if isinstance(exc, WriteOutcomeUnknownError) or _transport.may_have_applied(exc):
                        unknown.extend(chunk)
                    raise
                saved.extend(chunk)
        except BaseException:
            self._give_back(claims, saved, unknown)
            raise
        finally:
            self._after(saved)

    def _send(self, claiming: bool, chunk: List[Model], spent: Dict[int, Claim], claims: List[Claim],
              saved: List[Model]) -> None:
        """Send one transaction, claiming the IDs its new instances do not hold yet (gapless, query)."""
        entries: List[Entry] = []
        try:
            for index, item in enumerate(chunk):
                claim = spent.get(id(item))
                if claiming and claim is None:
                    claim = strategies.take(item, self.opts, [e.claim for e in entries if e.claim])
                    claims.append(claim)
                    _bulk.distinct(self.cls, item, self.keys, self.items, saved, self.new_ids)
                entries.append(Entry(item, claim, index))
            puts = [put_kwargs(e.instance, key_absent(e.instance) if e.claim else None) for e in entries]
            _engine.commit(Write(regions.write_connection(self.cls, self.opts), puts, entries, purpose="bulk"))
        except SequenceExhaustedError as exc:  # a claim, or a lost race, met the end of the sequence
            asked = sum(id(item) in self.new_ids for item in chunk)
            raise _bulk.exhausted(self.opts, [e.claim for e in entries if e.claim], asked, exc, chunk[0]) from exc

    def _give_back(self, claims: List[Claim], saved: List[Model], unknown: List[Model]) -> None:
        """Release the claims of the new instances not written, and clear their IDs (not those of ``unknown``)."""
        for claim in claims:
            if not any(claim.instance is u for u in unknown):
                claim.release()
        for item in self.fresh:
            if not any(item is s for s in (*saved, *unknown)):
                setattr(item, self.opts.attribute, None)

    def _after(self, saved: List[Model]) -> None:
        """``after_save`` for each item of the batch that landed, its local version raised."""
        for item in self.batch:
            if any(item is s for s in saved):
                item.update_local_version_attribute()
                send_after_save(type(item), instance=item, is_new=id(item) in self.new, operation="bulk")


class _BatchWrite(BatchWrite[_T]):
    """A ``BatchWrite`` that sends the save signals for each item it writes."""

    def save(self, put_item: _T) -> None:
        opts = options_for(type(put_item))
        claim_for(put_item, opts, getattr(put_item, opts.attribute) is None, "batch")
        super().save(put_item)

    def commit(self) -> None:
        written = [op["item"] for op in self.pending_operations if op["action"] == PUT]
        super().commit()
        for item in written:
            send_after_save(type(item), instance=item, is_new=False, operation="batch")


# PynamoDB gives a model no handle on its TransactWrite: the library's makes itself known while its save() runs
_saving: contextvars.ContextVar[Optional[Tuple[TransactWrite, Model]]] = contextvars.ContextVar(
    "autoinc_saving", default=None)


class TransactWrite(AsyncTransaction, _PynamoTransactWrite):
    """PynamoDB's ``TransactWrite`` that can also save new auto-increment items, used as PynamoDB's::

        from pynamodb_autoinc import TransactWrite

        with TransactWrite(connection=Order._get_connection().connection) as tx:
            tx.save(Order(customer="c1"))       # gets its ID inside the transaction
            tx.update(customer, actions=[Customer.orders.add(1)])

    A new ID is claimed in ``save()``; a lost race is resent with new values, unless ``client_request_token`` is
    given or an operation was added after the claim (then ``TransactionCanceledError``). A failure or an unsent
    transaction puts the IDs back to ``None``, except :class:`~pynamodb_autoinc.exceptions.WriteOutcomeUnknownError`.
    """

    _autoinc_hook: Optional[Hook] = None

    def save(self, model: Model, condition: Optional[Condition] = None, return_values: Optional[str] = None) -> None:
        token = _saving.set((self, model))
        try:
            super().save(model, condition, return_values)
        finally:
            _saving.reset(token)

    def _commit(self) -> Any:
        hook = self._autoinc_hook
        if hook is None:
            return super()._commit()
        response = hook.commit(self)
        for entry, is_new in hook.entries:
            send_after_save(type(entry.instance), instance=entry.instance, is_new=is_new, operation="transaction")
        return response

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        if self._autoinc_hook is not None and exc_type is not None:
            self._autoinc_hook.release()
        return super().__exit__(exc_type, exc, tb)
