"""What one answer of DynamoDB means for one write: the judge. It sends, sleeps and reads nothing; the engine's
driver (:mod:`pynamodb_autoinc._engine`) does what a :class:`Verdict` says.

A write is judged by its :class:`Plan` (what it claimed: the request kind, what each item of a transaction is, the
item a lone put stores) and one :class:`Answer` (what came back, read from botocore by :func:`read_answer`). The
outcome is one of a closed set:

``applied``      the write is stored (DynamoDB said so, or the item under its key is this write's own);
``not-applied``  DynamoDB said nothing was written: fail with the error that names why;
``unknown``      it may or may not be stored: probe (send the same request again, with the same token);
``retake``       a race was lost: take new values and send again;
``resend``       nothing applied, and the same request may pass when sent again as it is;
``undecidable``  the probe's answer cannot tell: fail with WriteOutcomeUnknownError, the ID kept.

A stored item is this write's only if it holds what only this write could give it: for a put, the item under the
put's key must hold the value this writer alone was given, with every attribute as sent (an item with equal content
is not enough by itself, and an item differing in any attribute is another writer's); for a transaction, its
ClientRequestToken (DynamoDB answers a resend of an applied transaction with success). See docs/architecture.md,
"The judge", for the table this module holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .sequence import number

# -- request kinds

#: A PutItem of one new item carrying a value that no other writer was given, under ``attribute_not_exists``.
PUT = "put"
#: A TransactWriteItems sent with this write's own ClientRequestToken.
TRANSACT = "transact"

# -- answers (what came back for the last try of a request)

OK = "ok"
CONDITION_FAILED = "condition-failed"  # ConditionalCheckFailedException (a PutItem)
CANCELLED = "cancelled"  # TransactionCanceledException, with one reason per item
SERVER_ERROR = "server-error"  # 500 InternalServerError, 503 ServiceUnavailable: "may or may not have succeeded"
THROTTLED = "throttled"  # ThrottlingException, ProvisionedThroughputExceeded, RequestLimitExceeded (after retries)
CONFLICT = "conflict"  # TransactionConflictException: a PutItem met a transaction on its item; nothing applied
IN_PROGRESS = "in-progress"  # TransactionInProgressException: the same token's transaction is still running
REPLICATED_CONFLICT = "replicated-conflict"  # ReplicatedWriteConflictException (409): another region wrote it
REFUSED = "refused"  # any other 4xx (ValidationException, ResourceNotFound, AccessDenied, ...): nothing applied
LOST = "lost"  # sent, but no readable answer came (connection closed, read timeout, a body botocore cannot read)
UNSENT = "unsent"  # the request never left (no connection; signing, credentials or parameters failed first)
INTERRUPTED = "interrupted"  # Ctrl-C (or another BaseException) while the request was in flight
UNCLEAR = "unclear"  # an answer outside what DynamoDB documents (a 4xx page with no code of DynamoDB's, a 3xx)
#: Not an answer but an entry of a write's record: the judge found the write not applied (a not-applied verdict,
#: which it gives after a try that may have applied only on proof: the item under the key is another's).
SETTLED = "settled"

ANSWERS = (OK, CONDITION_FAILED, CANCELLED, SERVER_ERROR, THROTTLED, CONFLICT, IN_PROGRESS, REPLICATED_CONFLICT,
           REFUSED, LOST, UNSENT, INTERRUPTED, UNCLEAR)

# -- outcomes

APPLIED = "applied"
NOT_APPLIED = "not-applied"
UNKNOWN = "unknown"
RETAKE = "retake"
RESEND = "resend"
UNDECIDABLE = "undecidable"

OUTCOMES = (APPLIED, NOT_APPLIED, UNKNOWN, RETAKE, RESEND, UNDECIDABLE)

# -- what each item of a transaction is to the write (its role)

NEW = "new"  # a new item with an ID this write claimed, under attribute_not_exists on its key
PUT_ITEM = "put"  # an item put with its key given (an explicit ID)
SWAP = "swap"  # a counter moved from the value the write read to the last value it claimed
OTHER = "other"  # a user's condition check, delete or update

#: The cancellation reasons DynamoDB documents, as they arrive.
REASONS = ("None", "ConditionalCheckFailed", "TransactionConflict", "ThrottlingError",
           "ProvisionedThroughputExceeded", "ValidationError", "ItemCollectionSizeLimitExceeded")

#: The error codes of each answer kind that an error carries.
CODES: Dict[str, str] = {
    "ConditionalCheckFailedException": CONDITION_FAILED,
    "TransactionCanceledException": CANCELLED,
    "InternalServerError": SERVER_ERROR,
    "InternalFailure": SERVER_ERROR,
    "ServiceUnavailable": SERVER_ERROR,
    "ServiceUnavailableException": SERVER_ERROR,
    "ThrottlingException": THROTTLED,
    "Throttling": THROTTLED,
    "ProvisionedThroughputExceededException": THROTTLED,
    "RequestLimitExceeded": THROTTLED,
    "TransactionConflictException": CONFLICT,
    "TransactionInProgressException": IN_PROGRESS,
    "ReplicatedWriteConflictException": REPLICATED_CONFLICT,
}

#: The 4xx codes DynamoDB documents for a request it refused without applying any of it. Any other answer that is
#: not a 5xx (which may have applied) is :data:`UNCLEAR`: nothing proves that nothing was written.
REFUSALS = frozenset({
    "ValidationException", "ResourceNotFoundException", "ResourceInUseException", "AccessDeniedException",
    "UnrecognizedClientException", "MissingAuthenticationTokenException", "IncompleteSignatureException",
    "InvalidSignatureException", "InvalidClientTokenId", "ExpiredTokenException", "RequestExpired",
    "SerializationException", "UnknownOperationException", "ItemCollectionSizeLimitExceededException",
    "LimitExceededException", "InvalidEndpointException", "RequestEntityTooLarge", "TableNotFoundException",
    "MissingAction", "InvalidAction", "InvalidParameterValue", "InvalidParameterCombination", "OptInRequired",
})

#: The answers that prove the try they answer applied nothing. Every other (ok, a 5xx, lost, unclear, in progress,
#: interrupted in flight) leaves a try that may have applied.
PROOFS = frozenset({UNSENT, THROTTLED, CONFLICT, REPLICATED_CONFLICT, REFUSED, CONDITION_FAILED, CANCELLED})

#: Request kind x answer -> outcome, for every answer but the two that need a closer look: a failed condition of a
#: put (:func:`judge_put_condition`) and a cancelled transaction (:data:`REASON_OUTCOMES`). ``maybe`` marks the
#: cells that become ``unknown`` when an earlier try of the same write may have applied.
TABLE: Dict[Tuple[str, str], str] = {
    (PUT, OK): APPLIED,
    (PUT, SERVER_ERROR): UNKNOWN,
    (PUT, THROTTLED): NOT_APPLIED,  # botocore has sent it as often as the model allows
    (PUT, CONFLICT): RESEND,
    (PUT, IN_PROGRESS): RESEND,
    (PUT, REPLICATED_CONFLICT): RESEND,  # the value is this writer's alone: send it again as it is
    (PUT, REFUSED): NOT_APPLIED,
    (PUT, LOST): UNKNOWN,
    (PUT, UNSENT): NOT_APPLIED,
    (PUT, INTERRUPTED): UNKNOWN,
    (TRANSACT, OK): APPLIED,
    (TRANSACT, SERVER_ERROR): UNKNOWN,
    (TRANSACT, THROTTLED): NOT_APPLIED,
    (TRANSACT, CONFLICT): RESEND,
    (TRANSACT, IN_PROGRESS): RESEND,  # the same token's transaction is running: its answer comes to a resend
    (TRANSACT, REPLICATED_CONFLICT): RETAKE,
    (TRANSACT, REFUSED): NOT_APPLIED,
    (TRANSACT, LOST): UNKNOWN,
    (TRANSACT, UNSENT): NOT_APPLIED,
    (TRANSACT, INTERRUPTED): UNKNOWN,
    (PUT, UNCLEAR): UNKNOWN,
    (TRANSACT, UNCLEAR): UNKNOWN,
}

#: The outcomes that mean "nothing of this try applied" but say nothing of an earlier try that may have.
_SILENT_ON_EARLIER = (NOT_APPLIED,)

#: A cancelled transaction: (role, reason) -> outcome for that item; the write's outcome is the gravest of its items'
#: (:data:`GRAVITY`). ``exists?``: a new item's key is taken (see :func:`_new_item_taken`).
REASON_OUTCOMES: Dict[Tuple[str, str], str] = {
    **{(role, "None"): APPLIED for role in (NEW, PUT_ITEM, SWAP, OTHER)},  # "no reason": this item did not fail it
    (SWAP, "ConditionalCheckFailed"): RETAKE,  # another writer moved the counter
    (NEW, "ConditionalCheckFailed"): "exists?",
    (PUT_ITEM, "ConditionalCheckFailed"): NOT_APPLIED,
    (OTHER, "ConditionalCheckFailed"): NOT_APPLIED,
    **{(role, reason): RESEND for role in (NEW, PUT_ITEM, SWAP, OTHER)
       for reason in ("TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded")},
    **{(role, reason): NOT_APPLIED for role in (NEW, PUT_ITEM, SWAP, OTHER)
       for reason in ("ValidationError", "ItemCollectionSizeLimitExceeded")},
}

#: Which item outcome decides a cancelled transaction: the first of these that any item has.
GRAVITY = (NOT_APPLIED, RETAKE, RESEND)


@dataclass(frozen=True)
class Reason:
    """One item's cancellation reason: its code and the item DynamoDB returned (ALL_OLD), if any."""

    code: str
    item: Optional[Mapping[str, Any]] = None


