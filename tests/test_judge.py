"""The judge (``pynamodb_autoinc._judge``): every cell of request kind x answer -> outcome, checked without moto or a
network, as h11 tests its state tables; and docs/architecture.md shows the same table. Also the queue's table of
moves (``pynamodb_autoinc._contention.TRANSITIONS``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

from pynamodb_autoinc import _judge as j

#: The expected outcome of each answer, written from DynamoDB's documentation (not read from the module).
EXPECTED: Dict[Tuple[str, str], str] = {
    (j.PUT, j.OK): j.APPLIED,
    (j.PUT, j.SERVER_ERROR): j.UNKNOWN,
    (j.PUT, j.THROTTLED): j.NOT_APPLIED,
    (j.PUT, j.CONFLICT): j.RESEND,
    (j.PUT, j.IN_PROGRESS): j.RESEND,
    (j.PUT, j.REPLICATED_CONFLICT): j.RESEND,
    (j.PUT, j.REFUSED): j.NOT_APPLIED,
    (j.PUT, j.LOST): j.UNKNOWN,
    (j.PUT, j.UNSENT): j.NOT_APPLIED,
    (j.PUT, j.INTERRUPTED): j.UNKNOWN,
    (j.TRANSACT, j.OK): j.APPLIED,
    (j.TRANSACT, j.SERVER_ERROR): j.UNKNOWN,
    (j.TRANSACT, j.THROTTLED): j.NOT_APPLIED,
    (j.TRANSACT, j.CONFLICT): j.RESEND,
    (j.TRANSACT, j.IN_PROGRESS): j.RESEND,
    (j.TRANSACT, j.REPLICATED_CONFLICT): j.RETAKE,
    (j.TRANSACT, j.REFUSED): j.NOT_APPLIED,
    (j.TRANSACT, j.LOST): j.UNKNOWN,
    (j.TRANSACT, j.UNSENT): j.NOT_APPLIED,
    (j.TRANSACT, j.INTERRUPTED): j.UNKNOWN,
    (j.PUT, j.UNCLEAR): j.UNKNOWN,  # nothing DynamoDB documents: nothing proves that nothing was written
    (j.TRANSACT, j.UNCLEAR): j.UNKNOWN,
}

ITEM = {"id": {"N": "5"}, "name": {"S": "Kirk"}}
EMAIL_ITEM = {"email": {"S": "kirk@example.com"}, "seq": {"N": "2"}, "name": {"S": "Kirk"}}


def _put(item: Optional[dict] = ITEM, *, claimed: str = "id", keys: Tuple[str, ...] = ("id",),
         maybe_applied: bool = False) -> j.Plan:
    return j.Plan(j.PUT, item=item, claimed=claimed, keys=keys, maybe_applied=maybe_applied)


def _gapless(maybe_applied: bool = False) -> j.Plan:
    """A gapless save: one new item, then its counter's swap."""
    return j.Plan(j.TRANSACT, (j.NEW, j.SWAP), (0, None), (False, False), maybe_applied=maybe_applied)


def test_every_cell_of_the_table_is_covered() -> None:
    """The table holds a cell for each request kind and each answer but the two judged item by item."""
    judged_apart = {(j.PUT, j.CONDITION_FAILED), (j.TRANSACT, j.CANCELLED)}
    never_answered = {(j.PUT, j.CANCELLED), (j.TRANSACT, j.CONDITION_FAILED)}  # not answers to that request
    judged_apart |= never_answered
    cells = {(kind, answer) for kind in (j.PUT, j.TRANSACT) for answer in j.ANSWERS} - judged_apart
    assert set(j.TABLE) == cells == set(EXPECTED)


@pytest.mark.parametrize(("cell", "outcome"), sorted(EXPECTED.items()))
def test_cell(cell: Tuple[str, str], outcome: str) -> None:
    """Each cell's outcome, for a write none of whose earlier tries may have applied."""
    kind, answer = cell
    plan = _put() if kind == j.PUT else _gapless()
    assert j.judge(plan, j.Answer(answer)).outcome == outcome


@pytest.mark.parametrize("answer", [j.THROTTLED, j.REFUSED, j.UNSENT])
@pytest.mark.parametrize("kind", [j.PUT, j.TRANSACT])
def test_not_applied_after_a_try_that_may_have_applied_is_unknown(kind: str, answer: str) -> None:
    """An answer that says this try applied nothing says nothing of an earlier try that may have: unknown."""
    plan = _put() if kind == j.PUT else _gapless()
    assert j.judge(plan, j.Answer(answer, earlier_may_have_applied=True)).outcome == j.UNKNOWN
    assert j.judge(_put(maybe_applied=True) if kind == j.PUT else _gapless(True), j.Answer(answer)).outcome \
        == j.UNKNOWN


