"""The scenarios of the hand-rolled patterns the library grew from (docs/index.md), as the library runs them."""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import NextId, before_save
from pynamodb_autoinc.exceptions import CounterTableMissingError, ItemExistsError

pytestmark = pytest.mark.modes('fast', 'gapless')


def test_nextid_table_numbers_string_ids_from_a_before_save_hook(make_model, backend):
    """The NextId table pattern: a NextId item {"NextKey": "user"} numbers users "1", "2" from a before-save hook."""
    UserNew = make_model("UserNew", Id=UnicodeAttribute(hash_key=True), name=UnicodeAttribute(null=True),
                         autoinc_key="user")
    seen: list = []

    def observe(sender: Any, instance: Any, is_new: bool, **_: Any) -> None:
        seen.append((instance.name, is_new))

    with before_save.connected_to(observe, sender=UserNew):
        for name in ("kirk", "spock"):
            UserNew(name=name).save()
    assert sorted((u.Id, u.name) for u in UserNew.scan()) == [("1", "kirk"), ("2", "spock")]
    assert seen == [("kirk", True), ("spock", True)]
    raw = backend.counter()._get_connection().get_item("user", consistent_read=True)["Item"]
    assert raw == {"NextKey": {"S": "user"}, "NextId": {"N": "2"},
                   "NextOptions": {"S": "start=1 step=1 min=1 max=9223372036854775807 no cycle"}}


def test_nextid_table_failed_counter_call_stores_nothing(make_model, backend):
    """Where the NextId table pattern saves after a failed counter call anyway, the library raises, storing nothing."""

    class Gone(NextId):
        class Meta:
            table_name = "gone-counter"

    UserNew = make_model("UserNew", Id=UnicodeAttribute(hash_key=True), autoinc_counter=Gone, create=False)
    backend.create(UserNew)
    with pytest.raises(CounterTableMissingError):
        UserNew().save()
    assert list(UserNew.scan()) == []


@pytest.mark.modes()  # its models set their own mode
def test_atomic_counter_is_one_update(make_model, requests):
    """The atomic counter pattern: fast mode asks the counter once per ID (ADD/SET returning the new value)."""
    Item = make_model("Item", autoinc_gapless=False)
    Item().save()  # the process's first save describes the tables once (global tables)
    requests.clear()
    Item().save()
    assert [op for op, _ in requests] == ["UpdateItem", "PutItem"]


@pytest.mark.modes()  # its models set their own mode
def test_read_and_transaction_members_are_gapless_and_refuse_duplicates(make_model):
    """Read+transaction's users: User#Uros 1, User#Alex 2, User#Luc 3; a second Alex is refused, spending no number."""
    Users = make_model("Users", pk=UnicodeAttribute(hash_key=True), num_identifier=NumberAttribute(null=True),
                       user_name=UnicodeAttribute(null=True), autoinc_attribute="num_identifier",
                       autoinc_gapless=True, autoinc_counter_in_table=True, autoinc_key="UserMetadata")
    for name in ("Uros", "Alex", "Luc"):
        Users(pk=f"User#{name}", user_name=name).save()
    with pytest.raises(ItemExistsError):
        Users(pk="User#Alex", user_name="Alex").save()
    kirk = Users(pk="User#Kirk", user_name="Kirk")
    kirk.save()
    assert kirk.num_identifier == 4
    assert sorted((u.num_identifier, u.user_name) for u in Users.scan()) == [
        (1, "Uros"), (2, "Alex"), (3, "Luc"), (4, "Kirk")]
