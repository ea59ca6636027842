"""``AutoIncrementMixin``: how a model with an auto-increment ID is written, by ``save()``, ``save_all()``,
``TransactWrite.save()`` and ``batch_write()`` (see docs/architecture.md, "mixin")."""

from __future__ import annotations

import contextvars
import logging
import weakref
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Type, TypeVar

from pynamodb.constants import ITEM, PUT
from pynamodb.exceptions import AttributeNullError
from pynamodb.expressions.condition import Condition
from pynamodb.models import BatchWrite, Model
from pynamodb.pagination import ResultIterator
from pynamodb.transactions import TransactWrite as _PynamoTransactWrite

from . import _engine, _group, _judge, regions, strategies
from ._checked import CheckedModel, refuse_order
from ._engine import TRANSACTION_LIMIT, Entry, Write
from ._options import OPTIONS_CACHE, Options, check_options, options_for
from .counter import RESERVED_PREFIX
from .exceptions import (
    CONFLICT,
    AutoIncrementError,
    BulkItemExistsError,
    BulkSaveError,
    BulkSequenceExhaustedError,
    BulkWriteOutcomeUnknownError,
    InvalidIdError,
    ItemExistsError,
    SequenceExhaustedError,
    TransactionCanceledError,
    UnassignedIdError,
    WriteOutcomeUnknownError,
    reasons_of,
)
from .sequence import is_int
from .signals import after_save, before_save
from .strategies import Claim

_T = TypeVar("_T", bound=Model)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    _Base = Model
else:
    _Base = object

# for the library's before_save receiver: the write's claims so far, and whether a gapless claim must read its counter
_pending: contextvars.ContextVar[Optional[Tuple[List[Claim], bool]]] = contextvars.ContextVar(
    "autoinc_pending", default=None)


class AutoIncrementMixin(_Base, metaclass=CheckedModel):
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
        is_new = getattr(self, opts.attribute) is None
        claims = _claim(self, opts, is_new, "save")
        if not claims:
            data = super().save(condition, add_version_condition=add_version_condition)
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
        saving = _saving.get()
        transaction = saving[0] if saving is not None and saving[1] is self else None
        is_new = getattr(self, opts.attribute) is None
        if transaction is None:
            if is_new:
                raise UnassignedIdError(f"{type(self).__name__} has no {opts.attribute} yet; it can only be saved with "
                                        "save(), save_all() or the library's TransactWrite: use "
                                        "pynamodb_autoinc.TransactWrite in place of PynamoDB's")
            return super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        hook = transaction._autoinc_hook = transaction._autoinc_hook or _Hook(transaction)
        if any(entry.instance is self for entry, _ in hook.entries):
            raise TransactionCanceledError(f"TransactWrite.save(): {_engine.describe(self)} was given to this "
                                           "transaction twice; save each instance once. Nothing was sent")
        claims = _claim(self, opts, is_new, "transaction", hook.claims(),
                        fresh=transaction._client_request_token is not None)
        with strategies.held(claims):
            if claims:
                condition = key_absent(self, condition)
                return_values_on_condition_failure = "ALL_OLD"
            kwargs = super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        if hook.claimed_in is None and any(c.kind != "counter" for c in claims):
            hook.claimed_in = _operations(transaction) + 1
        hook.entries.append((Entry(self, claims[0] if claims else None, len(transaction._put_items)), is_new))
        return kwargs

    @classmethod
    def _instantiate(cls: Type[_T], attribute_values: Dict[str, Dict[str, Any]]) -> _T:
        # an item read from the table (get, query, scan, batch_get): saving it again is an edit
        instance = super()._instantiate(attribute_values)
        _mark_stored(instance)
        return instance

    def deserialize(self, attribute_values: Dict[str, Dict[str, Any]]) -> None:
        super().deserialize(attribute_values)  # refresh()
        _mark_stored(self)

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
        for item in items:
            if not isinstance(item, cls):
                raise TypeError(f"save_all() of {cls.__name__} was given a {type(item).__name__}; save each model's "
                                "instances with its own save_all()")
        opts = options_for(cls) if issubclass(cls, AutoIncrementMixin) else None
        new = {id(item) for item in items if opts is not None and getattr(item, opts.attribute) is None}
        given: Set[int] = set()
        keys: Dict[Any, Model] = {}
        for item in items:
            if id(item) in given:
                raise _bulk_error(BulkSaveError, f"{cls.__name__}.save_all(): 0 of {len(items)} saved; the same "
                                  f"instance ({_engine.describe(item)}) was given twice; pass each one once", items)
            given.add(id(item))
            if opts is not None and id(item) not in new:
                _check_explicit(item, opts)
            _distinct(cls, item, keys, items, [], new)
        alone = {id(item): write for item in items if (write := cls._autoinc_alone(item)) is not None}
        batched = [item for item in items if id(item) not in alone]
        transactions = _transactions(cls, opts, batched, items, new) if opts is not None and batched else None
        saved: List[Model] = []
        try:
            if transactions is not None:
                transactions(saved)
            keys = {_key(item): item for item in saved}
            for item in items:
                if id(item) in alone:  # after the items of the transactions, whose new keys it must not take
                    _distinct(cls, item, keys, items, saved, new, "it was not sent, nor the items after it")
                    alone[id(item)]()
                    saved.append(item)
                    keys.setdefault(_key(item), item)
        except Exception as exc:
            if isinstance(exc, BulkSaveError) or not (saved or isinstance(exc, AutoIncrementError)):
                raise  # nothing landed: the error a save would raise
            error = exc if isinstance(exc, AutoIncrementError) else None
            kind = (BulkSequenceExhaustedError if isinstance(exc, SequenceExhaustedError)
                    else BulkItemExistsError if isinstance(exc, ItemExistsError)
                    else BulkWriteOutcomeUnknownError if isinstance(exc, WriteOutcomeUnknownError) else BulkSaveError)
            raise _bulk_error(kind, f"{cls.__name__}.save_all(): {len(saved)} of {len(items)} saved; "
                              f"{exc if error else f'{type(exc).__name__}: {exc}'}", items, saved, error) from exc

    @classmethod
    def _autoinc_alone(cls, item: Model) -> Optional[Callable[[], Any]]:
        """How a mixin extends :meth:`save_all`: None to put ``item`` in the transactions, or its own write."""
        return None

    @classmethod
    def batch_write(cls: Type[_T], auto_commit: bool = True) -> BatchWrite[_T]:
        return _BatchWrite(cls, auto_commit=auto_commit)