def test_put_condition_without_an_item_is_the_users_condition() -> None:
    """A failed put condition with no item under the key: the user's condition failed, nothing written."""
    assert j.judge(_put(maybe_applied=True), j.Answer(j.CONDITION_FAILED)).why == "condition"


def test_put_condition_on_a_first_try_is_another_item() -> None:
    """A failed put condition on a write none of whose tries may have applied: the key is another item's."""
    verdict = j.judge(_put(), j.Answer(j.CONDITION_FAILED, item=ITEM))
    assert (verdict.outcome, verdict.why) == (j.NOT_APPLIED, "exists")


def test_put_condition_after_a_lost_try_showing_the_item_as_sent_is_applied() -> None:
    """After a try that may have applied, the item under the key exactly as sent (numbers written otherwise
    count as equal) is this write's: applied."""
    stored = {"id": {"N": "5.0"}, "name": {"S": "Kirk"}}
    assert j.judge(_put(), j.Answer(j.CONDITION_FAILED, item=stored, earlier_may_have_applied=True)).outcome \
        == j.APPLIED


def test_put_condition_showing_another_value_where_the_write_put_its_own_is_another_item() -> None:
    """A model numbering ``seq`` outside its key: the stored item under the email holds another seq, so it is
    another user's, whatever else it holds: not applied."""
    plan = _put(EMAIL_ITEM, claimed="seq", keys=("email",), maybe_applied=True)
    other = {**EMAIL_ITEM, "seq": {"N": "1"}}
    assert j.judge(plan, j.Answer(j.CONDITION_FAILED, item=other)).outcome == j.NOT_APPLIED


def test_put_condition_showing_the_claimed_value_outside_the_key_changed_since_is_applied() -> None:
    """The stored item holds the seq this writer alone was given, with another name: this write's, changed since."""
    plan = _put(EMAIL_ITEM, claimed="seq", keys=("email",), maybe_applied=True)
    edited = {**EMAIL_ITEM, "name": {"S": "edited"}}
    assert j.judge(plan, j.Answer(j.CONDITION_FAILED, item=edited)).outcome == j.APPLIED


def test_put_condition_showing_another_item_under_the_claimed_key_is_undecidable() -> None:
    """The claimed value is the key, and the item under it differs: stored by hand ahead of the counter, or this
    write's changed since; nothing tells them apart."""
    other = {"id": {"N": "5"}, "name": {"S": "by hand"}}
    assert j.judge(_put(maybe_applied=True), j.Answer(j.CONDITION_FAILED, item=other)).outcome == j.UNDECIDABLE


def test_equal_content_on_a_first_try_never_counts() -> None:
    """On a try with no earlier one, an item equal to the one sent is still another writer's (equal content is
    no identity)."""
    assert j.judge(_put(), j.Answer(j.CONDITION_FAILED, item=dict(ITEM))).outcome == j.NOT_APPLIED