@dataclass(frozen=True)
class Answer:
    """What came back for a request: its kind (:data:`ANSWERS`), the error code, the reasons of a cancelled
    transaction (one per item as sent), the item a failed put condition returned, and whether an earlier try of
    the same request may have applied (botocore sent it again after a try got no answer or a 5xx)."""

    kind: str
    code: Optional[str] = None
    reasons: Tuple[Reason, ...] = ()
    item: Optional[Mapping[str, Any]] = None
    earlier_may_have_applied: bool = False
    tries: Tuple[str, ...] = ()  # what each try of the request came to, this answer's last (the write's record)


@dataclass(frozen=True)
class Plan:
    """What a write claimed, as the judge needs it: its request kind; for a transaction, each item's role as sent
    (condition checks, deletes, puts, updates, then the counter swaps), and which new item belongs to which swap
    (the chain index); for a put, the item it stores, whose claimed value no other writer holds.
    ``maybe_applied``: an earlier request of this write may have applied."""

    kind: str
    roles: Tuple[str, ...] = ()
    chains: Tuple[Optional[int], ...] = ()  # per item: the index of its counter swap among the swaps, or None
    query: Tuple[bool, ...] = ()  # per item: a new item numbered by the query strategy (no counter to hold)
    item: Optional[Mapping[str, Any]] = None
    claimed: Optional[str] = None  # a put: the attribute holding the claimed value (its stored name)
    keys: Tuple[str, ...] = ()  # a put: the item's key attributes (stored names)
    maybe_applied: bool = False
    unique: bool = True  # a put: no other writer was given its value (False: a cycle's, or a partition's next value)
    contested: bool = False  # a put: its value came from a read that racing writers share (the query strategy)


