"""Faults at botocore's HTTP session (tests/wire.py), after every botocore handler and the library's have run.

The first part checks the fault layer itself on a plain botocore client, on DynamoDB Local and on moto's server
mode: each fault gives botocore what a real network or server gives, and the server applies a request only when
the fault says so. The second part saves models of the library through it, on DynamoDB Local, with the public API
only, and checks after each test that every record is stored once, that no two instances hold one ID, and that an
instance whose ID is None has nothing stored. Most of these reproduced issue 43's defects: each failed as its
docstring's "Before" says until the engine's rewrite (commits d0a903a and a09efb6), and now guards against the defect
coming back. A test of a defect not fixed yet is marked ``xfail(strict=True, reason="issue 43: ...")``; the fix
turns it into a pass, and the mark goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from pynamodb.attributes import UnicodeAttribute

from pynamodb_autoinc import before_save
from pynamodb_autoinc.exceptions import AutoIncrementError, WriteOutcomeUnknownError
from tests import wire as w
from tests.wire import Wire

# -- the fault layer itself ------------------------------------------------------------------------------------------

@pytest.fixture(name="wire")
def _wire() -> Iterator[Wire]:
    """A :class:`tests.wire.Wire` for the test (as ``tests.wire.wire``), removed after it."""
    with Wire() as made:
        yield made



@pytest.fixture(scope="module")
def _moto_server() -> Iterator[str]:
    with w.moto_server() as url:
        yield url


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.engine), "moto-server"])
def endpoint(request: pytest.FixtureRequest) -> str:
    """The URL of a DynamoDB that answers over HTTP: DynamoDB Local, or moto's server mode."""
    if request.param == "local":
        return str(request.getfixturevalue("dynamodb_local").url)
    return str(request.getfixturevalue("_moto_server"))


def _client(endpoint: str, attempts: int = 1) -> Any:
    """A botocore DynamoDB client of ``endpoint`` that sends each request at most ``attempts`` times."""
    session = botocore.session.get_session()
    return session.create_client(
        "dynamodb", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": attempts, "mode": "standard"}))


@pytest.fixture
def table(endpoint: str) -> Iterator[Dict[str, Any]]:
    """A table ``{"client", "name"}`` with hash key ``id`` (a number), deleted after the test."""
    import uuid

    client = _client(endpoint)
    name = f"wire-{uuid.uuid4().hex[:10]}"
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 100})
    yield {"client": client, "name": name}
    client.delete_table(TableName=name)


def _put(client: Any, name: str, n: int) -> Any:
    return client.put_item(TableName=name, Item={"id": {"N": str(n)}},
                           ConditionExpression="attribute_not_exists(id)")


def _ids(table: Dict[str, Any]) -> List[int]:
    items = table["client"].scan(TableName=table["name"], ConsistentRead=True)["Items"]
    return sorted(int(item["id"]["N"]) for item in items)


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
@pytest.mark.parametrize("kind, raised", [("timeout", ReadTimeoutError), ("closed", ConnectionClosedError)])
def test_lost_answer_raises_after_forwarding_or_not(endpoint, table, wire, applied, kind, raised):
    """lost(applied): botocore raises ReadTimeoutError or ConnectionClosedError, and the server applied the
    request only when the fault forwarded it."""
    wire.on("PutItem", w.lost(applied, kind))
    with pytest.raises(raised):
        _put(table["client"], table["name"], 1)
    assert wire.fired() == [("PutItem", f"lost:{kind}:{'applied' if applied else 'not-applied'}")]
    assert _ids(table) == ([1] if applied else [])


def test_never_sent_raises_endpoint_connection_error(endpoint, table, wire):
    """never_sent(): EndpointConnectionError, and nothing reached the server."""
    wire.on("PutItem", w.never_sent())
    with pytest.raises(EndpointConnectionError):
        _put(table["client"], table["name"], 1)
    assert [t.forwarded for t in wire.sent("PutItem")] == [False]
    assert _ids(table) == []


