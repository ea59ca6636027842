"""Sequences beyond one global counter: per-parent numbering, periods, formats, limits.

    python examples/sequences.py
"""

from __future__ import annotations

import os
from datetime import datetime

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, NextId, testing
from pynamodb_autoinc.exceptions import ItemExistsError, SequenceExhaustedError
from pynamodb_autoinc.periods import clock

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class Issue(AutoIncrementMixin, Model):
    """Issues numbered per project (a counter per project in the NextId table)."""

    class Meta:
        table_name = "demo-issues"
        autoinc_attribute = "number"
        autoinc_scope = "project"
        region = REGION
        host = HOST

    project = UnicodeAttribute(hash_key=True)
    number = NumberAttribute(range_key=True)
    title = UnicodeAttribute(null=True)


class Comment(AutoIncrementMixin, Model):
    """Comments numbered per issue with no counter at all: the largest range key, plus one."""

    class Meta:
        table_name = "demo-comments"
        autoinc_attribute = "seq"
        autoinc_strategy = "query"
        region = REGION
        host = HOST

    issue = UnicodeAttribute(hash_key=True)
    seq = NumberAttribute(range_key=True)


class Invoice(AutoIncrementMixin, Model):
    """Gapless invoice numbers that restart every year: INV-2026-000001, ..."""

    class Meta:
        table_name = "demo-invoices"
        autoinc_gapless = True
        autoinc_period = "year"
        autoinc_format = "INV-{period}-{value:06d}"
        region = REGION
        host = HOST

    id = UnicodeAttribute(hash_key=True)
    total = NumberAttribute(null=True)


class Seat(AutoIncrementMixin, Model):
    """A sequence with a hard limit: seats 1 to 3, enforced by DynamoDB."""

    class Meta:
        table_name = "demo-seats"
        autoinc_max = 3
        region = REGION
        host = HOST

    id = NumberAttribute(hash_key=True)


class Locker(AutoIncrementMixin, Model):
    """Lockers 1 to 3, handed out again in turn (CYCLE) once their last holder has left."""

    class Meta:
        table_name = "demo-lockers"
        autoinc_max = 3
        autoinc_cycle = True
        region = REGION
        host = HOST

    id = NumberAttribute(hash_key=True)
    holder = UnicodeAttribute(null=True)


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        for model in (NextId, Issue, Comment, Invoice, Seat, Locker):
            if not model.exists():
                model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        for project in ("api", "web", "api"):
            issue = Issue(project=project, title="...")
            issue.save()
            print(f"issue {issue.project}-{issue.number}")

        for issue_id in ("api-1", "api-1", "web-1"):
            comment = Comment(issue=issue_id)
            comment.save()
            print(f"comment {comment.issue}#{comment.seq}")

        for day in (datetime(2026, 12, 30), datetime(2026, 12, 31), datetime(2027, 1, 1)):
            with clock.frozen(day):
                invoice = Invoice(total=100)
                invoice.save()
            print(f"{day:%Y-%m-%d}: {invoice.id}")

        for _ in range(4):
            seat = Seat()
            try:
                seat.save()
                print(f"seat {seat.id}")
            except SequenceExhaustedError as exc:
                print(f"no seat: {exc}")

        for holder in ("ann", "bob", "cy"):
            Locker(holder=holder).save()
        Locker.get(1).delete()  # ann leaves: locker 1 is free again
        locker = Locker(holder="dee")
        locker.save()
        print(f"locker {locker.id} for {locker.holder}")
        try:
            Locker(holder="eve").save()  # locker 2 is still bob's: refused, never overwritten
        except ItemExistsError:
            print(f"no locker for eve: locker 2 is still {Locker.get(2).holder}'s")


if __name__ == "__main__":
    main()
