"""Sequences as PostgreSQL has them: MINVALUE/MAXVALUE, CYCLE, setval, RESTART, ALTER, recorded options.

Where a test mirrors a case of PostgreSQL's ``src/test/regress/sql/sequence.sql``,
its docstring quotes the SQL it mirrors.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Dict, List

import pytest
from pynamodb.attributes import (
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.expressions.operand import Path

from pynamodb_autoinc import (
    NextId,
    SequenceOptions,
    TransactWrite,
)
from pynamodb_autoinc.exceptions import (
    ConfigurationError,
    CounterValueError,
    ItemExistsError,
    OutOfBoundsError,
    SequenceExhaustedError,
    SequenceMismatchError,
)
from pynamodb_autoinc.sequence import BIGINT_MAX, BIGINT_MIN
from pynamodb_autoinc.testing import reset_state

pytestmark = pytest.mark.modes("fast", "block", "gapless")


def save_many(model: Any, n: int) -> List[int]:
    ids = []
    for _ in range(n):
        item = model()
        item.save()
        ids.append(item.id)
    return ids


def stored(model: Any) -> List[int]:
    return sorted(item.id for item in model.scan(consistent_read=True))


def counter_of(model: Any) -> Any:
    return model.autoinc_options().counter


# -- options and their defaults ------------------------------------------------------

def test_ascending_defaults_are_bigint_from_one(make_model):
    """With no bounds, an ascending sequence runs from 1 to 2**63 - 1 and starts at 1."""
    seq = make_model("Up").autoinc_options().sequence
    assert (seq.start, seq.minimum, seq.maximum, seq.cycle) == (1, 1, BIGINT_MAX, False)


def test_descending_sequence_starts_at_minus_one(make_model):
    """``CREATE SEQUENCE s INCREMENT BY -1``: it runs from -1 down to -2**63, so the first value is -1."""
    Down = make_model("Down", autoinc_step=-1)
    assert Down.autoinc_options().sequence.minimum == BIGINT_MIN
    assert save_many(Down, 3) == [-1, -2, -3]


@pytest.mark.parametrize("options, message", [
    ({"autoinc_step": 0}, "Meta.autoinc_step must not be 0"),  # CREATE SEQUENCE ... INCREMENT BY 0
    ({"autoinc_step": -1, "autoinc_min": 20}, "Meta.autoinc_min = 20 must be less than Meta.autoinc_max = -1"),
    ({"autoinc_max": -20}, "Meta.autoinc_min = 1 must be less than Meta.autoinc_max = -20"),
    ({"autoinc_step": -1, "autoinc_start": 10}, "Meta.autoinc_start = 10 lies above the maximum"),
    ({"autoinc_start": -10}, "Meta.autoinc_start = -10 lies below the minimum"),
    ({"autoinc_min": 5, "autoinc_max": 5}, "must be less than"),
])
def test_bounds_that_cannot_hold_a_sequence_are_refused(make_model, options, message):
    """The CREATE SEQUENCE errors of sequence.sql: INCREMENT BY 0; INCREMENT BY -1 MINVALUE 20; MAXVALUE -20;
    INCREMENT BY -1 START 10; START -10. Each is a ConfigurationError naming the option, with nothing sent."""
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        make_model("Broken", **options)


def test_cycle_on_an_id_outside_the_key_is_refused(make_model):
    """CYCLE repeats values, and only a key is kept unique: an ID outside the key may not cycle."""
    with pytest.raises(ConfigurationError, match="outside the key"):
        make_model("Doc", pk=UnicodeAttribute(hash_key=True), seq=NumberAttribute(null=True),
                         autoinc_attribute="seq", autoinc_max=3, autoinc_cycle=True)


# -- bounds and CYCLE ----------------------------------------------------------------

def test_cycle_wraps_to_the_minimum(make_model):
    """``ALTER SEQUENCE sequence_test2 RESTART WITH 24 INCREMENT BY 4 MAXVALUE 36 MINVALUE 5 CYCLE``:
    nextval gives 24, 28, 32, 36, 5."""
    Seq = make_model("Seq", autoinc_start=24, autoinc_step=4, autoinc_min=5, autoinc_max=36, autoinc_cycle=True)
    assert save_many(Seq, 5) == [24, 28, 32, 36, 5]


def test_cycle_counting_down_wraps_to_the_maximum(make_model):
    """``... RESTART WITH -24 START WITH -24 INCREMENT BY -4 MINVALUE -36 MAXVALUE -5 CYCLE``:
    nextval gives -24, -28, -32, -36, -5."""
    Seq = make_model("Seq", autoinc_start=-24, autoinc_step=-4, autoinc_min=-36, autoinc_max=-5, autoinc_cycle=True)
    assert save_many(Seq, 5) == [-24, -28, -32, -36, -5]


def test_no_cycle_stops_at_the_maximum(make_model):
    """``... RESTART WITH 24 NO CYCLE``: 24, 28, 32, 36, then "reached maximum value"; nothing is spent."""
    Seq = make_model("Seq", autoinc_start=24, autoinc_step=4, autoinc_min=5, autoinc_max=36)
    assert save_many(Seq, 4) == [24, 28, 32, 36]
    item = Seq()
    with pytest.raises(SequenceExhaustedError, match="maximum") as info:
        item.save()
    assert item.id is None and info.value.last == 36
    assert stored(Seq) == [24, 28, 32, 36]


def test_no_cycle_counting_down_stops_at_the_minimum(make_model):
    """``... RESTART WITH -24 NO CYCLE`` counting down: -24 ... -36, then "reached minimum value"."""
    Seq = make_model("Seq", autoinc_start=-24, autoinc_step=-4, autoinc_min=-36, autoinc_max=-5)
    assert save_many(Seq, 4) == [-24, -28, -32, -36]
    with pytest.raises(SequenceExhaustedError, match="minimum"):
        Seq().save()


def test_a_wrapped_value_never_overwrites_a_live_item(make_model):
    """After a wrap, a value whose item is still stored is refused with ItemExistsError: nothing overwritten."""
    Seat = make_model("Seat", note=UnicodeAttribute(null=True), autoinc_max=2, autoinc_cycle=True)
    for note in ("first", "second"):
        Seat(note=note).save()
    late = Seat(note="late")
    with pytest.raises(ItemExistsError, match="cycles .Meta.autoinc_cycle. and has come round"):
        late.save()
    assert late.id is None
    assert sorted((s.id, s.note) for s in Seat.scan(consistent_read=True)) == [(1, "first"), (2, "second")]


def test_a_wrapped_value_is_reused_once_its_item_is_deleted(make_model):
    """Deleting the items behind the counter lets the wrapped sequence hand their values out again."""
    Seat = make_model("Seat", autoinc_max=3, autoinc_cycle=True)
    save_many(Seat, 3)
    for seat in Seat.scan(consistent_read=True):
        seat.delete()
    again = save_many(Seat, 3)
    assert sorted(again) == [1, 2, 3]


def test_save_all_wraps_a_cycling_sequence(make_model):
    """save_all() of more items than are left before the maximum wraps the rest to the minimum."""
    Seat = make_model("Seat", autoinc_max=4, autoinc_cycle=True)
    save_many(Seat, 3)
    for seat in Seat.scan(consistent_read=True):
        if seat.id != 3:
            seat.delete()
    seats = [Seat(), Seat(), Seat()]
    Seat.save_all(seats)
    assert [s.id for s in seats] == [4, 1, 2]


def test_one_request_cannot_number_more_items_than_a_cycle_holds(make_model):
    """save_all() of five items on a cycle of three values would repeat one: refused, nothing spent."""
    Seat = make_model("Seat", autoinc_max=3, autoinc_cycle=True)
    seats = [Seat() for _ in range(5)]
    with pytest.raises(Exception) as info:
        Seat.save_all(seats)
    assert re.search("cannot number [45] items in one request", str(info.value)), info.value
    assert all(s.id is None for s in seats)
    assert stored(Seat) == []


def test_bounds_hold_in_a_transaction(make_model):
    """A TransactWrite of new items past the maximum raises SequenceExhaustedError; no ID stays set."""
    Seat = make_model("Seat", autoinc_max=2)
    Seat().save()
    seats = [Seat(), Seat()]
    connection = Seat._get_connection().connection
    with pytest.raises(SequenceExhaustedError), TransactWrite(connection=connection) as tx:
        for seat in seats:
            tx.save(seat)
    assert [s.id for s in seats] == [None, None]
    assert stored(Seat) == [1]


@pytest.mark.modes("query")
def test_query_strategy_keeps_both_bounds(make_model):
    """The query strategy counting down from its maximum stops at its minimum."""
    Line = make_model("Line", order=UnicodeAttribute(hash_key=True), line=NumberAttribute(range_key=True),
                      autoinc_strategy="query", autoinc_attribute="line", autoinc_step=-1, autoinc_min=8,
                      autoinc_max=10)
    assert [_saved_line(Line) for _ in range(3)] == [10, 9, 8]
    with pytest.raises(SequenceExhaustedError):
        Line(order="o").save()


def _saved_line(model: Any) -> int:
    line = model(order="o")
    line.save()
    return int(line.line)


# -- setval, RESTART, ALTER ---------------------------------------------------------------

def test_setval_makes_the_next_value_one_step_on(make_model):
    """``SELECT setval('sequence_test', 32); SELECT nextval('sequence_test')`` gives 33, even in block mode
    after a block was reserved (this process's block is dropped)."""
    User = make_model("User")
    save_many(User, 1)
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 32)
    assert save_many(User, 1) == [33]


