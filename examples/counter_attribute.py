"""Counter attributes: a number every save() and update() raises, with no read.

    python examples/counter_attribute.py
"""

from __future__ import annotations

import os

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, CounterAttribute, CounterMixin, NextId, testing

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"


class Page(CounterMixin, Model):
    """A plain model: views count up from 0, stock counts down from 100."""

    class Meta:
        table_name = "demo-pages"
        region = REGION
        host = HOST

    url = UnicodeAttribute(hash_key=True)
    title = UnicodeAttribute(null=True)
    views = CounterAttribute()
    stock = CounterAttribute(start=100, delta=-1)


class Ticket(CounterMixin, AutoIncrementMixin, Model):
    """An auto-increment model counting its own edits (CounterMixin goes first)."""

    class Meta:
        table_name = "demo-tickets"
        region = REGION
        host = HOST

    id = NumberAttribute(hash_key=True)
    subject = UnicodeAttribute()
    edits = CounterAttribute(start=1)


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        for model in (NextId, Page, Ticket):
            if not model.exists():
                model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        page = Page("/home", title="Home")
        page.save()
        print(f"new page: views={page.views} stock={page.stock}")
        page.save()
        page.update(actions=[Page.title.set("Welcome")])
        print(f"after a save and an update: views={page.views} stock={page.stock}")

        stale = Page("/home", title="Welcome")  # never read: holds no counter value
        stale.save()
        print(f"a save from an unread instance: views={stale.views}")

        ticket = Ticket(subject="printer")
        ticket.save()
        ticket.subject = "printer on fire"
        ticket.save()
        print(f"ticket {ticket.id}: edits={ticket.edits}")


if __name__ == "__main__":
    main()
