"""Faults injected below the library, into botocore, on DynamoDB Local.

Each fault is a ``before-send`` hook on the botocore clients the model and its
counter use: it answers in the server's place (throttling, an internal error)
or lets the server apply the request and then drops the connection before the
response arrives (on moto too: its in-process backend applies it). The
library's own code is not touched.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError
from botocore.httpsession import URLLib3Session
from pynamodb.attributes import NumberAttribute, NumberSetAttribute

from pynamodb_autoinc.exceptions import (
    CounterError,
    ItemWriteError,
)
from tests.conftest import Backend

OPERATIONS = {"fast": ("UpdateItem", "PutItem"), "gapless": ("GetItem", "TransactWriteItems")}

# The faults are planned per request of a mode's save: the two requests of fast and gapless mode.
pytestmark = pytest.mark.modes("fast", "gapless")


#: The messages DynamoDB sends with a transaction's cancellation reasons.
MESSAGES = {
    "ThrottlingError": "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
                       "scaling your table or index so please try again shortly.",
    "ProvisionedThroughputExceeded": "The level of configured provisioned throughput for the table was exceeded. "
                                     "Consider increasing your provisioning level with the UpdateTable API",
    "TransactionConflict": "Transaction is ongoing for the item",
}


def _operation(request: Any) -> str:
    """The DynamoDB operation a botocore request calls."""
    target = request.headers["X-Amz-Target"]
    return str(target.decode() if isinstance(target, bytes) else target).split(".")[-1]


class _Body:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


class Faults:
    """Inject faults into the botocore clients of ``models`` and record every request sent."""

    ERRORS = {
        "throttling": (400, "ThrottlingException"),
        "provisioned": (400, "ProvisionedThroughputExceededException"),
        "internal": (500, "InternalServerError"),
        "unavailable": (503, "ServiceUnavailable"),
        "replicated-conflict": (409, "ReplicatedWriteConflictException"),
        "in-progress": (400, "TransactionInProgressException"),
    }

    def __init__(self, *models: Any) -> None:
        self.plan: Dict[str, List[str]] = {}
        self.sent: List[Tuple[str, Optional[str]]] = []
        self.fired: List[Tuple[str, str]] = []
        self.http = URLLib3Session()
        self.pending: Dict[str, Callable[[], Any]] = {}
        self.clients = list({id(c): c for c in (m._get_connection().connection.client for m in models)}.values())
        from moto.core.models import botocore_stubber

        # botocore calls every before-send handler, and takes the first answer: moto's would apply a request
        # that a fault answers. While moto mocks, the hook alone reaches it (:meth:`apply`).
        self.moto = botocore_stubber.enabled
        for client in self.clients:
            client.meta.events.register_first("before-send.dynamodb", self.hook)
            if self.moto:
                client.meta.events.unregister("before-send", botocore_stubber)

    def remove(self) -> None:
        from moto.core.models import botocore_stubber

        for client in self.clients:
            client.meta.events.unregister("before-send.dynamodb", self.hook)
            if self.moto:
                client.meta.events.register("before-send", botocore_stubber)
        self.moto = False

    def before_resend(self, operation: str, action: Callable[[], Any]) -> None:
        """Run ``action()`` once, just before ``operation`` is sent again after a fault fired on it (as
        another writer would, between the two tries)."""
        self.pending[operation] = action

    def inject(self, operation: str, kind: str, times: int = 1) -> None:
        """Answer the next ``times`` sends of ``operation`` (after any faults already planned) with ``kind``."""
        self.plan.setdefault(operation, []).extend([kind] * times)

    def hook(self, request: Any, **_: Any) -> Optional[AWSResponse]:
        operation = _operation(request)
        if operation in self.pending and any(op == operation for op, _ in self.fired):
            self.pending.pop(operation)()
        body = json.loads(request.body or b"{}")
        self.sent.append((operation, body.get("ClientRequestToken")))
        planned = self.plan.get(operation)
        if not planned:
            return self.apply(request) if self.moto else None
        kind = planned.pop(0)
        self.fired.append((operation, kind))
        if kind == "drop-after-commit":
            self.apply(request)  # the server applies it; the client never hears back
            raise ConnectionClosedError(endpoint_url=request.url)
        if kind.endswith("-after-commit") and kind != "drop-after-commit":  # applied, then answered with an error
            self.apply(request)
            kind = kind[:-len("-after-commit")]
        elif kind == "interrupt":
            raise KeyboardInterrupt  # Ctrl-C before this try left
        elif kind == "no-answer":
            raise ConnectionClosedError(endpoint_url=request.url)  # never reaches the server
        if kind.startswith("cancel:"):  # cancel:<reason code>:<item index> (-1: the last item)
            return self.cancelled(request, body, *kind.split(":")[1:])
        status, code = self.ERRORS[kind]
        payload = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": code}).encode()
        return AWSResponse(request.url, status, {"x-amzn-RequestId": "fault"}, _Body(payload))

    @staticmethod
    def cancelled(request: Any, body: Dict[str, Any], code: str, index: str) -> AWSResponse:
        """A TransactionCanceledException as DynamoDB sends it: reason ``code`` on the item at ``index``,
        ``"None"`` on the items that did not fail; nothing applied."""
        reasons: List[Dict[str, str]] = [{"Code": "None"} for _ in body["TransactItems"]]
        reasons[int(index)] = {"Code": code, "Message": MESSAGES[code]}
        codes = ", ".join(r["Code"] for r in reasons)
        payload = json.dumps({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "Message": f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]",
            "CancellationReasons": reasons}).encode()
        return AWSResponse(request.url, 400, {"x-amzn-RequestId": "fault"}, _Body(payload))

    def apply(self, request: Any) -> Any:
        """Have the server apply ``request`` and return its answer: moto's in-process backend while it is
        mocking, else over HTTP."""
        from moto.core.models import botocore_stubber

        if botocore_stubber.enabled:
            answer = botocore_stubber("before-send.dynamodb", request)
            assert answer is not None, "moto did not serve the request"
            return answer
        return self.http.send(request)

    def count(self, operation: str) -> int:
        return sum(1 for op, _ in self.sent if op == operation)


@pytest.fixture
def make(local: Backend) -> Any:
    """Build a model on DynamoDB Local in the given mode, with two retries per request."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin

    def build(mode: str) -> Any:
        meta = type("Meta", (), {"table_name": local.table_name("faults"), "autoinc_gapless": mode == "gapless",
                                 "max_retry_attempts": 2, **local.meta})
        cls = type("User", (AutoIncrementMixin, Model), {"Meta": meta, "id": NumberAttribute(hash_key=True),
                                                         "name": UnicodeAttribute(null=True)})
        local.counter(model=cls)
        local.create(cls)
        return cls

    return build