@pytest.mark.parametrize("code", sorted(w.ERRORS))
def test_each_documented_error_code_reaches_botocore_as_it(endpoint, table, wire, code):
    """error(code): botocore raises ClientError with the code, its HTTP status and DynamoDB's message."""
    wire.on("PutItem", w.error(code))
    with pytest.raises(ClientError) as info:
        _put(table["client"], table["name"], 1)
    assert info.value.response["Error"]["Code"] == code
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == w.ERRORS[code][0]
    assert info.value.response["Error"]["Message"] == w.ERRORS[code][1]
    assert _ids(table) == []


def test_error_after_forwarding_is_applied(endpoint, table, wire):
    """error(code, applied=True): the server applied the request, and botocore got the error (a 500)."""
    wire.on("PutItem", w.error("InternalServerError", applied=True))
    with pytest.raises(ClientError, match="InternalServerError"):
        _put(table["client"], table["name"], 7)
    assert _ids(table) == [7]


@pytest.mark.parametrize("status", [500, 502, 503, 403])
@pytest.mark.parametrize("body", ["html", "empty"])
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_proxy_page_is_read_as_its_status(endpoint, table, wire, status, body, applied):
    """page(status, body): an answer that is not DynamoDB's JSON; botocore's error code is the status itself."""
    wire.on("PutItem", w.page(status, body, applied))
    with pytest.raises(ClientError) as info:
        _put(table["client"], table["name"], 1)
    assert info.value.response["Error"]["Code"] == str(status)
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert _ids(table) == ([1] if applied else [])


def test_bad_crc_is_resent_by_botocore(endpoint, table, wire):
    """bad_crc(): the request applied, and botocore, finding the checksum wrong, sent it again: the resend of a
    conditional put meets the item it stored."""
    client = _client(endpoint, attempts=2)
    wire.on("PutItem", w.bad_crc())
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        _put(client, table["name"], 1)
    assert [t.outcome for t in wire.sent("PutItem")] == ["200", "400"]
    assert _ids(table) == [1]


def test_bad_crc_on_the_last_try_is_taken_as_it_came(endpoint, table, wire):
    """bad_crc() with no retry left: botocore takes the answer as it came (a success)."""
    wire.on("PutItem", w.bad_crc())
    _put(table["client"], table["name"], 1)
    assert wire.count("PutItem") == 1
    assert _ids(table) == [1]


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_interrupt_while_out(endpoint, table, wire, applied):
    """interrupt(applied): a KeyboardInterrupt (the wire's Interrupt) comes out of botocore, after the server
    applied the request or before it saw it."""
    wire.on("PutItem", w.interrupt(applied))
    with pytest.raises(w.Interrupt):
        _put(table["client"], table["name"], 1)
    assert _ids(table) == ([1] if applied else [])


def test_credentials_fail_before_anything_is_sent(endpoint, table, wire):
    """no_credentials(): NoCredentialsError while the try is signed; the HTTP session never saw it."""
    wire.on("PutItem", w.no_credentials())
    with pytest.raises(NoCredentialsError):
        _put(table["client"], table["name"], 1)
    assert [(t.outcome, t.forwarded) for t in wire.sent("PutItem")] == [("NoCredentialsError", False)]
    assert _ids(table) == []


def test_failing_credentials_helper(endpoint, table, wire):
    """failing_credentials(client): every request of the client fails to sign until the block ends."""
    with w.failing_credentials(table["client"]), pytest.raises(NoCredentialsError):
        _put(table["client"], table["name"], 1)
    assert [(t.outcome, t.forwarded) for t in wire.sent("PutItem")] == [("NoCredentialsError", False)]
    _put(table["client"], table["name"], 1)
    assert _ids(table) == [1]


def test_nth_and_predicate_and_times(endpoint, table, wire):
    """A rule counts the requests that match (operation and predicate on the JSON body) and gives its faults from
    the nth on, ``times`` rounds; the other requests pass untouched."""
    client, name = table["client"], table["name"]
    only_even = wire.on("PutItem", w.error("ThrottlingException"), nth=2, times=2,
                        when=lambda body: int(body["Item"]["id"]["N"]) % 2 == 0)
    outcomes = []
    for n in range(1, 9):
        try:
            _put(client, name, n)
            outcomes.append("ok")
        except ClientError as exc:
            outcomes.append(exc.response["Error"]["Code"])
    # evens are 2, 4, 6, 8: the 2nd and 3rd of them get the fault
    assert outcomes == ["ok", "ok", "ok", "ThrottlingException", "ok", "ThrottlingException", "ok", "ok"]
    assert only_even.left() == 0 and wire.left() == []
    assert _ids(table) == [1, 2, 3, 5, 7, 8]


