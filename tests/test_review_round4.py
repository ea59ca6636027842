"""Fourth review round: defects found where features meet, each checked through the public API only."""

from __future__ import annotations

from datetime import date
from typing import Any, Dict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, CounterAttribute, CounterMixin, HistoryMixin, NextId
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


@pytest.fixture
def api_key(backend):
    """An item counting requests per period: an API key with request_count and active_period."""
    meta = type("Meta", (), {"table_name": backend.table_name("apikeys"), **backend.meta})
    model: Any = type("ApiKey", (Model,), {
        "Meta": meta,
        "key": UnicodeAttribute(hash_key=True),
        "request_count": NumberAttribute(null=True),
        "active_period": UnicodeAttribute(null=True),
    })
    backend.create(model)
    model(key="k1").save()
    return model


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
