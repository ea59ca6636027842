"""The before_save and after_save signals."""

from __future__ import annotations

from typing import Any, List, Tuple

import pytest
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
    after_save,
    before_save,
)
from pynamodb_autoinc.exceptions import (
    ConditionFailedError,
    UnassignedIdError,
)
from tests.helpers import auto_model, doc_history


def test_before_save_is_sent_with_the_instance(make_model):
    """before_save carries the model class as sender, the instance and whether it is new."""
    User = make_model("User")
    calls: List[Any] = []

    def receiver(sender, **kwargs):
        calls.append((sender, kwargs["instance"], kwargs["is_new"], kwargs["operation"], kwargs["instance"].id))

    user = User()
    with before_save.connected_to(receiver, sender=User):
        user.save()
        user.save()
    assert calls == [(User, user, True, "save", None), (User, user, False, "save", 1)]


@pytest.mark.modes('fast', 'block', 'gapless')
def test_what_a_receiver_sets_is_stored(make_model):
    """A value set by a before_save receiver is written with the item."""
    User = make_model("User", created_by=UnicodeAttribute(null=True))

    def stamp(sender, instance, **_):
        instance.created_by = "receiver"

    with before_save.connected_to(stamp, sender=User):
        User().save()
    assert User.get(1).created_by == "receiver"


def test_receiver_for_one_model_ignores_others(make_model):
    """A receiver connected with sender=User does not run for another model."""
    User = make_model("User")
    Order = make_model("Order")
    seen: List[Any] = []
    with before_save.connected_to(lambda sender, **_: seen.append(sender), sender=User):
        Order().save()
        User().save()
    assert seen == [User]


def test_receiver_may_set_an_explicit_id(make_model):
    """User receivers run before the library's: an ID they set is kept and nothing is allocated."""
    User = make_model("User")

    def choose(sender, instance, **_):
        instance.id = 500

    with before_save.connected_to(choose, sender=User):
        user = User()
        user.save()
    assert user.id == 500
    opts = User.autoinc_options()
    assert opts.counter.currval(opts.key) is None


def test_failing_before_receiver_aborts_the_save(make_model):
    """A before_save receiver that raises stops the save before anything is written or allocated."""
    User = make_model("User")

    def refuse(sender, **_):
        raise RuntimeError("no")

    with before_save.connected_to(refuse, sender=User), pytest.raises(RuntimeError, match="no"):
        User().save()
    assert list(User.scan()) == []
    opts = User.autoinc_options()
    assert opts.counter.currval(opts.key) is None


@pytest.mark.modes('fast', 'block', 'gapless')
def test_after_save_follows_the_write(make_model):
    """after_save is sent once the item is stored, with the ID assigned."""
    User = make_model("User")
    stored: List[Any] = []

    def check(sender, instance, is_new, **_):
        stored.append((is_new, instance.id, User.get(instance.id).id))

    with after_save.connected_to(check, sender=User):
        User().save()
    assert stored == [(True, 1, 1)]


@pytest.mark.modes('fast', 'block', 'gapless')
def test_failing_after_receiver_does_not_fail_the_save(make_model, caplog):
    """An after_save receiver that raises is logged; the committed save still returns."""
    User = make_model("User")

    def broken(sender, **_):
        raise RuntimeError("after")

    user = User()
    with after_save.connected_to(broken, sender=User):
        user.save()
    assert User.get(1).id == user.id == 1
    assert "after_save receiver" in caplog.text


def test_muted_signal_refuses_to_store_without_id(make_model):
    """With before_save muted, no ID is assigned and the save is refused, nothing written."""
    User = make_model("User", name=UnicodeAttribute(null=True))
    with before_save.muted(), pytest.raises(UnassignedIdError, match="still None after before_save"):
        User(name="x").save()
    assert list(User.scan()) == []


