"""Async code: what a FastAPI (or any asyncio) app does with gapless invoice numbers, without a web server.

    python examples/async_app.py

Each "request" is a task of one event loop; they save at once with ``await invoice.asave()``. docs/async.md
shows the same handler as a FastAPI route.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin, NextId, TransactWrite, before_save, testing
from pynamodb_autoinc.exceptions import ItemWriteError

HOST = os.environ.get("DYNAMODB_HOST")  # an endpoint such as http://127.0.0.1:8000; None: moto, in-process
REGION = "us-east-1"
DEMO_KEYS = ["demo-async-invoices", "demo-async-tickets"]


class Invoice(AutoIncrementMixin, Model):
    """Gapless: 1, 2, 3, ... whatever the order the concurrent requests commit in."""

    class Meta:
        table_name = "demo-async-invoices"
        autoinc_key = "demo-async-invoices"
        autoinc_gapless = True
        max_pool_connections = 32  # room for the saves in flight (botocore's default is 10)
        region = REGION
        host = HOST

    id = NumberAttribute(hash_key=True)
    customer = UnicodeAttribute()
    channel = UnicodeAttribute(null=True)


@before_save.connect_via(Invoice)
async def stamp(sender: type, instance: Invoice, is_new: bool, **_: Any) -> None:
    """A coroutine receiver: awaited on the app's event loop, before the ID is assigned."""
    await asyncio.sleep(0)  # e.g. look the customer's channel up with an async client
    if is_new:
        instance.channel = "web"


async def create_invoice(customer: str) -> Invoice:
    """The body of a ``POST /invoices`` handler."""
    invoice = Invoice(customer=customer)
    await invoice.asave()
    return invoice


async def serve() -> None:
    invoices = await asyncio.gather(*(create_invoice(f"customer-{n}") for n in range(10)))
    print(f"10 concurrent requests got invoices {sorted(i.id for i in invoices)}")
    first = min(invoices, key=lambda invoice: invoice.id)
    print(f"invoice {first.id}: channel={first.channel}")

    taken = Invoice(id=first.id, customer="someone else")
    try:
        await taken.asave(condition=Invoice.id.does_not_exist())
    except ItemWriteError:  # the error a sync save() raises here
        print(f"invoice {taken.id} exists: refused, nothing overwritten")

    await Invoice.asave_all([Invoice(customer="bulk-a"), Invoice(customer="bulk-b")])
    async with TransactWrite(connection=Connection(region=REGION, host=HOST)) as tx:
        await tx.asave(Invoice(customer="in a transaction"))
    print(f"after a bulk save and a transaction: counter at {NextId.currval('demo-async-invoices')}")
    print(f"support ticket {await NextId.anextval('demo-async-tickets')}")

    slow = asyncio.create_task(create_invoice("went away"))
    slow.cancel()  # cancelled before its save started: nothing was sent
    try:
        await slow
    except asyncio.CancelledError:
        print(f"a request cancelled before its save started: counter still at {NextId.currval('demo-async-invoices')}")


def main() -> None:
    with testing.dynamodb(HOST, region=REGION):
        print(f"DynamoDB: {HOST or 'moto (in-process)'}")
        if not NextId.exists():
            NextId.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        if Invoice.exists():  # the demo's own table and counters start afresh, so a rerun prints the same
            Invoice.delete_table()
            while Invoice.exists():
                time.sleep(0.5)
        testing.reset_counters(keys=DEMO_KEYS)
        Invoice.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        asyncio.run(serve())


if __name__ == "__main__":
    main()