def test_setval_not_called_hands_out_the_value_itself(make_model):
    """``SELECT setval('sequence_test', 99, false); SELECT nextval('sequence_test')`` gives 99."""
    User = make_model("User")
    save_many(User, 1)
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 99, is_called=False)
    assert save_many(User, 2) == [99, 100]


@pytest.mark.parametrize("value", [0, 11])
def test_setval_outside_the_bounds_is_refused(make_model, value):
    """``setval: value 0 is out of bounds for sequence``: OutOfBoundsError, and the counter keeps its value."""
    User = make_model("User", autoinc_max=10)
    save_many(User, 2)
    opts = User.autoinc_options()
    with pytest.raises(OutOfBoundsError, match=f"value {value} is out of bounds"):
        opts.counter.setval(opts.key, value)
    assert opts.counter.currval(opts.key) == (opts.block if opts.block > 1 else 2)


def test_restart_hands_out_the_start_again(make_model):
    """``ALTER SEQUENCE ... RESTART``: the next value is the start; ``RESTART WITH 7``: it is 7."""
    User = make_model("User", autoinc_start=5, autoinc_min=1)
    opts = User.autoinc_options()
    assert save_many(User, 2) == [5, 6]
    opts.counter.restart(opts.key, opts.sequence, 7)
    assert save_many(User, 1) == [7]
    for user in User.scan(consistent_read=True):
        user.delete()
    opts.counter.restart(opts.key, opts.sequence)
    assert save_many(User, 1) == [5]


def test_restart_outside_the_bounds_is_refused(make_model):
    """``RESTART WITH`` a value past MAXVALUE is refused: OutOfBoundsError, the counter unchanged."""
    User = make_model("User", autoinc_max=10)
    opts = User.autoinc_options()
    save_many(User, 1)
    with pytest.raises(OutOfBoundsError):
        opts.counter.restart(opts.key, opts.sequence, 11)
    assert save_many(User, 1) == [2]


def test_counter_records_the_options_it_runs_under(make_model):
    """The counter item records start, step, bounds and cycling, as ``pg_sequences`` shows them."""
    User = make_model("User", autoinc_start=3, autoinc_step=2, autoinc_min=1, autoinc_max=99, autoinc_cycle=True)
    save_many(User, 1)
    opts = User.autoinc_options()
    assert opts.counter.stored_options(opts.key) == SequenceOptions(3, 2, 1, 99, True)
    assert opts.counter.stored_options(opts.key).encode() == "start=3 step=2 min=1 max=99 cycle"


def test_deployments_disagreeing_about_a_sequence_are_refused(make_model, backend):
    """A second deployment of the model with another maximum is refused, naming the difference; nothing spent."""
    table = backend.table_name("users")
    Old = make_model("User", autoinc_key="user", autoinc_max=100, table_name=table)
    New = make_model("User", autoinc_key="user", autoinc_max=200, table_name=table, create=False)
    save_many(Old, 1)
    user = New()
    with pytest.raises(SequenceMismatchError, match=r"max 100 \(here 200\)"):
        user.save()
    assert user.id is None
    assert stored(Old) == [1]


def test_alter_records_new_options_and_keeps_the_value(make_model, backend):
    """``ALTER SEQUENCE ... MAXVALUE 200``: once recorded, the new deployment goes on from the counter's
    value and the old one is refused."""
    table = backend.table_name("users")
    Old = make_model("User", autoinc_key="user", autoinc_max=100, table_name=table)
    New = make_model("User", autoinc_key="user", autoinc_max=200, table_name=table, create=False)
    save_many(Old, 2)
    opts = New.autoinc_options()
    opts.counter.alter(opts.key, opts.sequence)
    following = opts.block + 1 if opts.block > 1 else 3
    assert save_many(New, 1) == [following]
    reset_state()  # a process of the old deployment, with no block of its own left
    with pytest.raises(SequenceMismatchError):
        Old().save()


def test_alter_refuses_bounds_that_leave_the_counter_outside(make_model, backend):
    """Lowering MAXVALUE below the counter's value is refused (restart it instead); the options stay."""
    table = backend.table_name("users")
    Old = make_model("User", autoinc_key="user", table_name=table)
    Small = make_model("User", autoinc_key="user", autoinc_max=3, table_name=table, create=False)
    save_many(Old, 4)
    opts = Small.autoinc_options()
    with pytest.raises(OutOfBoundsError, match="past the maximum 3"):
        opts.counter.alter(opts.key, opts.sequence)
    assert opts.counter.stored_options(opts.key) == Old.autoinc_options().sequence


