"""Fourth review round: defects found where features meet, each checked through the public API only."""

from __future__ import annotations

import os
import signal
import threading
from datetime import date
from typing import Any, Dict, List

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import AutoIncrementMixin, CounterAttribute, CounterMixin, HistoryMixin, NextId, TransactWrite
from pynamodb_autoinc.exceptions import ConfigurationError, InvalidIdError
from pynamodb_autoinc.periods import clock, increment_in_period, label
from tests.hypothesis_setup import budget


class _OwnCounter(NextId):
    class Meta:
        table_name = "own_sequences"
        region = "us-east-1"


def _query_model(**meta: Any) -> Any:
    """A query-strategy model (numbers within each partition) with extra ``Meta`` options; nothing is sent."""
    meta_cls = type("Meta", (), {"table_name": "lines", "region": "us-east-1", "autoinc_strategy": "query",
                                 "autoinc_attribute": "line", **meta})
    return type("Line", (AutoIncrementMixin, Model), {
        "Meta": meta_cls, "order": UnicodeAttribute(hash_key=True), "line": NumberAttribute(range_key=True)})


#: Options the query strategy never reads, each with a value other than its default.
IGNORED = {
    "autoinc_key": st.text(min_size=1, max_size=12),
    "autoinc_counter": st.just(_OwnCounter),
    "autoinc_gapless": st.just(True),
}

#: Options the query strategy does read, each with values it accepts.
READ = {
    "autoinc_step": st.sampled_from([1, 2, -1]),
    "autoinc_retries": st.sampled_from([None, 0, 5]),
    "autoinc_timeout": st.sampled_from([None, 1, 10.0]),
    "autoinc_backoff": st.sampled_from([0, 0.01]),
    "autoinc_single_region_writes": st.booleans(),
}


@budget("moto", moto=100, local=100)  # nothing is sent: the backend does not matter
@given(ignored=st.dictionaries(st.sampled_from(sorted(IGNORED)), st.none(), min_size=1).flatmap(
    lambda names: st.fixed_dictionaries({name: IGNORED[name] for name in names})),
    read=st.fixed_dictionaries({}, optional=READ))
def test_query_strategy_refuses_options_it_ignores(ignored: Dict[str, Any], read: Dict[str, Any]) -> None:
    """A query-strategy model that sets an option the strategy never reads (a counter key, a counter table,
    gapless mode, which it always is) is refused when the class is created, with a ConfigurationError naming
    one of those options and saying it has no effect, whatever options it reads are set beside them."""
    with pytest.raises(ConfigurationError, match="has no effect with the query strategy") as caught:
        _query_model(**ignored, **read)
    assert any(f"Meta.{name} " in str(caught.value) for name in ignored), str(caught.value)


@budget("moto", moto=50, local=50)
@given(read=st.fixed_dictionaries({}, optional=READ))
def test_query_strategy_accepts_the_defaults_of_the_options_it_ignores(read: Dict[str, Any]) -> None:
    """A query-strategy model may still spell out the defaults of the options it ignores (no counter key,
    NextId, not gapless): they say nothing the strategy contradicts, so the class is created."""
    model = _query_model(autoinc_key=None, autoinc_counter=NextId, autoinc_gapless=False, **read)
    assert model.autoinc_options().strategy == "query"


@pytest.mark.modes("fast", "block", "gapless")
@pytest.mark.parametrize("value", [7.5, True, "7"])
def test_batch_write_refuses_an_explicit_id_that_is_not_an_integer(make_model, mode, value):
    """``batch_write()`` refuses an ID set by hand that is not an integer with InvalidIdError, as ``save()``
    and ``save_all()`` do, before anything is sent; it does not store 7.5 (or fail later in DynamoDB)."""
    User = make_model("User")
    with pytest.raises(InvalidIdError, match="is not an integer"), User.batch_write() as batch:
        batch.save(User(id=value))
    assert list(User.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "block", "gapless")
def test_batch_write_of_an_explicit_id_moves_a_tracking_counter(make_model, mode):
    """With ``Meta.autoinc_track_explicit``, an item batch-written with an ID set by hand moves the counter
    past it, as on the other write paths, so the next new instance gets the value after it instead of
    failing on its key."""
    User = make_model("User", autoinc_track_explicit=True)
    with User.batch_write() as batch:
        batch.save(User(id=5))
    user = User()
    user.save()
    assert user.id == 6


def _count(model: Any, *args: Any, **kwargs: Any) -> int:
    return increment_in_period(model, *args, count_attribute="request_count", period_attribute="active_period",
                               **kwargs)


