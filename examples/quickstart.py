"""Quickstart: integer IDs on DynamoDB, in fast and gapless mode.

    python examples/quickstart.py
"""

from __future__ import annotations

import os
import time

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, NextId, TransactWrite, before_save, testing
from pynamodb_autoinc.exceptions import ItemExistsError

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"
# The demo's tables and counter keys start with "demo-", so that on an endpoint your application uses too
# (DYNAMODB_HOST) it neither writes your tables nor moves your counters.
DEMO_KEYS = ["demo-user", "demo-members"]


class User(AutoIncrementMixin, Model):
    """Fast mode: one counter UpdateItem, then the item's PutItem."""

    class Meta:
        table_name = "demo-users"
        autoinc_key = "demo-user"
        region = REGION
        host = HOST

    id = NumberAttribute(hash_key=True)
    name = UnicodeAttribute()
    created_by = UnicodeAttribute(null=True)


class Member(AutoIncrementMixin, Model):
    """Gapless mode: counter and item in one transaction, so a failed put spends no number."""

    class Meta:
        table_name = "demo-members"
        autoinc_key = "demo-members"
        autoinc_attribute = "num_identifier"
        autoinc_gapless = True
        region = REGION
        host = HOST

    pk = UnicodeAttribute(hash_key=True)
    num_identifier = NumberAttribute(null=True)


@before_save.connect_via(User)
def stamp(sender: type, instance: User, is_new: bool, **_: object) -> None:
    if is_new:
        instance.created_by = "quickstart"


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        if not NextId.exists():  # the counter table your own models share: kept, and only the demo's keys touched
            NextId.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        for model in (User, Member):  # the demo's own tables and counters start afresh, so a rerun prints the same
            if model.exists():
                model.delete_table()
                while model.exists():
                    time.sleep(0.5)
        testing.reset_counters(keys=DEMO_KEYS)
        for model in (User, Member):
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        for name in ("Kirk", "Spock", "McCoy"):
            user = User(name=name)
            user.save()
            print(f"User {user.name!r} got id {user.id} (created_by={user.created_by})")

        for name in ("Uros", "Alex", "Luc"):
            member = Member(pk=f"User#{name}")
            member.save()
            print(f"Member {member.pk!r} got num_identifier {member.num_identifier}")
        duplicate = Member(pk="User#Alex")
        try:
            duplicate.save()
        except ItemExistsError:
            print(f"Duplicate refused: a member with pk={duplicate.pk!r} exists and was not overwritten"
                  f" (num_identifier is back to {duplicate.num_identifier})")
        print(f"Member counter after the refused save: {NextId.currval('demo-members')} (no number spent)")

        with TransactWrite(connection=Connection(region=REGION, host=HOST)) as tx:
            a, b = Member(pk="User#Ada"), Member(pk="User#Bob")
            tx.save(a)
            tx.save(b)
        print(f"In one TransactWrite: {a.pk}={a.num_identifier}, {b.pk}={b.num_identifier}")

        print("Counters:", {key: NextId.currval(key) for key in DEMO_KEYS})


if __name__ == "__main__":
    main()