# -- explicit IDs -----------------------------------------------------------------------

def test_an_explicit_id_does_not_move_the_counter(make_model):
    """As with PostgreSQL's SERIAL, an item saved with an explicit ID leaves the sequence where it was."""
    User = make_model("User")
    User(id=50).save()
    assert save_many(User, 1) == [1]


def test_track_explicit_moves_the_counter_past_an_explicit_id(make_model):
    """With Meta.autoinc_track_explicit, saving ID 50 moves the counter to 50: the next new item gets 51."""
    User = make_model("User", autoinc_track_explicit=True)
    save_many(User, 1)
    User(id=50).save()
    User(id=20).save()  # behind the counter: it stays at 50
    assert save_many(User, 1) == [51]


def test_track_explicit_holds_in_save_all_and_transactions(make_model):
    """save_all() and a TransactWrite carrying explicit IDs move the counter past the furthest of them."""
    User = make_model("User", autoinc_track_explicit=True)
    User.save_all([User(id=7), User(id=30), User()])
    with TransactWrite(connection=User._get_connection().connection) as tx:
        tx.save(User(id=60))
    assert save_many(User, 1) == [61]


def test_track_explicit_drops_a_block_holding_the_id(make_model):
    """An explicit ID inside this process's reserved block is never handed out by a later save."""
    User = make_model("User", autoinc_track_explicit=True)
    first = save_many(User, 1)[0]
    User(id=first + 1).save()
    assert save_many(User, 1) != [first + 1]


def test_track_explicit_leaves_an_id_outside_the_bounds_alone(make_model):
    """An explicit ID past the maximum does not exhaust the sequence."""
    User = make_model("User", autoinc_max=10, autoinc_track_explicit=True)
    User(id=500).save()
    assert save_many(User, 1) == [1]


@pytest.mark.modes("fast", "gapless")
def test_track_explicit_is_refused_on_a_cycling_sequence(make_model):
    """Meta.autoinc_track_explicit with Meta.autoinc_cycle is refused when the class is created, naming setval:
    a cycling sequence comes round to every value, so no move of its counter keeps a new ID off an explicit one."""
    with pytest.raises(ConfigurationError, match="autoinc_track_explicit.*cycling.*NextId.setval"):
        make_model("Ticket", autoinc_max=10, autoinc_cycle=True, autoinc_track_explicit=True, create=False)


def test_counter_in_a_table_with_a_number_range_key(make_model):
    """An in-table counter in a table whose range key is a number keeps its counter item at range key 0."""
    Events = make_model("Events", pk=UnicodeAttribute(hash_key=True), sk=NumberAttribute(range_key=True),
                        seq=NumberAttribute(null=True), autoinc_attribute="seq", autoinc_counter_in_table=True)
    for sk in (1, 2):
        Events(pk="stream", sk=sk).save()
    assert sorted((e.sk, e.seq) for e in Events.scan()) == [(1, 1), (2, 2)]


def test_setval_not_called_needs_the_step_of_an_unrecorded_counter(make_model):
    """setval(..., is_called=False) on a counter that records no options cannot know the step: it says to pass
    the model's sequence, and sets nothing; with the sequence it works."""
    User = make_model("User", autoinc_step=5)
    opts = User.autoinc_options()
    with pytest.raises(ConfigurationError, match="pass sequence=Model.autoinc_options"):
        opts.counter.setval(opts.key, 40, is_called=False)
    assert opts.counter.currval(opts.key) is None
    opts.counter.setval(opts.key, 40, is_called=False, sequence=opts.sequence)
    assert save_many(User, 2) == [40, 45]


@pytest.mark.modes()
@pytest.mark.parametrize("count, refusal", [(0, "count must be an int of 1 or more"), (-1, "an int of 1 or more"),
                                            (1.5, "an int of 1 or more"), (True, "an int of 1 or more"),
                                            (10**9, "at most 1,000,000 values at once")])
def test_reserve_refuses_a_count_that_is_not_a_positive_int(backend, count, refusal):
    """``NextId.reserve`` with a count that is not an int of 1 or more, or past a million, raises
    ``OutOfBoundsError`` at once and leaves the counter as it was: 1.5 stored a fraction in the counter (every
    later save failed on it), 0 or -1 sent a hundred requests before a misleading ``ContentionError``, and a
    billion moved the counter before the list of its values ran out of memory (all spent)."""
    counter = backend.counter()
    counter.nextval("orders")
    with pytest.raises(OutOfBoundsError, match=refusal):
        counter.reserve("orders", count)
    assert counter.currval("orders") == 1
    assert counter.nextval("orders") == 2


@pytest.mark.modes()
@pytest.mark.parametrize("expected, value", [(1, 2.5), (1.0, 2), (None, "3")])
def test_compare_and_set_refuses_values_that_are_not_ints(backend, expected, value):
    """``NextId.compare_and_set`` with a value (or an expected value other than None) that is not an int raises
    ``OutOfBoundsError`` and leaves the counter as it was, instead of storing a fraction or text in it."""
    counter = backend.counter()
    counter.nextval("orders")
    with pytest.raises(OutOfBoundsError, match="the values must be ints"):
        counter.compare_and_set("orders", expected, value)
    assert counter.currval("orders") == 1


@pytest.mark.modes()
@pytest.mark.parametrize("value, allowed", [(5, True), (36, True), (1, True), (0, False), (37, False), (99, False)])
def test_compare_and_set_keeps_the_counter_within_its_sequence(backend, value, allowed):
    """``NextId.compare_and_set`` under sequence options sets a value within the bounds, or one step before the
    first (the next save gets the first); any other value raises OutOfBoundsError and changes nothing, since every
    save would refuse the counter."""
    counter = backend.counter()
    sequence = SequenceOptions(start=5, step=4, minimum=5, maximum=36)
    counter.nextval("b", sequence)
    if allowed:
        assert counter.compare_and_set("b", 5, value, sequence)
        assert counter.currval("b") == value
    else:
        with pytest.raises(OutOfBoundsError, match="outside sequence 'b'"):
            counter.compare_and_set("b", 5, value, sequence)
        assert counter.currval("b") == 5


#: ``CREATE SEQUENCE s START 24 INCREMENT 4 MINVALUE 5 MAXVALUE 36``
UP = SequenceOptions.of(24, 4, 5, 36)


#: ``CREATE SEQUENCE s START -24 INCREMENT -4 MINVALUE -36 MAXVALUE -5``
DOWN = SequenceOptions.of(-24, -4, -36, -5)


#: Numbers that are not ints, each refused by every operation that takes a counter value.
NOT_INTS = [True, False, 7.9, 7.0, Decimal("7.5"), "7", None, [7]]


@pytest.fixture
def counter(backend: Any) -> Any:
    """The NextId table on the test's backend."""
    return backend.counter()


def take(counter: Any, key: str, seq: Any, n: int) -> List[int]:
    return [counter.nextval(key, seq) for _ in range(n)]


def test_nextval_starts_at_start_with_not_minvalue(counter):
    """``CREATE SEQUENCE s START 24 INCREMENT 4 MINVALUE 5 MAXVALUE 36``: nextval gives 24, 28, 32, 36."""
    assert take(counter, "s", UP, 4) == [24, 28, 32, 36]


