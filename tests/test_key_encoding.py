"""One encoding from an attribute's value to its text in a counter key (``Meta.autoinc_scope``) or a history key:
values stored alike give one key, values stored apart give two, and what cannot be encoded is refused."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any, Dict

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import (
    Attribute,
    BinaryAttribute,
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    MapAttribute,
    NumberAttribute,
    NumberSetAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, HistoryMixin
from pynamodb_autoinc.exceptions import ConfigurationError, InvalidKeyError

pytestmark = pytest.mark.modes("fast", "gapless")

#: A value drawn for each attribute type a scope or key may have, with hypothesis.
VALUES: Dict[str, Any] = {
    "unicode": st.text(),
    "number": st.one_of(st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False, width=32),
                        st.decimals(allow_nan=False, allow_infinity=False, places=3).filter(lambda d: float(d) == d)),
    "binary": st.binary(),
    "boolean": st.one_of(st.booleans(), st.sampled_from([0, 1])),
    "datetime": st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1),
                             timezones=st.sampled_from([None, timezone.utc, timezone(timedelta(hours=5))])),
    "ttl": st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2999, 1, 1),
                        timezones=st.just(timezone.utc)),
}


def attribute(kind: str, **kwargs: Any) -> Attribute:
    """A fresh attribute of ``kind`` (a key of :data:`VALUES`)."""
    kinds = {"unicode": UnicodeAttribute, "number": NumberAttribute, "boolean": BooleanAttribute,
             "datetime": UTCDateTimeAttribute, "ttl": TTLAttribute}
    return BinaryAttribute(legacy_encoding=False, **kwargs) if kind == "binary" else kinds[kind](**kwargs)


def scoped(kind: str, **meta: Any) -> Any:
    """A model numbering ``seq`` per ``scope``, an attribute of ``kind``; no table, nothing sent."""
    options = {"table_name": "scoped", "region": "us-east-1", "autoinc_attribute": "seq", "autoinc_scope": "scope",
               **meta}
    return type("Scoped", (AutoIncrementMixin, Model), {
        "Meta": type("Meta", (), options), "key": UnicodeAttribute(hash_key=True),
        "seq": NumberAttribute(null=True), "scope": attribute(kind, null=True)})


SCOPED = {kind: scoped(kind) for kind in VALUES}


def serialized(attr: Attribute, value: Any) -> Any:
    """What is sent for ``value`` (a Decimal, which PynamoDB's JSON cannot write, as botocore sends it)."""
    return str(value) if isinstance(value, Decimal) else attr.serialize(value)


def read_back(attr: Attribute, value: Any) -> Any:
    """``value`` as PynamoDB reads it back from the table (as DynamoDB stores it: numbers normalised)."""
    sent = serialized(attr, value)
    return attr.deserialize(format(Decimal(sent).normalize(), "f") if attr.attr_type == "N" else sent)


def stored(attr: Attribute, value: Any) -> Any:
    """What DynamoDB holds for ``value``: numbers compared by value."""
    return Decimal(serialized(attr, value)) if attr.attr_type == "N" else serialized(attr, value)


def counter_key(model: Any, value: Any) -> str:
    return model.autoinc_options().counter_key(model(key="k", scope=value), None)


@pytest.mark.backends()
@pytest.mark.parametrize("kind", sorted(VALUES))
@given(data=st.data())
def test_a_value_and_the_same_value_read_back_give_one_counter_key(kind, data):
    """For every scope type, a value as given and as read back from the table give one counter key."""
    model = SCOPED[kind]
    value = data.draw(VALUES[kind])
    assert counter_key(model, value) == counter_key(model, read_back(model.scope, value))


@pytest.mark.backends()
@pytest.mark.parametrize("kind", sorted(VALUES))
@given(data=st.data())
def test_values_stored_apart_give_two_counter_keys(kind, data):
    """For every scope type, two values that DynamoDB stores apart give two counter keys, and two it stores
    alike give one."""
    model = SCOPED[kind]
    first, second = data.draw(VALUES[kind]), data.draw(VALUES[kind])
    same = stored(model.scope, first) == stored(model.scope, second)
    assert (counter_key(model, first) == counter_key(model, second)) == same


@pytest.mark.backends()
def test_a_naive_datetime_and_the_instant_read_back_share_one_counter_key():
    """A naive datetime (taken as UTC) and the same instant, timezone-aware, give one counter key, in the
    UTCDateTimeAttribute's own form."""
    model = SCOPED["datetime"]
    naive, aware = datetime(2026, 1, 5, 9, 30), datetime(2026, 1, 5, 14, 30, tzinfo=timezone(timedelta(hours=5)))
    assert counter_key(model, naive) == counter_key(model, aware) == "scoped#2026-01-05T09:30:00.000000+0000"


def test_one_day_of_a_datetime_scope_is_numbered_once(backend):
    """Two items of one day, one scoped by a naive datetime and one by the same instant read back from the
    table, are numbered 1 and 2 on one counter."""
    model = scoped("datetime", table_name=backend.table_name("scoped"), **backend.meta)
    backend.counter(model=model)
    backend.create(model)
    first = model(key="a", scope=datetime(2026, 1, 5))
    first.save()
    second = model(key="b", scope=model.get("a", consistent_read=True).scope)
    second.save()
    assert (first.seq, second.seq) == (1, 2)


def test_number_scopes_1_and_1_0_share_one_counter(backend):
    """A NumberAttribute scope of 1 and of 1.0 is one sequence: 1, 2."""
    model = scoped("number", table_name=backend.table_name("scoped"), **backend.meta)
    backend.counter(model=model)
    backend.create(model)
    items = [model(key=str(n), scope=value) for n, value in enumerate([1, 1.0])]
    for item in items:
        item.save()
    assert [item.seq for item in items] == [1, 2]


def test_a_boolean_scope_given_1_or_true_is_one_counter(backend):
    """A BooleanAttribute scope given ``1`` is stored as ``True``, so it shares True's counter."""
    model = scoped("boolean", table_name=backend.table_name("scoped"), **backend.meta)
    backend.counter(model=model)
    backend.create(model)
    items = [model(key="a", scope=True), model(key="b", scope=1), model(key="c", scope=False)]
    for item in items:
        item.save()
    assert [item.seq for item in items] == [1, 2, 1]


@pytest.mark.backends()
@pytest.mark.parametrize("value", ["yes", "true", 2, 1.5])
def test_a_boolean_scope_given_no_boolean_is_refused(value):
    """A BooleanAttribute scope given something other than True, False, 1 or 0 is refused, naming the
    attribute and the counter key, before any request."""
    with pytest.raises(InvalidKeyError, match=r"Scoped.scope is .* cannot go into the counter key .*True or False"):
        counter_key(SCOPED["boolean"], value)


@pytest.mark.backends()
@pytest.mark.parametrize("kind, value", [("number", "7"), ("number", True), ("number", float("nan")),
                                         ("unicode", 7), ("datetime", "2026-01-05"), ("binary", 7)])
def test_a_scope_value_its_attribute_would_not_store_is_refused(kind, value):
    """A scope value of the wrong type (a str for a number, a number for a string) is refused with
    InvalidKeyError naming the attribute, not written into a counter key as its str()."""
    with pytest.raises(InvalidKeyError, match=rf"Scoped.scope is {value!r}.*the counter key"):
        counter_key(SCOPED[kind], value)


@pytest.mark.backends()
@pytest.mark.parametrize("declared, why", [
    (JSONAttribute(null=True), "a JSONAttribute, whose text follows the order of its keys"),
    (MapAttribute(null=True), "a MapAttribute, which has no single text form"),
    (ListAttribute(null=True), "a ListAttribute, which has no single text form"),
    (NumberSetAttribute(null=True), "a NumberSetAttribute, which has no single text form"),
    (VersionAttribute(null=True), "a VersionAttribute, which changes on every save"),
])
def test_a_scope_type_with_no_stable_text_is_refused_when_the_class_is_created(declared, why):
    """A scope on JSON, a map, a list, a set or a version is refused as the class is created, naming the model,
    the attribute, its type and the fix."""
    meta = type("Meta", (), {"table_name": "t", "autoinc_attribute": "seq", "autoinc_scope": "scope"})
    with pytest.raises(ConfigurationError, match=f"Bad: Meta.autoinc_scope names 'scope', {why}.*scope by a"):
        type("Bad", (AutoIncrementMixin, Model), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                                  "seq": NumberAttribute(null=True), "scope": declared})


