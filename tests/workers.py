"""A worker process for the concurrency tests: ``python -m tests.workers CONFIG_JSON``.

It builds the same models as the parent test, waits for the parent's go
signal, saves ``count`` items and appends one line per outcome to ``out``
(flushed at once, so the record survives a SIGKILL):

``ok <model> <id>``
    a new item was saved with this ID;
``explicit <model> <id>``
    an item was saved with an ID the worker chose;
``refused <model> <ErrorName>``
    a save whose condition was made to fail raised this library error;
``exhausted <model>``
    the sequence had reached ``Meta.autoinc_max``;
``counted <n>``
    (``task="count"``) an event was counted; ``n`` is the count returned.

With ``task="cycle"`` the worker saves on a cycling sequence and deletes its
own items behind it (see :func:`cycle_saves`). With ``task="tasks"`` it saves
from ``tasks`` asyncio tasks of one event loop, ``await item.asave()``, each
``count`` items one after the other (lines ``ok <model> <id> <task>``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from typing import Any, Dict, List

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import DeleteError
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import AutoIncrementError, ItemExistsError, SequenceExhaustedError
from pynamodb_autoinc.periods import increment_in_period


def build_model(name: str, table: str, key: str, gapless: bool, meta: Dict[str, Any], **options: Any) -> Any:
    """The model the workers and the parent share: ``id`` auto, ``owner`` a worker tag.

    With ``autoinc_strategy="query"`` the model is numbered within partitions:
    hash key ``project``, range key ``id``.
    """
    # counter modes run with the default retry budget; the query strategy, which has no queue, races
    query = options.get("autoinc_strategy") == "query"
    retries = {"autoinc_retries": 200, "autoinc_timeout": None} if query else {}
    # the query strategy keeps no counter and is always gapless: it refuses a counter key and gapless mode
    counter = {} if query else {"autoinc_key": key, "autoinc_gapless": gapless}
    meta_cls = type("Meta", (), {"table_name": table, **counter, **retries, **meta, **options})
    keys: Dict[str, Any] = {"id": NumberAttribute(hash_key=True)}
    if options.get("autoinc_strategy") == "query":
        keys = {"project": UnicodeAttribute(hash_key=True), "id": NumberAttribute(range_key=True)}
    return type(name, (AutoIncrementMixin, Model), {"Meta": meta_cls, **keys, "owner": UnicodeAttribute(null=True)})


def count_events(config: Dict[str, Any], out: Any) -> None:
    """Count events on one shared item with increment_in_period, in the period of ``config["now"]``."""
    meta_cls = type("Meta", (), {"table_name": config["table"], **config["meta"]})
    model: Any = type("ApiKey", (Model,), {"Meta": meta_cls, "key": UnicodeAttribute(hash_key=True),
                                           "request_count": NumberAttribute(null=True),
                                           "active_period": UnicodeAttribute(null=True)})
    now = datetime.fromisoformat(config["now"])
    for _ in range(config["count"]):
        value = increment_in_period(model, "k1", count_attribute="request_count",
                                    period_attribute="active_period", now=now)
        out.write(f"counted {value}\n")


def cycle_saves(model: Any, config: Dict[str, Any], out: Any) -> None:
    """Save on a cycling sequence and delete this worker's items behind it, keeping ``keep`` alive.

    ``ok <id> <owner>``: saved; ``deleted <id> <owner>``: its own item deleted (conditional on the owner, so
    an item overwritten by another worker shows as ``overwritten <id> <owner>``); ``taken``: the value's
    item was still alive (ItemExistsError, nothing overwritten).
    """
    worker = config.get("worker", 0)
    alive: List[Any] = []
    for i in range(config["count"]):
        owner = f"{worker}:{i}"
        item = model(owner=owner)
        try:
            item.save()
        except ItemExistsError:
            out.write(f"taken {item.id}\n")
            continue
        out.write(f"ok {item.id} {owner}\n")
        alive.append(item)
        if len(alive) > config["keep"]:
            old = alive.pop(0)
            try:
                old.delete(condition=model.owner == old.owner)
            except DeleteError:
                out.write(f"overwritten {old.id} {old.owner}\n")
            else:
                out.write(f"deleted {old.id} {old.owner}\n")


def task_saves(model: Any, name: str, config: Dict[str, Any], out: Any) -> None:
    """Save ``count`` items in each of ``tasks`` concurrent tasks of one event loop, awaited."""
    import asyncio

    async def one(task: int) -> None:
        for i in range(config["count"]):
            item = model(owner=f"{config.get('worker', 0)}:{task}:{i}")
            await item.asave()
            out.write(f"ok {name} {item.id} {task}\n")

    async def every() -> None:
        await asyncio.gather(*(one(task) for task in range(config["tasks"])))

    asyncio.run(every())


def main(config: Dict[str, Any]) -> None:
    models = {spec["name"]: build_model(gapless=config["gapless"], meta=config["meta"], **spec)
              for spec in config.get("models", ())}
    worker = config.get("worker", 0)
    names = sorted(models)
    with open(config["out"], "a", buffering=1) as out:
        out.write(f"ready {os.getpid()}\n")
        while not os.path.exists(config["go"]):
            time.sleep(0.01)
        if config.get("task") == "count":
            count_events(config, out)
            return
        if config.get("task") == "cycle":
            cycle_saves(models[names[0]], config, out)
            return
        if config.get("task") == "tasks":
            task_saves(models[names[0]], names[0], config, out)
            return
        for i in range(config["count"]):
            name = names[(worker + i) % len(names)]
            model = models[name]
            owner = f"{worker}:{i}"
            if config.get("explicit_every") and i % config["explicit_every"] == 1:
                explicit = 10_000_000 + worker * 10_000 + i
                model(id=explicit, owner=owner).save()
                out.write(f"explicit {name} {explicit}\n")
            elif config.get("fail_every") and i % config["fail_every"] == 2:
                try:
                    model(owner=owner).save(condition=model.owner == "never")
                except AutoIncrementError as exc:
                    out.write(f"refused {name} {type(exc).__name__}\n")
                else:
                    out.write(f"unexpected-success {name}\n")
            else:
                item = model(owner=owner, **({"project": "P"} if "project" in model.get_attributes() else {}))
                try:
                    item.save()
                except SequenceExhaustedError:
                    out.write(f"exhausted {name}\n")
                    continue
                out.write(f"ok {name} {item.id}\n")
            if config.get("pause"):
                time.sleep(config["pause"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))


def set_by_another_process(counter: Any, key: str, value: int) -> None:
    """Set a counter as another process would: unlike ``setval``, this process keeps its blocks and memory."""
    hash_key, range_key = counter._item_key(key)
    counter._get_connection().update_item(hash_key, range_key=range_key, actions=[counter.next_id.set(value)])
