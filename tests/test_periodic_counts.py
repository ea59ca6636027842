"""Counting events per period (article 001): NextId.increment/current and increment_in_period."""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import (
    BooleanAttribute,
    NumberAttribute,
    UnicodeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import PutError
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import AutoIncrementMixin, HistoryMixin
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    CounterError,
    CounterValueError,
    HistoryWriteError,
    OutOfBoundsError,
)
from pynamodb_autoinc.periods import Period, clock, increment_in_period, label, parse
from tests.hypothesis_setup import budget, worlds


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


# Periods compared as periods: labels of any length, and a count whose period changes length.

KINDS = ("year", "month", "day")
instants = st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9998, 12, 31))


def named(text: str) -> Period:
    """The period ``text`` names (the test fails if it names none)."""
    period = parse(text)
    assert period is not None, text
    return period


@given(at=instants, kind=st.sampled_from(KINDS))
def test_a_label_names_the_period_that_holds_its_instant(at, kind):
    """The label of the period holding an instant parses back to a period of that kind that holds the instant,
    and writes the same label again."""
    period = named(label(kind, at))
    assert period.kind == kind and period.contains(at)
    assert period.label == label(kind, at) and period == Period.containing(kind, at)


@given(first=instants, second=instants, kind=st.sampled_from(KINDS))
def test_labels_of_one_length_sort_as_their_periods_start(first, second, kind):
    """Two labels of one length compare as text as their periods' starts compare."""
    a, b = label(kind, first), label(kind, second)
    assert (a < b, a == b) == (named(a).start < named(b).start, named(a).start == named(b).start)


@given(first=instants, second=instants, kinds=st.tuples(st.sampled_from(KINDS), st.sampled_from(KINDS)))
def test_two_periods_of_any_lengths_are_ordered_by_their_spans(first, second, kinds):
    """Of two periods of any lengths, one precedes the other exactly when it ends by the other's start;
    otherwise they overlap, and one holds the other."""
    a, b = Period.containing(kinds[0], first), Period.containing(kinds[1], second)
    assert a.precedes(b) == (a.end <= b.start)
    if not a.precedes(b) and not b.precedes(a):
        assert (a.start <= b.start and b.end <= a.end) or (b.start <= a.start and a.end <= b.end)
        assert (a == b) == (a.kind == b.kind)


def test_a_month_without_its_leading_zero_is_that_month():
    """'2026-9' is September 2026 (as '2026-09' is), before '2026-10', though it sorts after it as text."""
    september, october = named("2026-9"), named("2026-10")
    assert september == named("2026-09") and september.label == "2026-09"
    assert september.precedes(october) and not october.precedes(september)


def test_a_month_neither_precedes_nor_follows_its_year():
    """A month lies within its year: neither precedes the other, although '2026' < '2026-12' < '2027' as text;
    December 2026 precedes 2027."""
    year, december = named("2026"), named("2026-12")
    assert not year.precedes(december) and not december.precedes(year)
    assert december.precedes(named("2027")) and named("2026-12-31").precedes(named("2027"))


@pytest.mark.parametrize("text", ["", "2026-13", "2026-02-30", "0000", "26-1", "2026-1-2-3", "2026-", "２０２６",
                                  "2026-11 ", "x", None, 2026])
def test_text_that_names_no_period_parses_to_none(text):
    """parse() gives None for text that is no year, month or day label, and for what is not text."""
    assert parse(text) is None


def count_as(model: Any, period: str, now: datetime, by: int = 1) -> int:
    return increment_in_period(model, "k1", count_attribute="request_count", period_attribute="active_period",
                               period=period, now=now, by=by)


def stored_count(model: Any) -> Tuple[Optional[int], Optional[str]]:
    item = model.get("k1", consistent_read=True)
    return item.request_count, item.active_period


def test_a_count_moved_from_months_to_years_restarts_in_the_year(api_key):
    """A count kept per month, then per year, restarts in the year that holds the month; nothing is merged."""
    assert [count_as(api_key, "month", datetime(2026, 12, 3)) for _ in range(3)] == [1, 2, 3]
    assert count_as(api_key, "year", datetime(2026, 12, 4)) == 1
    assert count_as(api_key, "year", datetime(2026, 12, 5)) == 2
    assert stored_count(api_key) == (2, "2026")


