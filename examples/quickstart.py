"""Quickstart: integer IDs on DynamoDB, in fast and gapless mode.

    python examples/quickstart.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _backend import META, dynamodb  # noqa: E402
from pynamodb.attributes import NumberAttribute, UnicodeAttribute  # noqa: E402
from pynamodb.models import Model  # noqa: E402
from pynamodb.transactions import TransactWrite  # noqa: E402

from pynamodb_autoinc import AutoIncrementMixin, NextId, before_save
from pynamodb_autoinc.exceptions import ItemExistsError  # noqa: E402


class User(AutoIncrementMixin, Model):
    """Fast mode: one counter UpdateItem, then the item's PutItem."""

    class Meta:
        table_name = "users"
        autoinc_key = "user"
        region = META["region"]
        host = META["host"]

    id = NumberAttribute(hash_key=True)
    name = UnicodeAttribute()
    created_by = UnicodeAttribute(null=True)


class Member(AutoIncrementMixin, Model):
    """Gapless mode: counter and item in one transaction, so a failed put spends no number."""

    class Meta:
        table_name = "members"
        autoinc_attribute = "num_identifier"
        autoinc_gapless = True
        region = META["region"]
        host = META["host"]

    pk = UnicodeAttribute(hash_key=True)
    num_identifier = NumberAttribute(null=True)


@before_save.connect_via(User)
def stamp(sender: type, instance: User, is_new: bool, **_: object) -> None:
    if is_new:
        instance.created_by = "quickstart"


def main() -> None:
    with dynamodb() as where:
        print(f"DynamoDB: {where}")
        for model in (NextId, User, Member):
            if not model.exists():
                model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        for name in ("Kirk", "Spock", "McCoy"):
            user = User(name=name)
            user.save()
            print(f"User {user.name!r} got id {user.id} (created_by={user.created_by})")

        for name in ("Uros", "Alex", "Luc"):
            member = Member(pk=f"User#{name}")
            member.save()
            print(f"Member {member.pk!r} got num_identifier {member.num_identifier}")
        try:
            Member(pk="User#Alex").save()
        except ItemExistsError as exc:
            print(f"Duplicate refused: {exc}")
        print(f"Member counter after the refused save: {NextId.currval('members')} (no number spent)")

        with TransactWrite(connection=Member._get_connection().connection) as tx:
            a, b = Member(pk="User#Ada"), Member(pk="User#Bob")
            tx.save(a)
            tx.save(b)
        print(f"In one TransactWrite: {a.pk}={a.num_identifier}, {b.pk}={b.num_identifier}")

        print("Counters:", {c.next_key: c.next_id for c in NextId.scan()})


if __name__ == "__main__":
    main()