def test_currval_before_any_nextval_is_none(counter):
    """PostgreSQL raises "currval of sequence is not yet defined in this session"; here (documented in
    docs/postgresql.md) currval is the counter's last value, None for a counter never advanced, and reading it
    does not advance it."""
    assert counter.currval("s") is None
    assert counter.currval("s") is None
    assert counter.nextval("s", UP) == 24
    assert counter.currval("s") == 24


def test_currval_after_setval_not_called_is_one_step_behind(counter):
    """After ``setval('s', 31, false)`` or ``RESTART``, ``pg_sequences.last_value`` is NULL; here currval is the
    value one step before the next (docs/postgresql.md), so nextval is always currval + step."""
    take(counter, "s", UP, 1)
    counter.setval("s", 31, is_called=False, sequence=UP)
    assert counter.currval("s") == 27
    counter.restart("s", UP)
    assert counter.currval("s") == 20
    assert counter.nextval("s", UP) == 24


def test_currval_follows_every_process(counter):
    """currval is ``pg_sequences.last_value`` (docs/postgresql.md): a value another process took shows, even
    after this process's state is reset."""
    take(counter, "s", UP, 2)
    reset_state()
    assert counter.currval("s") == 28


def test_there_is_no_lastval():
    """``lastval()`` has no counterpart (docs/postgresql.md): NextId has no lastval to mislead a PostgreSQL user."""
    assert not hasattr(NextId, "lastval")


def test_nextval_without_options_follows_the_recorded_ones(counter):
    """``nextval('s')`` names only the sequence: its options are the ones it was created (or altered) with. Here a
    call without ``sequence`` follows what the counter records: step 4, and "reached maximum value" at 36;
    setval without ``sequence`` is checked against those bounds too."""
    take(counter, "s", UP, 1)
    assert counter.nextval("s") == 28
    with pytest.raises(OutOfBoundsError):
        counter.setval("s", 37)
    counter.setval("s", 36)
    with pytest.raises(SequenceExhaustedError, match="maximum"):
        counter.nextval("s")


def test_setval_then_nextval_is_one_step_on(counter):
    """``setval('s', 30); nextval('s')`` gives 34 (30 + 4); currval after setval is 30; a value off the
    step grid is taken as PostgreSQL takes it."""
    take(counter, "s", UP, 1)
    counter.setval("s", 30, sequence=UP)
    assert counter.currval("s") == 30
    assert take(counter, "s", UP, 1) == [34]


def test_setval_returns_its_value(counter):
    """``SELECT setval('s', 30)`` returns 30, and ``setval('s', 31, false)`` returns 31 (not the counter's 27)."""
    take(counter, "s", UP, 1)
    assert counter.setval("s", 30, sequence=UP) == 30
    assert counter.setval("s", 31, is_called=False) == 31


def test_setval_not_called_hands_out_the_value(counter):
    """``setval('s', 31, false); nextval('s')`` gives 31, then 35."""
    take(counter, "s", UP, 1)
    counter.setval("s", 31, is_called=False, sequence=UP)
    assert take(counter, "s", UP, 2) == [31, 35]


def test_setval_counting_down(counter):
    """Descending: ``setval('s', -30)`` gives -34 next; ``setval('s', -31, false)`` gives -31."""
    take(counter, "s", DOWN, 1)
    counter.setval("s", -30, sequence=DOWN)
    assert take(counter, "s", DOWN, 1) == [-34]
    counter.setval("s", -31, is_called=False, sequence=DOWN)
    assert take(counter, "s", DOWN, 2) == [-31, -35]


def test_setval_to_the_maximum_then_nextval_reached_maximum(counter):
    """``setval('s', 36); nextval('s')``: "reached maximum value of sequence" and the counter stays at 36;
    ``setval('s', 36, false)`` hands out 36 once more, then the same error."""
    take(counter, "s", UP, 1)
    counter.setval("s", 36)
    with pytest.raises(SequenceExhaustedError, match="maximum") as info:
        counter.nextval("s", UP)
    assert info.value.last == 36 and counter.currval("s") == 36
    with pytest.raises(SequenceExhaustedError):
        counter.nextval("s", UP)  # still exhausted: the failed call spent nothing
    counter.setval("s", 36, is_called=False)
    assert counter.nextval("s", UP) == 36
    with pytest.raises(SequenceExhaustedError, match="maximum"):
        counter.nextval("s", UP)


def test_setval_to_the_minimum_counting_down_then_reached_minimum(counter):
    """Descending: ``setval('s', -36); nextval('s')``: "reached minimum value of sequence"."""
    take(counter, "s", DOWN, 1)
    counter.setval("s", -36)
    with pytest.raises(SequenceExhaustedError, match="minimum"):
        counter.nextval("s", DOWN)
    counter.setval("s", -36, is_called=False)
    assert counter.nextval("s", DOWN) == -36


def test_setval_to_the_minimum_not_called(counter):
    """``setval('s', 5, false)`` at MINVALUE itself: nextval gives 5 (the counter may lie one step behind)."""
    take(counter, "s", UP, 1)
    counter.setval("s", 5, is_called=False)
    assert take(counter, "s", UP, 2) == [5, 9]


@pytest.mark.parametrize("seq, value", [(UP, 4), (UP, 37), (DOWN, -37), (DOWN, -4)])
def test_setval_outside_the_bounds_is_refused_whether_called_or_not(counter, seq, value):
    """``setval: value 37 is out of bounds for sequence "s" (5..36)``: OutOfBoundsError, counter unchanged,
    with is_called either way."""
    first = counter.nextval("s", seq)
    for called in (True, False):
        with pytest.raises(OutOfBoundsError, match=f"value {value} is out of bounds"):
            counter.setval("s", value, is_called=called, sequence=seq)
    assert counter.currval("s") == first


def test_setval_at_the_maximum_of_a_cycling_sequence_wraps_to_minvalue(counter):
    """``CYCLE``: ``setval('s', 36); nextval('s')`` gives MINVALUE 5, not START 24."""
    seq = SequenceOptions.of(24, 4, 5, 36, cycle=True)
    take(counter, "s", seq, 1)
    counter.setval("s", 36)
    assert take(counter, "s", seq, 2) == [5, 9]


@pytest.mark.parametrize("flag", ["no", 0, 1, None, "false"])
def test_setval_is_called_must_be_a_bool(counter, flag):
    """``setval(regclass, bigint, boolean)``: is_called is a boolean; any other value is refused with the
    library's error, and the counter is not touched."""
    take(counter, "s", UP, 1)
    with pytest.raises(ConfigurationError, match="is_called must be True or False"):
        counter.setval("s", 30, is_called=flag, sequence=UP)
    assert counter.currval("s") == 24