def test_after_save_not_sent_when_the_write_fails(make_model):
    """A save that raises sends no after_save."""
    User = make_model("User")
    seen: List[Any] = []
    with after_save.connected_to(lambda sender, **kw: seen.append(kw), sender=User), \
            pytest.raises(ConditionFailedError):
        User().save(condition=User.id == 99)
    assert seen == []


@pytest.mark.modes()
def test_signal_receivers_may_serialize_a_history_item(backend):
    """A ``before_save`` or ``after_save`` receiver may call ``instance.serialize()`` on a HistoryMixin
    model's instance (to log it, or to publish it): the save goes through, in its one transaction with the
    version, and each receiver saw the item as it is written (the version it is saved as, after it)."""
    history_meta = type("Meta", (), {"table_name": backend.table_name("page-history"), **backend.meta})
    history: Any = type("PageVersion", (Model,), {
        "Meta": history_meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(history)
    meta = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history,
                             "autoinc_gapless": False, **backend.meta})
    Page = type("Page", (HistoryMixin, AutoIncrementMixin, Model), {
        "Meta": meta, "id": NumberAttribute(hash_key=True), "title": UnicodeAttribute(null=True),
        "revision": VersionAttribute()})
    backend.create(Page)
    backend.counter(model=Page)
    seen: List[Tuple[str, Any]] = []

    def before(sender: Any, instance: Any, **_: Any) -> None:
        if sender is Page and instance.id is not None:
            seen.append(("before", instance.serialize()["title"]))

    def after(sender: Any, instance: Any, **_: Any) -> None:
        if sender is Page:
            seen.append(("after", instance.serialize()["revision"]))

    with before_save.connected_to(before), after_save.connected_to(after):
        page = Page(title="one")
        page.save()
        page.title = "two"
        page.save()
    assert seen == [("after", {"N": "1"}), ("before", {"S": "two"}), ("after", {"N": "2"})]
    assert [v.title for v in history.query(page.history_key(), consistent_read=True)] == ["one", "two"]


@pytest.mark.modes()
def test_history_save_reports_operation_save_to_signal_receivers(backend):
    """``save()`` of a ``HistoryMixin`` auto-increment model is reported to ``before_save`` and ``after_save``
    receivers as ``operation="save"`` (what the signals document for ``Model.save()``), for a new item and for
    a later save of it, not as ``"transaction"``, which names ``TransactWrite.save()``."""
    Doc = auto_model(backend, "Doc", {"id": NumberAttribute(hash_key=True), "name": UnicodeAttribute(null=True),
                                  "revision": VersionAttribute()},
                 bases=(HistoryMixin, AutoIncrementMixin), history_model=doc_history(backend), autoinc_gapless=False)
    seen: List[Any] = []

    def before(sender: Any, instance: Any, is_new: bool, operation: str, **_: Any) -> None:
        seen.append(("before", is_new, operation))

    def after(sender: Any, instance: Any, is_new: bool, operation: str, **_: Any) -> None:
        seen.append(("after", is_new, operation))

    doc = Doc(name="draft")
    with before_save.connected_to(before, sender=Doc), after_save.connected_to(after, sender=Doc):
        doc.save()
        doc.name = "final"
        doc.save()
    assert seen == [("before", True, "save"), ("after", True, "save"),
                    ("before", False, "save"), ("after", False, "save")]
    assert doc.id == 1 and doc.revision == 2


def test_send_after_save_by_hand_is_deprecated_and_still_sends():
    """signals.send_after_save warns with a DeprecationWarning naming its replacement, and still sends after_save."""
    from pynamodb_autoinc import signals

    heard = []

    def receiver(sender, **kwargs):
        heard.append((sender, kwargs))

    with signals.after_save.connected_to(receiver, sender=int), pytest.warns(DeprecationWarning,
                                                                              match=r"after_save\.send"):
        signals.send_after_save(int, instance=None, is_new=True, operation="save")
    assert heard == [(int, {"instance": None, "is_new": True, "operation": "save"})]
