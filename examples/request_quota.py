"""Counting requests per API key per month, restarting each month (a quota).

    python examples/request_quota.py
"""

from __future__ import annotations

import os
from datetime import datetime

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import NextId, testing
from pynamodb_autoinc.periods import increment_in_period

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class ApiKey(Model):
    """The count and its period live on the key's own item."""

    class Meta:
        table_name = "demo-api-keys"
        region = REGION
        host = HOST

    key = UnicodeAttribute(hash_key=True)
    request_count = NumberAttribute(null=True)
    active_period = UnicodeAttribute(null=True)


QUOTA = 3


def handle_request(key: str, now: datetime) -> str:
    used = increment_in_period(ApiKey, key, count_attribute="request_count",
                               period_attribute="active_period", period="month", now=now)
    return f"{now:%Y-%m-%d} request {used}/{QUOTA}: " + ("ok" if used <= QUOTA else "429 quota exceeded")


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        for model in (NextId, ApiKey):
            if not model.exists():
                model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        ApiKey(key="demo-k-123").save()
        for day in (1, 5, 9, 20):
            print(handle_request("demo-k-123", datetime(2026, 12, day)))
        print(handle_request("demo-k-123", datetime(2027, 1, 2)))

        # Or keep the counts in the NextId table, one item per key and month:
        for day in (1, 2):
            print("NextId.increment ->", NextId.increment("demo-k-123", period="month", now=datetime(2026, 12, day)))
        print("this month so far:", NextId.current("demo-k-123", period="month", now=datetime(2026, 12, 31)))


if __name__ == "__main__":
    main()
