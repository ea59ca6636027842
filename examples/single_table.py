"""Single-table design: the counter item lives in the model's own table (gapless).

    python examples/single_table.py
"""

from __future__ import annotations

import os

import boto3
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, testing
from pynamodb_autoinc.exceptions import ItemExistsError

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = "demo-Users"
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
    with testing.dynamodb(HOST, region=REGION):
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