def test_before_runs_another_writer_whose_requests_pass(endpoint, table, wire):
    """before(action): the action runs while the request is out, its own requests untouched by the plan."""
    client, name = table["client"], table["name"]
    wire.on("PutItem", w.before(lambda: _put(client, name, 1), w.passthrough()), times=None)
    with pytest.raises(ClientError, match="ConditionalCheckFailed"):
        _put(client, name, 1)
    assert [t.fault for t in wire.sent("PutItem")] == ["before:<lambda>:passthrough"]
    assert _ids(table) == [1]


@pytest.mark.engine
def test_resent_transaction_token_is_applied_once(dynamodb_local, wire):
    """DynamoDB Local keeps a transaction's ClientRequestToken: a transaction applied whose answer was lost, sent
    again with its token, is answered with success and applied once (an ADD would count twice otherwise)."""
    import uuid

    client = _client(dynamodb_local.url, attempts=2)
    name = f"wire-{uuid.uuid4().hex[:10]}"
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "N"}],
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
    wire.on("TransactWriteItems", w.lost(applied=True))
    client.transact_write_items(ClientRequestToken="t-1", TransactItems=[{"Update": {
        "TableName": name, "Key": {"id": {"N": "1"}}, "UpdateExpression": "ADD n :one",
        "ExpressionAttributeValues": {":one": {"N": "1"}}}}])
    tries = wire.sent("TransactWriteItems")
    assert [(t.token, t.outcome) for t in tries] == [("t-1", "ReadTimeoutError"), ("t-1", "200")]
    item = client.get_item(TableName=name, Key={"id": {"N": "1"}}, ConsistentRead=True)["Item"]
    assert item["n"] == {"N": "1"}
    client.delete_table(TableName=name)


# -- the library through the wire, on DynamoDB Local -----------------------------------------------------------------

def check_store(model: Any, *instances: Any) -> Dict[str, Any]:
    """The invariant of every test below: read the table back and check that each record (its ``name``) is stored
    once, that no two instances hold one ID, that an instance holding an ID holds its own item's (not another
    writer's), and that an instance whose ID is None has nothing stored. Returns the stored items by name."""
    attr = model.autoinc_options().attribute
    stored = list(model.scan(consistent_read=True))
    names = sorted(str(item.name) for item in stored)
    assert len(names) == len(set(names)), f"a record is stored twice: {names}"
    by_name = {item.name: item for item in stored}
    by_id = {getattr(item, attr): item for item in stored}
    held = [getattr(i, attr) for i in instances if getattr(i, attr) is not None]
    assert len(held) == len(set(held)), f"two instances hold one ID: {sorted(held)}"
    for instance in instances:
        value, mine = getattr(instance, attr), by_name.get(instance.name)
        if value is None:
            assert mine is None, (f"{instance.name!r} holds no ID, but is stored under {attr}="
                                  f"{getattr(mine, attr)!r}: saving it again stores it twice")
            continue
        if mine is not None:
            assert getattr(mine, attr) == value, (f"{instance.name!r} holds {attr}={value!r}, but is stored under "
                                                  f"{getattr(mine, attr)!r}")
        other = by_id.get(value)
        assert other is None or other.name == instance.name, (
            f"{instance.name!r} holds {attr}={value!r}, which is another writer's item ({other.name!r}): saving "
            "it again overwrites that item")
    return by_name


#: How a test's saves are made: ``instance.save()``, or ``await instance.asave()`` (the async driver: the same
#: engine, its requests sent by aiobotocore through the same fault layer; an interrupt is the task's cancellation).
DRIVERS = ["sync", pytest.param("async", marks=pytest.mark.skipif(
    importlib.util.find_spec("aiobotocore") is None, reason="the async driver needs aiobotocore ([async] extra)"))]
