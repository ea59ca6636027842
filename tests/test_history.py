"""HistoryMixin: every save writes the item's state as version 1, 2, 3, … in one transaction with the item."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from decimal import Context, Decimal
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from botocore.awsrequest import AWSResponse
from hypothesis import assume, example, given
from hypothesis import strategies as st
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.models import BatchWrite, Model

from pynamodb_autoinc import (
    AutoIncrementMixin,
    CounterAttribute,
    CounterMixin,
    HistoryMixin,
    TransactWrite,
    history,
)
from pynamodb_autoinc.exceptions import (
    AutoIncrementError,
    BulkSaveError,
    ConfigurationError,
    HistoryWriteError,
    ItemExistsError,
    VersionConflictError,
)
from pynamodb_autoinc.history import item_key
from pynamodb_autoinc.iam import required_actions
from tests.helpers import auto_history_doc, plain_history
from tests.history_worker import build_models
from tests.test_faults import Faults, _Body

ROOT = Path(__file__).resolve().parent.parent


def history_model(backend: Any) -> Any:
    meta = type("Meta", (), {"table_name": backend.table_name("page-history"), **backend.meta})
    model = type("PageVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


def models(backend: Any) -> Tuple[Any, Any]:
    """A ``Page`` keyed by url, with title and version, and its history model."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history, **backend.meta})
    page = type("Page", (HistoryMixin, Model), {
        "Meta": meta, "url": UnicodeAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(page)
    return page, history


def test_first_save_is_version_one(backend):
    """The item's creation is version 1, stored in the history with its state."""
    Page, _ = models(backend)
    page = Page("a", title="one")
    page.save()
    assert page.revision == 1
    first = page.version(1, consistent_read=True)
    assert (first.item, first.version, first.title, first.deleted) == ("a", 1, "one", False)


def test_versions_follow_saves(backend):
    """Each save adds the next version holding the state saved; versions() lists them newest first."""
    Page, _ = models(backend)
    page = Page("a", title="t1")
    for title in ("t1", "t2", "t3"):
        page.title = title
        page.save()
    assert Page.get("a", consistent_read=True).revision == 3
    assert [(v.version, v.title) for v in page.versions(consistent_read=True)] == [(3, "t3"), (2, "t2"), (1, "t1")]


def test_history_classmethod_pages(backend):
    """Model.history(key) is a paged iterator, newest first, resumable from last_evaluated_key."""
    Page, _ = models(backend)
    page = Page("a")
    for n in range(5):
        page.title = str(n)
        page.save()
    pages = Page.history("a", page_size=2, consistent_read=True)
    first_two = [next(pages).version, next(pages).version]
    assert first_two == [5, 4]
    rest = Page.history("a", consistent_read=True, last_evaluated_key=pages.last_evaluated_key)
    assert [v.version for v in rest] == [3, 2, 1]


def test_stale_save_raises_version_conflict(backend):
    """A save from an instance read before another writer's save raises VersionConflictError naming both versions."""
    Page, _ = models(backend)
    Page("a", title="x").save()
    mine, theirs = Page.get("a", consistent_read=True), Page.get("a", consistent_read=True)
    theirs.title = "theirs"
    theirs.save()
    mine.title = "mine"
    with pytest.raises(VersionConflictError) as raised:
        mine.save()
    assert (raised.value.attempted, raised.value.current) == (2, 2)
    assert "lost version 2 to another writer; the item is at version 2" in str(raised.value)
    assert isinstance(raised.value, AutoIncrementError)
    assert [(v.version, v.title) for v in Page("a").versions(consistent_read=True)] == [(2, "theirs"), (1, "x")]


def test_conflict_leaves_instance_version(backend):
    """A save that lost keeps the version the instance was read at."""
    Page, _ = models(backend)
    Page("a").save()
    mine, theirs = Page.get("a", consistent_read=True), Page.get("a", consistent_read=True)
    theirs.save()
    with pytest.raises(VersionConflictError):
        mine.save()
    assert mine.revision == 1


def test_merge_retries(backend):
    """With merge=, a lost save calls merge(mine, stored) and is saved as the next version."""
    Page, _ = models(backend)
    Page("a", title="x").save()
    mine, theirs = Page.get("a", consistent_read=True), Page.get("a", consistent_read=True)
    theirs.title = "B"
    theirs.save()
    mine.title = "A"
    seen = []

    def merge(me: Any, stored: Any) -> None:
        seen.append(stored.revision)
        me.title = f"{stored.title}+{me.title}"

    mine.save(merge=merge)
    assert seen == [2]
    assert mine.revision == 3
    assert [(v.version, v.title) for v in mine.versions(consistent_read=True)] == [(3, "B+A"), (2, "B"), (1, "x")]


def test_merge_after_delete_raises(backend):
    """With merge=, a save that lost to a delete raises VersionConflictError (current None), merge never called."""
    Page, _ = models(backend)
    Page("a").save()
    mine, theirs = Page.get("a", consistent_read=True), Page.get("a", consistent_read=True)
    theirs.delete()
    calls = []
    with pytest.raises(VersionConflictError, match="deleted by another writer") as raised:
        mine.save(merge=lambda me, stored: calls.append(stored))
    assert raised.value.current is None and calls == []


def test_new_instance_over_existing_item_conflicts(backend):
    """Saving a new instance (no version) over an existing item is refused, never overwrites."""
    Page, _ = models(backend)
    Page("a", title="first").save()
    with pytest.raises(VersionConflictError) as raised:
        Page("a", title="second").save()
    assert raised.value.current == 1
    assert Page.get("a", consistent_read=True).title == "first"


def test_condition_failure(backend):
    """A failing condition= raises HistoryWriteError (not a conflict) and writes no version."""
    Page, _ = models(backend)
    page = Page("a", title="x")
    page.save()
    with pytest.raises(HistoryWriteError) as raised:
        page.save(condition=Page.title == "nope")
    assert not isinstance(raised.value, VersionConflictError)
    assert [v.version for v in page.versions(consistent_read=True)] == [1]


def test_delete_records_tombstone(backend):
    """delete() removes the item and records the next version as a tombstone (deleted=True, no state)."""
    Page, _ = models(backend)
    page = Page("a", title="x")
    page.save()
    page.delete()
    assert Page.count("a", consistent_read=True) == 0
    tomb = Page("a").version(2, consistent_read=True)
    assert (tomb.deleted, tomb.title) == (True, None)


def test_stale_delete_conflicts(backend):
    """delete() from an instance read before another save is refused: nothing deleted, no tombstone."""
    Page, _ = models(backend)
    Page("a").save()
    stale, fresh = Page.get("a", consistent_read=True), Page.get("a", consistent_read=True)
    fresh.save()
    with pytest.raises(VersionConflictError):
        stale.delete()
    assert Page.get("a", consistent_read=True).revision == 2
    assert [v.version for v in fresh.versions(consistent_read=True)] == [2, 1]


def test_delete_of_unread_instance_is_refused(backend):
    """delete() of an instance never saved or read is refused (it has no version), and nothing is deleted."""
    Page, _ = models(backend)
    Page("a").save()
    with pytest.raises(HistoryWriteError, match="never saved or read"):
        Page("a").delete()
    assert Page.count("a", consistent_read=True) == 1


def test_recreating_deleted_key_is_refused(backend):
    """After a delete, a new item under the same key is refused: its history ends with the tombstone."""
    Page, _ = models(backend)
    page = Page("a")
    page.save()
    page.delete()
    with pytest.raises(HistoryWriteError, match="already in PageVersion"):
        Page("a").save()


def test_last_write_wins_is_refused(backend):
    """save(add_version_condition=False) is refused: two saves could claim one version."""
    Page, _ = models(backend)
    with pytest.raises(ConfigurationError, match="always checks the version"):
        Page("a").save(add_version_condition=False)


@pytest.mark.modes("fast", "block")
def test_with_auto_increment(make_model, backend):
    """An auto-increment item's history is stored under its new ID."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), title=UnicodeAttribute(null=True), revision=VersionAttribute(),
                     history_model=history)
    doc = Doc(title="a")
    doc.save()
    doc.title = "b"
    doc.save()
    assert doc.id == 1
    assert [(v.item, v.version, v.title) for v in Doc.history(1, consistent_read=True)] == [("1", 2, "b"),
                                                                                             ("1", 1, "a")]


@pytest.mark.modes("fast")
def test_save_all_records_versions(make_model, backend):
    """save_all() of a history model saves each instance through save(): every one gets its version."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), title=UnicodeAttribute(null=True), revision=VersionAttribute(),
                     history_model=history)
    old = Doc(title="old")
    old.save()
    new = Doc(title="new")
    old.title = "old2"
    Doc.save_all([old, new])
    assert [v.version for v in Doc.history(old.id, consistent_read=True)] == [2, 1]
    assert [(v.version, v.title) for v in Doc.history(new.id, consistent_read=True)] == [(1, "new")]


@pytest.mark.modes("fast")
def test_save_all_stops_at_conflict(make_model, backend):
    """save_all() raises BulkSaveError at the first lost save, saying which instances landed."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)
    doc = Doc()
    doc.save()
    stale = Doc.get(doc.id, consistent_read=True)
    doc.save()
    first = Doc()
    with pytest.raises(BulkSaveError) as raised:
        Doc.save_all([first, stale])
    assert raised.value.saved == [first] and raised.value.unsaved == [stale]
    assert isinstance(raised.value.__cause__, VersionConflictError)


@pytest.mark.modes("fast")
def test_save_all_refuses_the_same_instance_twice_before_saving_any(make_model, backend):
    """save_all() of a history model given one instance twice raises BulkSaveError before anything is saved, as
    every save_all() does: the instance keeps no ID and no version is recorded."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)
    doc = Doc()
    with pytest.raises(BulkSaveError, match="given twice"):
        Doc.save_all([doc, Doc(), doc])
    assert doc.id is None and list(history.scan(consistent_read=True)) == []


@pytest.mark.modes("gapless")
def test_gapless_auto_increment_is_refused(make_model, backend):
    """A gapless auto-increment model is refused: its ID may change when its transaction is resent."""
    history = history_model(backend)
    with pytest.raises(ConfigurationError, match="fast mode"):
        make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)


