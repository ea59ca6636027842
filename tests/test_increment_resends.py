"""NextId.increment under resends: botocore sends an applied request again when its answer is lost.

The faults are those of :mod:`tests.test_faults`: the server (DynamoDB Local,
or moto's in-process backend) applies the request and the connection is
dropped before the answer arrives, so botocore resends the same request.
Writers are threads: each thread counts under its own writer attribute.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import warnings
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Dict, Iterator, List

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.expressions.operand import Path
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import NextId
from pynamodb_autoinc import counter as counter_module
from pynamodb_autoinc.exceptions import (
    CounterError,
    CounterValueError,
)
from pynamodb_autoinc.periods import clock, increment_in_period
from tests.conftest import Backend
from tests.test_faults import Faults

T0 = datetime(2026, 3, 1, 12, 0)


class Counter(NextId):
    """The NextId table, with four retries per request (the lost answers below are resent)."""

    class Meta:
        table_name = "NextId"
        max_retry_attempts = 4


@pytest.fixture
def faults() -> Iterator[Callable[[Any], Faults]]:
    """``faults(counter)``: a Faults on the counter's client, removed after the test."""
    made: List[Faults] = []

    def attach(counter: Any) -> Faults:
        made.append(Faults(counter))
        return made[-1]

    yield attach
    for each in made:
        each.remove()


def item(counter: Any, key: str) -> Dict[str, Any]:
    """Counter ``key``'s item as stored (a consistent read)."""
    hash_key, range_key = counter._item_key(key)
    return dict(counter._get_connection().get_item(hash_key, range_key=range_key, consistent_read=True)["Item"])


def writers(counter: Any, key: str) -> Dict[str, int]:
    """The writer attributes on counter ``key``'s item, and the sequence numbers they hold."""
    return {name: int(raw["N"]) for name, raw in item(counter, key).items()
            if name.startswith(counter_module.WRITER_PREFIX)}