@pytest.mark.parametrize("flag", ["no", 0, None])
def test_reserve_partial_must_be_a_bool(counter, flag):
    """reserve's ``partial`` is a flag, as setval's is_called is: "no" must not be taken as True; nothing is
    taken."""
    take(counter, "s", UP, 3)
    with pytest.raises(ConfigurationError, match="partial must be True or False"):
        counter.reserve("s", 5, UP, partial=flag)
    assert counter.currval("s") == 32


@pytest.mark.parametrize("value", NOT_INTS)
def test_setval_refuses_a_value_that_is_not_an_int(counter, value):
    """setval takes a bigint: a bool, a float (even 7.0), a Decimal, a string or None is refused with
    OutOfBoundsError, not truncated; nothing is changed."""
    take(counter, "s", UP, 1)
    with pytest.raises(OutOfBoundsError, match="must be an int"):
        counter.setval("s", value, sequence=UP)
    assert counter.currval("s") == 24


def test_restart_goes_back_to_start_with_not_minvalue(counter):
    """``ALTER SEQUENCE s RESTART``: the next value is START (24), not MINVALUE (5); ``RESTART WITH 9``: 9."""
    take(counter, "s", UP, 3)
    counter.restart("s", UP)
    assert take(counter, "s", UP, 1) == [24]
    counter.restart("s", UP, 9)
    assert take(counter, "s", UP, 2) == [9, 13]


def test_restart_counting_down(counter):
    """Descending ``RESTART``: -24 again; ``RESTART WITH -5`` (MAXVALUE): -5, -9."""
    take(counter, "s", DOWN, 3)
    counter.restart("s", DOWN)
    assert take(counter, "s", DOWN, 1) == [-24]
    counter.restart("s", DOWN, -5)
    assert take(counter, "s", DOWN, 2) == [-5, -9]


def test_restart_resumes_an_exhausted_sequence(counter):
    """A sequence that "reached maximum value" hands out values again after ``RESTART``."""
    take(counter, "s", UP, 4)
    with pytest.raises(SequenceExhaustedError):
        counter.nextval("s", UP)
    counter.restart("s", UP)
    assert counter.nextval("s", UP) == 24


@pytest.mark.parametrize("seq, value", [(UP, 4), (UP, 37), (DOWN, -37), (DOWN, -4)])
def test_restart_with_outside_the_bounds_is_refused(counter, seq, value):
    """``RESTART WITH 37``: "RESTART value (37) cannot be greater than MAXVALUE (36)": OutOfBoundsError,
    the counter unchanged."""
    first = counter.nextval("s", seq)
    with pytest.raises(OutOfBoundsError, match=str(value)):
        counter.restart("s", seq, value)
    assert counter.currval("s") == first


@pytest.mark.parametrize("value", [v for v in NOT_INTS if v is not None])
def test_restart_refuses_a_value_that_is_not_an_int(counter, value):
    """``RESTART WITH`` takes a bigint: anything else is refused with OutOfBoundsError; nothing changes."""
    take(counter, "s", UP, 1)
    with pytest.raises(OutOfBoundsError, match="must be an int"):
        counter.restart("s", UP, value)
    assert counter.currval("s") == 24


def test_alter_increment_by_keeps_the_value(counter):
    """``ALTER SEQUENCE s INCREMENT BY 10`` after 24, 28: the next value is 38 (28 + 10)."""
    take(counter, "s", UP, 2)
    wider = SequenceOptions.of(24, 10, 5, 100)
    assert counter.alter("s", wider) == UP
    assert take(counter, "s", wider, 2) == [38, 48]


def test_alter_increment_by_negative_turns_it_around(counter):
    """``ALTER SEQUENCE s INCREMENT BY -1`` after 24, 28 (bounds 5..36 kept): the next value is 27, down to 5."""
    take(counter, "s", UP, 2)
    back = SequenceOptions.of(24, -1, 5, 36)
    counter.alter("s", back)
    assert take(counter, "s", back, 2) == [27, 26]
    counter.setval("s", 6)
    assert counter.nextval("s", back) == 5
    with pytest.raises(SequenceExhaustedError, match="minimum"):
        counter.nextval("s", back)


def test_alter_increment_by_after_restart_then_restart_again(counter):
    """``ALTER SEQUENCE s RESTART; ALTER SEQUENCE s INCREMENT BY 10; nextval('s')`` gives START (24) in
    PostgreSQL. The counter keeps no is_called flag (docs/postgresql.md): the new step goes on from one old step
    before the restart value (30); restarting after the change gives PostgreSQL's 24, then 34."""
    take(counter, "s", UP, 3)
    counter.restart("s", UP)
    wider = SequenceOptions.of(24, 10, 5, 100)
    counter.alter("s", wider)
    assert counter.nextval("s", wider) == 30
    counter.restart("s", wider)
    assert take(counter, "s", wider, 2) == [24, 34]


def test_alter_maxvalue_up_continues_an_exhausted_sequence(counter):
    """``ALTER SEQUENCE s MAXVALUE 44`` on a sequence that reached 36: nextval gives 40, 44."""
    take(counter, "s", UP, 4)
    with pytest.raises(SequenceExhaustedError):
        counter.nextval("s", UP)
    higher = SequenceOptions.of(24, 4, 5, 44)
    counter.alter("s", higher)
    assert take(counter, "s", higher, 2) == [40, 44]


def test_alter_maxvalue_below_the_value_is_refused(counter):
    """``ALTER SEQUENCE s MAXVALUE 30`` with last_value 32: refused ("cannot be greater than MAXVALUE");
    the recorded options stay."""
    take(counter, "s", UP, 3)
    with pytest.raises(OutOfBoundsError, match="past the maximum 30"):
        counter.alter("s", SequenceOptions.of(24, 4, 5, 30))
    assert counter.stored_options("s") == UP and counter.currval("s") == 32


def test_alter_minvalue_above_the_value_is_refused(counter):
    """``ALTER SEQUENCE s MINVALUE 40`` (MAXVALUE 50) with last_value 28: refused, nothing recorded."""
    take(counter, "s", UP, 2)
    with pytest.raises(OutOfBoundsError):
        counter.alter("s", SequenceOptions.of(40, 4, 40, 50))
    assert counter.stored_options("s") == UP


def test_alter_cycle_then_no_cycle(counter):
    """``ALTER SEQUENCE s CYCLE`` on an exhausted sequence: it wraps to MINVALUE 5; ``NO CYCLE`` again: it stops
    at MAXVALUE."""
    take(counter, "s", UP, 4)
    cycling = SequenceOptions.of(24, 4, 5, 36, cycle=True)
    counter.alter("s", cycling)
    assert take(counter, "s", cycling, 2) == [5, 9]
    counter.alter("s", UP)
    counter.setval("s", 36)
    with pytest.raises(SequenceExhaustedError):
        counter.nextval("s", UP)


def test_alter_start_with_changes_only_where_restart_goes(counter):
    """``ALTER SEQUENCE s START WITH 8``: nextval goes on (32); a later ``RESTART`` gives 8."""
    take(counter, "s", UP, 2)
    moved = SequenceOptions.of(8, 4, 5, 36)
    counter.alter("s", moved)
    assert counter.nextval("s", moved) == 32
    counter.restart("s", moved)
    assert counter.nextval("s", moved) == 8