@pytest.mark.modes("fast", "block")
def test_cycling_auto_increment_is_refused(make_model, backend):
    """A cycling auto-increment model is refused when the class is created: a wrap would hand a deleted item's
    ID to a new item, whose version 1 is already in that key's history."""
    history = history_model(backend)
    with pytest.raises(ConfigurationError, match="autoinc_cycle"):
        make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history,
                   autoinc_max=3, autoinc_cycle=True, create=False)


@pytest.mark.parametrize("stored", [10**38 - 1, 10**38])
def test_a_version_past_38_digits_is_refused(backend, stored):
    """A save whose version would reach 10**38 (DynamoDB refuses more than 38 digits; moto stores them) raises
    HistoryWriteError naming the version; the item and its history stay as they were."""
    Page, _ = models(backend)
    Page("a", title="first").save()
    Page._get_connection().update_item("a", actions=[Page.revision.set(stored)])
    page = Page.get("a", consistent_read=True)
    page.title = "second"
    with pytest.raises(HistoryWriteError, match=f"version {stored + 1} has more digits"):
        page.save()
    assert Page.get("a", consistent_read=True).title == "first"
    assert [v.version for v in Page.history("a", consistent_read=True)] == [1]


def test_range_key_item(backend):
    """An item with a range key keeps its history under both keys, as JSON."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": backend.table_name("thread"), "history_model": history, **backend.meta})
    Post: Any = type("Post", (HistoryMixin, Model), {
        "Meta": meta, "forum": UnicodeAttribute(hash_key=True), "n": NumberAttribute(range_key=True),
        "title": UnicodeAttribute(null=True), "revision": VersionAttribute()})
    backend.create(Post)
    Post("f", 7, title="x").save()
    assert [v.item for v in Post.history("f", 7, consistent_read=True)] == ['["f", 7]']


@pytest.mark.parametrize("missing, message", [
    ("history_model", "Meta.history_model"), ("version", "VersionAttribute"), ("deleted", "deleted = BooleanAttribute"),
])
def test_configuration_errors(backend, missing, message):
    """A model without a history model, without a VersionAttribute, or a history without deleted, is refused."""
    hist_attrs = {"item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True)}
    if missing != "deleted":
        hist_attrs["deleted"] = BooleanAttribute(default=False)
    history = type("H", (Model,), {"Meta": type("Meta", (), {"table_name": "h", **backend.meta}), **hist_attrs})
    meta = {"table_name": "p", **backend.meta}
    if missing != "history_model":
        meta["history_model"] = history
    attrs: Dict[str, Any] = {"url": UnicodeAttribute(hash_key=True)}
    if missing != "version":
        attrs["revision"] = VersionAttribute()
    with pytest.raises(ConfigurationError, match=message):
        type("Page", (HistoryMixin, Model), {"Meta": type("Meta", (), meta), **attrs})


def test_version_attribute_named_version_is_refused(backend):
    """A VersionAttribute named ``version`` would hide instance.version(n): refused, naming attr_name as the fix."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": "p", "history_model": history, **backend.meta})
    with pytest.raises(ConfigurationError, match="attr_name"):
        type("Page", (HistoryMixin, Model), {"Meta": meta, "url": UnicodeAttribute(hash_key=True),
                                                         "version": VersionAttribute()})


