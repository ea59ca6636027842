"""``AutoIncrementMixin``: the save paths of a model with an auto-increment ID.

Every write path of a PynamoDB model goes through here:

- ``Model.save()`` sends :data:`~pynamodb_autoinc.signals.before_save`, whose
  library receiver (:func:`assign_id`) assigns a new instance's ID, then
  writes the item (:mod:`pynamodb_autoinc.strategies` says how);
- ``TransactWrite.save()`` does the same inside the user's transaction: a
  gapless model adds its counter swap to that transaction, a fast model takes
  its ID before the transaction is sent;
- ``Model.batch_write()`` sends the signal for every item, and refuses new
  instances: a batch write cannot carry the condition that keeps a new ID
  from overwriting an existing item.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Type, TypeVar

from pynamodb.constants import PUT
from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.models import BatchWrite, Model
from pynamodb.transactions import TransactWrite

from . import bulk, strategies
from ._options import Options, options_for
from .counter import RESERVED_PREFIX
from .exceptions import InvalidIdError, TransactionCanceledError, UnassignedIdError, WriteOutcomeUnknownError
from .signals import before_save, send_after_save
from .strategies import CONDITION_FAILED, CONFLICT, Claim, code_of, reasons_of

_T = TypeVar("_T", bound=Model)

if TYPE_CHECKING:
    _Base = Model
else:
    _Base = object


class AutoIncrementMixin(_Base):
    """Gives a PynamoDB model an integer ID assigned on its first save.

    Put it before ``Model`` in the bases and configure it in ``Meta``::

        class User(AutoIncrementMixin, Model):
            class Meta:
                table_name = "users"
                autoinc_key = "user"        # counter key (default: table_name)
                autoinc_gapless = False     # True: no value is ever spent without its item
            id = NumberAttribute(hash_key=True)

    An instance whose auto-increment attribute is ``None`` is new: saving it
    allocates the next value and writes the item only if no item with its key
    exists. Any other save is an ordinary PynamoDB save.
    """

    _autoinc_claim: Optional[Claim] = None

    @classmethod
    def autoinc_options(cls) -> Options:
        """This model's validated ``Meta.autoinc_*`` options (checked on first use)."""
        return options_for(cls)

    def save(self, condition: Optional[Condition] = None, *, add_version_condition: bool = True) -> Dict[str, Any]:
        """Save the item; a new instance first gets its ID.

        :raises ItemExistsError: an item with the new key exists (nothing overwritten)
        :raises ConditionFailedError: ``condition`` did not hold
        :raises ContentionError: gapless mode lost the counter race too many times
        """
        opts = options_for(type(self))
        is_new = getattr(self, opts.attribute) is None
        claim = self._autoinc_prepare(opts, is_new, "save")
        if claim is None:
            data = super().save(condition, add_version_condition=add_version_condition)
        else:
            try:
                if opts.strategy == "query":
                    data = strategies.put_next_in_partition(self, opts, condition, add_version_condition)
                elif opts.gapless:
                    data = strategies.transact_new(self, opts, claim, condition, add_version_condition)
                else:
                    data = strategies.put_new(self, opts, condition, add_version_condition)
            except WriteOutcomeUnknownError:
                raise  # the item may be stored under this ID: keep it on the instance
            except BaseException:
                setattr(self, opts.attribute, None)
                raise
            self.update_local_version_attribute()
        send_after_save(type(self), instance=self, is_new=is_new, operation="save")
        return data

    def get_save_kwargs_from_instance(
        self,
        condition: Optional[Condition] = None,
        return_values_on_condition_failure: Optional[str] = None,
    ) -> Dict[str, Any]:
        # Called by TransactWrite.save(model, ...): find that transaction.
        caller = sys._getframe(1).f_locals.get("self")
        transaction = caller if isinstance(caller, TransactWrite) else None
        opts = options_for(type(self))
        is_new = getattr(self, opts.attribute) is None
        claim = self._autoinc_prepare(opts, is_new, "transaction")
        if claim is not None:
            if claim.swap and transaction is None:
                setattr(self, opts.attribute, None)
                raise UnassignedIdError(
                    f"{type(self).__name__} is gapless: a new instance can only be saved with save() or "
                    "TransactWrite.save(), which write its counter in the same request"
                )
            condition = strategies.key_absent(self, condition)
        if transaction is None:
            return super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        hook = _TransactionHook.of(transaction)
        hook.join(self, opts, claim)
        kwargs = super().get_save_kwargs_from_instance(condition, return_values_on_condition_failure)
        hook.add(self, opts, claim, is_new)
        return kwargs

    def serialize(self, null_check: bool = True) -> Dict[str, Dict[str, Any]]:
        if null_check:
            opts = options_for(type(self))
            if getattr(self, opts.attribute) is None:
                raise UnassignedIdError(
                    f"{type(self).__name__} has no {opts.attribute} yet; a new instance gets its ID from "
                    "save() or TransactWrite.save(), not from a batch write or serialize()"
                )
        return super().serialize(null_check=null_check)

    @classmethod
    def scan(cls: Type[_T], filter_condition: Optional[Condition] = None, *args: Any, **kwargs: Any) -> Any:
        """``Model.scan``, leaving out the counter items of ``Meta.autoinc_counter_in_table``."""
        if getattr(cls.Meta, "autoinc_counter_in_table", False) is True:
            hide = ~cls._hash_key_attribute().startswith(RESERVED_PREFIX)
            filter_condition = hide if filter_condition is None else hide & filter_condition
        return super().scan(filter_condition, *args, **kwargs)

    @classmethod
    def save_all(cls, instances: Iterable[Model]) -> None:
        """Save many instances; new ones get their IDs with one counter request per batch.

        Items are written in transactions of up to 100, each new one with
        ``attribute_not_exists`` on its key (see :mod:`pynamodb_autoinc.bulk`).

        :raises BulkSaveError: a transaction failed; ``saved`` and ``unsaved`` say what landed
        """
        bulk.save_all(cls, instances)

    @classmethod
    def batch_write(cls: Type[_T], auto_commit: bool = True) -> BatchWrite[_T]:
        return _BatchWrite(cls, auto_commit=auto_commit)

    def _autoinc_prepare(self, opts: Options, is_new: bool, operation: str) -> Optional[Claim]:
        """Send before_save and return the claim its library receiver made, if any."""
        self._autoinc_claim = None
        before_save.send(type(self), instance=self, is_new=is_new, operation=operation)
        claim, self._autoinc_claim = self._autoinc_claim, None
        value = getattr(self, opts.attribute)
        if value is None:
            raise UnassignedIdError(
                f"{type(self).__name__}.{opts.attribute} is still None after before_save: the library's "
                "receiver did not run (is the signal muted, or assign_id disconnected?)"
            )
        if claim is None and not opts.as_string and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidIdError(
                f"{type(self).__name__}.{opts.attribute} = {value!r} is not an integer; set an int, "
                "or leave it None to have the next value assigned"
            )
        return claim