@pytest.fixture
def model(make: Any, mode: str) -> Any:
    return make(mode)


@pytest.fixture
def faults_for() -> Any:
    """``faults_for(model)``: a Faults on the model's and its counter's clients, removed after the test."""
    made: List[Faults] = []

    def attach(model: Any) -> Faults:
        made.append(Faults(model, model.autoinc_options().counter))
        return made[-1]

    yield attach
    for faults in made:
        faults.remove()


def state(model: Any) -> Tuple[List[int], Optional[int]]:
    opts = model.autoinc_options()
    return sorted(u.id for u in model.scan(consistent_read=True)), opts.counter.currval(opts.key)


@pytest.mark.engine
@pytest.mark.parametrize("kind", ["throttling", "provisioned", "internal"])
@pytest.mark.parametrize("step", [0, 1], ids=["counter-request", "item-request"])
def test_transient_error_is_retried(model, mode, kind, step, faults_for):
    """A throttled or failed request is sent again; the item is stored once, with no gap."""
    faults = faults_for(model)
    operation = OPERATIONS[mode][step]
    faults.inject(operation, kind)
    user = model(name="Kirk")
    user.save()
    assert faults.fired == [(operation, kind)]
    assert faults.count(operation) == 2
    assert user.id == 1
    assert state(model) == ([1], 1)


@pytest.mark.engine
def test_lost_response_of_counter_update_fast(make, faults_for):
    """Fast: a counter update applied but unanswered is resent; it spends one value, never duplicates."""
    model = make("fast")
    faults = faults_for(model)
    faults.inject("UpdateItem", "drop-after-commit")
    user = model()
    user.save()
    assert user.id == 2
    assert state(model) == ([2], 2)