def test_update_is_refused(backend):
    """update() is refused (it would raise the version without a history entry), naming save() as the fix."""
    Page, _ = models(backend)
    page = Page("a")
    page.save()
    with pytest.raises(HistoryWriteError, match="call save"):
        page.update(actions=[Page.title.set("x")])
    assert [v.version for v in page.versions(consistent_read=True)] == [1]


def test_user_transaction_is_refused(backend):
    """A user's TransactWrite.save() of a history item is refused: it would skip the history."""
    Page, _ = models(backend)
    with pytest.raises(HistoryWriteError, match="TransactWrite.save"), \
            TransactWrite(connection=Page._get_connection().connection) as tx:
        tx.save(Page("a"))
    assert Page.count("a", consistent_read=True) == 0


def test_batch_write_is_refused(backend):
    """batch_write() is refused: a batch cannot carry the version condition or the history put."""
    Page, _ = models(backend)
    with pytest.raises(HistoryWriteError, match="one by one"):
        Page.batch_write()


def test_counter_mixin_is_refused(backend):
    """HistoryMixin and CounterMixin together are refused with a message naming both."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": "p", "history_model": history, **backend.meta})
    with pytest.raises(ConfigurationError, match="CounterMixin"):
        type("Page", (HistoryMixin, CounterMixin, Model), {
            "Meta": meta, "url": UnicodeAttribute(hash_key=True), "n": CounterAttribute(),
            "revision": VersionAttribute()})


def test_iam(backend):
    """The IAM helper grants PutItem on the history table and Put/Delete on the item's table."""
    Page, History = models(backend)
    actions = required_actions(Page)
    assert actions[History.Meta.table_name] == {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:Query"}
    assert {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:GetItem"} <= actions[Page.Meta.table_name]


@pytest.mark.engine
def test_eight_processes_save_the_same_items(tmp_path, local):
    """8 OS processes each saving the same 5 items 40 times: every item's history is exactly 1..321, each
    version holding the state its writer sent, and the item at version 321."""
    workers, saves, keys = 8, 40, [f"doc{n}" for n in range(5)]
    page_table, history_table = local.table_name("doc"), local.table_name("doc-history")
    Doc, History = build_models(page_table, history_table, local.meta)
    local.create(History)
    local.create(Doc)
    for key in keys:
        Doc(key, title="created").save()
    go, outs, procs = tmp_path / "go", [], []
    for worker in range(workers):
        out = tmp_path / f"worker-{worker}.log"
        outs.append(out)
        conf = {"page_table": page_table, "history_table": history_table, "meta": local.meta, "worker": worker,
                "out": str(out), "go": str(go), "items": keys, "saves": saves}
        procs.append(subprocess.Popen([sys.executable, "-m", "tests.history_worker", json.dumps(conf)], cwd=ROOT))
    deadline = time.monotonic() + 60
    while not all(o.exists() and o.read_text().startswith("ready") for o in outs):
        assert time.monotonic() < deadline, "workers did not start"
        assert all(p.poll() is None for p in procs), "a worker died while starting"
        time.sleep(0.05)
    go.touch()
    assert [p.wait(timeout=900) for p in procs] == [0] * workers
    reported = [line.split() for o in outs for line in o.read_text().splitlines() if line.startswith("ok")]
    last = 1 + workers * saves
    for key in keys:
        sent = {int(v): title for _, k, v, title in reported if k == key}
        assert len(sent) == workers * saves, "two saves reported the same version"
        stored = {v.version: v.title for v in History.query(key, consistent_read=True)}
        assert sorted(stored) == list(range(1, last + 1))
        assert stored == {1: "created", **sent}
        assert Doc.get(key, consistent_read=True).revision == last


def test_resent_transaction_is_idempotent(backend):
    """A save whose transaction was applied but whose answer was lost is resent with the same token: it succeeds,
    and writes one version."""
    Page, _ = models(backend)
    page = Page("a", title="x")
    page.save()
    fault = Faults(Page)
    try:
        fault.inject("TransactWriteItems", "drop-after-commit")
        page.title = "y"
        page.save()
    finally:
        fault.remove()
    tokens = [token for op, token in fault.sent if op == "TransactWriteItems"]
    assert len(tokens) == 2 and tokens[0] == tokens[1]
    assert page.revision == 2
    assert [(v.version, v.title) for v in page.versions(consistent_read=True)] == [(2, "y"), (1, "x")]


class Conflicts:
    """Answer the next ``times`` TransactWriteItems of ``model``'s client as DynamoDB does when a concurrent
    transaction holds the item (cancelled, reason TransactionConflict); record the token of each one sent."""

    def __init__(self, model: Any, times: int, backend: Any) -> None:
        if backend.name == "moto":
            pytest.skip("moto applies the request even when a before-send hook answers in its place")
        self.left = times
        self.tokens: List[str] = []
        self.client = model._get_connection().connection.client
        self.client.meta.events.register_first("before-send.dynamodb", self.hook)

    def remove(self) -> None:
        self.client.meta.events.unregister("before-send.dynamodb", self.hook)

    def hook(self, request: Any, **_: Any) -> Optional[AWSResponse]:
        target = request.headers["X-Amz-Target"]
        if not (target.decode() if isinstance(target, bytes) else target).endswith("TransactWriteItems"):
            return None
        self.tokens.append(json.loads(request.body)["ClientRequestToken"])
        if self.left == 0:
            return None
        self.left -= 1
        payload = json.dumps({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                       "[TransactionConflict, None]",
            "CancellationReasons": [{"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"},
                                    {"Code": "None"}]}).encode()
        return AWSResponse(request.url, 400, {"x-amzn-RequestId": "conflict"}, _Body(payload))


def test_transaction_conflict_is_sent_again_with_a_new_token(backend):
    """A save cancelled twice because a concurrent transaction held the item is sent again, each attempt with a
    token of its own, and records its one version."""
    Page, _ = models(backend)
    page = Page("a", title="x")
    page.save()
    conflicts = Conflicts(Page, 2, backend)
    try:
        page.title = "y"
        page.save()
    finally:
        conflicts.remove()
    assert len(conflicts.tokens) == 3 and len(set(conflicts.tokens)) == 3
    assert page.revision == 2
    assert [(v.version, v.title) for v in page.versions(consistent_read=True)] == [(2, "y"), (1, "x")]


def test_transaction_conflict_stops_within_its_budget(backend, monkeypatch):
    """A delete whose transaction keeps meeting a concurrent one stops when history.RETRIES is spent, with a
    HistoryWriteError naming the version; nothing is deleted."""
    monkeypatch.setattr(history, "RETRIES", dataclasses.replace(history.RETRIES, attempts=2, seconds=None))
    Page, _ = models(backend)
    page = Page("a", title="x")
    page.save()
    conflicts = Conflicts(Page, 10, backend)
    try:
        with pytest.raises(HistoryWriteError, match="writing version 2 failed") as raised:
            page.delete()
    finally:
        conflicts.remove()
    assert not isinstance(raised.value, VersionConflictError)
    assert len(conflicts.tokens) == 3
    assert page.revision == 1 and Page.get("a", consistent_read=True).revision == 1


@pytest.mark.modes("fast", "block")
def test_transaction_conflict_keeps_the_new_id(make_model, backend):
    """A new auto-increment item whose transaction met a concurrent one is sent again with the ID it was
    given: no second value is spent, and its version 1 is stored under that ID."""
    history_table = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), title=UnicodeAttribute(null=True), revision=VersionAttribute(),
                     history_model=history_table)
    conflicts = Conflicts(Doc, 1, backend)
    try:
        doc = Doc(title="a")
        doc.save()
    finally:
        conflicts.remove()
    assert len(conflicts.tokens) == 2 and doc.id == 1
    assert [(v.item, v.version) for v in Doc.history(1, consistent_read=True)] == [("1", 1)]
    Doc(title="b").save()
    assert Doc.get(2, consistent_read=True).title == "b"


