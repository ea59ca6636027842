"""The sequence family: start, step, max, scope, query strategy, periods, formats, in-table counters."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Dict, List

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import (
    AutoIncrementMixin,
    NextId,
    after_save,
)
from pynamodb_autoinc.counter import RESERVED_PREFIX
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    ContentionError,
    SequenceExhaustedError,
    UnassignedIdError,
)
from pynamodb_autoinc.periods import clock
from tests.helpers import auto_model, ids, run_in_threads
from tests.hypothesis_setup import budget

pytestmark = pytest.mark.modes('fast', 'block', 'gapless')


def save_many(model: Any, n: int, **values: Any) -> List[Any]:
    ids = []
    for _ in range(n):
        item = model(**values)
        item.save()
        ids.append(getattr(item, model.autoinc_options().attribute))
    return ids


def counter_value(model: Any, key: str) -> Any:
    return model.autoinc_options().counter.currval(key)


def test_negative_step_counts_down(make_model):
    """A negative step hands out start, start+step, … downwards."""
    Countdown = make_model("Countdown", autoinc_start=10, autoinc_step=-3, autoinc_max=10)
    assert save_many(Countdown, 3) == [10, 7, 4]


def test_max_stops_the_sequence_without_spending(make_model):
    """Past autoinc_max a save raises SequenceExhaustedError; nothing is written or spent."""
    Seat = make_model("Seat", autoinc_max=3)
    assert save_many(Seat, 3) == [1, 2, 3]
    seat = Seat()
    with pytest.raises(SequenceExhaustedError, match="has reached its limit"):
        seat.save()
    assert seat.id is None
    assert sorted(s.id for s in Seat.scan()) == [1, 2, 3]
    assert counter_value(Seat, Seat.Meta.table_name) == 3


def test_min_is_the_end_of_a_negative_step(make_model):
    """With a negative step, autoinc_min is the smallest value handed out (PostgreSQL's MINVALUE)."""
    Countdown = make_model("Countdown", autoinc_step=-1, autoinc_min=2, autoinc_max=3)
    assert save_many(Countdown, 2) == [3, 2]
    with pytest.raises(SequenceExhaustedError, match="would pass its minimum"):
        Countdown().save()


def test_start_past_max_is_refused(make_model):
    """A sequence whose start already lies past its max is a configuration error."""
    with pytest.raises(ConfigurationError, match="lies above the maximum Meta.autoinc_max = 4"):
        make_model("Broken", autoinc_start=5, autoinc_max=4)


def test_max_as_the_floor_of_a_countdown_is_refused_with_the_new_meaning(make_model):
    """0.1.0's autoinc_max as the smallest value of a countdown is refused, naming autoinc_min instead."""
    with pytest.raises(ConfigurationError, match="lowest value of a descending sequence is Meta.autoinc_min"):
        make_model("Old", autoinc_start=10, autoinc_step=-1, autoinc_max=2)


@pytest.fixture
def issue_model(make_model):
    """Issues numbered per project: hash key project, range key number (the query-max sequence pattern)."""
    return make_model(
        "Issue",
        project=UnicodeAttribute(hash_key=True),
        number=NumberAttribute(range_key=True),
        title=UnicodeAttribute(null=True),
        autoinc_attribute="number",
        autoinc_scope="project",
    )


@pytest.mark.modes('fast', 'gapless')
def test_scope_gives_each_parent_its_own_sequence(issue_model):
    """Project A's issues are 1, 2, 3 and project B's 1, 2, with separate counters."""
    Issue = issue_model
    assert save_many(Issue, 2, project="A") == [1, 2]
    assert save_many(Issue, 2, project="B") == [1, 2]
    assert save_many(Issue, 1, project="A") == [3]
    assert sorted((i.project, i.number) for i in Issue.scan()) == [("A", 1), ("A", 2), ("A", 3), ("B", 1), ("B", 2)]
    base = Issue.Meta.table_name
    assert counter_value(Issue, f"{base}#A") == 3
    assert counter_value(Issue, f"{base}#B") == 2


def test_missing_scope_value_is_named(issue_model):
    """Saving without the scope value says which attribute to set; nothing is allocated."""
    with pytest.raises(UnassignedIdError, match="Issue.project is None, but number is numbered per project"):
        issue_model().save()


def test_scope_of_several_attributes(make_model):
    """A tuple scope numbers each combination separately; '#' in values cannot collide."""
    Line = make_model(
        "Line",
        pk=UnicodeAttribute(hash_key=True),
        seq=NumberAttribute(null=True),
        org=UnicodeAttribute(null=True),
        doc=UnicodeAttribute(null=True),
        autoinc_attribute="seq",
        autoinc_scope=("org", "doc"),
    )
    assert save_many(Line, 1, pk="1", org="a#b", doc="c")[0] == 1
    assert save_many(Line, 1, pk="2", org="a", doc="b#c")[0] == 1
    assert save_many(Line, 1, pk="3", org="a#b", doc="c")[0] == 2


@pytest.fixture
def query_model(make_model):
    """Issues numbered by the query strategy: no counter item at all."""
    return make_model(
        "Issue",
        project=UnicodeAttribute(hash_key=True),
        number=NumberAttribute(range_key=True),
        autoinc_attribute="number",
        autoinc_strategy="query",
        autoinc_backoff=0,
    )


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_numbers_each_partition(query_model, requests):
    """The query strategy reads the largest range key and puts the next in one PutItem (one write unit, as
    docs/modes.md says); no counter item is written."""
    Issue = query_model
    assert save_many(Issue, 3, project="A") == [1, 2, 3]
    assert save_many(Issue, 1, project="B") == [1]
    assert not [op for op, table in requests if table == "NextId"]
    requests.clear()
    save_many(Issue, 1, project="A")
    assert [op for op, _ in requests] == ["Query", "PutItem"]


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_retries_a_collision(query_model):
    """When another writer takes the next range key first, the save re-reads and takes the one after."""
    Issue = query_model
    save_many(Issue, 1, project="A")
    rivals = [2]

    def rival(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "PutItem" and rivals:
            Issue._get_connection().put_item("A", range_key=str(rivals.pop()), attributes={})

    with pre_dynamodb_send.connected_to(rival):
        assert save_many(Issue, 1, project="A") == [3]
    assert sorted(i.number for i in Issue.query("A")) == [1, 2, 3]


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_gives_up_after_retries(make_model):
    """A partition that keeps changing under the save ends in ContentionError, nothing written by us."""
    Issue = make_model("Issue", project=UnicodeAttribute(hash_key=True), number=NumberAttribute(range_key=True),
                       autoinc_attribute="number", autoinc_strategy="query", autoinc_retries=2, autoinc_backoff=0)
    taken: List[int] = []
    busy: List[bool] = []

    def rival(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "PutItem" and not busy:
            busy.append(True)
            last = max([i.number for i in Issue.query("A", consistent_read=True)], default=0)
            taken.append(last + 1)
            Issue._get_connection().put_item("A", range_key=str(last + 1), attributes={})
            busy.clear()

    issue = Issue(project="A")
    with pre_dynamodb_send.connected_to(rival), pytest.raises(ContentionError, match="3 times in a row"):
        issue.save()
    assert issue.number is None
    assert len(taken) == 3
    assert sorted(i.number for i in Issue.query("A")) == taken


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_needs_a_number_range_key(make_model):
    """The query strategy on an attribute that is not the range key is refused."""
    with pytest.raises(ConfigurationError, match="make 'id' the model's range key"):
        make_model("Broken", autoinc_strategy="query")


@pytest.fixture
def invoice_model(make_model):
    return make_model("Invoice", id=UnicodeAttribute(hash_key=True), autoinc_period="year",
                      autoinc_format="INV-{period}-{value:06d}")


@pytest.mark.modes('fast', 'gapless')
def test_yearly_invoice_numbers_restart(invoice_model):
    """Invoice numbers restart each year and carry the year: INV-2026-000002, then INV-2027-000001."""
    Invoice = invoice_model
    with clock.frozen(datetime(2026, 12, 31, 23, 59, 59)):
        assert save_many(Invoice, 2) == ["INV-2026-000001", "INV-2026-000002"]
    with clock.frozen(datetime(2027, 1, 1, 0, 0, 0)):
        assert save_many(Invoice, 1) == ["INV-2027-000001"]
    base = Invoice.Meta.table_name
    assert counter_value(Invoice, f"{base}#2026") == 2
    assert counter_value(Invoice, f"{base}#2027") == 1


def test_same_month_of_another_year_is_another_period(make_model):
    """January 2026 and January 2027 are different periods (months are stored with the year)."""
    Ticket = make_model("Ticket", id=UnicodeAttribute(hash_key=True), autoinc_period="month",
                        autoinc_format="{period}/{value}")
    with clock.frozen(datetime(2026, 1, 15)):
        assert save_many(Ticket, 2) == ["2026-01/1", "2026-01/2"]
    with clock.frozen(datetime(2027, 1, 15)):
        assert save_many(Ticket, 1) == ["2027-01/1"]


def test_daily_period_without_format(make_model):
    """A daily sequence in a NumberAttribute restarts at 1 each UTC day."""
    Order = make_model("Order", pk=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                       autoinc_attribute="seq", autoinc_period="day")
    seqs = []
    for pk, day, hour in (("a", 22, 23), ("b", 22, 23), ("c", 23, 0)):
        with clock.frozen(datetime(2026, 11, day, hour, 30)):
            order = Order(pk=pk)
            order.save()
            seqs.append(order.seq)
    assert seqs == [1, 2, 1]


@pytest.fixture
def receipt_model(make_model):
    """Receipts numbered 1, 2, 3, ... again each year, an ID set by hand moving the year's counter past it."""
    return make_model("Receipt", pk=UnicodeAttribute(hash_key=True), number=NumberAttribute(null=True),
                      note=UnicodeAttribute(null=True), autoinc_attribute="number", autoinc_period="year",
                      autoinc_track_explicit=True)


def test_editing_last_years_item_leaves_this_years_counter(receipt_model):
    """Saving again, in 2027, a 2026 receipt saved earlier moves no counter: 2027's numbers go 1, 2."""
    Receipt = receipt_model
    with clock.frozen(datetime(2026, 12, 30)):
        old = [Receipt(pk=f"r{n}") for n in range(5)]
        for receipt in old:
            receipt.save()
    with clock.frozen(datetime(2027, 1, 2)):
        first = save_many(Receipt, 1, pk="n1")
        old[4].note = "corrected"
        old[4].save()
        assert first + save_many(Receipt, 1, pk="n2") == [1, 2]


def test_editing_a_read_item_of_last_year_leaves_this_years_counter(receipt_model):
    """A 2026 receipt read from the table and saved in 2027 moves no counter (save and save_all alike)."""
    Receipt = receipt_model
    with clock.frozen(datetime(2026, 12, 30)):
        for n in range(5):
            Receipt(pk=f"r{n}").save()
    last_year = counter_value(Receipt, f"{Receipt.Meta.table_name}#2026")
    with clock.frozen(datetime(2027, 1, 2)):
        read = Receipt.get("r4")
        read.note = "corrected"
        read.save()
        Receipt.save_all([Receipt.get("r3")])
        assert save_many(Receipt, 1, pk="n1") + save_many(Receipt, 1, pk="n2") == [1, 2]
    assert counter_value(Receipt, f"{Receipt.Meta.table_name}#2026") == last_year


def test_an_edit_is_known_when_an_after_save_receiver_fails(receipt_model):
    """A failing after_save receiver (logged, the save returns) does not make the saved receipt's next save,
    in 2027, look like an ID set by hand: 2027's numbers still go 1, 2."""
    Receipt = receipt_model

    def broken(sender: Any, **_: Any) -> None:
        raise RuntimeError("receiver failed")

    with after_save.connected_to(broken, sender=Receipt):
        with clock.frozen(datetime(2026, 12, 30)):
            old = [Receipt(pk=f"r{n}") for n in range(5)]
            for receipt in old:
                receipt.save()
        with clock.frozen(datetime(2027, 1, 2)):
            old[4].save()
            assert save_many(Receipt, 1, pk="n1") + save_many(Receipt, 1, pk="n2") == [1, 2]


def test_an_id_set_by_hand_is_tracked_on_this_periods_counter(receipt_model):
    """A new receipt given number 7 by hand in 2027 moves 2027's counter to 7: the next new one gets 8."""
    Receipt = receipt_model
    with clock.frozen(datetime(2026, 12, 30)):
        save_many(Receipt, 1, pk="old")
    with clock.frozen(datetime(2027, 1, 2)):
        Receipt(pk="by-hand", number=7).save()
        assert save_many(Receipt, 1, pk="n") == [8]


def test_a_period_on_a_number_range_key_is_refused(make_model):
    """A sequence restarting each year in a number range key is refused when the class is created, naming the
    ways that work: a year's receipts would take the keys of the last year's under one hash key."""
    with pytest.raises(ConfigurationError, match="range key 'num' repeats.*autoinc_scope = 'year'"):
        make_model("Receipt", year=UnicodeAttribute(hash_key=True), num=NumberAttribute(range_key=True),
                   autoinc_attribute="num", autoinc_period="year", create=False)


def test_a_period_in_the_hash_key_numbers_the_range_key_per_period(make_model):
    """A year held in a number hash key and named as the scope numbers each year's range keys from 1, a late
    receipt of 2026 saved in 2027 included, on the counter of its own year."""
    Receipt = make_model("Receipt", year=NumberAttribute(hash_key=True), num=NumberAttribute(range_key=True),
                         autoinc_attribute="num", autoinc_scope="year")
    with clock.frozen(datetime(2026, 12, 31)):
        assert save_many(Receipt, 2, year=2026) == [1, 2]
    with clock.frozen(datetime(2027, 1, 1)):
        assert save_many(Receipt, 1, year=2027) + save_many(Receipt, 1, year=2026.0) == [1, 3]
    assert sorted((int(r.year), r.num) for r in Receipt.scan(consistent_read=True)) == [
        (2026, 1), (2026, 2), (2026, 3), (2027, 1)]
    assert counter_value(Receipt, f"{Receipt.Meta.table_name}#2026") == 3


def test_format_without_period(make_model):
    """autoinc_format shapes the string ID; the counter stays a number."""
    Ticket = make_model("Ticket", id=UnicodeAttribute(hash_key=True), autoinc_format="T{value:04d}")
    assert save_many(Ticket, 2) == ["T0001", "T0002"]


@pytest.mark.parametrize(("options", "message"), [
    ({"autoinc_format": "X{value}"}, "Meta.autoinc_format needs a UnicodeAttribute"),
    ({"id": UnicodeAttribute(hash_key=True), "autoinc_format": "{nope}"}, "is not usable"),
    ({"id": UnicodeAttribute(hash_key=True), "autoinc_format": "constant"}, "is not usable"),
    ({"autoinc_period": "week"}, "Meta.autoinc_period must be one of 'year', 'month', 'day'"),
    ({"autoinc_scope": "nope"}, "Meta.autoinc_scope must name attributes of the model"),
    ({"autoinc_scope": "id"}, "cannot contain the auto-increment attribute"),
    pytest.param({"autoinc_strategy": "random"}, "Meta.autoinc_strategy must be one of 'counter', 'query'",
                 marks=pytest.mark.modes()),
    ({"autoinc_max": 2.5}, "Meta.autoinc_max must be an int or None"),
    ({"autoinc_counter_in_table": True}, "needs a string hash key, but 'id' is a NumberAttribute"),
])
def test_sequence_misconfiguration(make_model, options, message):
    """Unusable sequence options are named when the model class is created."""
    with pytest.raises(ConfigurationError, match=message):
        make_model("Broken", create=False, **options)


def formatted_model(fmt: str, **meta: Any) -> Any:
    """A model whose string hash key is formatted by ``fmt`` (no table, nothing sent)."""
    options = {"table_name": "formatted", "region": "us-east-1", "autoinc_format": fmt, **meta}
    return type("Formatted", (AutoIncrementMixin, Model), {"Meta": type("Meta", (), options),
                                                          "id": UnicodeAttribute(hash_key=True)})


@pytest.mark.modes()
@pytest.mark.backends()
@pytest.mark.parametrize("fmt, first, second", [("{value!s:.3}", 100, 1000), ("{value:.2e}", 1000, 1001),
                                                ("X{value!r:.2}", 10, 100), ("{value:1>4}", 1, 11),
                                                ("{value:.1f}", 9999999999999999, 10 ** 16)])
def test_a_format_that_cuts_the_number_is_refused_naming_two_values(fmt, first, second):
    """A format that writes two values of the sequence as one ID (a precision, a float, a fill of digits) is
    refused when the class is created, naming the format and the first two values that collide."""
    with pytest.raises(ConfigurationError, match=rf"autoinc_format '{re.escape(fmt)}' does not give each value .* "
                                                 rf"{first} and {second} both give"):
        formatted_model(fmt)


@pytest.mark.modes()
@pytest.mark.backends()
@pytest.mark.parametrize("fmt, meta", [("{value!s:.3}", {"autoinc_max": 999}), ("{value:.2e}", {"autoinc_max": 100}),
                                       ("{value:03d}", {"autoinc_step": -1}), ("{value:+,}", {"autoinc_min": -10**9}),
                                       ("{value:#x}", {}), ("R{value:_b}", {"autoinc_min": -5})])
def test_a_format_one_to_one_within_the_bounds_is_accepted(fmt, meta):
    """A format is judged on the sequence's own bounds: one that would cut values past them is accepted."""
    assert formatted_model(fmt, **meta).autoinc_options().fmt == fmt


@pytest.mark.modes()
@pytest.mark.backends()
def test_a_format_that_does_not_show_the_whole_value_is_refused():
    """A format that shows no value field as a number (a character) is refused: its IDs do not read back as
    their numbers, though they differ."""
    with pytest.raises(ConfigurationError, match=r"no field shows the whole value, so an ID does not read back"):
        formatted_model("A{value:c}", autoinc_max=1000)


@pytest.mark.modes()
@pytest.mark.backends()
def test_a_format_naming_period_without_a_period_is_refused():
    """``{period}`` in a format of a model without ``Meta.autoinc_period`` is refused: it would always be empty."""
    with pytest.raises(ConfigurationError, match=r"shows \{period\}, but the model sets no Meta.autoinc_period"):
        formatted_model("INV-{period}-{value:06d}")


SPECS = st.builds("{}{}{}{}{}{}{}".format, st.sampled_from(["", "0", "*", "1", " "]).flatmap(
    lambda fill: st.sampled_from(["", f"{fill}<", f"{fill}>", f"{fill}^", f"{fill}="] if fill else ["", "<", ">"])),
    st.sampled_from(["", "+", " "]), st.sampled_from(["", "#"]), st.sampled_from(["", "3", "8", "12"]),
    st.sampled_from(["", ",", "_"]), st.sampled_from(["", ".1", ".3", ".8"]),
    st.sampled_from(["", "d", "x", "X", "o", "b", "e", "f", "g", "n"]))


@pytest.mark.modes()
@pytest.mark.backends()
@given(spec=SPECS, conversion=st.sampled_from(["", "!s", "!r"]), low=st.integers(-10**6, 10**3),
       span=st.integers(1, 10**13), step=st.sampled_from([1, 2, 7, -1, -3]), data=st.data())
def test_an_accepted_format_gives_every_value_of_the_sequence_its_own_id(spec, conversion, low, span, step, data):
    """Whatever format of the value is accepted gives distinct IDs to any values of its sequence; a format it
    would give one ID twice is refused when the class is created."""
    fmt = f"ID-{{value{conversion}:{spec}}}"
    try:
        model = formatted_model(fmt, autoinc_min=low, autoinc_max=low + span, autoinc_step=step)
    except ConfigurationError:
        return
    sequence = model.autoinc_options().sequence
    last = (sequence.maximum - sequence.minimum) // abs(step)
    values = data.draw(st.lists(st.integers(0, last), min_size=min(2, last + 1), max_size=40, unique=True))
    ids = {fmt.format(value=sequence.start + position * step) for position in values}
    assert len(ids) == len(values), fmt


@pytest.fixture
def users_table(make_model):
    """The single table of "Reliable Auto-Incrementing Integers in DynamoDB": users and their counter item."""
    return make_model(
        "Users",
        pk=UnicodeAttribute(hash_key=True),
        num_identifier=NumberAttribute(null=True),
        user_name=UnicodeAttribute(null=True),
        autoinc_attribute="num_identifier",
        autoinc_key="User",
        autoinc_counter_in_table=True,
    )


def test_counter_in_the_model_table(users_table, requests, mode):
    """With autoinc_counter_in_table the counter item lives in the model's table under a reserved key."""
    Users = users_table
    for name in ("Uros", "Alex", "Luc"):
        Users(pk=f"User#{name}", user_name=name).save()
    tables = {table for _, table in requests if table}
    assert tables == {Users.Meta.table_name}
    raw = Users._get_connection().get_item(f"{RESERVED_PREFIX}User", consistent_read=True)["Item"]
    claim = raw.pop("NextClaim", None)  # a block's reserve leaves its token (a resend of it is known for its own)
    assert (claim is not None) == (mode == "block")
    assert raw == {"pk": {"S": f"{RESERVED_PREFIX}User"}, "NextId": {"N": "3"},
                   "NextOptions": {"S": "start=1 step=1 min=1 max=9223372036854775807 no cycle"}}


def test_scan_hides_the_counter_item(users_table):
    """The model's scan leaves out the counter item; a raw scan of the table shows it."""
    Users = users_table
    Users(pk="User#Kirk").save()
    assert [u.pk for u in Users.scan()] == ["User#Kirk"]
    assert [u.pk for u in Users.scan(Users.pk.startswith("User#"))] == ["User#Kirk"]
    raw = Users._get_connection().scan()["Items"]
    assert len(raw) == 2


@pytest.mark.modes('fast', 'gapless')
def test_counter_in_a_table_with_a_range_key(make_model):
    """A table with a range key reserves a range value for the counter item too."""
    Events = make_model("Events", pk=UnicodeAttribute(hash_key=True), sk=UnicodeAttribute(range_key=True),
                        seq=NumberAttribute(null=True), autoinc_attribute="seq", autoinc_counter_in_table=True)
    for sk in ("a", "b"):
        Events(pk="stream", sk=sk).save()
    assert sorted((e.sk, e.seq) for e in Events.scan()) == [("a", 1), ("b", 2)]
    raw = Events._get_connection().get_item(f"{RESERVED_PREFIX}{Events.Meta.table_name}", range_key="__autoinc__",
                                            consistent_read=True)
    assert raw["Item"]["NextId"] == {"N": "2"}


@pytest.mark.parametrize("mode_options", [{"autoinc_gapless": False}, {"autoinc_gapless": True},
                                          {"autoinc_block": 5}])
def test_scope_on_the_only_key_is_refused(mode_options):
    """autoinc_scope when the ID is the only key is refused when the class is created, in every counter mode."""
    meta = type("Meta", (), {"table_name": "m", "autoinc_scope": "tenant", **mode_options})
    with pytest.raises(ConfigurationError):
        type("M", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                                 "tenant": UnicodeAttribute()})


def test_scope_on_a_hash_key_id_with_a_range_key_is_refused():
    """ID as hash key and a range key scoped: every scope would still collide on the hash key alone? The
    scope is the range key, so each scope's 1 is a distinct key: accepted."""
    meta = type("Meta", (), {"table_name": "m", "autoinc_scope": "tenant", "autoinc_gapless": False})
    type("M", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                             "tenant": UnicodeAttribute(range_key=True)})


@pytest.mark.modes("query")
def test_query_strategy_keys_below_min_in_save_all(make_model):
    """Query strategy, keys below autoinc_min: save_all() numbers from autoinc_start."""
    Item = make_model("Item", autoinc_min=100, autoinc_start=100)
    Item("p", 3).save()
    items = [Item(), Item()]
    Item.save_all(items)
    assert [i.id for i in items] == [100, 101]


@pytest.mark.modes("query")
def test_query_strategy_keys_above_max_are_not_the_sequences(make_model):
    """Query strategy, a key stored above autoinc_max: the next new item is still numbered within bounds."""
    Item = make_model("Item", autoinc_max=50)
    Item("p", 1).save()
    Item("p", 1000).save()
    item = Item()
    item.save()
    assert item.id == 2


@pytest.mark.backends("local")  # threads racing on one counter: moto has no request locking
@pytest.mark.modes("fast", "block")
def test_threads_at_the_bound_take_what_is_left_and_overwrite_nothing(make_model, mode):
    """Fast and block modes, max 10, counter at 8, three threads: 9 and 10 are stored, the third gets
    SequenceExhaustedError and keeps no ID; saving it again is refused too."""
    Item = make_model("Item", autoinc_max=10, name=UnicodeAttribute())
    Item.autoinc_options().counter.setval(Item.autoinc_options().key, 8)
    items = [Item(name=f"t{i}") for i in range(3)]
    errors = run_in_threads([i.save for i in items])
    assert [type(e) for e in errors.values()] == [SequenceExhaustedError]
    failed, = errors
    assert items[failed].id is None
    assert sorted((i.id, i.name) for i in Item.scan(consistent_read=True)) == \
        sorted((i.id, i.name) for i in items if i.id is not None)
    assert ids(Item) == [9, 10]
    with pytest.raises(SequenceExhaustedError):
        items[failed].save()
    assert ids(Item) == [9, 10]


@pytest.mark.modes("query")
def test_query_strategy_counting_down_ignores_keys_outside_its_bounds(make_model):
    """Query strategy counting down from 100 (min 10): keys stored above the maximum or below the minimum are
    not the sequence's; new items get 100, then 99."""
    Item = make_model("Item", autoinc_step=-1, autoinc_start=100, autoinc_max=100, autoinc_min=10)
    Item("p", 500).save()
    Item("p", 3).save()
    first, second = Item(), Item()
    first.save()
    second.save()
    assert (first.id, second.id) == (100, 99)


@pytest.mark.modes()
def test_query_strategy_range_key_stored_under_a_dotted_name(backend):
    """The query strategy reads the partition's last range key also when its name in the table holds a dot
    (``attr_name="seq.no"``): a dot in a stored name is part of the name, not a path into a map."""
    Line = auto_model(backend, "Line", {
        "order": UnicodeAttribute(hash_key=True),
        "number": NumberAttribute(range_key=True, attr_name="seq.no"),
    }, counter_table=False, autoinc_strategy="query", autoinc_attribute="number")
    numbers = []
    for _ in range(3):
        line = Line(order="o-1")
        line.save()
        numbers.append(line.number)
    assert numbers == [1, 2, 3]


@pytest.mark.modes()
@pytest.mark.backends()
def test_counter_table_and_counter_in_table_together_are_refused_at_class_creation(backend):
    """A model setting both ``Meta.autoinc_counter`` (a counter table of its own) and
    ``Meta.autoinc_counter_in_table`` is refused with a ``ConfigurationError`` when the class is created, rather
    than keeping its counter in its own table and silently ignoring the counter model it named."""

    class Sequences(NextId):
        class Meta:
            table_name = "sequences"

    meta = type("Meta", (), {"table_name": "docs", "autoinc_attribute": "number", "autoinc_counter": Sequences,
                             "autoinc_counter_in_table": True, **backend.meta})
    with pytest.raises(ConfigurationError, match="autoinc_counter and Meta.autoinc_counter_in_table .* choose one"):
        type("Doc", (AutoIncrementMixin, Model), {
            "Meta": meta, "key": UnicodeAttribute(hash_key=True), "number": NumberAttribute(null=True)})


@pytest.mark.modes()
@pytest.mark.backends()
def test_scope_by_a_set_attribute_is_refused_at_class_creation(backend):
    """``Meta.autoinc_scope`` naming a set attribute is refused with a ``ConfigurationError`` when the class is
    created: the counter key was the set's text, whose order differs between processes (hash randomisation),
    so one scope got several counters and handed out its IDs more than once."""
    meta = type("Meta", (), {"table_name": "tickets", "autoinc_attribute": "number", "autoinc_scope": "tags",
                             **backend.meta})
    with pytest.raises(ConfigurationError, match="autoinc_scope names 'tags', a UnicodeSetAttribute"):
        type("Ticket", (AutoIncrementMixin, Model), {
            "Meta": meta, "key": UnicodeAttribute(hash_key=True), "number": NumberAttribute(null=True),
            "tags": UnicodeSetAttribute(null=True)})


class _OwnCounter(NextId):
    class Meta:
        table_name = "own_sequences"
        region = "us-east-1"


def _query_model(**meta: Any) -> Any:
    """A query-strategy model (numbers within each partition) with extra ``Meta`` options; nothing is sent."""
    meta_cls = type("Meta", (), {"table_name": "lines", "region": "us-east-1", "autoinc_strategy": "query",
                                 "autoinc_attribute": "line", **meta})
    return type("Line", (AutoIncrementMixin, Model), {
        "Meta": meta_cls, "order": UnicodeAttribute(hash_key=True), "line": NumberAttribute(range_key=True)})


#: Options the query strategy never reads, each with a value other than its default.
IGNORED = {
    "autoinc_key": st.text(min_size=1, max_size=12),
    "autoinc_counter": st.just(_OwnCounter),
    "autoinc_gapless": st.just(True),
}


#: Options the query strategy does read, each with values it accepts.
READ = {
    "autoinc_step": st.sampled_from([1, 2, -1]),
    "autoinc_retries": st.sampled_from([None, 0, 5]),
    "autoinc_timeout": st.sampled_from([None, 1, 10.0]),
    "autoinc_backoff": st.sampled_from([0, 0.01]),
    "autoinc_single_region_writes": st.booleans(),
}


@budget("moto", moto=100, local=100)  # nothing is sent: the backend does not matter
@given(ignored=st.dictionaries(st.sampled_from(sorted(IGNORED)), st.none(), min_size=1).flatmap(
    lambda names: st.fixed_dictionaries({name: IGNORED[name] for name in names})),
    read=st.fixed_dictionaries({}, optional=READ))
def test_query_strategy_refuses_options_it_ignores(ignored: Dict[str, Any], read: Dict[str, Any]) -> None:
    """A query-strategy model that sets an option the strategy never reads (a counter key, a counter table,
    gapless mode, which it always is) is refused when the class is created, with a ConfigurationError naming
    one of those options and saying it has no effect, whatever options it reads are set beside them."""
    with pytest.raises(ConfigurationError, match="has no effect with the query strategy") as caught:
        _query_model(**ignored, **read)
    assert any(f"Meta.{name} " in str(caught.value) for name in ignored), str(caught.value)


@budget("moto", moto=50, local=50)
@given(read=st.fixed_dictionaries({}, optional=READ))
def test_query_strategy_accepts_the_defaults_of_the_options_it_ignores(read: Dict[str, Any]) -> None:
    """A query-strategy model may still spell out the defaults of the options it ignores (no counter key,
    NextId, not gapless): they say nothing the strategy contradicts, so the class is created."""
    model = _query_model(autoinc_key=None, autoinc_counter=NextId, autoinc_gapless=False, **read)
    assert model.autoinc_options().strategy == "query"


@pytest.mark.parametrize("fmt", ["__autoinc__#{value}", "__autoinc__#{period}-{value:04d}"])
def test_in_table_counter_refuses_a_format_that_makes_ids_look_like_counter_items(fmt):
    """``Meta.autoinc_counter_in_table`` hides the items whose hash key starts with ``__autoinc__#`` (its counter
    items) from ``scan()``; a ``Meta.autoinc_format`` that makes every ID of the hash key start with it would
    hide every item, so the class is refused when it is created, naming the format and the prefix."""
    meta = type("Meta", (), {"table_name": "codes", "region": "us-east-1", "autoinc_counter_in_table": True,
                             "autoinc_format": fmt, "autoinc_period": "year" if "period" in fmt else None})
    with pytest.raises(ConfigurationError, match="autoinc_format.*__autoinc__#"):
        type("Code", (AutoIncrementMixin, Model), {"Meta": meta, "id": UnicodeAttribute(hash_key=True)})


def test_in_table_counter_accepts_a_format_outside_the_reserved_prefix():
    """A format that does not start with the reserved prefix is still accepted with an in-table counter (the
    refusal above is about the prefix, not about formats)."""
    meta = type("Meta", (), {"table_name": "codes", "region": "us-east-1", "autoinc_counter_in_table": True,
                             "autoinc_format": "__autoinc__{value}"})
    model: Any = type("Code", (AutoIncrementMixin, Model), {"Meta": meta, "id": UnicodeAttribute(hash_key=True)})
    assert model.autoinc_options().fmt == "__autoinc__{value}"


@pytest.mark.modes("query")
def test_query_strategy_ignores_keys_below_its_minimum(make_model):
    """Keys ids below autoinc_min are not the sequence's: the first new item gets autoinc_start."""
    Item = make_model("Item", autoinc_min=100, autoinc_start=100)
    Item(id=3).save()
    item = Item()
    item.save()
    assert item.id == 100
#: The largest integer a DynamoDB number holds exactly (38 digits); a sequence's bounds may reach it.
LIMIT = 10**38 - 1


@pytest.mark.parametrize("step", [7, -7])
def test_steps_from_a_start_at_the_number_limit(make_model, step):
    """A sequence that starts at a bound of 38 digits, with a step whose start - step has 39, hands out its
    values (DynamoDB refuses a number of 39 digits in the request with ValidationException)."""
    start = -LIMIT if step > 0 else LIMIT
    Item = make_model("Item", autoinc_min=-LIMIT, autoinc_max=LIMIT, autoinc_step=step)
    assert save_many(Item, 3) == [start, start + step, start + 2 * step]


@pytest.mark.parametrize("step", [7, -7])
def test_restart_at_a_start_at_the_number_limit(make_model, step):
    """restart() of a sequence whose start lies at a bound of 38 digits (its start - step has 39) makes the
    start the next value."""
    start = -LIMIT if step > 0 else LIMIT
    Item = make_model("Item", autoinc_min=-LIMIT, autoinc_max=LIMIT, autoinc_step=step)
    opts = Item.autoinc_options()
    assert save_many(Item, 2) == [start, start + step]
    Item(**{opts.attribute: start}).delete()
    opts.counter.restart(opts.key, opts.sequence)
    assert save_many(Item, 1) == [start]


@pytest.mark.modes()  # no model: a counter's own operation
def test_reserving_more_values_than_a_number_spans_is_refused(backend):
    """reserve() of more values than 38 digits span refuses with OutOfBoundsError before anything is sent."""
    from pynamodb_autoinc import NextId, SequenceOptions
    from pynamodb_autoinc.exceptions import OutOfBoundsError

    counter = backend.counter(NextId)
    sequence = SequenceOptions.of(step=7, minimum=-LIMIT, maximum=LIMIT)
    with pytest.raises(OutOfBoundsError, match="38 digits"):
        counter.reserve("wide", 2 * 10**37, sequence, partial=True)
    assert counter.currval("wide") is None


@pytest.mark.modes()  # no model: a counter's own operation
def test_increment_by_more_than_38_digits_is_refused(backend):
    """increment() by a number of more than 38 digits refuses with OutOfBoundsError; nothing is counted."""
    from pynamodb_autoinc import NextId
    from pynamodb_autoinc.exceptions import OutOfBoundsError

    counter = backend.counter(NextId)
    with pytest.raises(OutOfBoundsError, match="38"):
        counter.increment("hits", period=None, by=10**38)
    assert counter.current("hits", period=None) is None
