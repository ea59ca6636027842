"""A worker process for the history concurrency test: ``python -m tests.history_worker CONFIG_JSON``.

It builds the same models as the parent test, waits for the parent's go
signal, then ``saves`` times saves each of the items with a title naming
itself, merging (keeping its own title) whenever another writer saved
first. One line per landed save, flushed at once:

``ok <key> <version> <title>``
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, Tuple

from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from pynamodb_autoinc import HistoryMixin


def build_models(page_table: str, history_table: str, meta: Dict[str, Any]) -> Tuple[Any, Any]:
    """The item model (``Doc``) and its history model (``DocVersion``) the workers and the parent share."""
    history = type("DocVersion", (Model,), {
        "Meta": type("Meta", (), {"table_name": history_table, **meta}),
        "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    doc = type("Doc", (HistoryMixin, Model), {
        "Meta": type("Meta", (), {"table_name": page_table, "history_model": history, **meta}),
        "key": UnicodeAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    return doc, history


def keep_mine(mine: Any, stored: Any) -> None:
    """The merge: this writer's title wins; the version is taken from the stored item by the library."""


def main(conf: Dict[str, Any]) -> None:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    Doc, _ = build_models(conf["page_table"], conf["history_table"], conf["meta"])
    docs = {key: Doc.get(key, consistent_read=True) for key in conf["items"]}
    with open(conf["out"], "a", buffering=1) as out:
        out.write("ready\n")
        while not os.path.exists(conf["go"]):
            time.sleep(0.01)
        for i in range(conf["saves"]):
            for key, doc in docs.items():
                doc.title = f"w{conf['worker']}-{i}-{key}"
                doc.save(merge=keep_mine)
                out.write(f"ok {key} {doc.revision} {doc.title}\n")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