@pytest.mark.modes("fast")
def test_copy_saved_as_new_item_is_version_one(make_model, backend):
    """A copy of a stored item (its ID set back to None) is saved as a new item at version 1, and its history
    starts at version 1, not at the version of the item it was copied from."""
    history_table = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), title=UnicodeAttribute(null=True), revision=VersionAttribute(),
                     history_model=history_table)
    doc = Doc(title="a")
    doc.save()
    doc.save()
    copy = Doc.get(doc.id, consistent_read=True)
    copy.id = None
    copy.save()
    assert (copy.id, copy.revision) == (2, 1)
    assert Doc.get(2, consistent_read=True).revision == 1
    assert [v.version for v in Doc.history(2, consistent_read=True)] == [1]


def _ranged_page(backend: Any, range_attr: Any) -> Any:
    history = plain_history(backend)
    m = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history, **backend.meta})
    Page: Any = type("Page", (HistoryMixin, Model), {
        "Meta": m, "site": UnicodeAttribute(hash_key=True), "n": range_attr,
        "title": UnicodeAttribute(null=True), "revision": VersionAttribute()})
    backend.create(Page)
    return Page, history


def test_history_after_counter_mixin_order_refused_or_recorded():
    """class Doc(AutoIncrementMixin, HistoryMixin, Model) with a str key is refused too."""
    meta = type("Meta", (), {"table_name": "doc"})
    with pytest.raises(ConfigurationError):
        type("Doc", (AutoIncrementMixin, HistoryMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "revision": VersionAttribute()})


