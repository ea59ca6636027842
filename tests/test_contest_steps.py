"""The queue's steps (``pynamodb_autoinc._contention.Contest``) driven by hand, with no moto and no network, as
``tests/test_judge.py`` drives the judge's table: a stand-in write (what ``_contention.Write`` asks for) holding
stand-in claims, each step a generator whose Sleep, Send and Signal this test reads, and whose answers (counter
items as DynamoDB returns them) it sends back with ``.send()`` (a failure with ``.throw()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import pytest
from botocore.exceptions import ClientError
from pynamodb.constants import UPDATE_ITEM
from pynamodb.exceptions import CancellationReason

from pynamodb_autoinc import _budget
from pynamodb_autoinc import _contention as q
from pynamodb_autoinc.counter import NextId
from pynamodb_autoinc.exceptions import AutoIncrementError, ContentionError
from pynamodb_autoinc.sequence import SequenceOptions
from pynamodb_autoinc.signals import contention_failed, race_lost

KEY = "orders"
CHAIN = ("swap", "endpoint", "NextId", KEY)


class Order:
    """The model a claim numbers (only its class is read: the signals' sender, the log's name)."""


@dataclass
class Claim:
    """A gapless claim as the queue reads it: its counter (chain and key), options, instance and value."""

    opts: Any
    instance: Any = field(default_factory=Order)
    key: str = KEY
    kind: str = "swap"
    chain: Tuple[Any, ...] = CHAIN
    value: int = 11
    expected: Optional[int] = 10


@dataclass
class Write:
    """The engine's write as ``_contention.Write`` names it; it sends nothing itself (the driver would)."""

    claims: List[Any]
    connection: Any = field(default_factory=object)
    retry: bool = True
    grouped: bool = False
    previous_end: Optional[float] = None
    queue: bool = False
    ticket: Optional[int] = None
    standing: Optional[str] = None
    by_standing: bool = False
    requeue: bool = False
    counter_items: Dict[Any, Dict[str, Any]] = field(default_factory=dict)

    def chains(self) -> List[Tuple[Any, Any, Any]]:
        swaps = [c for c in self.claims if c.kind == "swap"]
        return [(swaps[0].chain, swaps[0], swaps[-1])] if swaps else []

    def send(self, operation: str, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        raise AssertionError("a step asks its driver to send; it never sends itself")

    def contention(self, exc: Exception, attempts: int, elapsed: float = 0.0) -> AutoIncrementError:
        return ContentionError(f"lost {attempts} races", exc)


def write(*, attempts: Optional[int] = 10, grouped: bool = False) -> Write:
    """A write of one gapless claim on :data:`KEY`, whose budget allows ``attempts`` lost races (no time limit, no
    backoff: every wait is the queue's own)."""
    opts = SimpleNamespace(budget=_budget.Budget(attempts=attempts, seconds=None, backoff=None), counter=NextId,
                           sequence=SequenceOptions.of())
    return Write([Claim(opts)], grouped=grouped)


def counter(value: Optional[int], ticket: Optional[int] = None, served: Optional[int] = None) -> Dict[str, Any]:
    """A counter item as DynamoDB returns it: its value, the last ticket handed out and the last one served."""
    item: Dict[str, Any] = {"NextKey": {"S": KEY}}
    for name, number in (("NextId", value), ("NextTicket", ticket), ("NextServed", served)):
        if number is not None:
            item[name] = {"N": str(number)}
    return item


class Refused(Exception):
    """A failed swap, as the judge passes it to the queue: its cancellation reasons (none: a busy item)."""

    def __init__(self, *codes: str) -> None:
        super().__init__("refused")
        self.cancellation_reasons = [CancellationReason(code=code) for code in codes]


def drive(steps: q.Steps[Any], answers: Optional[List[Any]] = None) -> Tuple[List[Any], Any]:
    """Run ``steps`` as the engine's driver does, answering each Send with the next of ``answers`` (an exception
    is thrown in); return the steps it yielded and what it returned."""
    given = list(answers or [])
    seen: List[Any] = []
    answer: Any = None
    failure: Optional[BaseException] = None
    while True:
        try:
            step = steps.send(answer) if failure is None else steps.throw(failure)
        except StopIteration as done:
            return seen, done.value
        seen.append(step)
        answer, failure = None, None
        if isinstance(step, q.Send):
            reply = given.pop(0)
            if isinstance(reply, BaseException):
                failure = reply
            else:
                answer = reply


def kinds(steps: List[Any]) -> List[str]:
    return [type(step).__name__ for step in steps]


def test_a_first_loss_with_nobody_queued_tries_the_refusals_value_at_once() -> None:
    """The refusal showed the counter and an empty queue: the write claims after that value at once, sending
    nothing and sleeping not at all (only the race_lost signal)."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.counter_items[CHAIN] = counter(12, ticket=4, served=4)
    steps, values = drive(contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 12}))
    assert kinds(steps) == ["Signal"] and steps[0].signal is race_lost
    assert values == {CHAIN: 12}
    assert w.ticket is None


def test_a_loss_behind_a_queue_takes_one_ticket_then_sleeps_about_its_turn() -> None:
    """Writers are queued (tickets 4 and 5 handed out, 3 served): the write sends one UpdateItem taking the next
    ticket, holds the ticket it answers with, and sleeps about until the two ahead have stored an item each; it
    then claims the value after theirs."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.counter_items[CHAIN] = counter(12, ticket=5, served=3)
    steps, values = drive(contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 12}),
                          [{"Attributes": counter(12, ticket=6, served=3)}])
    assert kinds(steps) == ["Signal", "Send", "Sleep"]
    ticket = steps[1]
    assert ticket.operation == UPDATE_ITEM and ticket.timed
    assert ticket.kwargs["ReturnValues"] == "ALL_NEW" and "ADD" in ticket.kwargs["UpdateExpression"]
    assert "NextTicket" in ticket.kwargs["ExpressionAttributeNames"].values()
    assert w.ticket == 6 and q.place_of(w) == q.QUEUED
    assert 0 < steps[2].seconds <= q.TURN
    assert values == {CHAIN: 14}  # two writers ahead (tickets 4 and 5) store 13 and 14 first


