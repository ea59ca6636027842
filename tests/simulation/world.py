"""The simulated world: moto's in-process DynamoDB, the models of one mode, and how to write, reset and read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Type

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.models import Model

import tests.fake_aws  # noqa: F401  (dummy AWS settings)
import tests.moto_tokens  # noqa: F401  (moto keeps transaction tokens, as DynamoDB does)
from pynamodb_autoinc import AutoIncrementMixin, NextId, regions

from .scheduler import Interposer
from .workloads import WORKLOADS, Operation, Workload

SaveFn = Callable[[str], Any]

REGION = "us-east-1"
PARTITION = "p"

#: Retries botocore makes for a throttled or unanswered request (PynamoDB's Meta.max_retry_attempts).
MAX_RETRY_ATTEMPTS = 2


@dataclass(frozen=True)
class Mode:
    """One way of numbering and one write path: its Meta options, its workload, what its final state must satisfy."""

    name: str
    meta: Dict[str, Any] = field(default_factory=dict)
    gapless: bool = False
    """Stored IDs are exactly 1..N (and a counter, if any, holds N)."""
    counter: bool = True
    """There is a counter item, which must never be below the largest stored ID."""
    query: bool = False
    """``autoinc_strategy = "query"``: the ID is the range key within one partition."""
    workload: str = "save"
    """What one client operation does (:data:`tests.simulation.workloads.WORKLOADS`)."""

    @property
    def cycle(self) -> bool:
        """``Meta.autoinc_cycle``: past ``autoinc_max`` the sequence starts again from 1."""
        return bool(self.meta.get("autoinc_cycle"))

    @property
    def limit(self) -> Optional[int]:
        """``Meta.autoinc_max``: no value past it is ever handed out (the step is 1 in every mode)."""
        limit: Optional[int] = self.meta.get("autoinc_max")
        return limit


GAPLESS = {"autoinc_gapless": True}

#: The modes under test. Block mode reserves 2 values per counter request, per process: the values a
#: crashed client had reserved but not used are gaps, and IDs increase only within a client, so only
#: uniqueness, ownership and the counter bound are checked there. The query strategy numbers the range
#: key within one partition, with no counter: its stored numbers must be exactly 1..N.
#:
#: The other write paths: a user's TransactWrite (``tx-*``) and ``Model.save_all()`` (``bulk-*``) in fast
#: and gapless mode, and blocks of 3 close to ``autoinc_max``: ``block-max`` (max 4: one block, then the
#: last value reserved alone, then SequenceExhaustedError) and ``block-max-2`` (max 2: less than one
#: block fits from the start, on a counter that does not exist yet). ``cycle`` and ``cycle-gapless`` cycle
#: through 1..2, so their saves come round to values whose items are stored: ItemExistsError, never an
#: overwrite.
MODES: Dict[str, Mode] = {
    "fast": Mode("fast"),
    "gapless": Mode("gapless", GAPLESS, gapless=True),
    "block": Mode("block", {"autoinc_block": 2}),
    "query": Mode("query", {"autoinc_strategy": "query", "autoinc_attribute": "num"},
                  gapless=True, counter=False, query=True),
    "tx-fast": Mode("tx-fast", workload="transact"),
    "tx-gapless": Mode("tx-gapless", GAPLESS, gapless=True, workload="transact"),
    "bulk-fast": Mode("bulk-fast", workload="bulk"),
    "bulk-gapless": Mode("bulk-gapless", GAPLESS, gapless=True, workload="bulk"),
    "block-max": Mode("block-max", {"autoinc_block": 3, "autoinc_max": 4}),
    "block-max-2": Mode("block-max-2", {"autoinc_block": 3, "autoinc_max": 2}),
    "cycle": Mode("cycle", {"autoinc_max": 2, "autoinc_cycle": True}),
    "cycle-gapless": Mode("cycle-gapless", {**GAPLESS, "autoinc_max": 2, "autoinc_cycle": True}, gapless=True),
}


@dataclass
class Snapshot:
    """The final state: each stored ID with its owner tag, the counter's value, the unrelated items' keys."""

    items: Dict[int, str]
    counter: Optional[int]
    extras: Set[str] = field(default_factory=set)


class World:
    """moto tables for one mode, the model under test, and the interposer on its botocore clients.

    Use inside ``moto.mock_aws()``. ``operation(save, tag)`` is what one
    client's operation number ``save`` does (its mode's workload); ``save``,
    if given, replaces the library's save with a function of the owner tag
    that returns the ID, and ``workload`` replaces the mode's workload (the
    harness's own allocators and write paths).
    """

    def __init__(self, mode: Mode, model: Optional[Type[Model]] = None, counter: Optional[Type[NextId]] = None,
                 save: Optional[SaveFn] = None, workload: Optional[Workload] = None) -> None:
        self.mode = mode
        self.model: Type[Model] = model or build_model(mode)
        if counter is None and mode.counter and issubclass(self.model, AutoIncrementMixin):
            counter = self.model.autoinc_options().counter
        self.counter = counter
        self.custom_save = save
        self.workload: Workload = workload or WORKLOADS[mode.workload]
        self.attribute = "num" if mode.query else "id"
        self.partition = PARTITION
        self.extra: Type[Model] = build_extra(mode)
        #: The user's own connection, for TransactWrite.
        self.connection = Connection(region=REGION, max_retry_attempts=MAX_RETRY_ATTEMPTS)
        tables: List[Type[Model]] = [self.model] + ([counter] if counter is not None else [])
        if mode.workload == "transact":
            tables.append(self.extra)
        for table in tables:
            if not table.exists():
                table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        self.tables = tables
        if issubclass(self.model, AutoIncrementMixin):
            # The tables are described once per process, on the first claim (global tables); the simulated
            # clients share that memory, so it is learned here, before any schedule: no client's run
            # describes a table, and the schedules explore the writes alone.
            regions.effective(self.model.autoinc_options())
        self.interposer = Interposer([t._get_connection().connection.client for t in tables]
                                     + [self.connection.client])

    def close(self) -> None:
        self.interposer.close()

    counter_key = "sim"

    def operation(self, save: int, tag: str) -> Operation:
        """Client operation number ``save``, whose items' owner tags start with ``tag``."""
        return self.workload(self, save, tag)

    def _stored(self, table: Type[Model]) -> Any:
        """moto's own table behind ``table`` (reading and clearing it there takes no request)."""
        return dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_table(table.Meta.table_name)

    def reset(self) -> None:
        """Delete every item of every table (the counter included)."""
        for table in self.tables:
            self._stored(table).items.clear()

    def snapshot(self) -> Snapshot:
        """The stored items (ID -> owner tag), the counter's value and the unrelated items, as moto holds them."""
        items: Dict[int, str] = {}
        for item in self._stored(self.model).all_items():
            attrs = item.to_json()["Attributes"]
            items[int(attrs[self.attribute]["N"])] = attrs["owner"]["S"]
        counter = None
        if self.counter is not None:
            for item in self._stored(self.counter).all_items():
                attrs = item.to_json()["Attributes"]
                if attrs["NextKey"] == {"S": self.counter_key} and "NextId" in attrs:
                    counter = int(attrs["NextId"]["N"])
        extras = set()
        if self.extra in self.tables:
            extras = {item.to_json()["Attributes"]["key"]["S"] for item in self._stored(self.extra).all_items()}
        return Snapshot(items, counter, extras)