@pytest.mark.parametrize("block", [None, 3])
def test_history_auto_save_all_records_version_one(backend, block):
    """HistoryMixin first, save_all of new items (fast mode, blocks): each gets version 1 in the history."""
    Doc, history = auto_history_doc(backend, autoinc_gapless=False, **({"autoinc_block": block} if block else {}))
    docs = [Doc(title="a"), Doc(title="b")]
    try:
        Doc.save_all(docs)
    except AutoIncrementError:
        return  # refused outright: nothing written without history
    assert sorted((h.item, h.version) for h in history.scan(consistent_read=True)) == [("1", 1), ("2", 1)]


def test_pynamodb_batch_write_on_auto_history_model_is_refused(backend):
    """PynamoDB's BatchWrite(Doc) of an auto-ID history model cannot overwrite without a version."""
    Doc, history = auto_history_doc(backend, autoinc_gapless=False)
    d = Doc(title="one")
    d.save()
    d.title = "two"
    with pytest.raises((HistoryWriteError, AutoIncrementError)), BatchWrite(Doc) as batch:
        batch.save(d)
    assert Doc.get(1, consistent_read=True).title == "one"


def test_history_new_instance_with_explicit_id_over_unversioned_item(backend):
    """A new explicit-ID instance of an auto-ID history model over an item stored without version is refused."""
    Doc, history = auto_history_doc(backend, autoinc_gapless=False)
    plain: Any = type("Plain", (Model,), {"Meta": Doc.Meta, "id": NumberAttribute(hash_key=True),
                                          "title": UnicodeAttribute(null=True)})
    plain(id=5, title="before").save()
    with pytest.raises((VersionConflictError, ItemExistsError)):
        Doc(id=5, title="new").save()
    assert Doc.get(5, consistent_read=True).title == "before"