def test_a_count_moved_from_years_to_months_restarts_in_the_month(api_key):
    """A count kept per year, then per month, restarts in the month."""
    count_as(api_key, "year", datetime(2026, 3, 1), by=7)
    assert count_as(api_key, "month", datetime(2026, 12, 4)) == 1
    assert stored_count(api_key) == (1, "2026-12")


def test_a_count_moved_from_days_to_months_restarts_in_the_month(api_key):
    """A day's count, then a month's: the count restarts in the month that holds the day (its label '2026-12'
    sorts before '2026-12-03' as text, yet it is not an older period to refuse)."""
    count_as(api_key, "day", datetime(2026, 12, 3), by=4)
    assert count_as(api_key, "month", datetime(2026, 12, 3, 18)) == 1
    assert stored_count(api_key) == (1, "2026-12")


def test_a_count_moved_back_and_forth_restarts_at_every_change(api_key):
    """Month, year, then month again within one month: each change of length restarts the count."""
    at = datetime(2026, 12, 3)
    assert [count_as(api_key, kind, at) for kind in ("month", "month", "year", "month")] == [1, 2, 1, 1]


def test_a_later_period_of_another_length_is_refused(api_key):
    """A stored year that starts after the caller's month ends is reported, not overwritten."""
    count_as(api_key, "year", datetime(2027, 1, 1), by=5)
    with pytest.raises(CounterError, match="holds '2027', which is not an older period than '2026-12'"):
        count_as(api_key, "month", datetime(2026, 12, 31, 23, 59))
    assert stored_count(api_key) == (5, "2027")


def test_a_stored_month_without_its_leading_zero_counts_on(api_key):
    """A stored '2026-9' is September: a count in September goes on from it and stores the label '2026-09'."""
    api_key(key="k1", request_count=4, active_period="2026-9").save()
    assert count_as(api_key, "month", datetime(2026, 9, 30)) == 5
    assert stored_count(api_key) == (5, "2026-09")


def test_a_stored_month_without_its_leading_zero_is_older_than_october(api_key):
    """A stored '2026-9' is older than October 2026 ('2026-10' sorts before it as text): October restarts."""
    api_key(key="k1", request_count=4, active_period="2026-9").save()
    assert count_as(api_key, "month", datetime(2026, 10, 1)) == 1
    assert stored_count(api_key) == (1, "2026-10")


@pytest.mark.parametrize("held", ["soon", "", "2026-13"])
def test_a_stored_period_that_names_no_period_is_refused(api_key, held):
    """A stored period that names no year, month or day is reported with CounterError naming it; the item is left
    as it was."""
    api_key(key="k1", request_count=4, active_period=held).save()
    with pytest.raises(CounterError, match=f"holds {held!r}, which names no period"):
        count_as(api_key, "month", datetime(2026, 10, 1))
    assert stored_count(api_key) == (4, held)


def test_a_count_per_month_and_per_year_of_one_name_are_two_counts(backend):
    """NextId.increment of one name per month, then per year: each period counts in its own item, so the year
    starts from zero and the month's count stays."""
    counter = backend.counter()
    at = datetime(2026, 12, 3)
    assert [counter.increment("key-1", period="month", now=at) for _ in range(2)] == [1, 2]
    assert counter.increment("key-1", period="year", now=at) == 1
    assert counter.current("key-1", period="month", now=at) == 2


def invoices(backend: Any, table: str, period: str) -> Any:
    """An invoice model numbered per ``period`` on ``table`` (one table for every period given)."""
    meta = type("Meta", (), {"table_name": table, "autoinc_key": "invoice", "autoinc_period": period,
                             "autoinc_format": "INV-{period}-{value}", **backend.meta})
    model: Any = type("Invoice", (AutoIncrementMixin, Model), {"Meta": meta, "id": UnicodeAttribute(hash_key=True)})
    backend.counter(model=model)
    backend.create(model)
    return model


