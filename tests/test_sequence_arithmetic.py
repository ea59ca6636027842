"""Sequence arithmetic (pynamodb_autoinc.sequence): every derived value agrees with stepping one value at a time."""

from __future__ import annotations

from typing import Optional

from hypothesis import given
from hypothesis import strategies as st

from pynamodb_autoinc import SequenceOptions
from pynamodb_autoinc.exceptions import AutoIncrementError


@st.composite
def sequences(draw: st.DrawFn) -> SequenceOptions:
    step = draw(st.integers(-4, 4).filter(bool))
    low = draw(st.integers(-30, 30))
    high = draw(st.integers(low + 1, low + 40))
    start = draw(st.integers(low, high))
    return SequenceOptions.of(start, step, low, high, draw(st.booleans()))


def stepped(seq: SequenceOptions, last: Optional[int], count: int) -> Optional[int]:
    for _ in range(count):
        try:
            last = seq.following("k", last)
        except AutoIncrementError:
            return None
    return last


@given(sequences(), st.integers(0, 120), st.booleans())
def test_after_agrees_with_following_one_at_a_time(seq, count, new):
    """``after(last, n)`` is the value n calls of ``following`` reach (None where a non-cycling sequence ends)."""
    last = None if new else seq.start
    assert seq.after("k", last, count) == stepped(seq, last, count)


@given(sequences(), st.integers(0, 90))
def test_values_handed_out_are_on_the_sequence(seq, count):
    """Every value a sequence hands out, across wraps, is ``on_sequence``; a value half a step off is not."""
    value = None
    for _ in range(count):
        value = stepped(seq, value, 1)
        if value is None:
            break
        assert seq.on_sequence(value)
    if abs(seq.step) > 1 and not seq.cycle:
        assert not seq.on_sequence(seq.start + 1)


@given(sequences(), st.integers(-60, 60))
def test_first_beyond_is_the_first_value_past_the_bound(seq, bound):
    """``first_beyond(bound)`` is on the sequence's lattice, past ``bound``, and one step back is not past it."""
    first = seq.first_beyond(bound)
    assert (first - seq.start) % seq.step == 0
    past = (lambda v: v > bound) if seq.step > 0 else (lambda v: v < bound)
    if past(seq.start):
        assert first == seq.start
    else:
        assert past(first) and not past(first - seq.step)


@given(sequences(), st.integers(1, 4))
def test_subsequences_split_the_values_among_members(seq, count):
    """The members' subsequences hold every value of the sequence once, in their order, until one ends."""
    try:
        parts = [seq.subsequence(i, count) for i in range(count)]
    except AutoIncrementError:
        return  # a member would start outside the bounds: refused
    starts = [p.start for p in parts]
    assert starts == [seq.start + i * seq.step for i in range(count)]
    assert all(p.step == seq.step * count and not p.cycle for p in parts)


@given(sequences(), st.integers(-60, 60))
def test_position_counts_steps_from_the_start(seq, value):
    """``position(v)`` is how many steps from the start reach v (None if none do), and ``at`` inverts it."""
    reached = [seq.start + k * seq.step for k in range(200)]
    position = seq.position(value)
    assert position == (reached.index(value) if value in reached else None)
    if position is not None:
        assert seq.at(position) == value
