"""``pynamodb-autoinc get --model``: a model numbering per period reads the current period's counter."""

from __future__ import annotations

from datetime import datetime

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc.periods import clock
from tests.test_cli import importable, reach, run


@pytest.mark.modes("fast")
def test_get_of_a_per_period_model_reads_the_current_period(make_model, monkeypatch, capsys, backend, credentials):
    """A model numbered per month, with 2 saves in November 2026 and 1 in December: get --model, no key, prints
    the current month's counter (2 in November, 1 in December)."""
    model = make_model("Receipt", id=UnicodeAttribute(hash_key=True), number=NumberAttribute(null=True),
                       autoinc_attribute="number", autoinc_period="month")
    for month, count in ((11, 2), (12, 1)):
        with clock.frozen(datetime(2026, month, 3)):
            for i in range(count):
                model(id=f"{month}-{i}").save()
    spec = importable(monkeypatch, "Receipt", model)
    for month, value in ((11, 2), (12, 1)):
        with clock.frozen(datetime(2026, month, 20)):
            code, out, err = run(capsys, *reach(backend), "get", "--model", spec)
        assert (code, out.strip()) == (0, str(value)), err


@pytest.mark.modes("fast")
def test_get_of_a_scoped_per_period_model_still_asks_for_the_key(make_model, monkeypatch, capsys, backend,
                                                                 credentials):
    """A model numbered per project and per year names no counter by itself: get --model asks for the key."""
    model = make_model("Ticket", id=UnicodeAttribute(hash_key=True), project=UnicodeAttribute(),
                       number=NumberAttribute(null=True), autoinc_attribute="number", autoinc_scope="project",
                       autoinc_period="year", create=False)
    code, _, err = run(capsys, *reach(backend), "get", "--model", importable(monkeypatch, "Ticket", model))
    assert code == 1
    assert "keeps one counter per project and period" in err