def in_thread(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a new thread (a new writer) and return what it returned."""
    out: List[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    assert out, "the thread failed"
    return out[0]


def ms(at: datetime) -> int:
    """``at`` (UTC) in milliseconds: the sequence number a writer takes then."""
    return int(at.replace(tzinfo=timezone.utc).timestamp() * 1000)


def test_lost_answer_counts_once(backend: Backend, faults):
    """An increment applied whose answer was lost is resent; it counts ``by`` once and returns the count."""
    counter = backend.counter(Counter)
    assert counter.increment("hits", period=None, by=2) == 2
    fault = faults(counter)
    fault.inject("UpdateItem", "drop-after-commit")
    assert counter.increment("hits", period=None, by=3) == 5
    assert fault.fired == [("UpdateItem", "drop-after-commit")]
    assert fault.count("UpdateItem") == 2  # resent once
    assert counter.current("hits", period=None) == 5


def test_several_lost_answers_in_a_row(backend: Backend, faults):
    """Three lost answers to the same increment, resent three times: it counts once."""
    counter = backend.counter(Counter)
    fault = faults(counter)
    fault.inject("UpdateItem", "drop-after-commit", times=3)
    assert counter.increment("hits", period=None, by=4) == 4
    assert fault.count("UpdateItem") == 4
    assert counter.increment("hits", period=None) == 5


def test_rival_counting_before_the_resend(backend: Backend, faults):
    """Another writer counts between a lost answer and its resend: both count once, the resend sees both."""
    counter = backend.counter(Counter)
    assert counter.increment("hits", period=None) == 1
    fault = faults(counter)
    fault.inject("UpdateItem", "drop-after-commit")
    rival: List[int] = []
    fault.before_resend("UpdateItem", lambda: rival.append(in_thread(
        lambda: counter.increment("hits", period=None, by=10))))
    mine = counter.increment("hits", period=None, by=2)
    assert rival == [13]  # 1, ours 2, the rival's 10
    assert mine == 13
    assert counter.current("hits", period=None) == 13
    assert len(writers(counter, "hits")) == 2


def test_a_failed_condition_that_is_no_resend_is_an_error(backend: Backend, requests):
    """A writer attribute ahead of the writer's own number raises CounterError after one request, no loop."""
    counter = backend.counter(Counter)
    counter.increment("hits", period=None)
    mine = counter_module._this_writer().attr
    hash_key, range_key = counter._item_key("hits")
    counter._get_connection().update_item(hash_key, range_key=range_key, actions=[Path([mine]).set(10 ** 15)])
    requests.clear()
    with pytest.raises(CounterError, match=f"its writer attribute '{mine}' holds 1000000000000000, not below"):
        counter.increment("hits", period=None)
    assert [op for op, _ in requests] == ["UpdateItem"]
    assert counter.current("hits", period=None) == 1


def test_idle_writers_attributes_are_removed(backend: Backend):
    """Writer attributes unchanged for over an hour are removed by a later update of any writer of the process
    that saw them (here the count after the one that read them: each thread counts once); newer ones stay."""
    counter = backend.counter(Counter)
    with clock.frozen(T0):
        for _ in range(3):
            in_thread(lambda: counter.increment("hits", period=None))
    with clock.frozen(T0 + timedelta(minutes=90)):
        in_thread(lambda: counter.increment("hits", period=None))  # a new writer reads the whole item: sees them
    recent = {name for name, seq in writers(counter, "hits").items() if seq >= ms(T0 + timedelta(minutes=90))}
    assert len(writers(counter, "hits")) == 4 and len(recent) == 1
    with clock.frozen(T0 + timedelta(hours=2)):
        assert counter.increment("hits", period=None) == 5  # another thread's count removes them
    assert set(writers(counter, "hits")) == recent | {counter_module._this_writer().attr}


def test_removals_per_update_are_capped(backend: Backend, monkeypatch):
    """One update removes at most PRUNE_MAX idle writers' attributes."""
    monkeypatch.setattr(counter_module, "PRUNE_MAX", 2)
    counter = backend.counter(Counter)
    with clock.frozen(T0):
        for _ in range(3):
            in_thread(lambda: counter.increment("hits", period=None))
    with clock.frozen(T0 + timedelta(hours=2)):
        counter.increment("hits", period=None)
        counter.increment("hits", period=None)
    left = writers(counter, "hits")
    assert len(left) == 2 and counter_module._this_writer().attr in left


def test_idle_writer_counting_again_keeps_its_attribute(backend: Backend, requests):
    """A writer seen idle that counts again before the removal keeps its attribute: its own count takes the
    process's list of idle writers, in which it is, and removes nothing of its own."""
    from concurrent.futures import ThreadPoolExecutor

    counter = backend.counter(Counter)
    with ThreadPoolExecutor(1) as other:  # one thread: one writer throughout
        with clock.frozen(T0):
            other.submit(counter.increment, "hits", period=None).result()
        with clock.frozen(T0 + timedelta(hours=2)):
            counter.increment("hits", period=None)  # sees the other writer idle
            other.submit(counter.increment, "hits", period=None).result()  # it counts again
            requests.clear()
            assert counter.increment("hits", period=None) == 4
            theirs = other.submit(lambda: counter_module._this_writer().attr).result()
    assert [op for op, _ in requests] == ["UpdateItem"]  # nothing left to remove
    assert writers(counter, "hits")[theirs] == ms(T0 + timedelta(hours=2))
    assert counter.current("hits", period=None) == 4


def test_a_writer_of_another_process_counting_again_keeps_its_attribute(backend: Backend, requests):
    """A writer of another process seen idle that counts again before this process removes its attribute keeps
    it: the removal's condition (the number seen) fails, and the update is sent again without it."""
    counter = backend.counter(Counter)
    other = counter_module.WRITER_PREFIX + "0ther0process"
    with clock.frozen(T0):
        counter.increment("hits", period=None)
        counter(next_key="hits").update([Path([other]).set(ms(T0))])  # the other process counted then
    with clock.frozen(T0 + timedelta(hours=2)):
        in_thread(lambda: counter.increment("hits", period=None))  # a new writer reads the whole item: sees it
        counter(next_key="hits").update([Path([other]).set(ms(T0 + timedelta(hours=2)))])  # it counts again
        requests.clear()
        assert counter.increment("hits", period=None) == 3
    assert [op for op, _ in requests] == ["UpdateItem", "UpdateItem"]  # the removal refused, sent without it
    assert writers(counter, "hits")[other] == ms(T0 + timedelta(hours=2))


def test_writers_look_for_idle_attributes_every_prune_every_calls(backend: Backend, monkeypatch):
    """A writer asks for the whole item on its first call and then once every PRUNE_EVERY calls."""
    monkeypatch.setattr(counter_module, "PRUNE_EVERY", 3)
    counter = backend.counter(Counter)
    asked: List[str] = []

    def record(params: Dict[str, Any], **_: Any) -> None:
        asked.append(params["ReturnValues"])

    client = counter._get_connection().connection.client
    client.meta.events.register("provide-client-params.dynamodb.UpdateItem", record)
    try:
        for _ in range(7):
            counter.increment("hits", period=None)
    finally:
        client.meta.events.unregister("provide-client-params.dynamodb.UpdateItem", record)
    assert asked == ["ALL_NEW", "UPDATED_NEW", "UPDATED_NEW"] * 2 + ["ALL_NEW"]


def test_counter_with_writers_reads_as_before(backend: Backend):
    """Writer attributes do not disturb reading a counter: get, keys, currval and current."""
    counter = backend.counter(Counter)
    in_thread(lambda: counter.increment("hits", period=None))
    counter.increment("hits", period=None)
    assert len(writers(counter, "hits")) == 2
    assert counter.get("hits", consistent_read=True).next_id == 2
    assert counter.keys() == ["hits"]
    assert counter.currval("hits") == counter.current("hits", period=None) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_is_a_new_writer():
    """A child forked from a process that counted counts under a writer id of its own."""
    parent = counter_module._this_writer().attr
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+: fork() of a threaded process
        pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, counter_module._this_writer().attr.encode())
        finally:
            os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child.startswith(counter_module.WRITER_PREFIX) and child != parent
    assert counter_module._this_writer().attr == parent