_driver = {"name": "sync"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that saves through :func:`save` runs with each driver."""
    if "save" in metafunc.function.__code__.co_names:
        metafunc.fixturenames.append("driver")
        metafunc.parametrize("driver", DRIVERS)


@pytest.fixture
def driver(request: pytest.FixtureRequest) -> Iterator[str]:
    _driver["name"] = request.param
    yield request.param
    _driver["name"] = "sync"


def save(instance: Any) -> Optional[BaseException]:
    """Save ``instance`` with the test's driver; the library's error it raised, or None. A cancelled task (the
    async driver's interrupt) raises :class:`tests.wire.Interrupt`, as a sync save interrupted does."""
    try:
        if _driver["name"] == "async":
            try:
                asyncio.run(instance.asave())
            except asyncio.CancelledError as cancelled:
                raise w.Interrupt(f"the task was cancelled: {cancelled}") from cancelled
        else:
            instance.save()
    except AutoIncrementError as exc:
        return exc
    return None


#: The write of the record "Kirk", whichever request (PutItem, TransactWriteItems) the library sends for it.
KIRK = w.named("Kirk")


def assert_kept_or_saved(model: Any, instance: Any, error: Optional[BaseException]) -> None:
    """A write that applied: saved (None), or WriteOutcomeUnknownError with the ID kept; stored once either way."""
    assert error is None or isinstance(error, WriteOutcomeUnknownError), (
        f"the write applied, but the save raised {type(error).__name__}: {error}")
    assert getattr(instance, model.autoinc_options().attribute) is not None, "the ID was cleared"
    assert instance.name in check_store(model, instance), "the write applied, but nothing is stored"


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "block")
@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("body", ["html", "empty"])
@pytest.mark.parametrize("retries", [0, 1], ids=["no-resend", "botocore-resends"])
def test_proxy_5xx_page_after_a_put_applied(make_model, wire, status, body, retries):
    """A 500 or 503 whose body is not DynamoDB's JSON (a proxy's HTML page, or none), after the put applied: the
    save reports success or WriteOutcomeUnknownError with the ID kept; it never clears the ID of a stored item.
    Before d0a903a: read as a refusal (code '500'): ItemWriteError with the ID cleared, or the resend's failed
    condition as ItemExistsError."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=retries)
    wire.on(w.WRITES, w.page(status, body, applied=True), when=KIRK)
    user = User(name="Kirk")
    assert_kept_or_saved(User, user, save(user))


@pytest.mark.backends("local")
@pytest.mark.modes("gapless", "query")
@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("body", ["html", "empty"])
def test_proxy_5xx_page_after_a_transaction_applied(make_model, wire, status, body):
    """The same for a transaction (gapless, query), botocore resending nothing: success or WriteOutcomeUnknownError
    with the ID kept. Before d0a903a: ItemWriteError 'nothing was written', the ID cleared."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    wire.on(w.WRITES, w.page(status, body, applied=True), when=KIRK)
    user = User(name="Kirk")
    assert_kept_or_saved(User, user, save(user))


@pytest.mark.backends("local")
@pytest.mark.modes("gapless", "query")
@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("body", ["html", "empty"])
def test_proxy_5xx_page_after_a_transaction_applied_and_resent(make_model, wire, mode, status, body):
    """The same, botocore resending the write: saved once, or WriteOutcomeUnknownError with the ID kept; a gapless
    transaction, resent with its token, is answered with success (a regression guard)."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    wire.on(w.WRITES, w.page(status, body, applied=True), when=KIRK)
    user = User(name="Kirk")
    error = save(user)
    assert_kept_or_saved(User, user, error)
    assert mode != "gapless" or error is None, f"{type(error).__name__}: {error}"


def run_threads(saves: List[Any]) -> List[Optional[BaseException]]:
    """Run each of ``saves`` in its own thread, all at once; each one's error (None: none)."""
    errors: List[Optional[BaseException]] = [None] * len(saves)
    barrier = threading.Barrier(len(saves))

    def run(i: int) -> None:
        barrier.wait()
        try:
            saves[i]()
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(saves))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
@pytest.mark.parametrize("body", ["html", "empty"])
def test_group_commit_answered_by_a_proxy_page_is_not_split(make_model, wire, body):
    """Threads saving gapless items on one counter at once go in one TransactWriteItems (a group commit); answered
    by a proxy's 503 page after it applied, the group is not split and sent again item by item under new IDs: each
    record is stored once, every instance keeps the ID it is stored under (or WriteOutcomeUnknownError). Before
    d0a903a: split as a failure naming no item, each member sent alone under a new ID: stored twice."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    User(name="first").save()  # the counter's value is known: each thread's claim reads nothing
    users = [User(name=f"u{n}") for n in range(6)]
    began = threading.Semaphore(0)

    def queued() -> None:  # every save has begun (its claim, then the queue, take no request), and a moment more
        for _ in users:
            began.acquire(timeout=10)
        time.sleep(0.2)

    # the first transaction waits while the others queue behind it; the group of them is answered so
    wire.on("TransactWriteItems", w.before(queued))
    wire.on("TransactWriteItems", w.page(503, body, applied=True), when=w.items(at_least=3))
    with before_save.connected_to(lambda *_, **__: began.release(), sender=User):
        errors = run_threads([user.save for user in users])
    assert any(len(t.body["TransactItems"]) >= 3 and t.fault for t in wire.sent("TransactWriteItems")), \
        "no group commit was sent"
    assert all(e is None or isinstance(e, WriteOutcomeUnknownError) for e in errors), errors
    assert None not in [u.id for u in users], "an ID was cleared"
    check_store(User, *users)


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "block")
def test_answer_failing_its_crc32_check_after_a_put_applied(make_model, wire):
    """A 200 that fails botocore's CRC32 check after the put applied (botocore sends it again): the save succeeds,
    the item stored once under the ID the instance keeps; not ItemExistsError with the ID cleared. Before d0a903a:
    the resend's failed condition was ItemExistsError, the ID cleared."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    wire.on(w.WRITES, w.bad_crc(), when=KIRK)
    user = User(name="Kirk")
    error = save(user)
    assert [t.outcome for t in wire.sent(w.WRITES, KIRK)][:1] == ["200"]
    assert error is None, f"{type(error).__name__}: {error}"
    assert_kept_or_saved(User, user, error)


