"""The types a model with auto-increment IDs shows its users: the ID, its options, the counter."""

from __future__ import annotations

from typing import List, Optional

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model
from typing_extensions import assert_type

from pynamodb_autoinc import AutoIncrementMixin, ModelOptions, NextId, SequenceOptions


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = "users"
        autoinc_gapless = True

    id = NumberAttribute(hash_key=True)
    name = UnicodeAttribute()


def ids() -> None:
    user = User(name="Kirk")
    user.save()
    assert_type(user.id, float)  # PynamoDB types a NumberAttribute's value as float

    options = User.autoinc_options()
    assert_type(options, ModelOptions)
    assert_type(options.sequence, SequenceOptions)

    User.save_all([User(name="Spock"), User(name="McCoy")])


def counters() -> None:
    assert_type(NextId.nextval("orders"), int)
    assert_type(NextId.nextval("orders", User.autoinc_options().sequence), int)
    assert_type(NextId.reserve("orders", 10), List[int])
    assert_type(NextId.currval("orders"), Optional[int])
    assert_type(NextId.stored_options("orders"), Optional[SequenceOptions])
    assert_type(NextId.increment("key-123", period="month"), int)
    assert_type(NextId.current("key-123", period="month"), Optional[int])
    NextId.setval("orders", 100, is_called=False)