def assign_id(sender: Type[Model], *, instance: Model, operation: str, **_: Any) -> None:
    """The library's :data:`before_save` receiver: give a new instance its ID.

    It runs after every other receiver, and only if the auto-increment
    attribute is still ``None`` (a receiver may have set an explicit ID).
    """
    if not isinstance(instance, AutoIncrementMixin):
        return
    opts = options_for(type(instance))
    if getattr(instance, opts.attribute) is not None:
        return
    if operation == "bulk":
        return  # save_all() assigns the IDs of a whole batch at once
    if operation == "batch":
        raise UnassignedIdError(
            f"{type(instance).__name__} has no {opts.attribute} yet: a batch write cannot carry the condition "
            "that keeps a new ID from overwriting an existing item; save new instances with save() or "
            "TransactWrite.save()"
        )
    if opts.strategy == "query":
        instance._autoinc_claim = strategies.query_last(instance, opts)
    elif opts.gapless:
        instance._autoinc_claim = strategies.reserve(instance, opts)
    else:
        instance._autoinc_claim = strategies.allocate(instance, opts)


assign_id._autoinc_runs_last = True  # type: ignore[attr-defined]
before_save.connect(assign_id, weak=False)


class _BatchWrite(BatchWrite[_T]):
    """A ``BatchWrite`` that sends the save signals for each item it writes."""

    def save(self, put_item: _T) -> None:
        opts = options_for(type(put_item))
        before_save.send(type(put_item), instance=put_item,
                         is_new=getattr(put_item, opts.attribute) is None, operation="batch")
        super().save(put_item)

    def commit(self) -> None:
        written = [op["item"] for op in self.pending_operations if op["action"] == PUT]
        super().commit()
        for item in written:
            send_after_save(type(item), instance=item, is_new=False, operation="batch")


