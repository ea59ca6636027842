"""Counting events per period (article 001): NextId.increment/current and increment_in_period."""

from __future__ import annotations

import threading
from datetime import date, datetime
from decimal import Decimal
from typing import Any, List

import pytest
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import PutError
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import HistoryMixin
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    CounterError,
    CounterValueError,
    HistoryWriteError,
    OutOfBoundsError,
)
from pynamodb_autoinc.periods import clock, increment_in_period, label


def test_labels_carry_the_year():
    """Period labels include the year and sort in time order."""
    at = datetime(2026, 1, 5, 12, 0)
    assert [label(p, at) for p in ("year", "month", "day")] == ["2026", "2026-01", "2026-01-05"]
    assert label("month", datetime(2026, 12, 31)) < label("month", datetime(2027, 1, 1))


def test_unknown_period_is_named():
    """An unknown period name is a ConfigurationError listing the known ones."""
    with pytest.raises(ConfigurationError, match="unknown period 'week'; use one of 'year', 'month', 'day'"):
        label("week")


def test_increment_counts_within_the_month(backend):
    """NextId.increment counts per month and starts again in the next one."""
    counter = backend.counter()
    with clock.frozen(datetime(2026, 11, 30, 23, 59)):
        assert [counter.increment("api-key-1") for _ in range(3)] == [1, 2, 3]
        assert counter.current("api-key-1", period="month") == 3
    with clock.frozen(datetime(2026, 12, 1, 0, 0)):
        assert counter.increment("api-key-1", by=5) == 5
        assert counter.current("api-key-1", period="month") == 5
    assert counter.current("api-key-1", period="month", now=datetime(2026, 11, 2)) == 3
    assert counter.current("api-key-2", period="month") is None


def test_increment_without_period_counts_forever(backend):
    """period=None keeps one count that never restarts."""
    counter = backend.counter()
    assert counter.increment("downloads", period=None, by=2) == 2
    assert counter.increment("downloads", period=None) == 3
    assert counter.current("downloads", period=None) == 3


def test_increment_names_a_corrupt_counter(backend):
    """Incrementing a counter that holds a string raises CounterValueError naming it."""
    counter = backend.counter()
    counter._get_connection().put_item("bad", attributes={"NextId": {"S": "x"}})
    with pytest.raises(CounterValueError, match="holds {'S': 'x'}"):
        counter.increment("bad", period=None)


def count(model: Any, now: datetime, key: str = "k1") -> int:
    return increment_in_period(model, key, count_attribute="request_count", period_attribute="active_period",
                               now=now)


def test_count_restarts_each_month(api_key, requests):
    """Within a month the count grows; the first request of a new month resets it to 1."""
    assert count(api_key, datetime(2026, 11, 3)) == 1
    assert count(api_key, datetime(2026, 11, 20)) == 2
    requests.clear()
    assert count(api_key, datetime(2026, 12, 1)) == 1
    assert [op for op, _ in requests] == ["UpdateItem", "UpdateItem"]
    item = api_key.get("k1")
    assert (item.request_count, item.active_period) == (1, "2026-12")


def test_january_of_the_next_year_resets(api_key):
    """The same month number a year later is a new period (the article's month 0-11 bug)."""
    assert count(api_key, datetime(2026, 1, 10)) == 1
    assert count(api_key, datetime(2026, 1, 11)) == 2
    assert count(api_key, datetime(2027, 1, 10)) == 1


def test_one_request_within_a_period(api_key, requests):
    """Counting within the current period costs one conditional update."""
    count(api_key, datetime(2026, 11, 3))
    requests.clear()
    count(api_key, datetime(2026, 11, 4))
    assert [op for op, _ in requests] == ["UpdateItem"]