@pytest.mark.engine
def test_lost_response_of_item_write(model, mode, faults_for):
    """An item write applied but unanswered is resent and reported as the success it was: one item, no gap."""
    faults = faults_for(model)
    operation = OPERATIONS[mode][1]
    faults.inject(operation, "drop-after-commit")
    user = model(name="Spock")
    user.save()
    assert faults.fired == [(operation, "drop-after-commit")]
    assert user.id == 1
    assert state(model) == ([1], 1)
    assert model.get(1).name == "Spock"


@pytest.mark.engine
def test_lost_response_of_counter_read(make, faults_for):
    """Gapless: a lost response to the counter read is harmless."""
    model = make("gapless")
    faults = faults_for(model)
    faults.inject("GetItem", "drop-after-commit")
    model().save()
    assert state(model) == ([1], 1)


@pytest.mark.engine
def test_resent_transaction_keeps_its_token(make, faults_for):
    """Gapless: a transaction resent after a lost response carries the same ClientRequestToken."""
    model = make("gapless")
    faults = faults_for(model)
    faults.inject("TransactWriteItems", "drop-after-commit")
    model().save()
    tokens = [token for op, token in faults.sent if op == "TransactWriteItems"]
    assert len(tokens) == 2
    assert tokens[0] is not None and tokens[0] == tokens[1]