def test_a_model_moved_from_months_to_years_numbers_in_the_years_counter(backend):
    """A model whose autoinc_period changes from month to year numbers from the start in the year's counter,
    beside the month's, and its IDs (the whole period in the format) stay distinct."""
    table = backend.table_name("invoices")
    with clock.frozen(datetime(2026, 12, 3)):
        monthly, yearly = invoices(backend, table, "month"), invoices(backend, table, "year")
        ids = []
        for model in (monthly, monthly, yearly, yearly, monthly):
            item = model()
            item.save()
            ids.append(item.id)
    assert ids == ["INV-2026-12-1", "INV-2026-12-2", "INV-2026-1", "INV-2026-2", "INV-2026-12-3"]


def test_next_id_increment_by_zero_returns_the_count(backend):
    """NextId.increment(by=0) returns the count so far and leaves it as it was (moto leaves an unchanged count
    out of UPDATED_NEW; DynamoDB does not)."""
    counter = backend.counter()
    counter.increment("hits", by=3)
    assert counter.increment("hits", by=0) == 3
    assert counter.current("hits") == 3


def test_next_id_increment_by_zero_of_a_new_counter_is_zero(backend):
    """NextId.increment(by=0) of a counter that has counted nothing in the period returns 0."""
    counter = backend.counter()
    assert counter.increment("hits", by=0) == 0
    assert counter.increment("hits") == 1


def test_increment_in_period_by_zero_returns_the_count(api_key):
    """increment_in_period(by=0) within the stored period returns the count and leaves the item as it was."""
    count_as(api_key, "month", datetime(2026, 11, 3), by=2)
    assert count_as(api_key, "month", datetime(2026, 11, 4), by=0) == 2
    assert stored_count(api_key) == (2, "2026-11")


def test_increment_in_period_by_zero_in_a_new_period_is_zero(api_key):
    """increment_in_period(by=0) in a new period returns 0, the count of the new period, and stores it."""
    count_as(api_key, "month", datetime(2026, 11, 3), by=2)
    assert count_as(api_key, "month", datetime(2026, 12, 1), by=0) == 0
    assert stored_count(api_key) == (0, "2026-12")


def _spans(kind: str, at: datetime) -> Tuple[str, datetime, datetime]:
    """The reference's period: its label and span, from plain date arithmetic."""
    if kind == "year":
        return f"{at.year:04d}", datetime(at.year, 1, 1), datetime(at.year + 1, 1, 1)
    if kind == "month":
        start = datetime(at.year, at.month, 1)
        return f"{at.year:04d}-{at.month:02d}", start, (start + timedelta(days=32)).replace(day=1)
    start = datetime(at.year, at.month, at.day)
    return start.strftime("%Y-%m-%d"), start, start + timedelta(days=1)


#: Instants around the turn of 2026 to 2027, where periods of every length begin and end.
turns = st.sampled_from([datetime(2026, 12, 30, 12), datetime(2026, 12, 31, 23, 59), datetime(2027, 1, 1),
                         datetime(2027, 1, 1, 6), datetime(2027, 1, 2), datetime(2027, 2, 1)])


@pytest.mark.backends("moto")
@budget("moto", moto=40, local=1)
@given(data=st.data())
def test_counts_across_periods_of_changing_length_follow_the_reference(backend_name, request, data):
    """Counts at instants around a new year, by year, month or day in any order, give what a reference written
    from docs/periods.md gives: on within the stored period, restarted in a new one (also of another length),
    refused when the stored period begins after the caller's ends."""
    steps = data.draw(st.lists(st.tuples(turns, st.sampled_from(KINDS), st.integers(0, 3)), min_size=1,
                               max_size=8))
    with worlds(backend_name, request)() as backend:
        meta = type("Meta", (), {"table_name": "apikeys", **backend.meta})
        model: Any = type("ApiKey", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                               "request_count": NumberAttribute(null=True),
                                               "active_period": UnicodeAttribute(null=True)})
        backend.create(model)
        model(key="k1").save()
        held: Optional[Tuple[str, datetime, datetime]] = None
        expected = None
        for at, kind, by in steps:
            now = _spans(kind, at)
            if held is not None and held[1] >= now[2]:
                with pytest.raises(CounterError, match="not an older period"):
                    count_as(model, kind, at, by)
                continue
            expected = expected + by if held is not None and held[0] == now[0] else by
            held = now
            assert count_as(model, kind, at, by) == expected
            assert stored_count(model) == (expected, now[0])