def test_history_float_and_int_number_keys_share_history(backend):
    """A numeric-key history model: id=7.0 then the item read back as 7: one history under one key."""
    history = plain_history(backend)
    m = type("Meta", (), {"table_name": backend.table_name("acct"), "history_model": history, **backend.meta})
    Acct: Any = type("Acct", (HistoryMixin, Model), {
        "Meta": m, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(Acct)
    Acct(id=7.0, title="a").save()
    a = Acct.get(7, consistent_read=True)
    a.title = "b"
    a.save()
    Acct(id=8.50, title="x").save()
    b = Acct.get(8.5, consistent_read=True)
    b.save()
    assert sorted({h.item for h in history.scan(consistent_read=True)}) == ["7", "8.5"]


def test_history_auto_id_collision_is_item_exists(backend):
    """History + auto ID, the counter behind stored items: ItemExistsError, not a version conflict."""
    Doc, _ = auto_history_doc(backend, autoinc_gapless=False)
    Doc(id=1, title="explicit").save()
    Doc(id=2, title="explicit").save()
    with pytest.raises(ItemExistsError):
        Doc(title="new").save()
    with pytest.raises(ItemExistsError):
        Doc(title="new").save(merge=lambda mine, theirs: None)
    assert Doc.get(1, consistent_read=True).title == "explicit"


def test_history_new_instance_does_not_overwrite_an_unversioned_ranged_item(backend):
    """With a range key, a new instance over an item stored without a version is refused; the item stays."""
    Page, _ = _ranged_page(backend, NumberAttribute(range_key=True))
    plain: Any = type("Plain", (Model,), {"Meta": Page.Meta, "site": UnicodeAttribute(hash_key=True),
                                          "n": NumberAttribute(range_key=True), "title": UnicodeAttribute(null=True)})
    plain("s", 1, title="before").save()
    plain("s", 2, title="other").save()
    with pytest.raises((VersionConflictError, ItemExistsError)):
        Page("s", 1, title="new").save()
    assert Page.get("s", 1, consistent_read=True).title == "before"
    Page("s", 3, title="fresh").save()  # a key not stored is saved
    assert Page.get("s", 3, consistent_read=True).revision == 1


def test_history_float_and_int_range_keys_share_history(backend):
    """A numeric range key: (s, 7.0) then the item read back as (s, 7): one history key."""
    Page, history = _ranged_page(backend, NumberAttribute(range_key=True))
    Page("s", 7.0, title="a").save()
    p = Page.get("s", 7, consistent_read=True)
    p.title = "b"
    p.save()
    assert len({h.item for h in history.scan(consistent_read=True)}) == 1


def page_models(backend: Any, key: Any = None) -> Tuple[Any, Any]:
    """A history model and ``Page`` (HistoryMixin, a VersionAttribute) keyed by ``key`` (default: a string url)."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history, **backend.meta})
    page = type("Page", (HistoryMixin, Model), {
        "Meta": meta, "url": key or UnicodeAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(page)
    return page, history


def _put_unversioned(Page: Any, url: str, title: str) -> None:
    Page._get_connection().put_item(url, attributes={"title": {"S": title}})


def _read_back(number: Any) -> Any:
    """``number`` as PynamoDB reads it back from DynamoDB, which stores the normalised decimal."""
    text = format(Decimal(NumberAttribute().serialize(number)).normalize(Context(prec=38)), "f")
    return NumberAttribute().deserialize(text)


def test_history_after_auto_increment_is_refused_when_the_class_is_created():
    """A class listing HistoryMixin after AutoIncrementMixin is refused as it is created, naming the right order."""
    meta = type("Meta", (), {"table_name": "doc"})
    with pytest.raises(ConfigurationError, match=r"class Doc\(HistoryMixin, AutoIncrementMixin, Model\)"):
        type("Doc", (AutoIncrementMixin, HistoryMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "revision": VersionAttribute()})


@pytest.mark.modes("fast")
def test_history_after_auto_increment_is_refused_before_anything_is_written(backend, requests):
    """A Doc(AutoIncrementMixin, HistoryMixin, Model) is refused when it is created, with no request sent."""
    history = history_model(backend)
    meta = type("Meta", (), {"table_name": backend.table_name("doc"), "history_model": history, **backend.meta})
    requests.clear()
    with pytest.raises(ConfigurationError, match="put HistoryMixin first"):
        type("Doc", (AutoIncrementMixin, HistoryMixin, Model), {
            "Meta": meta, "id": NumberAttribute(hash_key=True), "revision": VersionAttribute()})
    assert requests == []


def test_batch_write_made_directly_cannot_put(backend):
    """BatchWrite(Page).save() is refused at commit, naming save(); the stored item keeps its version."""
    Page, _ = page_models(backend)
    page = Page("a", title="one")
    page.save()
    page.title = "two"
    with pytest.raises(HistoryWriteError, match=r"use its save\(\)"), BatchWrite(Page) as batch:
        batch.save(page)
    stored = Page.get("a", consistent_read=True)
    assert (stored.title, stored.revision) == ("one", 1)


def test_batch_write_made_directly_cannot_delete(backend):
    """BatchWrite(Page).delete() is refused at commit, naming delete(); the item stays, with no tombstone needed."""
    Page, _ = page_models(backend)
    page = Page("a")
    page.save()
    with pytest.raises(HistoryWriteError, match=r"delete\(\)"), BatchWrite(Page) as batch:
        batch.delete(page)
    assert Page.count("a", consistent_read=True) == 1
    assert [v.version for v in page.versions(consistent_read=True)] == [1]


def test_new_instance_does_not_overwrite_an_unversioned_item(backend):
    """A new instance saved over an item stored before HistoryMixin (no version) is refused; the item stays."""
    Page, _ = page_models(backend)
    _put_unversioned(Page, "a", "before")
    with pytest.raises(VersionConflictError):
        Page("a", title="new").save()
    assert Page.get("a", consistent_read=True).title == "before"
    assert list(Page("a").versions(consistent_read=True)) == []


def test_read_unversioned_item_is_saved_as_version_one(backend):
    """An item stored before HistoryMixin, read and saved, becomes version 1 with its history."""
    Page, _ = page_models(backend)
    _put_unversioned(Page, "a", "before")
    page = Page.get("a", consistent_read=True)
    assert page.revision is None
    page.title = "after"
    page.save()
    assert page.revision == 1
    assert [(v.version, v.title) for v in page.versions(consistent_read=True)] == [(1, "after")]


def test_merge_adopts_an_unversioned_item(backend):
    """With merge=, a new instance over an unversioned item merges with it and saves version 1."""
    Page, _ = page_models(backend)
    _put_unversioned(Page, "a", "before")
    page = Page("a", title="mine")
    page.save(merge=lambda me, stored: setattr(me, "title", f"{stored.title}+{me.title}"))
    stored = Page.get("a", consistent_read=True)
    assert (stored.title, stored.revision) == ("before+mine", 1)


def test_float_and_int_keys_share_one_history(backend):
    """Account(id=7.0) and the same item read back as id=7 write one history, under "7"."""
    Account, history = page_models(backend, key=NumberAttribute(hash_key=True))
    Account(7.0, title="a").save()
    again = Account.get(7, consistent_read=True)
    again.title = "b"
    again.save()
    assert [(v.item, v.version) for v in Account.history(7.0, consistent_read=True)] == [("7", 2), ("7", 1)]
    assert Account(Decimal("7.00")).history_key() == "7"


@pytest.mark.parametrize("value, text", [(7.0, "7"), (1e20, "100000000000000000000"), (Decimal("2.50"), "2.5"),
                                         (-0.0, "0"), (10 ** 20, "100000000000000000000")])
def test_item_key_normalises_numbers_as_dynamodb_does(value, text):
    """A number key is written in DynamoDB's normal form, alone and in a [hash, range] key."""
    assert item_key(value) == text
    assert item_key("h", value) == f'["h", {text}]'


@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                 st.decimals(allow_nan=False, allow_infinity=False, places=4).map(float)))
@example(10 ** 38 - 1)
@example(10 ** 38 + 10)
def test_item_key_survives_a_round_trip(number):
    """Any number key DynamoDB can store has the same history key before it is stored and as it is read back
    (DynamoDB refuses a number of more than 38 significant digits, so such a key is never read back)."""
    assume(len(Decimal(NumberAttribute().serialize(number)).normalize().as_tuple().digits) <= 38)
    assert item_key(number) == item_key(_read_back(number))
    assert item_key(number, "r") == item_key(_read_back(number), "r")


