"""Small helpers shared by several test files."""

from __future__ import annotations

import socket
from typing import Any, List

from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.models import Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    HistoryMixin,
)


def ids(model: Any) -> List[Any]:
    """The stored items' auto IDs, sorted."""
    name = model.autoinc_options().attribute
    return sorted(getattr(i, name) for i in model.scan(consistent_read=True))


def plain_history(backend: Any, stem: str = "hist") -> Any:
    """A plain PynamoDB history model on ``backend``, its table created."""
    meta = type("Meta", (), {"table_name": backend.table_name(stem), **backend.meta})
    model = type("Hist", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


def auto_history_doc(backend: Any, **meta: Any) -> Any:
    history = plain_history(backend)
    m = type("Meta", (), {"table_name": backend.table_name("doc"), "history_model": history, **backend.meta,
                          **meta})
    Doc: Any = type("Doc", (HistoryMixin, AutoIncrementMixin, Model), {
        "Meta": m, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.counter(model=Doc)
    backend.create(Doc)
    return Doc, history


def run_in_threads(saves: List[Any]) -> dict:
    """Run ``saves`` in threads at once; their errors by index."""
    import threading

    errors: dict = {}

    def run(i: int) -> None:
        try:
            saves[i]()
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(saves))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


REGIONS = ("us-east-1", "eu-west-1", "ap-south-1")


def region_model(make_model: Any, backend: Any, region: str, table: str, **options: Any) -> Any:
    model = make_model("User", create=False, region=region, table_name=table, **options)
    backend.counter(model=model)
    backend.create(model)
    return model


def auto_model(backend: Any, name: str, attrs: dict, bases: tuple = (AutoIncrementMixin,), *,
               counter_table: bool = True, **meta: Any) -> Any:
    """A model class ``name`` with ``attrs`` on ``backend``, its table (and, unless told not to, the counter
    table) created."""
    meta_cls = type("Meta", (), {"table_name": backend.table_name(name.lower()), **backend.meta, **meta})
    model = type(name, (*bases, Model), {"Meta": meta_cls, **attrs})
    if counter_table:
        backend.counter(model=model)
    backend.create(model)
    return model


def stored_names(model: Any) -> List[Any]:
    return sorted((item.id, item.name) for item in model.scan(consistent_read=True))


def doc_history(backend: Any) -> Any:
    meta = type("Meta", (), {"table_name": backend.table_name("doc-history"), **backend.meta})
    model = type("DocVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "name": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


def currval(model: Any) -> Any:
    opts = model.autoinc_options()
    return opts.counter.currval(opts.key)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
