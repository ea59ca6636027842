"""The command line on formatted, per-period IDs (``INV-2026-000001``): check, seed and set read each stored ID
back into its counter key and number through the format's inverse."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import UnicodeAttribute
from pynamodb.models import Model

from pynamodb_autoinc import AutoIncrementMixin
from pynamodb_autoinc._cli_ids import IdReader, unreadable
from pynamodb_autoinc.periods import clock
from tests import test_cli
from tests.test_cli import Cli, run

# the command-line fixtures of tests/test_cli.py: moto's server (or DynamoDB Local), and a Cli on it
moto_server = test_cli.moto_server
endpoint = test_cli.endpoint
cli = test_cli.cli

SPEC = "tests.cli_models:YearlyInvoice"


def formatted(fmt: str, period: Optional[str] = "year") -> Any:
    """The options of a model (no table needed) whose hash key is an ID formatted by ``fmt``."""
    meta = {"table_name": "formatted", "region": "us-east-1", "autoinc_format": fmt, "autoinc_period": period}
    model: Any = type("Formatted", (AutoIncrementMixin, Model), {"Meta": type("Meta", (), meta),
                                                                  "id": UnicodeAttribute(hash_key=True)})
    return model.autoinc_options()


@pytest.mark.backends()
@given(value=st.integers(-10**9, 10**12), year=st.integers(1000, 9999),
       fmt=st.sampled_from(["INV-{period}-{value:06d}", "{period}{value}", "{value:x}/{period}",
                            "R{period}-{value:,}", "{period}:{value:>9}", "{value}-{period}-{value:03d}"]))
def test_a_formatted_id_reads_back_as_its_period_and_number(value, year, fmt):
    """Whatever the library writes for a value and a year reads back as that year and that value."""
    opts = formatted(fmt)
    assert IdReader(opts).read(opts.to_python(value, str(year))) == (str(year), value)


@pytest.mark.backends()
@pytest.mark.parametrize("text", ["INV-2026-1", "INV-2026-0000001", "INV-2026-00001a", "INV-2O26-000001",
                                  "INV-26-000001", "inv-2026-000001", "INV-2026-000001 ", "", None, 7])
def test_text_that_does_not_format_back_to_itself_is_no_id(text):
    """Text the format would not write (other padding, another year's form, other letters) is none of its IDs."""
    assert IdReader(formatted("INV-{period}-{value:06d}")).read(text) is None


@pytest.mark.backends()
def test_a_month_label_is_read_whole():
    """A month's label holds a dash too: ``INV-2026-11-000004`` is November's 4, not 2026's '11-000004'."""
    opts = formatted("INV-{period}-{value:06d}", "month")
    reader = IdReader(opts)
    assert reader.read("INV-2026-11-000004") == ("2026-11", 4)
    assert reader.read("INV-2026-13-000004") is None


@pytest.mark.backends()
@pytest.mark.parametrize("fmt, why", [("INV-{value!s}", "cannot be read back"),
                                      ("INV-{value!r}", "cannot be read back")])
def test_a_format_that_cannot_be_read_back_is_named(fmt, why):
    """A format whose value is no plain field (a conversion) is refused, naming the format. (A float type such as
    ``{value:.1f}`` is refused earlier, when the class is created: it rounds values past 10**16 into one ID.)"""
    assert why in str(unreadable(formatted(fmt, None)))


# -- the flagship case, end to end: INV-<year>-<number>, gapless ------------------------------------------------------


def invoices(cli: Cli) -> Tuple[Any, str]:
    """YearlyInvoice with INV-2025-000001..3 and INV-2026-000001..2 saved, INV-2026-000004 and INV-2026-12 put
    by hand; returns the models module and the counter key's stem."""
    models = cli.models()
    model = models.YearlyInvoice
    model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    cli("create-table", table=False)
    for year, count in ((2025, 3), (2026, 2)):
        with clock.frozen(datetime(year, 6, 1)):
            for _ in range(count):
                model().save()
    for raw in ("INV-2026-000004", "INV-2026-12"):  # another program's: a hole at 3, and an ID of no form
        model._get_connection().put_item(raw)
    return models, model.autoinc_options().key


def rows(out: str) -> List[Tuple[str, int, int, int, List[List[int]]]]:
    return [(r["key"], r["items"], r["max"], r["holes"], r["hole_ranges"]) for r in json.loads(out)]


def test_check_audits_each_years_invoices(cli, capsys):
    """check reads INV-2026-000004 as 2026's number 4: each year's counter is audited on its own, the hole at
    2026's 3 exits 3 (gapless), and the ID of no form is left out with a note."""
    _, key = invoices(cli)
    code, out, err = run(capsys, "--host", cli.host, "--region", "us-east-1", "check", "--model", SPEC, "--json")
    assert code == 3, err
    assert rows(out) == [(f"{key}#2025", 3, 3, 0, []), (f"{key}#2026", 3, 4, 1, [[3, 3]])]
    assert "note: 1 item of YearlyInvoice holds no id of the form 'INV-{period}-{value:06d}'; left out" in err


def test_seed_moves_each_years_counter_to_its_furthest_invoice(cli, capsys):
    """seed --dry-run says 2025's counter stays at 3 and 2026's moves from 2 to 4; seed then does that, and the
    next invoice of 2026 is INV-2026-000005."""
    models, key = invoices(cli)
    reach = ["--host", cli.host, "--region", "us-east-1"]
    code, out, err = run(capsys, *reach, "seed", "--model", SPEC, "--dry-run")
    assert code == 0, err
    assert f"dry run: {key}#2025: would stay at 3, already at or above 3" in out
    assert f"dry run: {key}#2026: would be raised to 4 (from 2)" in out
    code, out, err = run(capsys, *reach, "seed", "--model", SPEC)
    assert code == 0, err
    assert f"{key}#2025: already at or above 3" in out and f"{key}#2026: raised to 4" in out
    with clock.frozen(datetime(2026, 7, 1)):
        invoice = models.YearlyInvoice()
        invoice.save()
    assert invoice.id == "INV-2026-000005"


def test_set_compares_with_the_years_stored_invoices(cli, capsys):
    """set --key <key>#2026 refuses 2, behind the stored INV-2026-000004 (dry run or not), naming that ID; a
    dry run of 10 shows the move, and set 10 makes the next invoice INV-2026-000011."""
    models, key = invoices(cli)
    reach = ["--host", cli.host, "--region", "us-east-1"]
    for dry in (["--dry-run"], []):
        code, _, err = run(capsys, *reach, "set", "2", "--model", SPEC, "--key", f"{key}#2026", *dry)
        assert code == 1
        assert f"already stores id='INV-2026-000004' under counter '{key}#2026'" in err
        assert "Set it to 4 or higher" in err
    code, out, err = run(capsys, *reach, "set", "10", "--model", SPEC, "--key", f"{key}#2026", "--dry-run")
    assert code == 0, err
    assert f"counter '{key}#2026' would be set: value 2 -> 10" in out and "the next value would be 11" in out
    code, out, err = run(capsys, *reach, "set", "10", "--model", SPEC, "--key", f"{key}#2026")
    assert code == 0, err
    with clock.frozen(datetime(2026, 7, 1)):
        invoice = models.YearlyInvoice()
        invoice.save()
    assert invoice.id == "INV-2026-000011"


def test_a_broken_invoice_counter_is_recovered_by_seed(cli, capsys):
    """A year's counter forced back behind its invoices (which would refuse the next gapless save) is put right
    by seed alone: no set --force, no looking up the last invoice by hand."""
    models, key = invoices(cli)
    reach = ["--host", cli.host, "--region", "us-east-1"]
    code, _, err = run(capsys, *reach, "set", "1", "--force", "--model", SPEC, "--key", f"{key}#2025")
    assert code == 0, err
    code, out, err = run(capsys, *reach, "seed", "--model", SPEC)
    assert code == 0, err
    assert f"{key}#2025: raised to 3" in out
    with clock.frozen(datetime(2025, 12, 31)):
        invoice = models.YearlyInvoice()
        invoice.save()
    assert invoice.id == "INV-2025-000004"