@given(st.integers(min_value=-10 ** 30, max_value=10 ** 30), st.integers(min_value=0, max_value=6))
def test_item_key_ignores_trailing_zeros(number, zeros):
    """An integer written with trailing decimal zeros (7.000) keys the same history as the integer."""
    padded = Decimal(f"{number}.{'0' * zeros}" if zeros else str(number))
    assert item_key(padded) == item_key(number) == str(number)


@pytest.mark.modes("fast")
def test_auto_id_collision_is_item_exists(make_model, backend):
    """A new history item whose auto ID is taken raises ItemExistsError advising setval, not a version conflict."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), title=UnicodeAttribute(null=True), revision=VersionAttribute(),
                     history_model=history)
    taken = Doc(id=1, title="explicit")
    taken.save()
    with pytest.raises(ItemExistsError, match=r"setval\('doc-") as raised:
        Doc(title="new").save()
    assert not isinstance(raised.value, VersionConflictError)
    assert Doc.get(1, consistent_read=True).title == "explicit"


@pytest.mark.modes("fast")
def test_auto_id_collision_with_merge_reads_nothing(make_model, backend, requests):
    """With merge=, an auto ID collision raises ItemExistsError without calling merge or reading get(None)."""
    history = history_model(backend)
    Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=history)
    Doc(id=1).save()
    calls = []
    requests.clear()
    with pytest.raises(ItemExistsError):
        Doc().save(merge=lambda me, stored: calls.append(stored))
    assert calls == [] and "GetItem" not in [op for op, _ in requests]