@pytest.mark.parametrize("now", ["2026-11-24", date(2026, 11, 24), 1764000000])
def test_increment_in_period_refuses_a_time_that_is_not_a_datetime(api_key, now):
    """``increment_in_period(now=...)`` given something other than a datetime (a string, a date, a timestamp)
    raises ConfigurationError naming ``now`` and what to pass, not an AttributeError; nothing is counted."""
    with pytest.raises(ConfigurationError, match="now=.*datetime"):
        _count(api_key, "k1", now=now)
    assert api_key.get("k1", consistent_read=True).request_count is None


@pytest.mark.parametrize("now", ["2026-11-24", date(2026, 11, 24)])
def test_period_label_and_frozen_clock_refuse_a_time_that_is_not_a_datetime(now):
    """``periods.label()`` and ``periods.clock.frozen()`` given something other than a datetime raise
    ConfigurationError naming the value, not an AttributeError."""
    with pytest.raises(ConfigurationError, match="datetime"):
        label("month", now)
    with pytest.raises(ConfigurationError, match="datetime"), clock.frozen(now):
        pass  # pragma: no cover - refused on entry


@pytest.mark.parametrize("period", [["month"], {"month": 1}, 7])
def test_unknown_period_of_any_type_is_named(period):
    """A period that is not a period name, whatever its type (a list is unhashable), raises ConfigurationError
    naming the known periods, not a TypeError."""
    with pytest.raises(ConfigurationError, match="unknown period"):
        label(period)


def test_increment_in_period_refuses_a_missing_hash_key(api_key):
    """``increment_in_period`` given None for the item's hash key raises ConfigurationError naming it (not an
    IndexError from inside the library); nothing is sent."""
    with pytest.raises(ConfigurationError, match="hash_key"):
        _count(api_key, None)


def test_increment_in_period_refuses_a_range_key_the_model_does_not_have(api_key):
    """``increment_in_period`` given a range key for a model without one raises ConfigurationError saying the
    model has no range key (not an AttributeError); nothing is counted."""
    with pytest.raises(ConfigurationError, match="range key"):
        _count(api_key, "k1", "extra")
    assert api_key.get("k1", consistent_read=True).request_count is None


def test_increment_in_period_refuses_what_is_not_a_model():
    """``increment_in_period`` given something other than a PynamoDB model class raises ConfigurationError
    saying what to pass, not an AttributeError."""
    with pytest.raises(ConfigurationError, match="model class"):
        _count("ApiKey", "k1")


def test_increment_in_period_refuses_a_missing_range_key(backend):
    """``increment_in_period`` of a model with a range key, given the hash key alone, raises ConfigurationError
    naming the range key before anything is sent (not DynamoDB's bare ValidationException)."""
    meta = type("Meta", (), {"table_name": backend.table_name("usage"), **backend.meta})
    model: Any = type("Usage", (Model,), {
        "Meta": meta,
        "key": UnicodeAttribute(hash_key=True),
        "api": UnicodeAttribute(range_key=True),
        "request_count": NumberAttribute(null=True),
        "active_period": UnicodeAttribute(null=True),
    })
    backend.create(model)
    model(key="k1", api="search").save()
    with pytest.raises(ConfigurationError, match="range key \\(api\\)"):
        _count(model, "k1")
    assert _count(model, "k1", "search") == 1


