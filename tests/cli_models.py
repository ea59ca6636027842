"""Models the command-line tests import by name (``tests.cli_models:User``).

Their endpoint and table names come from the environment the test sets:
``CLI_TEST_HOST`` and ``CLI_TEST_PREFIX``.
"""

from __future__ import annotations

import os

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin

PREFIX = os.environ.get("CLI_TEST_PREFIX", "cli")
HOST = os.environ.get("CLI_TEST_HOST")


class User(AutoIncrementMixin, Model):
    class Meta:
        table_name = f"{PREFIX}-users"
        autoinc_key = f"{PREFIX}-user"
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)
    name = UnicodeAttribute(null=True)


class Code(AutoIncrementMixin, Model):
    """IDs held as text ("1", "2", ...)."""

    class Meta:
        table_name = f"{PREFIX}-codes"
        host = HOST
        region = "us-east-1"

    id = UnicodeAttribute(hash_key=True)


class Invoice(AutoIncrementMixin, Model):
    class Meta:
        table_name = f"{PREFIX}-invoices"
        autoinc_gapless = True
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


class Issue(AutoIncrementMixin, Model):
    class Meta:
        table_name = f"{PREFIX}-issues"
        autoinc_attribute = "number"
        autoinc_scope = "project"
        host = HOST
        region = "us-east-1"

    project = UnicodeAttribute(hash_key=True)
    number = NumberAttribute(range_key=True)


class Countdown(AutoIncrementMixin, Model):
    """A descending sequence: 100, 95, 90, ..."""

    class Meta:
        table_name = f"{PREFIX}-countdown"
        autoinc_start = 100
        autoinc_step = -5
        autoinc_max = 100
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


class Receipt(AutoIncrementMixin, Model):
    """Numbered from 1 again each year: its counter keys end in the year."""

    class Meta:
        table_name = f"{PREFIX}-receipts"
        autoinc_period = "year"
        autoinc_attribute = "number"
        host = HOST
        region = "us-east-1"

    id = UnicodeAttribute(hash_key=True)
    number = NumberAttribute(null=True)


class Ticket(AutoIncrementMixin, Model):
    """A cycling sequence of 1..50."""

    class Meta:
        table_name = f"{PREFIX}-tickets"
        autoinc_max = 50
        autoinc_cycle = True
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


class BigTicket(AutoIncrementMixin, Model):
    """Ticket after a change of Meta: the same table and counter, up to 100."""

    class Meta:
        table_name = f"{PREFIX}-tickets"
        autoinc_key = f"{PREFIX}-tickets"
        autoinc_max = 100
        autoinc_cycle = True
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


class YearlyInvoice(AutoIncrementMixin, Model):
    """The flagship case: gapless, numbered from 1 again each year, stored as ``INV-2026-000001``; its counter
    keys end in the year (``<prefix>-app-invoices#2026``)."""

    class Meta:
        table_name = f"{PREFIX}-billing"
        autoinc_key = f"{PREFIX}-app-invoices"
        autoinc_gapless = True
        autoinc_period = "year"
        autoinc_format = "INV-{period}-{value:06d}"
        host = HOST
        region = "us-east-1"

    id = UnicodeAttribute(hash_key=True)


class Sale(AutoIncrementMixin, Model):
    """Gapless, sharing its counter with Refund: together they number 1, 2, 3, ..."""

    class Meta:
        table_name = f"{PREFIX}-sales"
        autoinc_key = f"{PREFIX}-ledger"
        autoinc_gapless = True
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)


class Refund(AutoIncrementMixin, Model):
    class Meta:
        table_name = f"{PREFIX}-refunds"
        autoinc_key = f"{PREFIX}-ledger"
        autoinc_gapless = True
        host = HOST
        region = "us-east-1"

    id = NumberAttribute(hash_key=True)
