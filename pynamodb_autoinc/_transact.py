"""How the library's ``TransactWrite`` is sent: the auto-increment items of one user's transaction, its write
for the engine, and the error that names two operations on one item (see docs/transactions.md)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from pynamodb.constants import ITEM
from pynamodb.transactions import TransactWrite as PynamoTransactWrite

from . import _engine, _judge, regions, strategies
from ._engine import Entry, Write
from .exceptions import CONFLICT, AutoIncrementError, TransactionCanceledError, reasons_of
from .strategies import Claim

if TYPE_CHECKING:
    from .mixin import TransactWrite

#: another operation of a transaction: (table, key or item, what it is, its kind: "new", "put" with its key
#: given, or "unput")
_Other = Tuple[str, Dict[str, Any], str, str]


def operations(tx: PynamoTransactWrite) -> int:
    """How many operations ``tx`` holds so far."""
    return len(tx._condition_check_items) + len(tx._delete_items) + len(tx._put_items) + len(tx._update_items)


class Hook:
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
        """Send the transaction; its claims end committed, released, or (WriteOutcomeUnknownError) kept. The
        caller sends ``after_save`` for :attr:`entries` once it returns."""
        self.unsent.detach()
        with strategies.held(self.claims()):
            write = self._write(tx)
            try:
                response = _engine.commit(write)
            except TransactionCanceledError as exc:
                found = clash(write) if exc.cause_response_code == "ValidationException" else None
                if found is None:
                    raise
                raise TransactionCanceledError(f"transaction cancelled: {found}; nothing of it was written"
                                               f"{write.spent()}", exc.cause) from exc
            for model in tx._models_for_version_attribute_update:
                model.update_local_version_attribute()
            return response

    def _write(self, tx: TransactWrite) -> TransactionWrite:
        """The engine's write for ``tx``, sent through the home region of its first homed gapless claim."""
        homed = [e.claim for e, _ in self.entries
                 if e.claim is not None and e.claim.kind == "swap" and e.claim.opts.home_region is not None]
        connection = regions.write_connection(type(homed[0].instance), homed[0].opts) if homed else tx._connection
        # an operation added after the first claim a lost race would change may hold the old ID: no resend
        referred = self.claimed_in is not None and operations(tx) > self.claimed_in
        return TransactionWrite(
            connection, tx._put_items, [e for e, _ in self.entries], purpose="transaction",
            checks=tx._condition_check_items, deletes=tx._delete_items, updates=tx._update_items,
            token=tx._client_request_token, retry=tx._client_request_token is None and not referred,
            extra={k: v for k, v in (("ReturnConsumedCapacity", tx._return_consumed_capacity),
                                     ("ReturnItemCollectionMetrics", tx._return_item_collection_metrics)) if v})


class TransactionWrite(Write):
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


def clash(write: Write) -> Optional[str]:
    """Why DynamoDB refused two operations on one item, if a new item's ID is another operation's key; else None."""
    others = _others(write)
    for entry in write.entries:
        if entry.claim is None:
            continue
        other = _same_key(write, entry, others)
        if other is not None:
            return _clash_message(write, entry, other)
    return None


def _others(write: Write) -> List[_Other]:
    """Every operation of ``write``, in the order of its puts, updates, deletes and checks."""
    others: List[_Other] = []
    described = {e.index: e for e in write.entries}
    for index, put in enumerate(write.puts):
        entry = described.get(index)
        what, kind = (("a new item of the same transaction", "new") if entry is not None and entry.claim is not None
                      else (f"{_engine.describe(entry.instance)}, saved with its ID set by hand", "put") if entry
                      else ("an item it puts", "put"))
        others.append((put["TableName"], put[ITEM], what, kind))
    for items, verb in ((write.updates, "updates"), (write.deletes, "deletes"), (write.checks, "checks")):
        others += [(item["TableName"], item["Key"], f"the item it {verb}", "unput") for item in items]
    return others


def _same_key(write: Write, entry: Entry, others: List[_Other]) -> Optional[_Other]:
    """The first other operation of ``write`` on the key of ``entry``'s put, if any."""
    model, put = type(entry.instance), write.puts[entry.index]
    names = [model.get_attributes()[n].attr_name for n in (model._hash_keyname, model._range_keyname) if n]
    mine = tuple(_judge.stored_form(put[ITEM].get(n)) for n in names)
    for n, other in enumerate(others):
        table, item = other[0], other[1]
        if n != entry.index and table == put["TableName"] \
                and tuple(_judge.stored_form(item.get(name)) for name in names) == mine:
            return other
    return None


def _clash_message(write: Write, entry: Entry, other: _Other) -> str:
    """What the new item of ``entry`` and ``other`` share, and what to do about it."""
    claim, model, put = entry.claim, type(entry.instance), write.puts[entry.index]
    assert claim is not None
    _, _, what, kind = other
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
