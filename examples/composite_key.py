"""When not to auto-increment: a like is identified by who liked what.

A "like" needs no counter at all. Its natural key, article and user, makes it
unique, makes a double click idempotent, and lets one Query list an article's
likes without a secondary index.

    python examples/composite_key.py
"""

from __future__ import annotations

import os

from pynamodb.attributes import UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.exceptions import PutError
from pynamodb.models import Model

from pynamodb_autoinc import testing

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class Like(Model):
    """Partition by article, sort by user: one item per (article, user), no counter."""

    class Meta:
        table_name = "demo-likes"
        region = REGION
        host = HOST

    article_id = UnicodeAttribute(hash_key=True)
    user_id = UnicodeAttribute(range_key=True)
    liked_at = UTCDateTimeAttribute(null=True)


def like(article_id: str, user_id: str) -> bool:
    """Record a like once; a repeated like changes nothing and says so."""
    from datetime import datetime, timezone

    try:
        Like(article_id, user_id, liked_at=datetime.now(timezone.utc)).save(
            condition=Like.article_id.does_not_exist())
        return True
    except PutError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        if not Like.exists():
            Like.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        for article, user in (("a111", "u222"), ("a111", "u333"), ("a111", "u222"), ("a999", "u222")):
            print(f"like({article}, {user}) ->", "new" if like(article, user) else "already liked")
        print("likes of a111:", [lk.user_id for lk in Like.query("a111")])
        print("does u222 like a999?", Like.count("a999", Like.user_id == "u222") == 1)


if __name__ == "__main__":
    main()