@pytest.mark.engine
def test_new_attempt_gets_a_new_token(make, faults_for):
    """Gapless: after losing the counter race, the next attempt (a new value) sends a new token."""
    model = make("gapless")
    from pynamodb.signals import pre_dynamodb_send

    faults = faults_for(model)
    opts = model.autoinc_options()
    rivals = [1]

    def rival(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "TransactWriteItems" and rivals:
            rivals.pop()
            opts.counter.nextval(opts.key)

    with pre_dynamodb_send.connected_to(rival):
        user = model()
        user.save()
    tokens = [token for op, token in faults.sent if op == "TransactWriteItems"]
    assert len(tokens) == 2 and len(set(tokens)) == 2
    assert user.id == 2


@pytest.mark.engine
@pytest.mark.parametrize("step", [0, 1], ids=["counter-request", "item-request"])
def test_persistent_throttling_gives_a_library_error(model, mode, step, faults_for):
    """Throttling that outlasts the retries raises the library's error; gapless writes nothing."""
    faults = faults_for(model)
    operation = OPERATIONS[mode][step]
    faults.inject(operation, "throttling", times=100)
    user = model()
    expected = CounterError if step == 0 else ItemWriteError
    with pytest.raises(expected) as info:
        user.save()
    assert info.value.cause_response_code == "ThrottlingException"
    assert "ThrottlingException" in str(info.value)
    assert user.id is None
    assert faults.count(operation) == 3  # max_retry_attempts=2: sent three times
    faults.remove()
    stored, counter = state(model)
    assert stored == []
    # only a fast put spends its value
    assert counter == (1 if (mode, step) == ("fast", 1) else None)


@pytest.mark.engine
def test_applied_write_with_failed_resends_is_a_success(model, mode, faults_for):
    """A write applied whose answer was lost, and whose resends were throttled, is found stored: success."""
    faults = faults_for(model)
    operation = OPERATIONS[mode][1]
    if mode == "gapless":
        model(name="first").save()  # the counter value is known: the next save sends only its transaction
    faults.inject(operation, "drop-after-commit")
    faults.inject(operation, "throttling", times=2)
    user = model(name="Uhura")
    user.save()
    assert faults.fired == [(operation, "drop-after-commit"), (operation, "throttling"), (operation, "throttling")]
    faults.remove()
    stored, counter = state(model)
    assert user.id == stored[-1] == counter
    assert model.get(user.id).name == "Uhura"


@pytest.mark.engine
def test_unknown_outcome_is_said_and_the_id_kept(model, mode, faults_for):
    """No answer to any attempt, nor to the probes sending it again: WriteOutcomeUnknownError, the ID kept."""
    from pynamodb_autoinc.exceptions import WriteOutcomeUnknownError

    faults = faults_for(model)
    operation = OPERATIONS[mode][1]
    if mode == "gapless":
        model().save()  # the counter value is known: the next save sends only its transaction
    faults.inject(operation, "no-answer", times=30)
    user = model()
    with pytest.raises(WriteOutcomeUnknownError, match="may or may not be stored .* read the item before saving"):
        user.save()
    assert user.id == (2 if mode == "gapless" else 1)
    faults.remove()
    stored, _ = state(model)
    assert user.id not in stored


@pytest.fixture
def lost_answers(local):
    """A fast-mode model on DynamoDB Local (which normalises numbers) and a Faults on its clients."""
    from tests.test_faults import Faults

    made: List[Any] = []

    def build(model: Any) -> Any:
        made.append(Faults(model, model.autoinc_options().counter))
        return made[-1]

    yield build
    for faults in made:
        faults.remove()


@pytest.mark.engine
@pytest.mark.parametrize("then", ["resend-refused", "no-answer"])
def test_landed_write_with_normalised_numbers_is_kept(local, lost_answers, then):
    """A put applied but unanswered, whose numbers DynamoDB ids normalised (5.0 as 5, 1e20 in full, a
    set in its own order), is recognised as landed: saved once, the ID kept."""
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin

    meta = type("Meta", (), {"table_name": local.table_name("normalised"), "autoinc_gapless": False,
                             "max_retry_attempts": 2, **local.meta})
    Reading: Any = type("Reading", (AutoIncrementMixin, Model), {
        "Meta": meta, "id": NumberAttribute(hash_key=True), "value": NumberAttribute(),
        "marks": NumberSetAttribute()})
    local.counter(model=Reading)
    local.create(Reading)
    faults = lost_answers(Reading)
    faults.inject("PutItem", "drop-after-commit")
    if then == "no-answer":
        faults.inject("PutItem", "no-answer", times=2)
    reading = Reading(value=5.0, marks={1e20, 2.50, 3, 4, 5, 6, 7})
    reading.save()
    assert reading.id == 1
    assert [(r.id, r.value) for r in Reading.scan(consistent_read=True)] == [(1, 5)]
# -- what tells a write's own resend apart, and the reasons a transaction is cancelled for ------------------

def put_raw(model: Any, item: Any) -> None:
    """Store ``item`` as another writer would, around the library."""
    model._get_connection().connection.client.put_item(TableName=model.Meta.table_name, Item=item.serialize())


@pytest.mark.modes("gapless")
def test_resend_does_not_take_a_rivals_equal_item_for_its_own(make_model, faults_for):
    """A write whose first try never arrived, resent after another writer stored an item of the same content
    under the value it claimed, is not taken as applied: it is stored under the next value."""
    from pynamodb.attributes import UnicodeAttribute

    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=2)
    opts = User.autoinc_options()
    faults = faults_for(User)
    faults.inject("TransactWriteItems", "no-answer")

    def rival() -> None:
        put_raw(User, User(id=1, name="Kirk"))
        assert opts.counter.compare_and_set(opts.key, None, 1, opts.sequence)

    faults.before_resend("TransactWriteItems", rival)
    user = User(name="Kirk")
    user.save()
    assert user.id == 2
    assert sorted((u.id, u.name) for u in User.scan(consistent_read=True)) == [(1, "Kirk"), (2, "Kirk")]


@pytest.mark.modes("query")
def test_a_put_resent_onto_a_rivals_equal_item_is_unknown(make_model, faults_for):
    """The query strategy's one PutItem, its first try lost and resent after a racing writer stored an item of
    the same content under the same value, cannot tell that item from its own (racing writers read the same next
    value, and a put has no token): WriteOutcomeUnknownError, the ID kept, nothing overwritten."""
    from pynamodb.attributes import UnicodeAttribute

    from pynamodb_autoinc.exceptions import WriteOutcomeUnknownError

    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=2)
    faults = faults_for(User)
    faults.inject("PutItem", "no-answer")
    faults.before_resend("PutItem", lambda: put_raw(User, User(id=1, name="Kirk")))
    user = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError):
        user.save()
    assert user.id == 1
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(1, "Kirk")]