def _transactions(cls: Type[Model], opts: Options, batch: List[Model], items: List[Model],
                  new: Set[int]) -> Callable[[List[Model]], None]:
    """Check ``batch`` as each put would be; return the write that stores it and appends what landed to its list."""
    if len(batch) > 1 and any(id(item) in new for item in batch):
        regions.refuse_transactions(opts, f"{cls.__name__}.save_all()", "save the instances one by one")
    for item in batch:
        before_save.send(type(item), instance=item, is_new=id(item) in new, operation="bulk")
    explicit = [item for item in batch if getattr(item, opts.attribute) is not None]
    fresh = [item for item in batch if getattr(item, opts.attribute) is None]
    new_ids = {id(item) for item in fresh}
    for item in explicit:
        _check_explicit(item, opts)
    for item in batch:  # as each put would, before anything is claimed or sent
        for name, attribute in type(item).get_attributes().items():
            if name != opts.attribute and not attribute.null and getattr(item, name) is None:
                raise AttributeNullError(name)
    period = opts.current_period()
    groups: Dict[str, List[Model]] = {}  # the new instances by counter when gapless, else all in one
    for item in fresh:  # a scope value missing is refused as save() refuses it, in every mode
        key = opts.counter_key(item, period) if opts.scope or opts.gapless else ""
        groups.setdefault(key if opts.gapless else "", []).append(item)
    for item in fresh:
        _as_new(item)
    keys: Dict[Any, Model] = {}
    for item in batch:
        _distinct(cls, item, keys, items, [], new_ids)
    _track(explicit, opts)
    if opts.strategy == "query":  # no counter to batch: each item's number is read from its partition in turn
        chunks = [(getattr(item, opts.attribute) is None, [item]) for item in batch]
    else:  # new instances first; gapless ones one counter per chunk, with room left for its swap
        size = TRANSACTION_LIMIT - 1 if opts.gapless else TRANSACTION_LIMIT
        parts = [(True, group, size) for group in groups.values()] + [(False, explicit, TRANSACTION_LIMIT)]
        chunks = [(claiming, part[i:i + n]) for claiming, part, n in parts for i in range(0, len(part), n)]

    def write(saved: List[Model]) -> None:
        claims: List[Claim] = []
        unknown: List[Model] = []  # the items of a transaction that got no answer: they may be stored
        try:
            if not opts.gapless and fresh:
                claims.extend(strategies.take_spent(fresh, opts))
                for taken in claims:  # every value is known: check them all before anything is sent
                    _distinct(cls, taken.instance, keys, items, saved, new_ids)
            spent = {id(c.instance): c for c in claims}
            for claiming, chunk in chunks:  # a transaction that fits is written even if a later one will not
                entries: List[Entry] = []
                try:
                    for index, item in enumerate(chunk):
                        claim = spent.get(id(item))
                        if claiming and claim is None:
                            claim = strategies.take(item, opts, [e.claim for e in entries if e.claim])
                            claims.append(claim)
                            _distinct(cls, item, keys, items, saved, new_ids)
                        entries.append(Entry(item, claim, index))
                    puts = [put_kwargs(e.instance, key_absent(e.instance) if e.claim else None) for e in entries]
                    _engine.commit(Write(regions.write_connection(cls, opts), puts, entries, purpose="bulk"))
                except WriteOutcomeUnknownError:
                    unknown.extend(chunk)
                    raise
                except SequenceExhaustedError as exc:  # a claim, or a lost race, met the end of the sequence
                    asked = sum(id(item) in new_ids for item in chunk)
                    raise _exhausted(opts, [e.claim for e in entries if e.claim], asked, exc, chunk[0]) from exc
                saved.extend(chunk)
        except BaseException:
            # every new instance not written gives its ID back, unless its transaction's outcome is unknown
            for claim in claims:
                if not any(claim.instance is u for u in unknown):
                    claim.release()
            for item in fresh:
                if not any(item is s for s in (*saved, *unknown)):
                    setattr(item, opts.attribute, None)
            raise
        finally:
            for item in batch:
                if any(item is s for s in saved):
                    item.update_local_version_attribute()
                    send_after_save(type(item), instance=item, is_new=id(item) in new, operation="bulk")

    return write