def test_other_options_than_recorded_are_refused(counter):
    """A process with other options than the counter records (an ALTER not yet recorded) is refused."""
    take(counter, "s", UP, 1)
    with pytest.raises(SequenceMismatchError):
        counter.nextval("s", SequenceOptions.of(24, 4, 5, 40))
    with pytest.raises(SequenceMismatchError):
        counter.setval("s", 30, sequence=SequenceOptions.of(24, 4, 5, 40))


def test_descending_defaults():
    """``CREATE SEQUENCE s INCREMENT BY -1``: MINVALUE -2**63, MAXVALUE -1, START -1; with ``MAXVALUE -10``
    the start is -10; ``MINVALUE 5`` going up starts at 5."""
    assert SequenceOptions.of(step=-1) == SequenceOptions(-1, -1, BIGINT_MIN, -1, False)
    assert SequenceOptions.of(step=-1, maximum=-10).start == -10
    assert SequenceOptions.of(step=-3, minimum=-100, maximum=100).start == 100
    assert SequenceOptions.of(minimum=5).start == 5
    assert SequenceOptions.of() == SequenceOptions(1, 1, 1, BIGINT_MAX, False)


@pytest.mark.parametrize("kwargs, message", [
    ({"step": 0}, "must not be 0"),
    ({"start": 0}, "lies below the minimum"),
    ({"start": 11, "maximum": 10}, "lies above the maximum"),
    ({"step": -1, "start": 1}, "lies above the maximum"),
    ({"step": -1, "start": -20, "minimum": -10}, "lies below the minimum"),
    ({"minimum": 10, "maximum": 10}, "must be less than"),
    ({"minimum": 10, "maximum": 5}, "must be less than"),
    ({"step": -1, "minimum": 5}, "must be less than"),
])
def test_create_sequence_errors(kwargs, message):
    """``INCREMENT must not be zero``, ``START value cannot be less than MINVALUE`` / ``greater than MAXVALUE``,
    ``MINVALUE must be less than MAXVALUE``: ConfigurationError naming the problem."""
    with pytest.raises(ConfigurationError, match=message):
        SequenceOptions.of(**kwargs)


@pytest.mark.parametrize("field", ["start", "step", "minimum", "maximum"])
@pytest.mark.parametrize("value", [True, 1.5, 2.0, Decimal("2.5"), "2"])
def test_options_must_be_ints(field, value):
    """A sequence's numbers are bigints: a bool, a float, a Decimal or a string is refused with ConfigurationError,
    whether through SequenceOptions.of or the constructor."""
    with pytest.raises(ConfigurationError, match="must be an int"):
        SequenceOptions.of(**{field: value})
    with pytest.raises(ConfigurationError, match="must be an int"):
        SequenceOptions(**{field: value})


@pytest.mark.parametrize("kwargs, message", [
    ({"cycle": "yes"}, "must be True or False"),
    ({"step": 0}, "must not be 0"),
    ({"start": 0}, "lies below the minimum"),
    ({"minimum": 5, "maximum": 5, "start": 5}, "must be less than"),
    ({"step": None}, "must be an int"),
])
def test_constructor_checks_as_of_does(kwargs, message):
    """``SequenceOptions(...)`` built directly is checked as ``of`` checks it: a sequence PostgreSQL would refuse
    is refused with ConfigurationError, not used."""
    with pytest.raises(ConfigurationError, match=message):
        SequenceOptions(**kwargs)


@pytest.mark.parametrize("sequence", ["s", 5, {"step": 1}])
def test_a_sequence_that_is_not_sequence_options_is_refused(counter, sequence):
    """Every NextId operation taking ``sequence=`` refuses anything but a SequenceOptions with ConfigurationError
    naming SequenceOptions, and changes nothing."""
    take(counter, "s", UP, 1)
    calls = [
        lambda: counter.nextval("s", sequence),
        lambda: counter.reserve("s", 2, sequence),
        lambda: counter.compare_and_set("s", 24, 28, sequence),
        lambda: counter.setval("s", 30, sequence=sequence),
        lambda: counter.restart("s", sequence),
        lambda: counter.restart("s", sequence, 28),
        lambda: counter.alter("s", sequence),
    ]
    for call in calls:
        with pytest.raises(ConfigurationError, match="SequenceOptions"):
            call()
    assert counter.currval("s") == 24 and counter.stored_options("s") == UP


def test_restart_and_alter_need_a_sequence(counter):
    """RESTART and ALTER need the sequence's options: None is refused with ConfigurationError naming
    SequenceOptions."""
    with pytest.raises(ConfigurationError, match="SequenceOptions"):
        counter.restart("s", None)
    with pytest.raises(ConfigurationError, match="SequenceOptions"):
        counter.alter("s", None)


@pytest.mark.parametrize("value", NOT_INTS)
def test_raise_to_refuses_a_value_that_is_not_an_int(counter, value):
    """``raise_to(key, 7.9)`` once truncated to 7: a value that is not an int is refused with OutOfBoundsError,
    and the counter is not moved."""
    counter.nextval("s", SequenceOptions.of())
    with pytest.raises(OutOfBoundsError, match="must be an int"):
        counter.raise_to("s", value)
    assert counter.currval("s") == 1


@pytest.mark.parametrize("step", [0, True, 1.5, "1", None])
def test_raise_to_refuses_a_step_that_is_not_a_direction(counter, step):
    """raise_to's ``step`` gives the direction: 0, a bool, a float, a string or None is refused."""
    counter.nextval("s", SequenceOptions.of())
    with pytest.raises(OutOfBoundsError, match="step"):
        counter.raise_to("s", 9, step=step)
    assert counter.currval("s") == 1


@pytest.mark.parametrize("value", [10**38, -(10**38) - 1, 10**40 + 1])
def test_a_value_dynamodb_cannot_hold_exactly_is_refused(counter, value):
    """A bigint always fits its sequence's storage in PostgreSQL; here a number of more than 38 digits cannot be
    stored exactly (DynamoDB refuses it, moto would keep it): setval, RESTART WITH, raise_to and compare_and_set
    refuse it with OutOfBoundsError naming the 38 digits, and nothing is written."""
    counter.nextval("s", SequenceOptions.of())
    calls = [lambda: counter.setval("s", value), lambda: counter.raise_to("s", value),
             lambda: counter.raise_to("s", value, step=-1), lambda: counter.compare_and_set("s", 1, value),
             lambda: counter.compare_and_set("s", value, 2)]
    for call in calls:
        with pytest.raises(OutOfBoundsError, match="more digits than a DynamoDB number holds exactly"):
            call()
    assert counter.currval("s") == 1


def test_raise_to_moves_only_forward(counter):
    """raise_to is ``setval(greatest(...))``: it moves the counter forward in its direction, never back."""
    counter.nextval("s", SequenceOptions.of())
    assert counter.raise_to("s", 9) and counter.currval("s") == 9
    assert not counter.raise_to("s", 5) and counter.currval("s") == 9
    assert counter.raise_to("s", 3, step=-1) and counter.currval("s") == 3