def build_model(mode: Mode, name: str = "SimItem") -> Type[Model]:
    """The model under test in ``mode``: an integer ID, an ``owner`` tag, no retry delay, botocore retries."""
    meta = type("Meta", (), {
        "table_name": f"sim-{mode.name}",
        "region": REGION,
        "max_retry_attempts": MAX_RETRY_ATTEMPTS,
        **({} if mode.query else {"autoinc_key": "sim"}),  # the query strategy keeps no counter: it refuses one
        "autoinc_backoff": 0,
        **mode.meta,
    })
    attrs: Dict[str, Any] = {"Meta": meta, "owner": UnicodeAttribute()}
    if mode.query:
        attrs.update(part=UnicodeAttribute(hash_key=True), num=NumberAttribute(range_key=True))
    else:
        attrs.update(id=NumberAttribute(hash_key=True))
    return type(name, (AutoIncrementMixin, Model), attrs)


def build_extra(mode: Mode) -> Type[Model]:
    """An unrelated plain model, put in the same user transaction as the new instances."""
    meta = type("Meta", (), {"table_name": f"sim-{mode.name}-extra", "region": REGION,
                             "max_retry_attempts": MAX_RETRY_ATTEMPTS})
    return type("SimExtra", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                       "owner": UnicodeAttribute()})