@pytest.mark.backends("local")
@pytest.mark.modes("gapless", "query")
def test_answer_failing_its_crc32_check_after_a_transaction_applied(make_model, wire, mode):
    """The same in gapless and query mode: saved once, or WriteOutcomeUnknownError with the ID kept; a gapless
    transaction, resent by botocore with its token, is answered with success (a regression guard)."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    wire.on(w.WRITES, w.bad_crc(), when=KIRK)
    user = User(name="Kirk")
    error = save(user)
    assert [t.outcome for t in wire.sent(w.WRITES, KIRK)][:1] == ["200"]
    assert_kept_or_saved(User, user, error)
    assert mode != "gapless" or error is None, f"{type(error).__name__}: {error}"


@pytest.mark.backends("local")
@pytest.mark.modes("gapless", "query")
@pytest.mark.parametrize("code", ["TransactionInProgressException", "TransactionConflictException"])
def test_busy_probes_of_a_transaction_that_may_have_applied(make_model, wire, code):
    """A transaction answered 500 after it applied, whose probes (sent again with its token) meet
    TransactionInProgressException or TransactionConflictException until Meta.autoinc_retries runs out: not
    ContentionError saying nothing was written while the item is stored, but WriteOutcomeUnknownError with the ID
    kept (or success). Before d0a903a: ContentionError 'nothing was written', the ID cleared."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0, autoinc_retries=2)
    wire.on(w.WRITES, w.error("InternalServerError", applied=True), when=KIRK)
    wire.on(w.WRITES, w.error(code), nth=2, when=KIRK, times=None)
    user = User(name="Kirk")
    assert_kept_or_saved(User, user, save(user))


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "block")
def test_busy_probes_of_a_put_that_may_have_applied(make_model, wire):
    """A put answered 500 after it applied, whose probes meet TransactionConflictException (the item is in another
    transaction) until Meta.autoinc_retries runs out: WriteOutcomeUnknownError with the ID kept, or success. Before
    d0a903a: ContentionError 'nothing was written', the ID cleared."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0, autoinc_retries=2)
    wire.on(w.WRITES, w.error("InternalServerError", applied=True), when=KIRK)
    wire.on(w.WRITES, w.error("TransactionConflictException"), nth=2, when=KIRK, times=None)
    user = User(name="Kirk")
    assert_kept_or_saved(User, user, save(user))


class Rival:
    """Another writer of a gapless model, around the library (its own botocore client): it stores an item under the
    value after the counter's and moves the counter there, as another process's save does."""

    def __init__(self, model: Any, endpoint: str) -> None:
        opts = model.autoinc_options()
        self.client, self.table = _client(endpoint), model.Meta.table_name
        self.counter, self.key = opts.counter, opts.key
        self.stored: List[int] = []

    def __call__(self) -> None:
        counter = self.counter.Meta.table_name
        key = {"NextKey": {"S": self.key}}
        item = self.client.get_item(TableName=counter, Key=key, ConsistentRead=True).get("Item", {})
        last = int(item["NextId"]["N"]) if "NextId" in item else None
        value = 1 if last is None else last + 1
        self.client.put_item(TableName=self.table, Item={"id": {"N": str(value)}, "name": {"S": f"rival-{value}"}},
                             ConditionExpression="attribute_not_exists(id)")
        if last is None:
            self.client.update_item(TableName=counter, Key=key, UpdateExpression="SET NextId = :v",
                                    ConditionExpression="attribute_not_exists(NextId)",
                                    ExpressionAttributeValues={":v": {"N": str(value)}})
        else:
            self.client.update_item(TableName=counter, Key=key, UpdateExpression="SET NextId = :v",
                                    ConditionExpression="NextId = :last",
                                    ExpressionAttributeValues={":v": {"N": str(value)}, ":last": {"N": str(last)}})
        self.stored.append(value)


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_interrupt_during_the_ticket_request_keeps_no_rivals_id(make_model, backend, wire, applied):
    """Ctrl-C while the gapless queue's ticket request (an UpdateItem on the counter setting NextTicket, sent after
    the write's own swap was refused because another writer moved the counter) is out: the instance holds no ID that
    is another writer's item (its own write was refused, so None), and saving it again overwrites nothing. Before
    d0a903a: the refused claim was kept, and the instance held the other writer's item's ID."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    rival = Rival(User, backend.meta["host"])
    # another writer stores the value each of the first two transactions claims, just before it arrives
    wire.on(w.WRITES, w.before(rival), when=KIRK, times=2)
    wire.on("UpdateItem", w.interrupt(applied), when=w.writes("NextTicket"))
    user = User(name="Kirk")
    with pytest.raises(w.Interrupt):
        user.save()
    assert rival.stored == [1, 2]
    assert [t.fault for t in wire.sent("UpdateItem") if t.fault], "no ticket request was interrupted"
    check_store(User, user)
    assert user.id is None, f"the instance holds id={user.id}, which its refused write never stored"


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
@pytest.mark.parametrize("applied", [False, True], ids=["not-applied", "applied"])
def test_id_kept_by_an_unknown_outcome_is_not_handed_out_again(make_model, wire, applied):
    """A gapless ID kept by WriteOutcomeUnknownError (the transaction's answer lost every time, applied or not) is
    not handed to the next save of the process: two live instances never hold one ID, and if the first applied, the
    store holds it once. (Applied, the next save's swap is refused and it takes the next value: a regression guard.)
    Before d0a903a (not applied): the next save was handed the same ID."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    first = User(name="first")
    first.save()  # the process knows the counter's value
    wire.on(w.WRITES, w.lost(applied), when=w.named("lost"))
    wire.on(w.WRITES, w.lost(False), nth=2, when=w.named("lost"), times=None)
    unknown = User(name="lost")
    error = save(unknown)
    assert isinstance(error, WriteOutcomeUnknownError), error
    assert unknown.id == 2
    after = User(name="after")
    save(after)  # saved under another ID, or refused (the ID None) while the unknown write is not settled
    assert after.id != unknown.id, f"the next save was handed id={after.id}, which the unknown write keeps"
    stored = check_store(User, first, unknown, after)
    assert ("lost" in stored) == applied


# -- save_all, credentials, and the counter's own requests -------------------------------------------------------------

@pytest.mark.backends("local")
@pytest.mark.modes("fast", "gapless")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_interrupt_while_a_save_all_transaction_is_out_keeps_the_ids(make_model, wire, applied):
    """Ctrl-C while save_all()'s transaction is out (applied or not: the library cannot tell): the interrupt comes
    out as it is, and every instance keeps the ID it may be stored under; each record is stored at most once. Before
    d0a903a: every ID was given back (None), the items stored when applied."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    users = [User(name=f"u{n}") for n in range(3)]
    wire.on(w.WRITES, w.interrupt(applied), when=w.named("u0"))
    with pytest.raises(w.Interrupt):
        User.save_all(users)
    assert None not in [u.id for u in users], f"IDs cleared: {[u.id for u in users]}"
    assert len(check_store(User, *users)) == (3 if applied else 0)


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "gapless")
def test_interrupt_during_botocores_resend_of_an_applied_save_all_keeps_the_ids(make_model, wire):
    """Ctrl-C while botocore resends a save_all() transaction whose first try applied (its answer lost): every
    instance keeps the ID it is stored under, and each record is stored once. Before d0a903a: every ID was given
    back (None), the items stored."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    users = [User(name=f"u{n}") for n in range(3)]
    wire.on(w.WRITES, w.lost(applied=True), w.interrupt(applied=False), when=w.named("u0"))
    with pytest.raises(w.Interrupt):
        User.save_all(users)
    assert [t.fault for t in wire.sent(w.WRITES, w.named("u0"))] == ["lost:timeout:applied", "interrupt:not-applied"]
    assert None not in [u.id for u in users], f"IDs cleared: {[u.id for u in users]}"
    assert len(check_store(User, *users)) == 3


@pytest.mark.backends("local")
@pytest.mark.modes("fast", "block", "gapless", "query")
def test_credentials_failure_before_the_write_was_sent_gives_the_id_back(make_model, wire):
    """The client's credentials fail while the write is signed, every time (NoCredentialsError): nothing was sent,
    so the save fails with the library's error, not WriteOutcomeUnknownError, and the ID is back to None; nothing is
    stored. Before d0a903a: probed as a lost answer, then WriteOutcomeUnknownError with the ID kept."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    wire.on(w.WRITES, w.no_credentials(), when=KIRK, times=None)
    user = User(name="Kirk")
    error = save(user)
    assert wire.sent(w.WRITES, KIRK) and not any(t.forwarded for t in wire.sent(w.WRITES, KIRK)), \
        "the write was sent"
    assert error is not None and not isinstance(error, WriteOutcomeUnknownError), (
        f"{type(error).__name__}: {error}")
    assert user.id is None, f"the instance keeps id={user.id}, though nothing was sent"
    assert check_store(User, user) == {}


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
def test_credentials_failure_of_the_whole_client_gives_the_id_back(make_model):
    """The same with the model's client holding credentials that fail (failing_credentials), after a first save
    described the tables and learned the counter (the next gapless save sends only its transaction): the save fails,
    the ID is None, nothing is stored. Before d0a903a: probed as a lost answer, then WriteOutcomeUnknownError with
    the ID kept."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    User(name="first").save()
    user = User(name="Kirk")
    with w.failing_credentials(User, User.autoinc_options().counter):
        error = save(user)
    assert error is not None and not isinstance(error, WriteOutcomeUnknownError), (
        f"{type(error).__name__}: {error}")
    assert user.id is None, f"the instance keeps id={user.id}, though nothing was sent"
    assert list(check_store(User, user)) == ["first"]


@pytest.mark.backends("local")
@pytest.mark.modes("fast")
def test_credentials_failure_of_the_whole_client_fails_at_the_counter(make_model):
    """A fast save on a client whose credentials fail (failing_credentials) fails at its counter request, before
    any value is taken: CounterError, the ID None, nothing stored (a regression guard)."""
    from pynamodb_autoinc.exceptions import CounterError

    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=1)
    User(name="first").save()
    user = User(name="Kirk")
    with w.failing_credentials(User, User.autoinc_options().counter):
        error = save(user)
    assert isinstance(error, CounterError), f"{type(error).__name__}: {error}"
    assert user.id is None
    assert list(check_store(User, user)) == ["first"]


@pytest.mark.backends("local")
def test_lost_answer_of_compare_and_set(backend, wire):
    """NextId.compare_and_set whose answer is lost after it applied (botocore sends it again): it reports True (or
    raises), never False for a set that is in the counter; the counter moved once. Before d0a903a: False, though the
    counter held the value set."""
    Counter = backend.counter()
    assert Counter.compare_and_set("cas", None, 5)
    wire.on("UpdateItem", w.lost(applied=True), when=w.writes("NextId"))
    sent = wire.count("UpdateItem")
    result = Counter.compare_and_set("cas", 5, 6)
    assert [t.fault for t in wire.sent("UpdateItem")[sent:]] == ["lost:timeout:applied", None]
    assert Counter.currval("cas") == 6
    assert result is True, "compare_and_set said False, but the counter holds the value it set"


@pytest.mark.backends("local")
def test_lost_answer_of_reserve(backend, wire):
    """NextId.reserve whose answer is lost after it applied (botocore sends it again): no value is handed out twice,
    and the counter moves once, to the last value handed out. Before a09efb6: botocore's resend applied again: the
    counter moved twice, the first move's values lost."""
    Counter = backend.counter()
    wire.on("UpdateItem", w.lost(applied=True))
    values = Counter.reserve("block", 3)
    later = Counter.reserve("block", 3)
    assert not set(values) & set(later), f"handed out twice: {values} and {later}"
    assert Counter.currval("block") == later[-1]
    assert values == [1, 2, 3], f"the counter moved twice: the first reserve got {values}"