@pytest.mark.parametrize("value", [v for v in NOT_INTS if v is not None])
def test_compare_and_set_and_reserve_refuse_non_ints(counter, value):
    """compare_and_set and reserve refuse a value or count that is not an int, as setval and raise_to do."""
    with pytest.raises(OutOfBoundsError, match="int"):
        counter.compare_and_set("s", None, value)
    with pytest.raises(OutOfBoundsError, match="int"):
        counter.reserve("s", value)
    assert counter.currval("s") is None


def test_compare_and_set_under_a_sequence_on_a_counter_holding_no_integer_names_the_fix(counter):
    """compare_and_set with sequence options on a counter holding no integer (put by hand) raises
    CounterValueError naming setval, as nextval does, instead of answering that the value differed."""
    counter.nextval("s", UP)
    hash_key, range_key = counter._item_key("s")
    counter._get_connection().update_item(hash_key, range_key=range_key, actions=[Path(["NextId"]).set("oops")])
    with pytest.raises(CounterValueError, match="not an integer.*setval"):
        counter.compare_and_set("s", 24, 28, UP)


def test_model_descending_with_maxvalue_starts_there(make_model):
    """``CREATE SEQUENCE s INCREMENT BY -2 MAXVALUE -10``: -10, -12, -14."""
    Down = make_model("Down", autoinc_step=-2, autoinc_max=-10)
    assert save_many(Down, 3) == [-10, -12, -14]


def test_model_cycle_wraps_to_minvalue_not_start(make_model):
    """``START 8 INCREMENT 3 MINVALUE 2 MAXVALUE 12 CYCLE``: 8, 11, then MINVALUE 2 (12 is no step of the way)."""
    Seq = make_model("Seq", autoinc_start=8, autoinc_step=3, autoinc_min=2, autoinc_max=12, autoinc_cycle=True)
    assert save_many(Seq, 4) == [8, 11, 2, 5]


def test_model_descending_cycle_wraps_to_maxvalue_not_start(make_model):
    """``START -8 INCREMENT -3 MINVALUE -12 MAXVALUE -2 CYCLE``: -8, -11, then MAXVALUE -2."""
    Seq = make_model("Seq", autoinc_start=-8, autoinc_step=-3, autoinc_min=-12, autoinc_max=-2, autoinc_cycle=True)
    assert save_many(Seq, 4) == [-8, -11, -2, -5]


def test_model_no_cycle_reached_maximum(make_model):
    """``MAXVALUE 3 NO CYCLE``: 1, 2, 3, then "reached maximum value"; the item gets no ID."""
    Seq = make_model("Seq", autoinc_max=3)
    assert save_many(Seq, 3) == [1, 2, 3]
    item = Seq()
    with pytest.raises(SequenceExhaustedError, match="maximum"):
        item.save()
    assert item.id is None


def test_model_setval_and_restart(make_model):
    """setval and RESTART through a model's counter: the model's next saves follow them."""
    Seq = make_model("Seq", autoinc_start=10, autoinc_step=5, autoinc_max=1000)
    opts = Seq.autoinc_options()
    assert save_many(Seq, 2) == [10, 15]
    opts.counter.setval(opts.key, 100)
    assert save_many(Seq, 1) == [105]
    opts.counter.setval(opts.key, 200, is_called=False)
    assert save_many(Seq, 1) == [200]
    opts.counter.restart(opts.key, opts.sequence, 500)
    assert save_many(Seq, 1) == [500]


@pytest.mark.modes()
def test_model_cache_leaves_gaps_per_process(make_model):
    """``CACHE 5``: a session takes 5 values at once; another session then starts after them, and the first
    session's unused values are gaps (``Meta.autoinc_block = 5``)."""
    Seq = make_model("Seq", autoinc_block=5)
    assert save_many(Seq, 2) == [1, 2]
    reset_state()  # another process
    assert save_many(Seq, 1) == [6]
    assert Seq.autoinc_options().counter.currval(Seq.autoinc_options().key) == 10


@pytest.mark.modes()
def test_model_cache_stops_at_maxvalue(make_model):
    """``CACHE 5 MAXVALUE 7``: the second session gets 6 and 7, then "reached maximum value"."""
    Seq = make_model("Seq", autoinc_block=5, autoinc_max=7)
    assert save_many(Seq, 1) == [1]
    reset_state()
    assert save_many(Seq, 2) == [6, 7]
    with pytest.raises(SequenceExhaustedError):
        Seq().save()


@pytest.mark.modes()
@pytest.mark.parametrize("option, value", [
    ("autoinc_step", 0), ("autoinc_step", 1.5), ("autoinc_step", True), ("autoinc_start", 1.0),
    ("autoinc_min", Decimal("1")), ("autoinc_max", "10"), ("autoinc_cycle", "yes"), ("autoinc_cycle", 1),
    ("autoinc_block", 0), ("autoinc_block", True), ("autoinc_block", 2.5), ("autoinc_start", 0),
])
def test_model_options_refuse_what_postgresql_refuses(make_model, option, value):
    """Meta options PostgreSQL's CREATE SEQUENCE would refuse (INCREMENT 0, START below MINVALUE, CACHE 0,
    a number that is no integer) are refused with ConfigurationError when the class is made."""
    with pytest.raises(ConfigurationError, match=option):
        make_model("Seq", autoinc_gapless=False, **{option: value})
# -- repairs of a broken counter -----------------------------------------------------------

#: Counter items broken by hand, as another tool might leave them: the attributes put beside the key (the
#: model's recorded options unless one of them replaces them). The sequence is 1, 4, 7, ... 49.
BROKEN: Dict[str, Dict[str, Any]] = {
    "a fraction": {"NextId": {"N": "1.5"}},
    "a string": {"NextId": {"S": "seven"}},
    "a bool": {"NextId": {"BOOL": True}},
    "a value past the maximum": {"NextId": {"N": "70"}},
    "a value behind the minimum": {"NextId": {"N": "-5"}},
    "a value off the step": {"NextId": {"N": "5"}},
    "a value of 40 digits": {"NextId": {"N": "1" + "0" * 39}},
    "no value": {},
    "junk attributes": {"NextId": {"N": "3"}, "Note": {"S": "x"}, "NextTicket": {"S": "t"},
                        "NextServed": {"BOOL": False}},
    "options that are no sequence": {"NextId": {"N": "3"}, "NextOptions": {"S": "garbage"}},
    "options held as a number": {"NextId": {"N": "3"}, "NextOptions": {"N": "7"}},
}


def broken(make_model: Any, state: str) -> Any:
    """A model on the sequence 1, 4, ..., 49 whose counter item holds ``BROKEN[state]``."""
    model = make_model("User", autoinc_step=3, autoinc_max=50)
    opts = model.autoinc_options()
    counter = opts.counter
    hash_key, range_key = counter._item_key(opts.key)
    attributes = {"NextOptions": {"S": opts.sequence.encode()}, **BROKEN[state]}
    counter._get_connection().put_item(hash_key, range_key, attributes=attributes)
    return model


