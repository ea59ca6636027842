"""A worker process writing to one region of the global-table double: ``python -m tests.global_worker CONFIG_JSON``.

It builds the model of the parent test against its region's server (``config["meta"]``:
region, host, credentials), with its counter in the replicated table ``config["counter_table"]``
and the ``Meta`` options ``config["options"]``. It waits for the parent's go signal, saves
``count`` items, each marked with its owner ``<worker>:<i>``, and appends one line per save
to ``out`` (flushed at once):

``ok <id> <owner>``
    the item was saved with this ID;
``error <ErrorName> <message>``
    the save raised.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, NextId


def build_model(table: str, counter_table: str, meta: Dict[str, Any], options: Dict[str, Any]) -> Any:
    """The model the workers and the parent share: ``id`` auto, ``owner`` the save's tag."""
    counter_meta = type("Meta", (NextId.Meta,), {"table_name": counter_table})
    counter = type("Counter", (NextId,), {"Meta": counter_meta})
    meta_cls = type("Meta", (), {"table_name": table, "autoinc_counter": counter, **meta, **options})
    return type("Item", (AutoIncrementMixin, Model), {"Meta": meta_cls, "id": NumberAttribute(hash_key=True),
                                                      "owner": UnicodeAttribute(null=True)})


def main(config: Dict[str, Any]) -> None:
    model = build_model(config["table"], config["counter_table"], config["meta"], config["options"])
    with open(config["out"], "a", buffering=1) as out:
        out.write(f"ready {os.getpid()}\n")
        while not os.path.exists(config["go"]):
            time.sleep(0.01)
        for i in range(config["count"]):
            owner = f"{config['worker']}:{i}"
            item = model(owner=owner)
            try:
                item.save()
            except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the test
                message = " ".join(str(exc).split())
                out.write(f"error {type(exc).__name__} {message}\n")
                continue
            out.write(f"ok {item.id} {owner}\n")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