REASONS_EXPECTED = {
    (j.SWAP, "ConditionalCheckFailed"): j.RETAKE,
    (j.PUT_ITEM, "ConditionalCheckFailed"): j.NOT_APPLIED,
    (j.OTHER, "ConditionalCheckFailed"): j.NOT_APPLIED,
    **{(role, reason): j.RESEND for role in (j.NEW, j.PUT_ITEM, j.SWAP, j.OTHER)
       for reason in ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")},
    **{(role, reason): j.NOT_APPLIED for role in (j.NEW, j.PUT_ITEM, j.SWAP, j.OTHER)
       for reason in ("ValidationError", "ItemCollectionSizeLimitExceeded")},
}


@pytest.mark.parametrize(("cell", "outcome"), sorted(REASONS_EXPECTED.items()))
def test_cancellation_reason(cell: Tuple[str, str], outcome: str) -> None:
    """A transaction cancelled with one reason on an item of each role ("None" on the others)."""
    role, reason = cell
    plan = j.Plan(j.TRANSACT, (j.OTHER, j.PUT_ITEM, j.NEW, j.SWAP), (None, None, 0, None), (False,) * 4)
    position = plan.roles.index(role)
    reasons = tuple(j.Reason(reason) if n == position else j.Reason("None") for n in range(4))
    verdict = j.judge(plan, j.Answer(j.CANCELLED, reasons=reasons))
    assert (verdict.outcome, verdict.positions) == (outcome, (position,))


def test_every_documented_reason_is_judged() -> None:
    """Each cancellation reason DynamoDB documents has a cell for each role (None: the item did not fail it)."""
    roles = (j.NEW, j.PUT_ITEM, j.SWAP, j.OTHER)
    missing = [(role, reason) for role in roles for reason in j.REASONS if (role, reason) not in j.REASON_OUTCOMES]
    assert missing == []


@pytest.mark.parametrize(("swap", "outcome"), [("ConditionalCheckFailed", j.RETAKE), ("None", j.NOT_APPLIED)])
def test_new_item_taken_is_a_lost_race_only_if_its_counter_moved(swap: str, outcome: str) -> None:
    """A new item's key taken while its counter moved too: a racing writer, take new values. Its counter held: the
    counter is behind the stored items, no retry helps."""
    reasons = (j.Reason("ConditionalCheckFailed", ITEM), j.Reason(swap))
    assert j.judge(_gapless(), j.Answer(j.CANCELLED, reasons=reasons)).outcome == outcome


def test_query_item_taken_is_a_lost_race() -> None:
    """A query-strategy item whose key is taken was numbered from a stale read: take new values."""
    plan = j.Plan(j.TRANSACT, (j.NEW,), (None,), (True,))
    reasons = (j.Reason("ConditionalCheckFailed", ITEM),)
    assert j.judge(plan, j.Answer(j.CANCELLED, reasons=reasons)).outcome == j.RETAKE


def test_cancelled_transaction_is_final_even_after_a_lost_try() -> None:
    """A transaction resent with its token answers success if an earlier try applied: a cancellation after a lost
    try means none applied, and is judged as it reads."""
    reasons = (j.Reason("None"), j.Reason("ConditionalCheckFailed", {"NextId": {"N": "3"}}))
    assert j.judge(_gapless(maybe_applied=True), j.Answer(j.CANCELLED, reasons=reasons)).outcome == j.RETAKE


def test_the_gravest_item_decides() -> None:
    """One item refused for good and another only busy: the write fails, naming the refused item."""
    plan = j.Plan(j.TRANSACT, (j.OTHER, j.NEW, j.SWAP), (None, 0, None), (False,) * 3)
    reasons = (j.Reason("ConditionalCheckFailed"), j.Reason("TransactionConflict"), j.Reason("None"))
    verdict = j.judge(plan, j.Answer(j.CANCELLED, reasons=reasons))
    assert (verdict.outcome, verdict.positions) == (j.NOT_APPLIED, (0,))


@pytest.mark.parametrize(("code", "answer"), [
    ("InternalServerError", j.SERVER_ERROR), ("ServiceUnavailable", j.SERVER_ERROR),
    ("ThrottlingException", j.THROTTLED), ("ProvisionedThroughputExceededException", j.THROTTLED),
    ("RequestLimitExceeded", j.THROTTLED), ("TransactionConflictException", j.CONFLICT),
    ("TransactionInProgressException", j.IN_PROGRESS), ("ReplicatedWriteConflictException", j.REPLICATED_CONFLICT),
    ("ConditionalCheckFailedException", j.CONDITION_FAILED), ("TransactionCanceledException", j.CANCELLED),
    ("ValidationException", j.REFUSED), ("ResourceNotFoundException", j.REFUSED),
])
def test_error_codes_are_read_as_their_answer(code: str, answer: str) -> None:
    """Each error code DynamoDB documents is read as its answer kind."""
    assert j.answer_kind(code, sent=True, answered=True) == answer


@pytest.mark.parametrize(("code", "status"), [("500", 500), ("503", 503), ("", 502), ("ValidationException", 500),
                                              ("ConditionalCheckFailedException", 504), (None, 500)])
def test_a_5xx_may_have_applied_whatever_its_body(code: Optional[str], status: int) -> None:
    """An HTTP 5xx is a server error (it may have applied), whatever code its body carries: a proxy's HTML page
    gives botocore no code but the status, and a code in a 5xx proves nothing."""
    assert j.answer_kind(code, sent=True, answered=True, status=status) == j.SERVER_ERROR


@pytest.mark.parametrize(("code", "status"), [("403", 403), ("400", 400), ("", 404), ("SomethingNew", 400),
                                              ("IdempotentParameterMismatchException", 400), ("301", 301)])
def test_an_answer_dynamodb_does_not_document_is_unclear(code: str, status: int) -> None:
    """A 4xx without a code DynamoDB documents (an HTML or empty page, a new code) or a 3xx is unclear: it proves
    nothing, and the judge probes it (unknown), never reads it as a refusal."""
    assert j.answer_kind(code, sent=True, answered=True, status=status) == j.UNCLEAR
    assert j.judge(_put(), j.Answer(j.UNCLEAR)).outcome == j.UNKNOWN


@pytest.mark.parametrize(("fates", "kind", "doubt"), [
    ((j.OK, j.CONDITION_FAILED), j.PUT, True),  # a 200 that failed its CRC32 check, then resent
    ((j.UNSENT, j.THROTTLED, j.REFUSED), j.PUT, False),
    ((j.LOST, j.CONDITION_FAILED), j.PUT, True),
    ((j.UNCLEAR,), j.PUT, True),
    ((j.IN_PROGRESS,), j.TRANSACT, True),  # the token's transaction is running: it may still apply
    ((j.SERVER_ERROR, j.IN_PROGRESS, j.CONFLICT), j.TRANSACT, True),
    ((j.SERVER_ERROR, j.CANCELLED), j.TRANSACT, False),  # the token's resend was cancelled: none applied
    ((j.SERVER_ERROR, j.CANCELLED), j.PUT, True),
    ((j.INTERRUPTED,), j.TRANSACT, True),
])
def test_a_write_is_in_doubt_after_any_try_whose_answer_proves_nothing(fates: Tuple[str, ...], kind: str,
                                                                       doubt: bool) -> None:
    """A write's record is in doubt once a try's answer does not prove it applied nothing (an ok answer that
    botocore resent, a 5xx, lost, unclear, in progress, interrupted); only a transaction's cancellation, the answer
    to its token's resend, settles the tries before it."""
    assert j.in_doubt(fates, kind) is doubt


def test_no_answer_is_lost_if_sent_and_unsent_if_not() -> None:
    """A request with no answer is lost (it may have applied) once it left, and unsent if it never did."""
    assert (j.answer_kind(None, sent=True, answered=False), j.answer_kind(None, sent=False, answered=False)) \
        == (j.LOST, j.UNSENT)


def test_architecture_page_shows_the_table() -> None:
    """docs/architecture.md's table of request kind x answer -> outcome is the judge's."""
    page = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)` \| (.+) \|$", page, re.MULTILINE)
    shown = {}
    for answer, cells in rows:
        put, transact = (c.strip().strip("`") for c in cells.split("|")[:2])
        shown[(j.PUT, answer)], shown[(j.TRANSACT, answer)] = put, transact
    assert {cell: shown.get(cell) for cell in j.TABLE} == dict(j.TABLE)