def test_racing_reset_loses_no_event(api_key, requests):
    """When another process resets first, our reset fails and our event is counted in the new period."""
    count(api_key, datetime(2026, 11, 3))
    ours: List[str] = []
    busy: List[bool] = []

    def rival(_: Any, operation_name: str, **__: Any) -> None:
        if busy:
            return
        ours.append(operation_name)
        if ours == ["UpdateItem", "UpdateItem"]:
            # our increment failed; before our reset arrives another process resets and counts (a thread:
            # a writer of its own, as another process is)
            busy.append(True)
            theirs: List[int] = []
            other = threading.Thread(target=lambda: theirs.append(count(api_key, datetime(2026, 12, 1))))
            other.start()
            other.join()
            assert theirs == [1]
            busy.clear()

    with pre_dynamodb_send.connected_to(rival):
        assert count(api_key, datetime(2026, 12, 1)) == 2
    # increment (failed), reset (lost to the rival), a read to see why, increment
    assert ours == ["UpdateItem", "UpdateItem", "GetItem", "UpdateItem"]
    assert api_key.get("k1").request_count == 2


def test_missing_item_is_not_created(api_key):
    """Counting on an item that does not exist raises DoesNotExist and writes nothing."""
    with pytest.raises(api_key.DoesNotExist, match="does not exist"):
        count(api_key, datetime(2026, 11, 3), key="nobody")
    assert [k.key for k in api_key.scan()] == ["k1"]


def test_clock_behind_the_stored_period(api_key):
    """A stored period newer than the caller's clock is reported, not overwritten."""
    count(api_key, datetime(2026, 12, 1))
    with pytest.raises(CounterError, match="holds '2026-12', which is not an older period than '2026-11'"):
        count(api_key, datetime(2026, 11, 30))
    assert api_key.get("k1").request_count == 1


@pytest.mark.modes("fast")
@pytest.mark.parametrize("by", [1.5, 2.0, True, "1"])
def test_next_id_increment_refuses_every_non_int(backend, by):
    """NextId.increment(by=...) refuses floats (even 2.0), bools and strings, writing nothing."""
    counter = backend.counter()
    with pytest.raises(CounterValueError):
        counter.increment("hits", by=by)
    assert counter.increment("hits") == 1


@pytest.mark.modes()
@pytest.mark.parametrize("count, period", [("missing", "active"), ("requests", "missing"), ("active", "requests"),
                                           ("key", "active")])
def test_increment_in_period_names_attributes_that_cannot_count(backend, count, period):
    """``periods.increment_in_period`` given a ``count_attribute`` that is not a NumberAttribute outside the
    key, or a ``period_attribute`` that is not a UnicodeAttribute outside the key, raises the library's
    ``ConfigurationError`` naming the attributes that would do, not a ``KeyError`` or PynamoDB's
    ``ValueError``; the item is left as it was."""
    meta = type("Meta", (), {"table_name": backend.table_name("apikey"), **backend.meta})
    ApiKey: Any = type("ApiKey", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                       "requests": NumberAttribute(null=True),
                                       "active": UnicodeAttribute(null=True)})
    backend.create(ApiKey)
    ApiKey(key="k").save()
    with pytest.raises(ConfigurationError, match="must name a .*Attribute of ApiKey outside its key; choose from"):
        increment_in_period(ApiKey, "k", count_attribute=count, period_attribute=period)
    stored = ApiKey.get("k", consistent_read=True)
    assert (stored.requests, stored.active) == (None, None)


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


@pytest.mark.parametrize("by", [1.5, True, Decimal("2"), "1"])
def test_next_id_increment_refuses_a_non_integer(backend, by):
    """NextId.increment(by=...) refuses anything but an int, naming the value; nothing is written."""
    counter = backend.counter()
    with pytest.raises(CounterValueError, match=f"by must be an int, not {type(by).__name__}"):
        counter.increment("hits", period=None, by=by)
    assert counter.current("hits", period=None) is None
    assert counter.increment("hits", period=None) == 1
def _versioned(backend: Any, *bases: type, **extra: Any) -> Any:
    """An API key item with a VersionAttribute (and ``bases`` before Model), stored with a count of 0."""
    meta = type("Meta", (), {"table_name": backend.table_name("vkeys"), **backend.meta, **extra})
    model: Any = type("VersionedKey", (*bases, Model), {
        "Meta": meta,
        "key": UnicodeAttribute(hash_key=True),
        "request_count": NumberAttribute(null=True),
        "active_period": UnicodeAttribute(null=True),
        "revision": VersionAttribute(),
    })
    backend.create(model)
    return model


