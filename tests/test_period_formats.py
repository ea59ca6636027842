"""A format that shows only part of the period (``{period:.4}`` of a month, ``{period[2]}``) on a key: the
sequence restarts each period, so two periods' items would get one key (saving the first item of the second
period failed with ItemExistsError, and its advice to raise the counter was wrong). Such a model is refused when
its class is created; outside the key, where IDs may repeat, the format is accepted."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc.exceptions import ConfigurationError
from pynamodb_autoinc.periods import clock


def invoice(fmt: str, period: str, *, in_key: bool = True) -> Any:
    """A model numbering its invoices per ``period`` with ``fmt``, in its key or outside it (nothing is sent)."""
    attrs = ({"id": UnicodeAttribute(hash_key=True)} if in_key else
             {"pk": NumberAttribute(hash_key=True), "id": UnicodeAttribute(null=True)})
    meta = {"table_name": "invoices", "region": "us-east-1", "autoinc_period": period, "autoinc_format": fmt,
            "autoinc_attribute": "id"}
    return type("Invoice", (AutoIncrementMixin, Model), {"Meta": type("Meta", (), meta), **attrs})


@pytest.mark.parametrize("fmt, period, clash", [
    ("INV-{period:.4}-{value:06d}", "month", "the months '2026-11' and '2026-12' both give 'INV-2026-000001'"),
    ("INV-{period:.7}-{value}", "day", "the days '2026-11-22' and '2026-11-23' both give 'INV-2026-11-1'"),
    ("INV-{period[2]}{period[3]}-{value}", "year", "the years '2026' and '2126' both give 'INV-26-1'"),
    ("{period:.2}{value}", "year", "the years '2026' and '2027' both give '201'"),
    ("{period[5]}{period[6]}-{value}", "month", "the months '2026-11' and '2027-11' both give '11-1'"),
])
def test_a_key_format_showing_part_of_the_period_is_refused(fmt, period, clash):
    """A key whose format shows only part of the period is refused when the class is created, naming two periods
    whose first IDs would be one key, and the fix."""
    with pytest.raises(ConfigurationError) as info:
        invoice(fmt, period)
    assert f"Invoice: Meta.autoinc_format {fmt!r} shows only part of the period: {clash}" in str(info.value)
    assert "show the whole period with {period}" in str(info.value)


@pytest.mark.parametrize("fmt, period", [
    ("INV-{period}-{value:06d}", "month"),
    ("{period:>12}/{value}", "day"),
    ("{period!s}-{value}", "year"),
    ("{period:.4}/{period}/{value}", "month"),
    ("INV-{period[0]}{period[1]}{period[2]}{period[3]}-{value}", "year"),
])
def test_a_key_format_showing_the_whole_period_is_accepted(fmt, period):
    """A format that shows every part of the period (padded, converted, sliced field by field) is accepted."""
    assert invoice(fmt, period).autoinc_options().fmt == fmt


@pytest.mark.backends("moto")
def test_part_of_the_period_outside_the_key_is_accepted(backend):
    """Outside the key, where a restarting sequence's values may repeat, a format showing part of the period is
    accepted and numbers each month from 1 in that month's counter."""
    Invoice = invoice("INV-{period:.4}-{value:06d}", "month", in_key=False)
    backend.counter(model=Invoice)
    backend.create(Invoice)
    saved = []
    for pk, month in ((1, 11), (2, 12)):
        with clock.frozen(datetime(2026, month, 5)):
            item = Invoice(pk=pk)
            item.save()
            saved.append(item.id)
    assert saved == ["INV-2026-000001", "INV-2026-000001"]
    assert Invoice.autoinc_options().counter.currval("invoices#2026-12") == 1
