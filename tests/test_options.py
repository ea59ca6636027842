"""Meta attributes that look like the library's options but are none are refused when the class is created;
PynamoDB's own options and unrelated attributes are not."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute
from pynamodb.models import MetaProtocol, Model

from pynamodb_autoinc import AutoIncrementMixin, NextId
from pynamodb_autoinc._options import PYNAMODB_OPTIONS
from pynamodb_autoinc.exceptions import ConfigurationError


class Tally(NextId):
    """A counter model of the user's own, named in the fix by its class name."""

    class Meta:
        table_name = "tally"


def order_model(**meta: Any) -> Any:
    """A model ``Order`` whose ``Meta`` sets ``meta`` besides its table name (nothing is sent)."""
    return type("Order", (AutoIncrementMixin, Model), {
        "Meta": type("Meta", (), {"table_name": "orders", **meta}), "id": NumberAttribute(hash_key=True)})


GAPLESS_LOOKALIKES = ["gapless", "GAPLESS", "gaples", "auto_inc_gapless", "autoincgapless", "AUTOINC_GAPLESS",
                      "Autoinc_Gapless", "autoIncGapless", "autoinc_gapples", "autoinc__gapless",
                      "auto_increment_gapless", "autoincrement_gapless", "auto_gapless", "autonc_gapless",
                      "auto_inc_gaples"]


@pytest.mark.parametrize("name", GAPLESS_LOOKALIKES)
def test_lookalike_of_gapless_is_refused(name):
    """A Meta attribute written for autoinc_gapless (no prefix, a mangled prefix, another case, a typo) is refused,
    naming the model, the attribute as written, the option and the line to write instead."""
    with pytest.raises(ConfigurationError) as info:
        order_model(**{name: True})
    assert str(info.value) == (f"Order: unknown Meta option {name!r}; did you mean 'autoinc_gapless'? "
                               "Write Meta.autoinc_gapless = True in its place")


@pytest.mark.parametrize("name, value, option, fix", [
    ("step", 2, "autoinc_step", "2"),
    ("counter_in_table", True, "autoinc_counter_in_table", "True"),
    ("trackExplicit", True, "autoinc_track_explicit", "True"),
    ("auto_increment_start", 100, "autoinc_start", "100"),
    ("AUTOINC_SCOPE", "org", "autoinc_scope", "'org'"),
    ("home_region", "us-east-1", "autoinc_home_region", "'us-east-1'"),
    ("auto_inc_counter", Tally, "autoinc_counter", "Tally"),
])
def test_lookalike_of_each_option_names_it(name, value, option, fix):
    """A look-alike of any option, not only autoinc_gapless, is refused with the option it probably means and
    its value as the fix (a class by its name)."""
    with pytest.raises(ConfigurationError, match=re.escape(f"did you mean '{option}'? Write Meta.{option} = {fix} in")):
        order_model(**{name: value})


def test_prefixed_unknown_name_like_no_option_lists_the_options():
    """An autoinc_ name close to no option is refused with the list of options, as before (no fix to suggest)."""
    with pytest.raises(ConfigurationError, match="unknown Meta option 'autoinc_zzz'; known options: autoinc_attribute"):
        order_model(autoinc_zzz=1)


def test_pynamodb_meta_protocol_options_are_all_known_as_pynamodbs():
    """Every option PynamoDB's MetaProtocol declares is one the look-alike check leaves to PynamoDB."""
    assert set(MetaProtocol.__annotations__) <= PYNAMODB_OPTIONS


def test_pynamodb_own_options_are_accepted():
    """A Meta setting every PynamoDB option (but the two it warns are gone) creates the model."""
    model = order_model(
        host="http://localhost:8000", region="us-east-1", billing_mode="PAY_PER_REQUEST", read_capacity_units=1,
        write_capacity_units=1, connect_timeout_seconds=1, read_timeout_seconds=1, max_retry_attempts=1,
        max_pool_connections=1, extra_headers={}, aws_access_key_id="id", aws_secret_access_key="secret",
        aws_session_token="token", stream_view_type="NEW_IMAGE", tags={"team": "sales"}, base_backoff_ms=25)
    assert model.autoinc_options().attribute == "id"


@pytest.mark.parametrize("name", ["my_setting", "description", "owner", "ttl_attribute", "attributes",
                                  "auto_create_table", "index_name", "history_model", "Region"])
def test_unrelated_meta_attribute_is_accepted(name):
    """A Meta attribute of the user's own that looks like no option creates the model; the options keep their
    defaults."""
    model = order_model(**{name: "anything"})
    assert model.autoinc_options().gapless is False


def _counter_user(name: str, key: str, **meta: Any) -> Any:
    """A model class called ``name`` numbering ``id`` from counter ``key`` (not created in any table)."""
    attrs = {"Meta": type("Meta", (), {"table_name": name.lower(), "region": "us-east-1", "autoinc_key": key,
                                       **meta}),
             "id": NumberAttribute(hash_key=True), "__module__": __name__}
    return type(name, (AutoIncrementMixin, Model), attrs)


@pytest.mark.parametrize("fast", [{}, {"autoinc_block": 10}])
def test_gapless_and_fast_models_on_one_counter_are_refused(fast):
    """A gapless model and a fast (or block) model drawing from one counter key cannot keep the gapless sequence
    whole: the second class is refused when it is created, naming both and the fix."""
    keep = _counter_user("Invoice", "shared-mixed", autoinc_gapless=True)
    with pytest.raises(ConfigurationError, match=r"counter 'shared-mixed' is also used by Invoice.*autoinc_key"):
        _counter_user("Receipt", "shared-mixed", **fast)
    assert keep.autoinc_options().gapless


def test_models_of_one_mode_may_share_a_counter():
    """Two gapless models (or two fast ones) may share one counter key."""
    first = _counter_user("Left", "shared-same", autoinc_gapless=True)
    second = _counter_user("Right", "shared-same", autoinc_gapless=True)
    third, fourth = _counter_user("Up", "shared-fast"), _counter_user("Down", "shared-fast", autoinc_block=5)
    keys = [m.autoinc_options().key for m in (first, second, third, fourth)]
    assert keys == ["shared-same"] * 2 + ["shared-fast"] * 2


def test_a_model_redefined_in_another_mode_replaces_its_old_class():
    """Defining a model again (same module and name, a reload) in the other mode is not a second user."""
    _counter_user("Ledger", "shared-redefined")
    again = _counter_user("Ledger", "shared-redefined", autoinc_gapless=True)
    assert again.autoinc_options().gapless