# -- the queue's place table (``pynamodb_autoinc._contention``), walked without a counter


def test_every_queue_move_leads_to_a_place() -> None:
    """Each move of the queue's table starts and ends at one of its three places."""
    from pynamodb_autoinc import _contention as q

    places = {q.UNQUEUED, q.STANDING, q.QUEUED}
    assert all(start in places and end in places for (start, _), end in q.TRANSITIONS.items())


def test_a_queue_move_not_in_the_table_raises_naming_it() -> None:
    """An event a place has no move for is a bug: it raises, naming the event and the place."""
    from pynamodb_autoinc import _contention as q

    with pytest.raises(AssertionError, match="'come back' from 'queued'"):
        q.transition(q.QUEUED, "come back")


@pytest.mark.parametrize(("start", "event", "ticket"), [
    ("unqueued", "ticket", 7), ("unqueued", "come back", None), ("standing", "served as standing", 8),
    ("standing", "passed over", None), ("queued", "passed over", None), ("queued", "given back", None),
])
def test_a_queue_move_sets_the_writes_ticket_as_its_place_says(start: str, event: str, ticket: Optional[int]) -> None:
    """After a move, the write's ticket and standing flag say the place the table moved it to."""
    from types import SimpleNamespace

    from pynamodb_autoinc import _contention as q

    write: Any = SimpleNamespace(ticket=3 if start == q.QUEUED else None, by_standing=start == q.STANDING)
    q.move(write, event, ticket)
    assert q.place_of(write) == q.transition(start, event)
    assert write.ticket == (ticket if q.place_of(write) == q.QUEUED else None)
