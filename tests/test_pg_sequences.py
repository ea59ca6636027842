"""Sequences as PostgreSQL has them: MINVALUE/MAXVALUE, CYCLE, setval, RESTART, ALTER, recorded options.

Where a test mirrors a case of PostgreSQL's ``src/test/regress/sql/sequence.sql``,
its docstring quotes the SQL it mirrors.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute

from pynamodb_autoinc import NextId, SequenceOptions, TransactWrite
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