def _count_in_threads(counter: Any, key: str, threads: int, each: int) -> List[int]:
    results: List[int] = []

    def work() -> None:
        for _ in range(each):
            results.append(counter.increment(key, period=None))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return results


@pytest.mark.engine
def test_threads_count_exactly(local: Backend):
    """8 threads x 50 increments on DynamoDB Local: the count is 400 and each call got its own value."""
    counter = local.counter(Counter)
    key = f"hits-{uuid.uuid4().hex}"
    results = _count_in_threads(counter, key, 8, 50)
    assert sorted(results) == list(range(1, 401))
    assert counter.current(key, period=None) == 400
    assert len(writers(counter, key)) == 8


@pytest.mark.engine
def test_threads_count_exactly_through_lost_answers(local: Backend, faults):
    """8 threads x 50 increments on DynamoDB Local, 20 answers lost and resent: the count is exactly 400."""
    counter = local.counter(Counter)
    key = f"hits-{uuid.uuid4().hex}"
    fault = faults(counter)
    fault.inject("UpdateItem", "drop-after-commit", times=20)
    results = _count_in_threads(counter, key, 8, 50)
    assert len(fault.fired) == 20
    assert len(results) == 400 and max(results) == 400
    assert counter.current(key, period=None) == 400


@pytest.fixture
def resent_api_key(backend):
    """An API key item counting requests per month, its client resending a request whose answer was lost."""
    meta = type("Meta", (), {"table_name": backend.table_name("apikeys"), "max_retry_attempts": 4, **backend.meta})
    model: Any = type("ApiKey", (Model,), {
        "Meta": meta, "key": UnicodeAttribute(hash_key=True), "request_count": NumberAttribute(null=True),
        "active_period": UnicodeAttribute(null=True)})
    backend.create(model)
    model(key="k1").save()
    faults = Faults(model)
    yield model, faults
    faults.remove()