def test_a_scope_value_pushing_the_counter_key_past_2048_bytes_is_refused(backend, requests):
    """A scope value whose counter key would pass DynamoDB's 2,048 bytes (the item's own key fits) is refused,
    naming the counter key and the limit, before any request."""
    model = scoped("unicode", table_name=backend.table_name("scoped"), **backend.meta)
    backend.counter(model=model)
    backend.create(model)
    requests.clear()
    with pytest.raises(InvalidKeyError, match=r"the counter key .* past DynamoDB's limit of 2,048 bytes"):
        model(key="k", scope="é" * 1020).save()
    assert requests == []


@pytest.mark.backends()
def test_a_scope_value_that_fits_exactly_is_accepted():
    """A counter key of exactly 2,048 bytes is no error."""
    assert len(counter_key(SCOPED["unicode"], "x" * (2048 - len("scoped#"))).encode()) == 2048


# -- history keys ------------------------------------------------------------------------------------------------


def history_models(backend: Any, key: Attribute) -> Any:
    """A ``Page`` keyed by ``key``, with HistoryMixin (and its history model), on ``backend``."""
    meta = type("Meta", (), {"table_name": backend.table_name("page-history"), **backend.meta})
    history = type("PageVersion", (Model,), {
        "Meta": meta, "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
        "deleted": BooleanAttribute(default=False), "title": UnicodeAttribute(null=True)})
    backend.create(history)
    meta = type("Meta", (), {"table_name": backend.table_name("page"), "history_model": history, **backend.meta})
    page = type("Page", (HistoryMixin, Model), {"Meta": meta, "key": key, "title": UnicodeAttribute(null=True),
                                                 "revision": VersionAttribute()})
    backend.create(page)
    return page


