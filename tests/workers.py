"""A worker process for the concurrency tests: ``python -m tests.workers CONFIG_JSON``.

It builds the same models as the parent test, waits for the parent's go
signal, saves ``count`` items and appends one line per outcome to ``out``
(flushed at once, so the record survives a SIGKILL):

``ok <model> <id>``
    a new item was saved with this ID;
``explicit <model> <id>``
    an item was saved with an ID the worker chose;
``refused <model> <ErrorName>``
    a save whose condition was made to fail raised this library error.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementError, AutoIncrementMixin


def build_model(name: str, table: str, key: str, gapless: bool, meta: Dict[str, Any]) -> Any:
    """The model the workers and the parent share: ``id`` auto, ``owner`` a worker tag."""
    meta_cls = type("Meta", (), {"table_name": table, "autoinc_key": key, "autoinc_gapless": gapless,
                                 "autoinc_retries": 200, **meta})
    return type(name, (AutoIncrementMixin, Model), {
        "Meta": meta_cls,
        "id": NumberAttribute(hash_key=True),
        "owner": UnicodeAttribute(null=True),
    })


def main(config: Dict[str, Any]) -> None:
    models = {spec["name"]: build_model(gapless=config["gapless"], meta=config["meta"], **spec)
              for spec in config["models"]}
    worker = config["worker"]
    names = sorted(models)
    with open(config["out"], "a", buffering=1) as out:
        out.write(f"ready {os.getpid()}\n")
        while not os.path.exists(config["go"]):
            time.sleep(0.01)
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
                item = model(owner=owner)
                item.save()
                out.write(f"ok {name} {item.id}\n")
            if config.get("pause"):
                time.sleep(config["pause"])


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