def _exhausted(opts: Options, chain: List[Claim], asked: int, exc: SequenceExhaustedError,
               item: Model) -> SequenceExhaustedError:
    """``save_all()``'s error when a chunk's claims on one counter met the end bound: asked, left and ``last``."""
    if asked <= 1 or asked > opts.sequence.size:
        return exc  # one value asked for, or more than the whole sequence holds: the error says so already
    # a gapless chunk's swaps: fast and block values are all taken before the first chunk, a query chunk asks one
    head = chain[0] if chain else None  # none yet when the chunk's first claim met the bound
    key, last = (head.key, head.expected) if head else (opts.counter_key(item, opts.current_period()), exc.last)
    error = strategies.too_few(opts, key, asked, opts.sequence.remaining(last), exc)
    error.last = last
    return error


def _bulk_error(kind: Type[BulkSaveError], message: str, items: List[Model], saved: Sequence[Model] = (),
                exc: Optional[AutoIncrementError] = None) -> BulkSaveError:
    """A ``save_all()`` error of class ``kind``; ``saved`` landed, the rest of ``items`` did not."""
    extra: Dict[str, Any] = {"last": exc.last} if isinstance(exc, SequenceExhaustedError) else {}
    unsaved = [item for item in items if not any(item is s for s in saved)]
    return kind(message, exc.cause if exc is not None else None, saved=list(saved), unsaved=unsaved,
                cancellation_reasons=exc.cancellation_reasons if exc is not None else (), **extra)


