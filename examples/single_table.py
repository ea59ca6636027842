"""Single-table design: the counter item lives in the model's own table (gapless).

    python examples/single_table.py
"""

from __future__ import annotations

import contextlib
import os
from typing import ContextManager

import boto3
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import ItemExistsError

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"
os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
os.environ.setdefault("AWS_ACCESS_KEY_ID", "local" if HOST else "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "local" if HOST else "testing")


def dynamodb() -> ContextManager[object]:
    """The DynamoDB the example runs on: DYNAMODB_HOST if set, else moto's in-process ``mock_aws()``."""
    if HOST:
        return contextlib.nullcontext()
    from moto import mock_aws

    return mock_aws()


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = "Users"
        autoinc_attribute = "num_identifier"
        autoinc_key = "UserMetadata"
        autoinc_counter_in_table = True
        autoinc_gapless = True
        region = REGION
        host = HOST

    pk = UnicodeAttribute(hash_key=True)
    num_identifier = NumberAttribute(null=True)
    user_name = UnicodeAttribute(null=True)


def main() -> None:
    with dynamodb():
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        if not User.exists():
            User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        for name in ("Uros", "Alex", "Luc"):
            user = User(pk=f"User#{name}", user_name=name)
            user.save()
            print(f"{user.pk}: {user.num_identifier}")
        try:
            User(pk="User#Alex", user_name="Alex again").save()
        except ItemExistsError:
            print("User#Alex exists: refused, and no number was spent")
        print("User.scan():", [u.pk for u in User.scan()])
        raw = boto3.client("dynamodb", region_name=REGION, endpoint_url=HOST).scan(TableName=User.Meta.table_name)
        print("the table itself:", sorted(item["pk"]["S"] for item in raw["Items"]))


if __name__ == "__main__":
    main()