@pytest.mark.modes("fast", "block")
def test_lost_answer_of_a_put_changed_before_the_resend(make_model, faults_for):
    """A put applied whose answer was lost, its item changed before the resend, cannot be told from an item stored
    by hand under the same ID: the save raises WriteOutcomeUnknownError, keeps the ID, and nothing is overwritten."""
    from pynamodb.attributes import UnicodeAttribute

    from pynamodb_autoinc.exceptions import WriteOutcomeUnknownError

    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=2)
    faults = faults_for(User)
    faults.inject("PutItem", "drop-after-commit")
    faults.before_resend("PutItem", lambda: put_raw(User, User(id=1, name="edited")))
    user = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError, match="User with id=1"):
        user.save()
    assert user.id == 1
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(1, "edited")]


@pytest.mark.modes("fast", "block")
def test_resend_onto_an_id_stored_by_hand_is_not_taken_for_the_write(make_model, faults_for):
    """A put whose first try never arrived, resent onto an item stored by hand under the value the counter gave,
    is not reported saved: the hand-stored item is neither overwritten nor taken for this write."""
    from pynamodb.attributes import UnicodeAttribute

    from pynamodb_autoinc.exceptions import WriteOutcomeUnknownError

    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=2)
    faults = faults_for(User)
    faults.inject("PutItem", "no-answer")
    faults.before_resend("PutItem", lambda: put_raw(User, User(id=1, name="by hand")))
    user = User(name="Kirk")
    with pytest.raises(WriteOutcomeUnknownError):
        user.save()
    assert [(u.id, u.name) for u in User.scan(consistent_read=True)] == [(1, "by hand")]


def _write(path: str, model: Any, users: List[Any]) -> None:
    from pynamodb_autoinc import TransactWrite

    if path == "save":
        users[0].save()
    elif path == "save_all":
        model.save_all(users)
    else:
        with TransactWrite(connection=model._get_connection().connection) as tx:
            for user in users:
                tx.save(user)


@pytest.mark.modes("fast", "gapless", "query")
@pytest.mark.parametrize("code", ["ThrottlingError", "TransactionConflict", "ProvisionedThroughputExceeded"])
@pytest.mark.parametrize("index", [0, -1], ids=["first-item", "last-item"])
@pytest.mark.parametrize("path", ["save", "save_all", "transaction"])
def test_transient_cancellation_reason_is_retried(make_model, mode, code, index, path, faults_for):
    """A transaction cancelled for a reason that passes (throttling, a conflict) on any item, "None" on the
    others, is sent again: every item is stored once, under the IDs the instances hold."""
    if mode == "fast" and path == "save":
        pytest.skip("a lone fast save is a PutItem, not a transaction")
    if mode == "query" and path != "transaction":
        pytest.skip("the query strategy saves each item in a PutItem of its own, not a transaction")
    User = make_model("User")
    faults = faults_for(User)
    faults.inject("TransactWriteItems", f"cancel:{code}:{index}")
    users = [User()] if path == "save" else [User(), User()]
    _write(path, User, users)
    assert faults.fired == [("TransactWriteItems", f"cancel:{code}:{index}")]
    ids = [u.id for u in users]
    assert None not in ids and len(set(ids)) == len(ids)
    assert sorted(ids) == sorted(u.id for u in User.scan(consistent_read=True))


@pytest.mark.backends("moto")
@pytest.mark.parametrize("code", ["ThrottlingError", "TransactionConflict", "ProvisionedThroughputExceeded"])
@pytest.mark.parametrize("index", [0, -1], ids=["item", "version"])
def test_transient_cancellation_reason_of_a_history_save_is_retried(backend, code, index, faults_for):
    """A HistoryMixin save (new, then an edit) cancelled for a reason that passes, on the item or on its
    version, is sent again: the item and each version are stored once."""
    from tests.helpers import auto_history_doc

    Doc, history = auto_history_doc(backend)
    doc = Doc(title="one")
    doc.save()
    faults = faults_for(Doc)
    faults.inject("TransactWriteItems", f"cancel:{code}:{index}")
    doc.title = "two"
    doc.save()
    assert faults.fired == [("TransactWriteItems", f"cancel:{code}:{index}")]
    assert [(d.id, d.title, d.revision) for d in Doc.scan(consistent_read=True)] == [(1, "two", 2)]
    assert len(list(history.scan(consistent_read=True))) == 2