def _distinct(cls: Type[Model], item: Model, keys: Dict[Any, Model], items: List[Model], saved: List[Model],
              new: Set[int], tail: str = "nothing of the transaction holding it was sent") -> None:
    """Record ``item``'s key in ``keys``; raise BulkItemExistsError if another item of the call has it."""
    key = _key(item)
    other = keys.setdefault(key, item) if key is not None else item
    if other is item:
        return
    named = [i for i in (other, item) if id(i) not in new]  # the explicit one(s)
    what = (f"the explicit {_engine.describe(named[0])} has the key that a new instance of the same call was "
            "given (an explicit ID is an ordinary put and would overwrite it); save it on its own, raise the counter "
            f"past it first ({options_for(cls).counter._reached_as()}.setval), or set Meta.autoinc_track_explicit"
            if len(named) == 1 else
            f"{_engine.describe(other)} and {_engine.describe(item)} have the same key and one would overwrite "
            "the other; save each key once")
    raise _bulk_error(BulkItemExistsError, f"{cls.__name__}.save_all(): {len(saved)} of {len(items)} saved; "
                      f"{what}; {tail}", items, saved)


def _key(item: Model) -> Optional[Tuple[Any, ...]]:
    """The item's key as DynamoDB compares keys (numbers by value), or None while a key attribute is None."""
    model, attributes = type(item), type(item).get_attributes()
    values = {name: getattr(item, name) for name in (model._hash_keyname, model._range_keyname) if name}
    if None in values.values():
        return None
    return tuple(_judge.stored_form({attributes[n].attr_type: attributes[n].serialize(v)}) for n, v in values.items())


def _check_explicit(instance: Model, opts: Options) -> None:
    """Raise InvalidIdError for an ID set by hand that is not an int, or not a str for a UnicodeAttribute."""
    value = getattr(instance, opts.attribute)
    if not (isinstance(value, str) if opts.as_string else is_int(value)):
        kind = (f"a string, and the attribute is a UnicodeAttribute; set a str (such as {str(value)!r})"
                if opts.as_string else "an integer; set an int")
        raise InvalidIdError(f"{type(instance).__name__}.{opts.attribute} = {value!r} is not {kind}, or leave it "
                             "None to have the next value assigned")


def _as_new(instance: Model) -> None:
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


def _claim(instance: Model, opts: Options, is_new: bool, operation: str, pending: Optional[List[Claim]] = None,
           *, fresh: bool = False) -> List[Claim]:
    """Send before_save; return the claim the library's receiver took (an empty list: none)."""
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
        _check_explicit(instance, opts)
        _track([instance], opts)
    return taken


def _track(instances: Sequence[Model], opts: Options) -> None:
    """``Meta.autoinc_track_explicit``: move the counter past the IDs set by hand (not those read or saved)."""
    if not opts.track_explicit:
        return
    explicit = [i for i in instances if getattr(i, opts.attribute) != i.__dict__.get(_STORED)]
    if explicit:
        strategies.track(explicit, opts)


#: the ID the instance was read or last saved with
_STORED = "_autoinc_stored_id"


def _mark_stored(instance: Model) -> None:
    """``instance`` holds a stored item's ID: saving it again is an edit."""
    model = type(instance)
    opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
    instance.__dict__[_STORED] = getattr(instance, opts.attribute)


def send_after_save(sender: type, *, instance: Model, **kwargs: Any) -> None:
    """Mark a committed instance stored and send ``after_save``, logging (never raising) a receiver's failure."""
    _mark_stored(instance)
    try:
        after_save.send(sender, instance=instance, **kwargs)
    except Exception:
        log.exception("an after_save receiver of %s failed; the write had committed", sender.__name__)


def assign_id(sender: Type[Model], *, instance: Model, operation: str, **_: Any) -> None:
    """The library's ``before_save`` receiver, run last: claim a new instance's ID unless a receiver set one."""
    if not isinstance(instance, AutoIncrementMixin):
        return
    model = type(instance)
    opts = model.__dict__.get(OPTIONS_CACHE) or options_for(model)
    if getattr(instance, opts.attribute) is not None or operation == "bulk":
        return  # an explicit ID; or save_all(), which claims the IDs of a whole batch at once
    if operation == "batch":
        raise UnassignedIdError(f"{model.__name__} has no {opts.attribute} yet: a batch write cannot carry the "
                                "condition that keeps a new ID from overwriting an item; save new instances with "
                                "save(), save_all() or TransactWrite.save()")
    pending = _pending.get()
    if pending is None:
        return  # sent by hand, outside a save: nobody would own the claim
    claims, fresh = pending
    _as_new(instance)
    claims.append(strategies.take(instance, opts, claims, fresh=fresh))