class _TransactionHook:
    """What the new auto-increment items of one user ``TransactWrite`` need at commit."""

    def __init__(self, transaction: TransactWrite) -> None:
        self.transaction = transaction
        self.saved: List[Tuple[Model, Options, Optional[Claim], bool, int]] = []
        self.counters: Dict[Tuple[str, str], Tuple[int, Optional[int], int]] = {}
        self.commit = transaction._commit
        transaction._commit = self.run  # type: ignore[method-assign]

    @classmethod
    def of(cls, transaction: TransactWrite) -> _TransactionHook:
        hook = transaction.__dict__.get("_autoinc_hook")
        if hook is None:
            hook = transaction.__dict__["_autoinc_hook"] = cls(transaction)
        return hook

    def join(self, instance: Model, opts: Options, claim: Optional[Claim]) -> None:
        """Give a gapless claim its value within this transaction (before the put is built).

        Several new items on one counter share one counter swap, from the value
        first read to the last value handed out.
        """
        if claim is None or not claim.swap:
            return
        counter_id = (opts.counter.Meta.table_name, claim.key)
        if counter_id in self.counters:
            _, expected, last = self.counters[counter_id]
            claim.expected, claim.value = expected, last + opts.step
            opts.check_limit(claim.key, claim.value)
            setattr(instance, opts.attribute, opts.to_python(claim.value, claim.period))

    def add(self, instance: Model, opts: Options, claim: Optional[Claim], is_new: bool) -> None:
        """Record ``instance``'s put (appended next by TransactWrite.save) and its counter swap."""
        tx = self.transaction
        self.saved.append((instance, opts, claim, is_new, len(tx._put_items)))
        if claim is None or not claim.swap:
            return
        counter_id = (opts.counter.Meta.table_name, claim.key)
        swap = opts.counter.swap_kwargs(claim.key, claim.expected, claim.value)
        if counter_id in self.counters:
            index = self.counters[counter_id][0]
            tx._update_items[index] = swap
        else:
            index = len(tx._update_items)
            tx._update_items.append(swap)
        self.counters[counter_id] = (index, claim.expected, claim.value)

    def run(self) -> Any:
        try:
            response = self.commit()
        except TransactWriteError as exc:
            message = self.explain(exc)
            for instance, opts, claim, _, _ in self.saved:
                if claim is not None:
                    setattr(instance, opts.attribute, None)
                    if claim.swap:
                        strategies.remember(opts, claim.key, None)  # read it afresh next time
            raise TransactionCanceledError(message, exc, cancellation_reasons=reasons_of(exc)) from exc
        for instance, opts, claim, is_new, _ in self.saved:
            if claim is not None and claim.swap:
                strategies.remember(opts, claim.key, claim.value)
            send_after_save(type(instance), instance=instance, is_new=is_new, operation="transaction")
        return response

    def explain(self, exc: TransactWriteError) -> str:
        tx = self.transaction
        reasons = reasons_of(exc)
        if not reasons:
            return f"the transaction failed: {exc.cause or exc}"
        first_put = len(tx._condition_check_items) + len(tx._delete_items)
        first_update = first_put + len(tx._put_items)
        ours: Dict[int, str] = {}
        for instance, opts, claim, _, put_index in self.saved:
            what = f"{type(instance).__name__} {opts.attribute}={getattr(instance, opts.attribute)!r}"
            if claim is not None:
                what += " (new: " + ("an item with this key already exists, or your condition failed)"
                                     if code_of(reasons[first_put + put_index]) == CONDITION_FAILED else ")")
            ours[first_put + put_index] = what
        for (_, key), (index, _, _) in self.counters.items():
            ours[first_update + index] = (f"counter {key!r} (another writer advanced it since it was read: "
                                          "run the transaction again)")
        parts = [
            f"item {i}: {reason.code}" + (f" on {ours[i]}" if i in ours else "")
            for i, reason in enumerate(reasons)
            if reason is not None
        ]
        retry = any(code_of(reasons[first_update + i]) in (CONDITION_FAILED, CONFLICT)
                    for i, _, _ in self.counters.values())
        return ("transaction cancelled: " + "; ".join(parts)
                + ("; retrying the whole transaction will read the counter again" if retry else ""))