def test_the_ticket_next_in_line_claims_at_once() -> None:
    """A ticket whose answer shows it next (the one before it served) waits for nobody: no sleep, the value
    the answer shows."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.counter_items[CHAIN] = counter(12, ticket=5, served=4)
    steps, values = drive(contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 12}),
                          [{"Attributes": counter(12, ticket=6, served=5)}])
    assert kinds(steps) == ["Signal", "Send"]
    assert values == {CHAIN: 12} and w.ticket == 6


def test_a_ticket_request_that_fails_leaves_the_write_unqueued_and_backs_off() -> None:
    """The ticket request fails (thrown into the step): the write holds no ticket, sleeps the budget's backoff
    and claims from nothing it learned (an empty answer: read the counter again)."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.counter_items[CHAIN] = counter(12, ticket=5, served=3)
    busy = ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")
    steps, values = drive(contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 12}), [busy])
    assert kinds(steps) == ["Signal", "Send", "Sleep"]
    assert steps[2].seconds == 0.0  # the budget has no backoff
    assert values == {} and q.place_of(w) == q.UNQUEUED


def test_a_ticket_passed_over_queues_again() -> None:
    """A queued write whose refusal shows its ticket already passed over (served beyond it) takes a new ticket."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.ticket = 6
    w.counter_items[CHAIN] = counter(15, ticket=9, served=7)
    steps, _ = drive(contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 15}),
                     [{"Attributes": counter(15, ticket=10, served=7)}])
    assert kinds(steps)[:2] == ["Signal", "Send"]
    assert w.ticket == 10


def test_a_refusal_without_the_counter_item_claims_from_no_value() -> None:
    """The swap's condition failed and no counter item came back (it was deleted, its queue with it): the
    write drops its place and claims from a counter with no value, sending nothing."""
    w = write()
    contest = q.Contest(w, lost=True)
    w.ticket = 6
    steps, values = drive(contest.lost(Refused("ConditionalCheckFailed"), {}))
    assert kinds(steps) == ["Signal"]
    assert values == {CHAIN: None} and q.place_of(w) == q.UNQUEUED


def test_a_spent_budget_gives_the_ticket_back_then_raises_the_writes_contention_error() -> None:
    """The budget is spent at this loss: the write first serves its ticket (one UpdateItem passing over it, so
    that nobody waits for it), then signals contention_failed and raises the error the write makes."""
    w = write(attempts=0)
    contest = q.Contest(w, lost=True)
    w.ticket = 6
    cause = Refused("ConditionalCheckFailed")
    steps: List[Any] = []
    with pytest.raises(ContentionError, match="lost 1 races") as raised:
        generator = contest.lost(cause, {CHAIN: 12})
        steps.append(next(generator))
        steps.append(generator.send({"Attributes": counter(12, ticket=6, served=6)}))
        generator.send(None)
    assert kinds(steps) == ["Send", "Signal"]
    give_back = steps[0]
    assert give_back.operation == UPDATE_ITEM and not give_back.timed
    assert give_back.kwargs["ExpressionAttributeValues"][":0"] == {"N": "5"}  # it passes over ticket 6
    assert steps[1].signal is contention_failed
    assert raised.value.__cause__ is cause
    assert q.place_of(w) == q.UNQUEUED


def test_a_spent_budget_on_an_unqueued_write_sends_nothing_before_raising() -> None:
    """With no ticket to give back, a spent budget raises at once (after the contention_failed signal)."""
    w = write(attempts=0)
    contest = q.Contest(w, lost=True)
    generator = contest.lost(Refused("ConditionalCheckFailed"), {CHAIN: 12})
    step = next(generator)
    assert isinstance(step, q.Signal) and step.signal is contention_failed
    with pytest.raises(ContentionError):
        generator.send(None)


def test_give_back_of_an_unqueued_write_yields_nothing() -> None:
    """A write that holds no ticket and no standing place has nothing to give back: no step at all."""
    w = write()
    contest = q.Contest(w)
    steps, result = drive(contest.give_back())
    assert steps == [] and result is None


def test_give_back_of_a_queued_write_serves_its_ticket_and_ignores_a_refusal() -> None:
    """A queued write gives its ticket back with one UpdateItem (conditional on the ticket being next); if that
    is refused (not next yet), the step ends quietly: the writer behind passes over it later."""
    w = write()
    contest = q.Contest(w)
    w.ticket = 8
    refused = ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "no"}}, "UpdateItem")
    steps, result = drive(contest.give_back(), [refused])
    assert kinds(steps) == ["Send"] and steps[0].operation == UPDATE_ITEM
    assert result is None and w.ticket is None


def test_passing_sleeps_the_budgets_backoff_and_keeps_the_values() -> None:
    """A failure that passes (throttled, a busy item): the write waits the budget's backoff and is sent again as
    it was; nothing is sent by the step, no race counted as lost in the queue."""
    w = write()
    contest = q.Contest(w, lost=True)
    steps, result = drive(contest.passing(Refused("TransactionConflict")))
    assert kinds(steps) == ["Sleep"] and result is None
    assert contest.losses == 1 and w.ticket is None


def test_start_without_a_standing_ticket_yields_nothing() -> None:
    """Before its first send, a lone save whose process holds no standing ticket on the counter goes at once."""
    w = write(grouped=True)
    contest = q.Contest(w)
    steps, result = drive(contest.start())
    assert steps == [] and result is None


def test_start_on_a_standing_ticket_sleeps_until_its_turn_and_expects_the_value_after_those_ahead() -> None:
    """A lone save whose process holds a standing ticket, two writers ahead of it, comes back on it: it sleeps
    about two round trips (less the time since the ticket was taken) and claims after the values they store."""
    w = write(grouped=True)
    contest = q.Contest(w)
    assert contest.place is not None
    q._queue().standing[contest.place] = q._Standing(20, 2, _budget.clock.monotonic())
    steps, values = drive(contest.start())
    assert kinds(steps) == ["Sleep"] and 0 < steps[0].seconds <= q.TURN
    assert values == {CHAIN: 22}
    assert q.place_of(w) == q.STANDING