assign_id._autoinc_runs_last = True  # type: ignore[attr-defined]
before_save.connect(assign_id, weak=False)


class _BatchWrite(BatchWrite[_T]):
    """A ``BatchWrite`` that sends the save signals for each item it writes."""

    def save(self, put_item: _T) -> None:
        opts = options_for(type(put_item))
        _claim(put_item, opts, getattr(put_item, opts.attribute) is None, "batch")
        super().save(put_item)

    def commit(self) -> None:
        written = [op["item"] for op in self.pending_operations if op["action"] == PUT]
        super().commit()
        for item in written:
            send_after_save(type(item), instance=item, is_new=False, operation="batch")


# PynamoDB gives a model no handle on its TransactWrite: the library's makes itself known while its save() runs
_saving: contextvars.ContextVar[Optional[Tuple[TransactWrite, Model]]] = contextvars.ContextVar(
    "autoinc_saving", default=None)


def _operations(tx: _PynamoTransactWrite) -> int:
    return len(tx._condition_check_items) + len(tx._delete_items) + len(tx._put_items) + len(tx._update_items)


class _Hook:
    """The auto-increment items of one ``TransactWrite``, and how it is sent."""

    def __init__(self, transaction: TransactWrite) -> None:
        self.entries: List[Tuple[Entry, bool]] = []
        self.unsent = weakref.finalize(transaction, self.release)  # detached once the transaction is sent
        self.claimed_in: Optional[int] = None

    def claims(self) -> List[Claim]:
        return [e.claim for e, _ in self.entries if e.claim is not None]

    def release(self) -> None:
        for claim in self.claims():
            claim.release()

    def commit(self, tx: TransactWrite) -> Any:
        """Send the transaction; its claims end committed, released, or (WriteOutcomeUnknownError) kept."""
        self.unsent.detach()
        with strategies.held(self.claims()):
            homed = [e.claim for e, _ in self.entries
                     if e.claim is not None and e.claim.kind == "swap" and e.claim.opts.home_region is not None]
            connection = regions.write_connection(type(homed[0].instance), homed[0].opts) if homed else tx._connection
            # an operation added after the first claim a lost race would change may hold the old ID: no resend
            referred = self.claimed_in is not None and _operations(tx) > self.claimed_in
            write = _TransactionWrite(
                connection, tx._put_items, [e for e, _ in self.entries], purpose="transaction",
                checks=tx._condition_check_items, deletes=tx._delete_items, updates=tx._update_items,
                token=tx._client_request_token, retry=tx._client_request_token is None and not referred,
                extra={k: v for k, v in (("ReturnConsumedCapacity", tx._return_consumed_capacity),
                                         ("ReturnItemCollectionMetrics", tx._return_item_collection_metrics)) if v})
            try:
                response = _engine.commit(write)
            except TransactionCanceledError as exc:
                clash = _clash(write) if exc.cause_response_code == "ValidationException" else None
                if clash is None:
                    raise
                raise TransactionCanceledError(f"transaction cancelled: {clash}; nothing of it was written"
                                               f"{write.spent()}", exc.cause) from exc
            for model in tx._models_for_version_attribute_update:
                model.update_local_version_attribute()
            for entry, is_new in self.entries:
                send_after_save(type(entry.instance), instance=entry.instance, is_new=is_new, operation="transaction")
            return response


class _TransactionWrite(Write):
    """A user's transaction as the engine sends it; its error after a lost race it may not retry says why."""

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        if self.retry or self.token is not None:
            return super().contention(exc, attempts, elapsed)
        claim = next(c for c in self.claims if c.kind != "counter")
        reasons = reasons_of(exc)
        what = ("another transaction wrote one of its items at the same time (TransactionConflict)"
                if any(r is not None and r.code == CONFLICT for r in reasons) else
                f"another writer took {type(claim.instance).__name__}.{claim.opts.attribute}="
                f"{getattr(claim.instance, claim.opts.attribute)!r} (or another value it claimed) since tx.save()")
        return TransactionCanceledError(f"transaction cancelled: {what}; operations added after that save may hold "
                                        "the IDs it claimed, so it is not sent again. Nothing was written: run it "
                                        "again", exc, cancellation_reasons=reasons)


