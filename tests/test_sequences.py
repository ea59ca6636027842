"""The sequence family: start, step, max, scope, query strategy, periods, formats, in-table counters."""

from __future__ import annotations

from datetime import datetime
from typing import Any, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc.counter import RESERVED_PREFIX
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    ContentionError,
    SequenceExhaustedError,
    UnassignedIdError,
)
from pynamodb_autoinc.periods import clock

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
    """Issues numbered per project: hash key project, range key number (article 003)."""
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
    """The query strategy reads the largest range key and puts the next (in a transaction, whose token tells a
    resend of it apart); no counter item is written."""
    Issue = query_model
    assert save_many(Issue, 3, project="A") == [1, 2, 3]
    assert save_many(Issue, 1, project="B") == [1]
    assert not [op for op, table in requests if table == "NextId"]
    requests.clear()
    save_many(Issue, 1, project="A")
    assert [op for op, _ in requests] == ["Query", "TransactWriteItems"]  # with a token: its resend is told apart


@pytest.mark.modes()  # its models set their own mode
def test_query_strategy_retries_a_collision(query_model):
    """When another writer takes the next range key first, the save re-reads and takes the one after."""
    Issue = query_model
    save_many(Issue, 1, project="A")
    rivals = [2]

    def rival(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "TransactWriteItems" and rivals:
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
        if operation_name == "TransactWriteItems" and not busy:
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
    ({"autoinc_counter_in_table": True}, "needs a string hash key"),
])
def test_sequence_misconfiguration(make_model, options, message):
    """Unusable sequence options are named when the model class is created."""
    with pytest.raises(ConfigurationError, match=message):
        make_model("Broken", create=False, **options)


@pytest.fixture
def users_table(make_model):
    """Article 004's single table: users and their counter item in one table."""
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