def test_a_count_raises_a_versioned_items_version(backend):
    """A count on an item with a VersionAttribute raises its version, so a save of an instance read before the
    count fails its version condition instead of writing the old count back."""
    Key = _versioned(backend)
    Key(key="k1").save()
    stale = Key.get("k1", consistent_read=True)
    assert increment_in_period(Key, "k1", count_attribute="request_count", period_attribute="active_period",
                               now=datetime(2026, 11, 3)) == 1
    with pytest.raises(PutError):
        stale.save()
    assert Key.get("k1", consistent_read=True).request_count == 1


def test_the_version_attribute_cannot_hold_the_count(backend):
    """count_attribute naming the VersionAttribute is refused with ConfigurationError; nothing is sent."""
    Key = _versioned(backend)
    Key(key="k1").save()
    with pytest.raises(ConfigurationError, match="count_attribute='revision'.*choose from request_count"):
        increment_in_period(Key, "k1", count_attribute="revision", period_attribute="active_period")
    assert Key.get("k1", consistent_read=True).revision == 1


def test_a_history_model_is_refused(backend):
    """Counting on a HistoryMixin item is refused with HistoryWriteError: the item would change without a
    version in its history."""
    history_meta = type("Meta", (), {"table_name": backend.table_name("vkeys-history"), **backend.meta})
    history: Any = type("KeyVersion", (Model,), {
        "Meta": history_meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "request_count": NumberAttribute(null=True)})
    backend.create(history)
    Key = _versioned(backend, HistoryMixin, history_model=history)
    Key(key="k1").save()
    with pytest.raises(HistoryWriteError, match="without recording a version"):
        increment_in_period(Key, "k1", count_attribute="request_count", period_attribute="active_period")
    assert [v.version for v in Key.history("k1", consistent_read=True)] == [1]
    assert Key.get("k1", consistent_read=True).request_count is None


@pytest.mark.backends()
def test_a_step_of_more_than_38_digits_is_refused(api_key, requests):
    """by=10**38 is refused with OutOfBoundsError (as every argument past 38 digits is) before anything is sent."""
    with pytest.raises(OutOfBoundsError, match="38"):
        count_by(api_key, 10**38)
    assert requests == []


@pytest.mark.backends("local")
def test_a_count_past_38_digits_is_the_librarys_error(api_key):
    """A count that would need more than 38 digits raises CounterValueError (DynamoDB refuses the number with a
    ValidationException; moto stores it), and the stored count stays as it was."""
    count_by(api_key, 10**38 - 1)
    with pytest.raises(CounterValueError, match="38 digits"):
        count_by(api_key, 2)
    assert api_key.get("k1", consistent_read=True).request_count == 10**38 - 1


def count_by(model: Any, by: int) -> int:
    return increment_in_period(model, "k1", count_attribute="request_count", period_attribute="active_period",
                               by=by, now=datetime(2026, 11, 3))


def test_frozen_clock_thaws_once_every_overlapping_block_has_ended() -> None:
    """Two frozen() blocks that overlap without nesting (as two threads' blocks do): while either runs, the clock
    reads the newest running block's time; once both have ended, it runs again."""
    first, second = clock.frozen(datetime(2020, 1, 1)), clock.frozen(datetime(2021, 1, 1))
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the older block ends first
    assert clock.now().year == 2021
    second.__exit__(None, None, None)
    assert clock.now().year >= 2026


def test_frozen_clock_nested_blocks_restore_the_outer_time() -> None:
    """A frozen() block inside another reads its own time, and the outer block's time again after it ends."""
    with clock.frozen(datetime(2020, 1, 1)):
        with clock.frozen(datetime(2021, 6, 1)):
            assert clock.now().year == 2021
        assert clock.now().year == 2020
    assert clock.now().year >= 2026