@pytest.mark.parametrize("state", sorted(BROKEN))
def test_setval_repairs_a_counter_in_any_state(make_model, state):
    """setval replaces whatever a broken counter holds without reading it as a number: the next save takes
    value + step."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    assert opts.counter.setval(opts.key, 10, sequence=opts.sequence) == 10
    assert save_many(model, 1) == [13]


@pytest.mark.parametrize("state", sorted(BROKEN))
def test_restart_repairs_a_counter_in_any_state(make_model, state):
    """restart replaces whatever a broken counter holds, and its options: the next save takes the value given."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    opts.counter.restart(opts.key, opts.sequence, 10)
    assert save_many(model, 1) == [10]
    assert opts.counter.stored_options(opts.key) == opts.sequence


@pytest.mark.parametrize("state", ["a fraction", "a string", "a bool", "options that are no sequence",
                                   "options held as a number"])
def test_the_fix_a_broken_counters_error_names_works(make_model, state):
    """A save refused by a broken counter names the call that fixes it; making that call (setval, alter or
    restart, on the class the message names) lets the next save through."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    with pytest.raises(Exception) as refused:
        model().save()
    message = str(refused.value)
    found = re.search(r"(NextId|Model\.autoinc_options\(\)\.counter)\.(setval|alter)\(", message) or \
        re.search(r"(NextId|Model\.autoinc_options\(\)\.counter)\.(restart)\(", message)
    assert found, message
    counter = opts.counter if found.group(1) != "NextId" else NextId
    fix = {"setval": lambda: counter.setval(opts.key, 10),
           "alter": lambda: counter.alter(opts.key, opts.sequence),
           "restart": lambda: counter.restart(opts.key, opts.sequence, 10)}[found.group(2)]
    fix()
    reset_state()
    item = model()
    item.save()
    assert item.id == {"setval": 13, "alter": 6, "restart": 10}[found.group(2)]


@pytest.mark.parametrize("state", ["a fraction", "a string"])
def test_alter_of_a_counter_holding_no_integer_names_restart(make_model, state):
    """alter cannot keep a value that is no integer: CounterValueError naming restart, which then works."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    with pytest.raises(CounterValueError, match="so alter cannot keep its value; restart it"):
        opts.counter.alter(opts.key, opts.sequence)
    opts.counter.restart(opts.key, opts.sequence, 7)
    assert save_many(model, 1) == [7]


@pytest.mark.parametrize("state", ["options that are no sequence", "options held as a number"])
def test_alter_replaces_options_that_are_no_sequence(make_model, state):
    """alter records the model's options over whatever stood there, keeping the value 3: the next save takes 6."""
    model = broken(make_model, state)
    opts = model.autoinc_options()
    assert opts.counter.alter(opts.key, opts.sequence) is None
    assert save_many(model, 1) == [6]


# -- reserve on a cycling sequence, as nextval with CYCLE ------------------------------------------------------------

ONE_TO_TEN = SequenceOptions(1, 1, 1, 10, True)


def test_reserve_across_the_end_of_a_cycle_wraps_to_the_minimum(backend):
    """``CREATE SEQUENCE s MAXVALUE 10 CYCLE CACHE 4``, at 8: nextval hands out 9, 10, 1, 2 (past MAXVALUE it
    goes on from MINVALUE); reserve(4) takes the same values, and the counter then stands at 2."""
    counter = backend.counter()
    counter.setval("s", 8, sequence=ONE_TO_TEN)
    assert counter.reserve("s", 4, ONE_TO_TEN) == [9, 10, 1, 2]
    assert counter.currval("s") == 2
    assert counter.reserve("s", 2, ONE_TO_TEN) == [3, 4]


def test_reserve_across_the_end_of_a_descending_cycle_wraps_to_the_maximum(backend):
    """``INCREMENT BY -2 MINVALUE -9 MAXVALUE -1 CYCLE``, at -7: the next three values are -9, then MAXVALUE
    -1, then -3."""
    down = SequenceOptions(-1, -2, -9, -1, True)
    counter = backend.counter()
    counter.setval("s", -7, sequence=down)
    assert counter.reserve("s", 3, down) == [-9, -1, -3]
    assert counter.nextval("s", down) == -5


def test_reserve_on_a_new_counter_near_the_end_of_a_cycle_wraps(backend):
    """A new counter of ``START 5 MAXVALUE 10 CYCLE`` asked for 8 values takes 5..10, then 1 and 2."""
    near_end = SequenceOptions(5, 1, 1, 10, True)
    counter = backend.counter()
    assert counter.reserve("s", 8, near_end) == [5, 6, 7, 8, 9, 10, 1, 2]


def test_reserve_partial_on_a_cycle_stops_at_the_end(backend):
    """With partial, a cycling sequence hands out only the values before its end (9, 10 of 4 asked); the next
    call starts again from the minimum."""
    counter = backend.counter()
    counter.setval("s", 8, sequence=ONE_TO_TEN)
    assert counter.reserve("s", 4, ONE_TO_TEN, partial=True) == [9, 10]
    assert counter.reserve("s", 4, ONE_TO_TEN, partial=True) == [1, 2, 3, 4]


def test_reserve_past_the_end_without_cycle_spends_nothing(backend):
    """``NO CYCLE`` at 8 of 10: reserve(3) raises SequenceExhaustedError (``last`` 8) and spends nothing;
    with partial it takes 9 and 10."""
    no_cycle = SequenceOptions(1, 1, 1, 10, False)
    counter = backend.counter()
    counter.setval("s", 8, sequence=no_cycle)
    with pytest.raises(SequenceExhaustedError) as exhausted:
        counter.reserve("s", 3, no_cycle)
    assert exhausted.value.last == 8 and counter.currval("s") == 8
    assert counter.reserve("s", 3, no_cycle, partial=True) == [9, 10]


def test_reserve_of_more_than_a_cycle_holds_is_refused(backend):
    """A cycling sequence of 10 values asked for 11 at once would repeat one: SequenceExhaustedError, nothing
    spent."""
    counter = backend.counter()
    counter.setval("s", 3, sequence=ONE_TO_TEN)
    with pytest.raises(SequenceExhaustedError, match="cannot number 11 items in one request"):
        counter.reserve("s", 11, ONE_TO_TEN)
    assert counter.currval("s") == 3


def test_the_fix_a_collision_names_works(make_model):
    """A counter behind the stored IDs: the refused save names a class whose setval reaches the counter (on
    DynamoDB Local, a counter bound to the model's Meta.host, which NextId itself does not reach); calling it
    as named lets the next save take 4."""
    model = make_model("User")
    with model.batch_write() as batch:
        for i in (1, 2, 3):
            batch.save(model(id=i))
    with pytest.raises(ItemExistsError) as refused:
        save_many(model, 1)
    opts = model.autoinc_options()
    found = re.search(r"(\w+|Model\.autoinc_options\(\)\.counter)\.setval\(", str(refused.value))
    assert found, refused.value
    named = {"NextId": NextId, "Model.autoinc_options().counter": opts.counter}[found.group(1)]
    named.setval(opts.key, 3)
    reset_state()
    assert save_many(model, 1) == [4]