def _count_at(model: Any, now: datetime, by: Any = 1) -> int:
    return increment_in_period(model, "k1", count_attribute="request_count", period_attribute="active_period",
                               now=now, by=by)


@contextlib.contextmanager
def _answer_lost(faults: Faults, nth: int) -> Iterator[None]:
    """Inside the block, the ``nth`` UpdateItem sent is applied, its answer lost, and botocore resends it."""
    seen: List[str] = []

    def before(_: Any, operation_name: str, **__: Any) -> None:
        if operation_name == "UpdateItem":
            seen.append(operation_name)
            if len(seen) == nth:
                faults.inject("UpdateItem", "drop-after-commit")

    with pre_dynamodb_send.connected_to(before):
        yield


def test_period_reset_resent_counts_once(resent_api_key):
    """At a period change, a reset applied whose answer was lost is resent: the event counts once (1, not 2)."""
    model, faults = resent_api_key
    _count_at(model, datetime(2026, 11, 3))
    with _answer_lost(faults, 2):  # the increment fails its condition; the reset is the second
        assert _count_at(model, datetime(2026, 12, 1)) == 1
    assert faults.fired == [("UpdateItem", "drop-after-commit")]
    assert model.get("k1", consistent_read=True).request_count == 1


def test_increment_in_period_resent_counts_once(resent_api_key):
    """Within a period, an increment applied whose answer was lost is resent: it counts ``by`` once."""
    model, faults = resent_api_key
    _count_at(model, datetime(2026, 11, 3))
    faults.inject("UpdateItem", "drop-after-commit")
    assert _count_at(model, datetime(2026, 11, 4), by=5) == 6
    assert faults.fired == [("UpdateItem", "drop-after-commit")]
    assert model.get("k1", consistent_read=True).request_count == 6


def test_idle_writers_leave_the_counted_item(resent_api_key):
    """Writer attributes idle for over an hour are removed from the counted item by a later writer's counts."""
    model, _ = resent_api_key

    def writer_attrs() -> List[str]:
        raw = model._get_connection().get_item("k1", consistent_read=True)["Item"]
        return [name for name in raw if name.startswith(counter_module.WRITER_PREFIX)]

    with clock.frozen(datetime(2026, 11, 3)):
        for _ in range(3):
            thread = threading.Thread(target=_count_at, args=(model, datetime(2026, 11, 3)))
            thread.start()
            thread.join()
    assert len(writer_attrs()) == 3
    with clock.frozen(datetime(2026, 11, 3, 2)):
        _count_at(model, datetime(2026, 11, 3, 2))  # sees the idle ones
        _count_at(model, datetime(2026, 11, 3, 2))  # removes them
    assert writer_attrs() == [counter_module._this_writer().attr]
    assert model.get("k1", consistent_read=True).request_count == 5


def test_increment_in_period_refuses_a_non_integer(resent_api_key):
    """increment_in_period(by=1.5) is refused before anything is written."""
    model, _ = resent_api_key
    with pytest.raises(CounterValueError, match="by must be an int, not float 1.5"):
        _count_at(model, datetime(2026, 11, 3), by=1.5)
    assert model.get("k1", consistent_read=True).request_count is None
def test_setval_resent_after_a_lost_answer_does_not_move_the_counter_back(backend: Backend, faults):
    """setval applied whose answer was lost, resent after another writer advanced the counter: the resend
    is not applied again, so no value is handed out twice."""
    counter = backend.counter(Counter)
    fault = faults(counter)
    fault.inject("UpdateItem", "drop-after-commit")
    taken: List[int] = []
    fault.before_resend("UpdateItem", lambda: taken.append(in_thread(lambda: counter.nextval("seq"))))
    assert counter.setval("seq", 10) == 10
    assert taken == [11]
    assert counter.currval("seq") == 11
    assert counter.nextval("seq") == 12