@dataclass(frozen=True)
class Verdict:
    """The outcome for one answer, with why (a short name of the rule) and the items that decided it."""

    outcome: str
    why: str
    positions: Tuple[int, ...] = ()


def judge(plan: Plan, answer: Answer) -> Verdict:
    """The outcome of ``answer`` for the write ``plan`` describes."""
    maybe_applied = plan.maybe_applied or answer.earlier_may_have_applied
    if answer.kind == CONDITION_FAILED and plan.kind == PUT:
        return judge_put_condition(plan, answer, maybe_applied)
    if answer.kind == CANCELLED and plan.kind == TRANSACT:
        # a transaction resent with its token would have succeeded had an earlier try applied: the reasons are final
        return judge_cancelled(plan, answer)
    outcome = TABLE.get((plan.kind, answer.kind), UNKNOWN)  # an answer the table does not know proves nothing
    if maybe_applied and outcome in _SILENT_ON_EARLIER:
        return Verdict(UNKNOWN, f"{answer.kind} after a try that may have applied")
    return Verdict(outcome, answer.kind)


def judge_put_condition(plan: Plan, answer: Answer, maybe_applied: bool) -> Verdict:
    """A put's condition failed. With no item under the key, the user's own condition failed. Otherwise the key is
    taken: by another item, or, if an earlier try may have applied, perhaps by this write's own. It is this write's
    if it is the item as sent; another's if it holds another value where this write put the value it alone was
    given; and if it holds that value but differs elsewhere, it was changed since this write stored it, unless that
    value is the key, which anyone may have stored by hand: then nothing tells."""
    if answer.item is None:
        return Verdict(NOT_APPLIED, "condition", (0,))
    if not maybe_applied and plan.contested:
        return Verdict(RETAKE, "a racing writer took the value")
    if not maybe_applied or plan.item is None:
        return Verdict(NOT_APPLIED, "exists", (0,))
    claimed = plan.claimed
    if claimed is None or stored_form(answer.item.get(claimed)) != stored_form(plan.item.get(claimed)):
        return Verdict(NOT_APPLIED, "exists: another value", (0,))
    if not plan.unique:  # another writer (an earlier pass of a cycle, a racing writer) may hold this value too
        return Verdict(UNDECIDABLE, "the value is not this writer's alone")
    if same_item(answer.item, plan.item):
        return Verdict(APPLIED, "own item")
    if claimed in plan.keys:
        return Verdict(UNDECIDABLE, "the claimed key holds another item")
    return Verdict(APPLIED, "own value, changed since")


