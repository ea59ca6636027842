"""What one client operation does: each write path of the library, as a user's code calls it.

A mode's ``workload`` (see :data:`tests.simulation.world.MODES`) names one of
:data:`WORKLOADS`. A client's operation ``s`` of a workload with several
kinds does kind ``s % len(kinds)``, the same in every client, so that clients
that have not sent anything yet stay interchangeable (the explorer's symmetry
reduction relies on it).

``save``
    one new instance, ``Model.save()``.
``transact``
    a user's ``TransactWrite`` on a connection of its own:

    - ``commit``: two new instances and an unrelated put (a ``SimExtra``
      item keyed by the operation's tag), all in one transaction;
    - ``cancel``: one new instance and an unrelated put whose condition
      (its item exists) never holds, so the transaction is always cancelled;
    - ``abandon``: ``tx.save(new)``, then the user's code raises
      :class:`UserAbort` inside the ``with`` block, so nothing is sent.
``bulk``
    ``Model.save_all()``:

    - ``batch``: two new instances and one with an explicit ID of its own
      (negative, outside the sequence), written as an ordinary save;
    - ``bad-batch``: two new instances and a third that cannot be stored (its
      required ``owner`` is None, so PynamoDB refuses to serialize it): the
      batch fails and nothing of it may be stored or keep an ID.

Each item's owner tag is the operation's tag (``c1s0``) followed by a letter
(``c1s0a``); a plain save's item has the operation's tag itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from pynamodb_autoinc import TransactWrite
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    BulkSaveError,
    ContentionError,
    ItemExistsError,
    SequenceExhaustedError,
    TransactionCanceledError,
)

from .scheduler import UNKNOWN, Expect, Outcome, Report

if TYPE_CHECKING:
    from .world import World


class UserAbort(Exception):
    """The simulated user's own exception, raised inside a ``with TransactWrite(...)`` block."""


@dataclass
class Item:
    """One item an operation writes: its owner tag and its instance (None: the world's own ``save`` function)."""

    tag: str
    instance: Any = None
    new: bool = True
    returned: Any = UNKNOWN


@dataclass
class Operation:
    """One client operation: the items it writes, the code that writes them, and how it may end."""

    tag: str
    save: int
    kind: str
    items: List[Item]
    run: Callable[[], None]
    expect: Expect = Expect()
    extra: Optional[str] = None
    atomic: Tuple[Tuple[str, ...], ...] = ()
    attribute: str = "id"

    def held(self, item: Item) -> Any:
        """The ID ``item``'s instance holds now."""
        return item.returned if item.instance is None else getattr(item.instance, self.attribute)

    def report(self, status: str, error: Optional[BaseException] = None) -> Report:
        """What the operation reported: ``ok``, ``crashed``, or ``error`` (a ``BulkSaveError``'s saved items are ok)."""
        saved = [id(i) for i in getattr(error, "saved", None) or ()] if isinstance(error, BulkSaveError) else []
        items = []
        for item in self.items:
            mine = status
            if status == "error" and item.instance is not None and id(item.instance) in saved:
                mine = "ok"
            value = self.held(item) if status != "crashed" else None
            items.append(Outcome(item.tag, mine, value, None if mine == "ok" else error, item.new, self.tag))
        return Report(self.tag, self.save, self.kind, status, items, error, self.expect, self.extra, self.atomic)


def always_excused(world: World) -> Tuple[type, ...]:
    """What may end any operation of ``world`` with no fault: contention, an exhausted sequence, and, on a
    cycling one, a value come round whose item is still stored."""
    exhausted = (SequenceExhaustedError,) if world.mode.limit is not None and not world.mode.cycle else ()
    return (ContentionError,) + exhausted + ((ItemExistsError,) if world.mode.cycle else ())


def save(world: World, save_index: int, tag: str) -> Operation:
    """One new instance, saved with ``Model.save()``."""
    if world.custom_save is not None:
        custom = world.custom_save
        item = Item(tag)

        def run_custom() -> None:
            item.returned = custom(tag)

        return Operation(tag, save_index, "save", [item], run_custom, Expect(excused=always_excused(world)))
    model: Any = world.model
    instance = model(world.partition, owner=tag) if world.mode.query else model(owner=tag)
    item = Item(tag, instance)
    return Operation(tag, save_index, "save", [item], instance.save, Expect(excused=always_excused(world)),
                     attribute=world.attribute)


TX_KINDS = ("commit", "cancel", "abandon")


def transact(world: World, save_index: int, tag: str) -> Operation:
    """A user's ``TransactWrite`` holding new instances: committed, cancelled, or abandoned (see the module)."""
    kind = TX_KINDS[save_index % len(TX_KINDS)]
    model: Any = world.model
    extra: Any = world.extra
    letters = "ab" if kind == "commit" else "a"
    items = [Item(tag + letter, model(owner=tag + letter)) for letter in letters]

    def run() -> None:
        with TransactWrite(connection=world.connection) as tx:
            for item in items:
                tx.save(item.instance)
            if kind == "commit":
                tx.save(extra(tag, owner=tag))
            elif kind == "cancel":
                tx.save(extra(tag, owner=tag), condition=extra.key.exists())  # never holds: no such item
            else:
                raise UserAbort(f"{tag}: the user's code failed inside the transaction")

    if kind == "commit":
        # a gapless counter swap in the user's transaction loses to a concurrent writer: "run it again"
        race = (TransactionCanceledError,) if world.mode.gapless else ()
        expect = Expect(excused=always_excused(world) + race)
        return Operation(tag, save_index, kind, items, run, expect, extra=tag,
                         atomic=(tuple(i.tag for i in items) + (tag,),))
    if kind == "cancel":
        return Operation(tag, save_index, kind, items, run,
                         Expect(must_fail=(TransactionCanceledError,), excused=always_excused(world)), extra=tag)
    return Operation(tag, save_index, kind, items, run,
                     Expect(must_fail=(UserAbort,), excused=always_excused(world), foreign=(UserAbort,)))


BULK_KINDS = ("batch", "bad-batch")


def explicit_id(tag: str) -> int:
    """A negative ID of this operation's own, outside every sequence under test (``c2s1`` -> -2001)."""
    client, save_index = tag[1:].split("s")
    return -(1000 * int(client) + int(save_index) + 1)


def bulk(world: World, save_index: int, tag: str) -> Operation:
    """``Model.save_all()`` of new instances, with an explicit ID or with an instance that cannot be stored."""
    kind = BULK_KINDS[save_index % len(BULK_KINDS)]
    model: Any = world.model
    items = [Item(tag + letter, model(owner=tag + letter)) for letter in "ab"]
    new = tuple(i.tag for i in items)
    if kind == "batch":
        items.append(Item(tag + "x", model(explicit_id(tag), owner=tag + "x"), new=False))
    else:
        items.append(Item(tag + "z", model()))  # no owner: PynamoDB cannot serialize it

    def run() -> None:
        model.save_all([item.instance for item in items])

    if kind == "batch":
        return Operation(tag, save_index, kind, items, run, Expect(excused=always_excused(world)), atomic=(new,))
    return Operation(tag, save_index, kind, items, run,
                     Expect(must_fail=(ValueError, AutoIncrementError), excused=always_excused(world),
                            foreign=(ValueError,)))


Workload = Callable[["World", int, str], Operation]

WORKLOADS: Dict[str, Workload] = {"save": save, "transact": transact, "bulk": bulk}