def _history(backend: Any) -> Any:
    meta = type("Meta", (), {"table_name": backend.table_name("doc-history"), **backend.meta})
    model = type("DocVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(model)
    return model


@pytest.mark.modes("fast", "block")
@pytest.mark.parametrize("extension", ["history", "counters"])
def test_save_all_of_an_extension_refuses_another_models_instances(make_model, backend, mode, extension):
    """``save_all()`` of a HistoryMixin or CounterMixin model refuses an instance of another model before
    anything is written, as ``AutoIncrementMixin.save_all()`` does, instead of saving it through that
    instance's own ``save()`` (the call named one model and wrote another)."""
    if extension == "history":
        Doc = make_model("Doc", bases=(HistoryMixin,), revision=VersionAttribute(), history_model=_history(backend),
                         title=UnicodeAttribute(null=True))
    else:
        Doc = make_model("Doc", bases=(CounterMixin,), views=CounterAttribute(), title=UnicodeAttribute(null=True))
    Other = make_model("Other")
    with pytest.raises(TypeError, match="save_all\\(\\) of Doc was given a Other"):
        Doc.save_all([Doc(title="mine"), Other(id=5)])
    assert list(Other.scan(consistent_read=True)) == []
    assert list(Doc.scan(consistent_read=True)) == []


@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("path", ["save", "save_all", "transaction", "batch"])
def test_string_id_set_by_hand_to_a_number_is_refused_on_every_path(make_model, mode, path):
    """An ID stored as a string (a UnicodeAttribute) set by hand to something that is not a string (the int 5)
    is refused with InvalidIdError naming the fix on every write path, before anything is sent, as a
    NumberAttribute ID set to 2.5 is; not PynamoDB's PutError or a cancelled transaction from DynamoDB."""
    Code = make_model("Code", id=UnicodeAttribute(hash_key=True), autoinc_gapless=mode == "gapless")
    code = Code(id=5)
    with pytest.raises(InvalidIdError, match="Code.id = 5 is not a string"):
        if path == "save":
            code.save()
        elif path == "save_all":
            Code.save_all([code])
        elif path == "transaction":
            with TransactWrite(connection=Code._get_connection().connection) as tx:
                tx.save(code)
        else:
            with Code.batch_write() as batch:
                batch.save(code)
    assert list(Code.scan(consistent_read=True)) == []


@pytest.mark.parametrize("fmt", ["__autoinc__#{value}", "__autoinc__#{period}-{value:04d}"])
def test_in_table_counter_refuses_a_format_that_makes_ids_look_like_counter_items(fmt):
    """``Meta.autoinc_counter_in_table`` hides the items whose hash key starts with ``__autoinc__#`` (its counter
    items) from ``scan()``; a ``Meta.autoinc_format`` that makes every ID of the hash key start with it would
    hide every item, so the class is refused when it is created, naming the format and the prefix."""
    meta = type("Meta", (), {"table_name": "codes", "region": "us-east-1", "autoinc_counter_in_table": True,
                             "autoinc_format": fmt, "autoinc_period": "year" if "period" in fmt else None})
    with pytest.raises(ConfigurationError, match="autoinc_format.*__autoinc__#"):
        type("Code", (AutoIncrementMixin, Model), {"Meta": meta, "id": UnicodeAttribute(hash_key=True)})


def test_in_table_counter_accepts_a_format_outside_the_reserved_prefix():
    """A format that does not start with the reserved prefix is still accepted with an in-table counter (the
    refusal above is about the prefix, not about formats)."""
    meta = type("Meta", (), {"table_name": "codes", "region": "us-east-1", "autoinc_counter_in_table": True,
                             "autoinc_format": "__autoinc__{value}"})
    model: Any = type("Code", (AutoIncrementMixin, Model), {"Meta": meta, "id": UnicodeAttribute(hash_key=True)})
    assert model.autoinc_options().fmt == "__autoinc__{value}"


@pytest.mark.modes("gapless")
@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="needs POSIX signals")
def test_save_interrupted_while_queued_behind_a_group_leader_keeps_no_id(make_model):
    """A gapless save whose thread is interrupted (Ctrl-C: KeyboardInterrupt) while it waits in the group-commit
    queue behind another thread's transaction leaves that queue: its ID goes back to None, no later group
    stores it, and its value is not spent (the counter holds only the leader's)."""
    Item = make_model("Item", autoinc_gapless=True, name=UnicodeAttribute(null=True))
    Item(name="warm").save()  # the counter is known to this process: the next claims read nothing
    sending, release = threading.Event(), threading.Event()
    leader_id = threading.get_ident()

    def hold(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "TransactWriteItems" and threading.get_ident() == leader_id:
            sending.set()
            release.wait(10)

    first, second = Item(name="leader"), Item(name="queued")
    errors: List[BaseException] = []

    def lead() -> None:
        nonlocal leader_id
        leader_id = threading.get_ident()
        try:
            first.save()
        except BaseException as exc:  # noqa: BLE001 - checked below
            errors.append(exc)

    # Python raises KeyboardInterrupt on SIGINT only with its default handler, which it does not install in a
    # process started with SIGINT ignored (a background job of a shell script, as CI may run the suite)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with pre_dynamodb_send.connected_to(hold):
        leader = threading.Thread(target=lead)
        leader.start()
        assert sending.wait(10)
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                second.save()
        finally:
            timer.cancel()
            release.set()
            leader.join(10)
            signal.signal(signal.SIGINT, previous)
    assert errors == [] and first.id == 2
    assert second.id is None
    assert sorted(i.name for i in Item.scan(consistent_read=True)) == ["leader", "warm"]
    opts = Item.autoinc_options()
    assert opts.counter.currval(opts.key) == 2