def judge_cancelled(plan: Plan, answer: Answer) -> Verdict:
    """A cancelled transaction: each item's reason by its role, the gravest deciding."""
    reasons = list(answer.reasons) + [Reason("None")] * (len(plan.roles) - len(answer.reasons))
    found: Dict[str, List[int]] = {}
    for position, reason in enumerate(reasons):
        role = plan.roles[position] if position < len(plan.roles) else OTHER
        outcome = REASON_OUTCOMES.get((role, reason.code), NOT_APPLIED)
        if outcome == "exists?":
            outcome = _new_item_taken(plan, reasons, position, reason)
        found.setdefault(outcome, []).append(position)
    for outcome in GRAVITY:
        if outcome in found:
            return Verdict(outcome, f"cancelled: {outcome}", tuple(found[outcome]))
    return Verdict(NOT_APPLIED, "cancelled: no reason")  # DynamoDB named no item: nothing of it applied


def _new_item_taken(plan: Plan, reasons: Sequence[Reason], position: int, reason: Reason) -> str:
    """A new item's condition failed. With no item returned, the user's condition failed. Otherwise its key is
    taken: by a racing writer if its counter moved too (or the query strategy numbered it from a stale read), so
    take new values; if its counter held, the counter is behind the stored items, and no retry can help."""
    if reason.item is None:
        return NOT_APPLIED
    if plan.query and plan.query[position]:
        return RETAKE
    chain = plan.chains[position] if position < len(plan.chains) else None
    if chain is None:
        return NOT_APPLIED
    swap = plan.roles.index(SWAP) + chain
    return RETAKE if swap < len(reasons) and reasons[swap].code == "ConditionalCheckFailed" else NOT_APPLIED


def same_item(stored: Mapping[str, Any], sent: Mapping[str, Any]) -> bool:
    """Whether the item DynamoDB holds is, attribute for attribute, the item a put sent."""
    return stored.keys() == sent.keys() and all(stored_form(stored[n]) == stored_form(sent[n]) for n in sent)


def stored_form(value: Any) -> Any:
    """An attribute value in a form equal for every way of writing what DynamoDB stores the same."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    (kind, inner), = value.items()
    if kind in ("N", "B"):
        return kind, (number if kind == "N" else _binary)(inner)
    if kind in ("NS", "SS", "BS"):
        return kind, frozenset(number(v) if kind == "NS" else _binary(v) if kind == "BS" else v for v in inner)
    if kind == "M":
        return kind, tuple(sorted((name, stored_form(v)) for name, v in inner.items()))
    if kind == "L":
        return kind, tuple(stored_form(v) for v in inner)
    return kind, inner


def _binary(value: Any) -> Any:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def answer_kind(code: Optional[str], *, sent: bool, answered: bool, status: Optional[int] = None) -> str:
    """The answer kind of a failure, by what happened on the wire first: never sent; sent with no readable answer
    (lost); an HTTP 5xx, whatever its body (may have applied); a documented code (its meaning); anything else
    (unclear). ``code``: DynamoDB's error code; ``status``: the HTTP status, when known."""
    if not sent:
        return UNSENT
    if not answered:
        return LOST
    if status is not None and status >= 500:
        return SERVER_ERROR
    kind = CODES.get(code or "")
    if kind is not None:
        return kind
    if code in REFUSALS and (status is None or 400 <= status < 500):
        return REFUSED
    return UNCLEAR


def in_doubt(fates: Sequence[str], kind: str = PUT) -> bool:
    """Whether a write whose tries came to ``fates`` (answer kinds, in order) may be stored: some try's answer
    proves nothing (:data:`PROOFS`). A transaction's cancellation answers its token's resend, which would have
    succeeded had an earlier try applied: it settles every try before it."""
    doubt = False
    for fate in fates:
        if fate == SETTLED or (kind == TRANSACT and fate == CANCELLED):
            doubt = False
        elif fate not in PROOFS:
            doubt = True
    return doubt