@pytest.mark.backends()
@pytest.mark.parametrize("kind", ["unicode", "number", "binary", "datetime"])
@given(data=st.data())
def test_an_item_key_and_the_same_key_read_back_give_one_history_key(kind, data):
    """For every key type, an item's key as given and as read back give one history key, alone or beside a
    range key."""
    page = HISTORY_PAGES[kind]
    value = data.draw(VALUES[kind].filter(lambda v: v != "" and v != b""))
    assert page(value).history_key() == page(read_back(page.key, value)).history_key()


@pytest.mark.backends()
@pytest.mark.parametrize("kind", ["unicode", "number", "binary", "datetime"])
@given(data=st.data())
def test_item_keys_stored_apart_give_two_history_keys(kind, data):
    """For every key type, two keys that DynamoDB stores apart give two history keys, two stored alike one."""
    page = HISTORY_PAGES[kind]
    first, second = (data.draw(VALUES[kind].filter(lambda v: v != "" and v != b"")) for _ in range(2))
    same = stored(page.key, first) == stored(page.key, second)
    assert (page(first).history_key() == page(second).history_key()) == same


def _history_page(kind: str) -> Any:
    meta = type("Meta", (), {"table_name": "page", "region": "us-east-1", "history_model": _PAGE_VERSION})
    return type("Page", (HistoryMixin, Model), {"Meta": meta, "key": attribute(kind, hash_key=True),
                                                 "title": UnicodeAttribute(null=True), "revision": VersionAttribute()})


_PAGE_VERSION = type("PageVersion", (Model,), {
    "Meta": type("Meta", (), {"table_name": "page-history", "region": "us-east-1"}),
    "item": UnicodeAttribute(hash_key=True), "version": NumberAttribute(range_key=True),
    "deleted": BooleanAttribute(default=False)})
HISTORY_PAGES = {kind: _history_page(kind) for kind in ("unicode", "number", "binary", "datetime")}


def test_a_datetime_keyed_item_keeps_one_history(backend):
    """An item keyed by a naive datetime, read back (timezone-aware) and saved again, has versions 2 and 1 under
    one history key."""
    page = history_models(backend, UTCDateTimeAttribute(hash_key=True))
    page(datetime(2026, 1, 5), title="a").save()
    again = page.get(datetime(2026, 1, 5, tzinfo=timezone.utc), consistent_read=True)
    again.title = "b"
    again.save()
    versions = page.history(datetime(2026, 1, 5), consistent_read=True)
    assert [(v.version, v.title) for v in versions] == [(2, "b"), (1, "a")]


@pytest.mark.backends()
def test_a_history_key_past_2048_bytes_is_refused():
    """A hash and range key that fit DynamoDB's limits alone but give a history key past 2,048 bytes are
    refused, naming the history key and the limit."""
    meta = type("Meta", (), {"table_name": "page", "region": "us-east-1", "history_model": _PAGE_VERSION})
    page = type("Page", (HistoryMixin, Model), {
        "Meta": meta, "key": UnicodeAttribute(hash_key=True), "part": UnicodeAttribute(range_key=True),
        "revision": VersionAttribute()})
    item = page("h" * 2000, "r" * 1000)
    with pytest.raises(InvalidKeyError, match=r"Page: the history key .* past DynamoDB's limit of 2,048 bytes"):
        item.history_key()
    with pytest.raises(InvalidKeyError, match="the history key"):
        item.save()


@pytest.mark.backends()
def test_a_history_key_refuses_a_value_its_attribute_would_not_store():
    """A number key given as a str is refused, naming the attribute and the history key."""
    with pytest.raises(InvalidKeyError, match=r"Page.key is '7', a str, which cannot go into the history key"):
        HISTORY_PAGES["number"]("7").history_key()

