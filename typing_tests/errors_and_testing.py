"""Errors come from pynamodb_autoinc.exceptions; the testing helpers and TransactWrite are typed."""

from __future__ import annotations

from typing import Type

from pynamodb.attributes import NumberAttribute
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite as PynamoDBTransactWrite
from typing_extensions import assert_type

from pynamodb_autoinc import AutoIncrementMixin, NextId, TransactWrite
from pynamodb_autoinc.exceptions import AutoIncrementError, BulkSaveError, ItemExistsError
from pynamodb_autoinc.iam import policy
from pynamodb_autoinc.testing import create_counter_table, reset_counters, reset_state


class Order(AutoIncrementMixin, Model):
    class Meta:
        table_name = "orders"

    id = NumberAttribute(hash_key=True)


def save() -> None:
    try:
        Order().save()
    except ItemExistsError as exc:
        assert_type(exc, ItemExistsError)
        error: AutoIncrementError = exc
        print(error)
    except BulkSaveError as exc:
        print(exc.saved, exc.unsaved)


def transaction() -> None:
    with TransactWrite() as tx:
        tx.save(Order())
    plain: PynamoDBTransactWrite = tx
    print(plain)


def tests() -> None:
    assert_type(create_counter_table(Order), Type[NextId])
    assert_type(reset_counters(), int)
    reset_state()
    print(policy(Order)["Statement"])