@pytest.mark.backends("local")
@pytest.mark.modes()
def test_lost_answer_of_a_block_reserve_hands_out_no_value_twice(make_model, wire):
    """A block-mode model whose block reserve's answer is lost after it applied (botocore sends it again): no value
    is handed out twice, and the counter stands at the last value of the block in use (a regression guard)."""
    User = make_model("User", name=UnicodeAttribute(null=True), autoinc_block=3)
    wire.on("UpdateItem", w.lost(applied=True), when=w.writes("NextId"))
    users = [User(name=f"u{n}") for n in range(4)]
    for user in users:
        user.save()
    ids = [u.id for u in users]
    assert len(set(ids)) == 4 and ids == sorted(ids)
    check_store(User, *users)
    opts = User.autoinc_options()
    assert opts.counter.currval(opts.key) == ids[-1] + 2  # the second block in use, two values left in it


@pytest.mark.backends("local")
@pytest.mark.modes()
def test_lost_answer_of_a_block_reserve_moves_the_counter_once(make_model, wire):
    """The same: the counter moves once, so the first block's values are the ones handed out (1, 2, 3). Before
    a09efb6: the counter moved twice, a whole block spent unused."""
    User = make_model("User", name=UnicodeAttribute(null=True), autoinc_block=3)
    wire.on("UpdateItem", w.lost(applied=True), when=w.writes("NextId"))
    users = [User(name=f"u{n}") for n in range(3)]
    for user in users:
        user.save()
    check_store(User, *users)
    assert [u.id for u in users] == [1, 2, 3], "the counter moved twice"


@pytest.mark.backends("local")
@pytest.mark.modes("gapless")
@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_save_after_an_interrupt_in_flight_settles_it_before_taking_a_value(make_model, wire, applied):
    """Ctrl-C while a gapless save's transaction is out leaves its ID kept (it may be stored); the next save on the
    counter settles it first: its transaction resent with its token is stored once (applied before, or now), and
    the next save, even with no answer that tells, never ends in doubt on the interrupted item's ID. Before this
    release: the next save took the same value, and with proxies' pages for answers ended
    WriteOutcomeUnknownError keeping another item's ID."""
    User = make_model("User", name=UnicodeAttribute(null=True), max_retry_attempts=0)
    first, second = User(name="first"), User(name="second")
    wire.on("TransactWriteItems", w.interrupt(applied), when=w.named("first"))
    with pytest.raises(w.Interrupt):
        first.save()
    assert first.id is not None
    wire.on("TransactWriteItems", w.page(502), when=w.named("second"))
    with contextlib.suppress(AutoIncrementError):  # saved, or refused or unknown: never on first's ID
        second.save()
    assert first.id is not None and second.id != first.id
    assert "first" in check_store(User, first, second)