def _clash(write: Write) -> Optional[str]:
    """Why DynamoDB refused two operations on one item, if a new item's ID is another operation's key; else None."""
    # (table, key, what it is, its kind: "new", "put" with its key given, or "unput")
    others: List[Tuple[str, Dict[str, Any], str, str]] = []
    described = {e.index: e for e in write.entries}
    for index, put in enumerate(write.puts):
        entry = described.get(index)
        what, kind = (("a new item of the same transaction", "new") if entry is not None and entry.claim is not None
                      else (f"{_engine.describe(entry.instance)}, saved with its ID set by hand", "put") if entry
                      else ("an item it puts", "put"))
        others.append((put["TableName"], put[ITEM], what, kind))
    for items, verb in ((write.updates, "updates"), (write.deletes, "deletes"), (write.checks, "checks")):
        others += [(item["TableName"], item["Key"], f"the item it {verb}", "unput") for item in items]
    for entry in write.entries:
        claim = entry.claim
        if claim is None:
            continue
        model, put = type(entry.instance), write.puts[entry.index]
        names = [model.get_attributes()[n].attr_name for n in (model._hash_keyname, model._range_keyname) if n]
        mine = tuple(_judge.stored_form(put[ITEM].get(n)) for n in names)
        for n, (table, item, what, kind) in enumerate(others):
            if n == entry.index or table != put["TableName"] \
                    or tuple(_judge.stored_form(item.get(name)) for name in names) != mine:
                continue
            attribute = model.get_attributes()[claim.opts.attribute]
            value = attribute.deserialize(next(iter(put[ITEM][attribute.attr_name].values())))
            setval = f"{claim.opts.counter._reached_as()}.setval({claim.key!r}, N)"
            advice = {
                "query": "the query strategy numbers after the largest key stored in the partition, and the other "
                         "item is not stored yet: store it first, in a write of its own",
                "new": "two counters number items of one table; give the models one Meta.autoinc_key, or keys of "
                       "their own",
                "unput": f"if that item is stored, the counter {claim.key!r} is behind the stored IDs: raise it with "
                         f"{setval}; if not, leave its key out of the transaction",
                "put": f"the counter {claim.key!r} is behind the IDs in use: raise it with {setval}, or set "
                       "Meta.autoinc_track_explicit so that an ID set by hand moves it past",
            }["query" if claim.kind == "query" else kind]
            return (f"the new {model.__name__} was given {claim.opts.attribute}={value!r}, the key of {what}, and "
                    f"DynamoDB refuses two operations on one item in a transaction; {advice}")
    return None


class TransactWrite(_PynamoTransactWrite):
    """PynamoDB's ``TransactWrite`` that can also save new auto-increment items, used as PynamoDB's::

        from pynamodb_autoinc import TransactWrite

        with TransactWrite(connection=Order._get_connection().connection) as tx:
            tx.save(Order(customer="c1"))       # gets its ID inside the transaction
            tx.update(customer, actions=[Customer.orders.add(1)])

    A new ID is claimed in ``save()``; a lost race is resent with new values, unless ``client_request_token`` is
    given or an operation was added after the claim (then ``TransactionCanceledError``). A failure or an unsent
    transaction puts the IDs back to ``None``, except :class:`~pynamodb_autoinc.exceptions.WriteOutcomeUnknownError`.
    """

    _autoinc_hook: Optional[_Hook] = None

    def save(self, model: Model, condition: Optional[Condition] = None, return_values: Optional[str] = None) -> None:
        token = _saving.set((self, model))
        try:
            super().save(model, condition, return_values)
        finally:
            _saving.reset(token)

    def _commit(self) -> Any:
        return super()._commit() if self._autoinc_hook is None else self._autoinc_hook.commit(self)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        if self._autoinc_hook is not None and exc_type is not None:
            self._autoinc_hook.release()
        return super().__exit__(exc_type, exc, tb)
