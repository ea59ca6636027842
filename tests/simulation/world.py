"""The simulated world: moto's in-process DynamoDB, the models of one mode, and how to save, reset and read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Type

from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

import tests.fake_aws  # noqa: F401  (dummy AWS settings)
from pynamodb_autoinc import AutoIncrementMixin, NextId

from .scheduler import Interposer

SaveFn = Callable[[str], Any]

REGION = "us-east-1"
PARTITION = "p"

#: The attribute a failed library save's exception gets: the ID left on the instance.
ID_AFTER = "sim_id_after"

#: Retries botocore makes for a throttled or unanswered request (PynamoDB's Meta.max_retry_attempts).
MAX_RETRY_ATTEMPTS = 2


@dataclass(frozen=True)
class Mode:
    """One way of numbering: its Meta options and what its final state must satisfy."""

    name: str
    meta: Dict[str, Any] = field(default_factory=dict)
    gapless: bool = False
    """Stored IDs are exactly 1..N (and a counter, if any, holds N)."""
    counter: bool = True
    """There is a counter item, which must never be below the largest stored ID."""
    query: bool = False
    """``autoinc_strategy = "query"``: the ID is the range key within one partition."""


#: The modes under test. Block mode reserves 2 values per counter request, per process: the values a
#: crashed client had reserved but not used are gaps, and IDs increase only within a client, so only
#: uniqueness, ownership and the counter bound are checked there. The query strategy numbers the range
#: key within one partition, with no counter: its stored numbers must be exactly 1..N.
MODES: Dict[str, Mode] = {
    "fast": Mode("fast"),
    "gapless": Mode("gapless", {"autoinc_gapless": True}, gapless=True),
    "block": Mode("block", {"autoinc_block": 2}),
    "query": Mode("query", {"autoinc_strategy": "query", "autoinc_attribute": "num"},
                  gapless=True, counter=False, query=True),
}


@dataclass
class Snapshot:
    """The final state: each stored ID with its owner tag, and the counter's value."""

    items: Dict[int, str]
    counter: Optional[int]


class World:
    """moto tables for one mode, the model under test, and the interposer on its botocore clients.

    Use inside ``moto.mock_aws()``. ``save(tag)`` is what one client's save
    does: a new instance with ``owner=tag``, ``save()``, and the ID it got.
    """

    def __init__(self, mode: Mode, model: Optional[Type[Model]] = None, counter: Optional[Type[NextId]] = None,
                 save: Optional[SaveFn] = None) -> None:
        self.mode = mode
        self.model: Type[Model] = model or build_model(mode)
        if counter is None and mode.counter and issubclass(self.model, AutoIncrementMixin):
            counter = self.model.autoinc_options().counter
        self.counter = counter
        self._save = save
        tables: List[Type[Model]] = [self.model] + ([counter] if counter is not None else [])
        for table in tables:
            if not table.exists():
                table.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        self.tables = tables
        self.interposer = Interposer([t._get_connection().connection.client for t in tables])

    def close(self) -> None:
        self.interposer.close()

    counter_key = "sim"

    def save(self, tag: str) -> Any:
        """One client's save through the library: a new item owned by ``tag``; returns its ID."""
        if self._save is not None:
            return self._save(tag)
        item: Any = self.model(PARTITION, owner=tag) if self.mode.query else self.model(owner=tag)
        attribute = "num" if self.mode.query else "id"
        try:
            item.save()
        except Exception as exc:
            setattr(exc, ID_AFTER, getattr(item, attribute))  # for the checker: the ID the instance kept
            raise
        return getattr(item, attribute)

    def _stored(self, table: Type[Model]) -> Any:
        """moto's own table behind ``table`` (reading and clearing it there takes no request)."""
        return dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_table(table.Meta.table_name)

    def reset(self) -> None:
        """Delete every item of every table (the counter included)."""
        for table in self.tables:
            self._stored(table).items.clear()

    def snapshot(self) -> Snapshot:
        """The stored items (ID -> owner tag) and the counter's value, as moto holds them."""
        key = "num" if self.mode.query else "id"
        items: Dict[int, str] = {}
        for item in self._stored(self.model).all_items():
            attrs = item.to_json()["Attributes"]
            items[int(attrs[key]["N"])] = attrs["owner"]["S"]
        counter = None
        if self.counter is not None:
            for item in self._stored(self.counter).all_items():
                attrs = item.to_json()["Attributes"]
                if attrs["NextKey"] == {"S": self.counter_key} and "NextId" in attrs:
                    counter = int(attrs["NextId"]["N"])
        return Snapshot(items, counter)


def build_model(mode: Mode, name: str = "SimItem") -> Type[Model]:
    """The model under test in ``mode``: an integer ID, an ``owner`` tag, no retry delay, botocore retries."""
    meta = type("Meta", (), {
        "table_name": f"sim-{mode.name}",
        "region": REGION,
        "max_retry_attempts": MAX_RETRY_ATTEMPTS,
        "autoinc_key": "sim",
        "autoinc_backoff": 0,
        **mode.meta,
    })
    attrs: Dict[str, Any] = {"Meta": meta, "owner": UnicodeAttribute()}
    if mode.query:
        attrs.update(part=UnicodeAttribute(hash_key=True), num=NumberAttribute(range_key=True))
    else:
        attrs.update(id=NumberAttribute(hash_key=True))
    return type(name, (AutoIncrementMixin, Model), attrs)
