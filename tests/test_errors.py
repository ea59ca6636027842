"""Bad input and misconfiguration: each gets a clear error and nothing is written."""

from __future__ import annotations

import pytest
from pynamodb.attributes import BooleanAttribute, NumberAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.exceptions import PutError, PynamoDBException

from pynamodb_autoinc import (
    AutoIncrementError,
    ConfigurationError,
    CounterTableMissingError,
    CounterValueError,
    ItemWriteError,
    NextId,
)


@pytest.mark.parametrize(("options", "message"), [
    ({"autoinc_gaples": True}, "unknown Meta option 'autoinc_gaples'; did you mean 'autoinc_gapless'?"),
    ({"autoinc_attribute": "nope"}, "Meta.autoinc_attribute names 'nope', which is not an attribute"),
    ({"flag": BooleanAttribute(null=True), "autoinc_attribute": "flag"},
     "auto-increment attribute 'flag' is a BooleanAttribute; make it a NumberAttribute"),
    ({"version": VersionAttribute(null=True), "autoinc_attribute": "version"},
     "auto-increment attribute 'version' is a VersionAttribute"),
    ({"seq": NumberAttribute(), "autoinc_attribute": "seq"}, "must allow None until the ID is assigned"),
    ({"autoinc_key": ""}, "Meta.autoinc_key must be a non-empty string"),
    ({"autoinc_counter": dict}, "Meta.autoinc_counter must be NextId or a subclass of it"),
    ({"autoinc_gapless": "yes"}, "Meta.autoinc_gapless must be True or False, not 'yes'"),
    ({"autoinc_step": 0}, "Meta.autoinc_step must not be 0"),
    ({"autoinc_start": 1.5}, "Meta.autoinc_start must be an int, not 1.5"),
    ({"autoinc_retries": -1}, "Meta.autoinc_retries must be 0 or more"),
    ({"autoinc_backoff": "fast"}, "Meta.autoinc_backoff must be a number of seconds"),
])
def test_misconfiguration_is_named(make_model, options, message):
    """A bad Meta option fails the first save with a ConfigurationError naming it; nothing is written."""
    Broken = make_model("Broken", create=False, **options)
    with pytest.raises(ConfigurationError) as info:
        Broken().save()
    assert message in str(info.value)
    assert str(info.value).startswith("Broken: ")
    assert isinstance(info.value, ValueError)


def test_gapless_needs_one_connection(make_model):
    """A gapless model whose counter lives on another endpoint is refused."""

    class Remote(NextId):
        class Meta:
            table_name = "NextId"
            host = "http://127.0.0.1:9"

    Broken = make_model("Broken", create=False, autoinc_counter=Remote, autoinc_gapless=True)
    with pytest.raises(ConfigurationError, match="both tables must be on one connection"):
        Broken().save()


def test_errors_share_one_root():
    """Every library error is an AutoIncrementError, which is a PynamoDBException."""
    import pynamodb_autoinc

    errors = [getattr(pynamodb_autoinc, n) for n in pynamodb_autoinc.__all__ if n.endswith("Error")]
    assert len(errors) >= 10
    assert all(issubclass(e, AutoIncrementError) and issubclass(e, PynamoDBException) for e in errors)
    assert issubclass(ItemWriteError, PutError)


def test_missing_counter_table(make_model, backend):
    """A missing counter table is named, with how to create it; nothing is written."""

    class Missing(NextId):
        class Meta:
            table_name = "no-such-counter-table"

    User = make_model("User", autoinc_counter=Missing, create=False)
    backend.create(User)
    user = User()
    with pytest.raises(CounterTableMissingError, match=r"'no-such-counter-table' does not exist; create it with "
                                                       r"Missing.create_table\(billing_mode='PAY_PER_REQUEST'"):
        user.save()
    assert user.id is None
    assert list(User.scan()) == []


def test_non_number_in_counter(make_model):
    """A counter item holding a string is reported with how to fix it; nothing is written."""
    User = make_model("User", autoinc_key="user")
    counter = User.autoinc_options().counter
    counter._get_connection().put_item("user", attributes={"NextId": {"S": "seven"}})
    with pytest.raises(CounterValueError, match=r"counter 'user' in table 'NextId' holds .*not a number; "
                                                r"set it to the largest ID in use with NextId.setval"):
        User().save()
    assert list(User.scan()) == []


def test_missing_item_table(make_model, backend, mode):
    """A missing item table is named; in gapless mode the counter does not move."""
    User = make_model("User", create=False)
    counter = backend.counter(model=User)
    user = User()
    with pytest.raises(ItemWriteError, match=f"table '{User.Meta.table_name}'.*does not exist"):
        user.save()
    assert user.id is None
    assert counter.currval(User.autoinc_options().key) == (1 if mode == "fast" else None)


def test_gapless_instance_outside_save_is_refused(make_model):
    """Building save kwargs for a new gapless instance outside TransactWrite is refused."""
    User = make_model("User", name=UnicodeAttribute(null=True), autoinc_gapless=True)
    user = User(name="x")
    with pytest.raises(AutoIncrementError, match="can only be saved with save"):
        user.get_save_kwargs_from_instance()
    assert user.id is None
