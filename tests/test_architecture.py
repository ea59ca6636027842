"""The structure the library keeps: one send point for its requests, one clock for its sleeps, bounded loops."""

from __future__ import annotations

import ast
import gc
import importlib.util
import re
import sys
import weakref
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from botocore.exceptions import ClientError
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import GetError
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import NextId, _budget, _transport, periods
from pynamodb_autoinc.attributes import CounterAttribute, CounterMixin
from pynamodb_autoinc.periods import increment_in_period
from pynamodb_autoinc.testing import reset_counters, reset_state
from tests.helpers import auto_history_doc

ROOT = Path(__file__).resolve().parents[1]

PACKAGE = Path(__file__).parent.parent / "pynamodb_autoinc"

#: Methods that only a PynamoDB connection has: calling one sends a request.
CONNECTION_SENDS = {"dispatch", "_make_api_call", "update_item", "transact_write_items", "put_item", "get_item",
                    "delete_item", "batch_write_item", "batch_get_item", "transact_get_items"}
#: Methods a connection shares with a model: a send when called on a connection.
SHARED_SENDS = {"query", "scan"}

#: (module, method): the calls allowed outside the rule, and why.
ALLOWED = {
    ("_transport", "dispatch"): "the send point itself",
    ("_aio", "_make_api_call"): "below the send point: the async driver's wire (a request _transport.send made, or "
                                "one PynamoDB sends for an explicit key), sent by aiobotocore",
}

#: (module, function): the loops that may stay outside the driver (``_transport.drive``), and why.
LOOPS_ALLOWED = {
    ("_transport", "drive"): "the driver: the library's one retry loop",
    ("_transport", "scan"): "a scan's pages, not retries of one request (bounded by _transport.PAGES)",
    ("_budget", "__iter__"): "Tries itself: what `for _ in budget.tries()` runs on; sends nothing",
    ("_aio", "run"): "steps an awaited call's greenlet: each round awaits one wait it handed over (a request, a "
                     "sleep, a turn); sends nothing of its own",
    ("_engine", "carry_out"): "the driver of the queue's steps: each round is one step the queue decided",
    ("_group", "joined"): "a thread waits its turn to lead its process's group commit; each round is one commit",
    ("strategies", "_reserve"): "a cycling sequence's passes round its wrap, each taking at least one value",
    ("strategies", "_bound"): "forgets a dict's oldest entries; sends nothing",
    ("cli", "_fix_for"): "walks an exception's causes; sends nothing",
    ("exceptions", "causes"): "walks an exception's causes; sends nothing",
    ("exceptions", "__init__"): "walks an exception's causes; sends nothing",
}


def _modules() -> Iterator[Tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.glob("*.py")):
        yield path.stem, ast.parse(path.read_text(), str(path))


def _receiver_is_connection(node: ast.expr) -> bool:
    """``x._get_connection()``, ``x.connection``, ``connection``, ``self._connection``: a connection."""
    if isinstance(node, ast.Call):
        node = node.func
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "connection" in name.lower()


def _sends(tree: ast.Module) -> List[Tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in CONNECTION_SENDS or (name in SHARED_SENDS and isinstance(func, ast.Attribute)
                                        and _receiver_is_connection(func.value)):
            found.append((node.lineno, name))
    return found


def test_only_the_transport_sends_requests():
    """No module but ``_transport`` calls a connection's sending methods (``dispatch``, ``update_item``,
    ``transact_write_items``, ``put_item``, ``get_item``, ...): every request goes through
    ``_transport.send``, so retries, error mapping and the simulation's view have one place."""
    offenders = [f"{module}.py:{line} calls {name}()" for module, tree in _modules()
                 for line, name in _sends(tree) if (module, name) not in ALLOWED]
    assert not offenders, "send it with _transport.send(connection, operation, kwargs): " + "; ".join(offenders)


def test_the_scan_finds_a_send_it_should_refuse():
    """The scan sees a connection call however the connection is reached (so the rule above can fail)."""
    tree = ast.parse("def f(m, c):\n    m._get_connection().get_item('k')\n    c.connection.dispatch('X', {})\n"
                     "    c.connection.scan()\n    m.scan()\n")
    assert [name for _, name in _sends(tree)] == ["get_item", "dispatch", "scan"]


def test_every_sleep_is_on_the_library_clock():
    """Only ``_budget.Clock.sleep`` calls ``time.sleep`` (in an awaited call, ``asyncio.sleep``); every other
    sleep is ``clock.sleep`` (which the simulation replaces with a virtual clock)."""
    offenders = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sleep":
                receiver = ast.unparse(node.func.value)
                if receiver.split(".")[-1] != "clock" and (module, receiver) not in (("_budget", "time"),
                                                                                      ("_budget", "asyncio")):
                    offenders.append(f"{module}.py:{node.lineno} {receiver}.sleep()")
    assert not offenders


def _loops(tree: ast.Module) -> List[Tuple[str, int]]:
    """Each ``while`` loop and ``for`` loop over a Budget's ``tries()``: (its function, its line)."""
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.While) or (isinstance(child, ast.For) and isinstance(child.iter, ast.Call)
                                                and isinstance(child.iter.func, ast.Attribute)
                                                and child.iter.func.attr == "tries"):
                found.append((name, child.lineno))
            visit(child, name)

    visit(tree, "")
    return found


def test_only_the_driver_loops_over_sends():
    """No module loops over requests of its own (no ``while`` loop, no ``for`` over a Budget's ``tries()``)
    but the loops listed in ``LOOPS_ALLOWED``: a request sent again is an exchange that ``_transport.drive``
    sends, so the library has one retry loop."""
    offenders = [f"{module}.py:{line} in {function}()" for module, tree in _modules()
                 for function, line in _loops(tree) if (module, function) not in LOOPS_ALLOWED]
    assert not offenders, "make it an exchange for _transport.drive: " + "; ".join(offenders)


def test_the_loop_check_finds_a_loop_it_should_refuse():
    """The check sees a retry loop however it is written (so the rule above can fail)."""
    tree = ast.parse("def f(b):\n    for _ in b.tries():\n        pass\n    for x in range(3):\n        pass\n"
                     "class C:\n    def g(self):\n        while True:\n            break\n")
    assert _loops(tree) == [("f", 2), ("g", 8)]


class _Clock(_budget.Clock):
    def __init__(self) -> None:
        self.slept: List[float] = []
        self.at = 0.0

    def monotonic(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_tries_go_round_until_the_budget_is_spent(monkeypatch):
    """``for _ in budget.tries()`` runs 1 + attempts times, sleeping on the clock between tries; with
    ``backoff=None`` it does not sleep at all; with ``seconds`` it stops once they have passed."""
    clock = _Clock()
    monkeypatch.setattr(_budget, "clock", clock)
    assert list(_budget.Budget(attempts=2, seconds=None, backoff=0.01).tries()) == [1, 2, 3]
    assert len(clock.slept) == 2 and all(0 <= s <= 0.02 for s in clock.slept)
    clock.slept.clear()
    assert list(_budget.Budget(attempts=3, seconds=None, backoff=None).tries()) == [1, 2, 3, 4]
    assert clock.slept == []
    tries = []
    for n in _budget.Budget(attempts=None, seconds=5.0, backoff=None).tries():
        tries.append(n)
        clock.at += 2.0
    assert tries == [1, 2, 3]


def test_periods_read_the_one_clock_that_retries_sleep_on(monkeypatch):
    """The library has one clock: a clock put in place of ``_budget.clock`` (as the simulation puts its virtual
    one) is the clock periods are labelled by, and ``periods.clock.frozen()`` pins the time whichever clock
    runs."""

    class Later(_Clock):
        def now(self) -> datetime:
            return datetime(2030, 6, 1, tzinfo=timezone.utc)

    monkeypatch.setattr(_budget, "clock", Later())
    assert periods.label("month") == "2030-06"
    monkeypatch.setattr(_budget, "clock", _Clock())  # the simulation's kind: its own seconds and sleeps
    with periods.clock.frozen(datetime(2026, 12, 31, 23, 59)):
        assert periods.label("month") == "2026-12"


@pytest.mark.modes()
def test_a_failed_request_raises_what_pynamodb_raises(make_model):
    """``_transport.send`` raises PynamoDB's error for the operation, with botocore's error as its cause;
    with ``raw=True``, botocore's error itself (what the write engine reads)."""
    Item = make_model("Item", create=False, autoinc_gapless=True)
    connection = Item._get_connection().connection
    with pytest.raises(GetError, match="Failed to get item: .*ResourceNotFoundException") as caught:
        _transport.get(connection, Item.Meta.table_name, "1")
    assert isinstance(caught.value.cause, ClientError)
    kwargs = connection.get_operation_kwargs(Item.Meta.table_name, "1")
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        _transport.send(connection, "GetItem", kwargs, raw=True)


@pytest.mark.modes()
def test_every_request_of_the_library_goes_through_the_send_point(make_model, backend, monkeypatch):
    """Saves in every mode, counter operations, counts, CounterMixin writes and the testing helpers send
    each of their requests through ``_transport.send``: as many sends as PynamoDB dispatched."""
    fast = make_model("Fast", autoinc_gapless=False)
    gapless = make_model("Gapless", autoinc_gapless=True)
    block = make_model("Block", autoinc_block=3)
    query = make_model("Query", autoinc_strategy="query", autoinc_attribute="id", part=UnicodeAttribute(hash_key=True),
                       id=NumberAttribute(range_key=True))
    page = make_model("Page", bases=(CounterMixin,), autoinc_gapless=True, views=CounterAttribute())
    meta = type("Meta", (), {"table_name": backend.table_name("keys"), **backend.meta})
    api_key: Any = type("ApiKey", (Model,), {"Meta": meta, "key": UnicodeAttribute(hash_key=True),
                                             "n": NumberAttribute(null=True), "at": UnicodeAttribute(null=True)})
    backend.create(api_key)
    api_key(key="k").save()
    counter = backend.counter(NextId, fast)

    dispatched: List[str] = []
    sent: Dict[str, int] = {}
    real = _transport.send

    def send(connection: Any, operation: str, kwargs: Dict[str, Any], **options: Any) -> Dict[str, Any]:
        sent[operation] = sent.get(operation, 0) + 1
        return real(connection, operation, kwargs, **options)

    def record(_: Any, operation_name: str, **__: Any) -> None:
        dispatched.append(operation_name)

    monkeypatch.setattr(_transport, "send", send)
    with pre_dynamodb_send.connected_to(record):
        for model in (fast, gapless, block):
            model().save()
            model.save_all([model(), model()])
        query(part="p").save()
        page().save()
        stored = page()
        stored.save()
        stored.update([page.views.add(5)])
        counter.nextval("x")
        counter.setval("x", 10)
        counter.currval("x")
        counter.increment("hits")
        increment_in_period(api_key, "k", count_attribute="n", period_attribute="at")
        assert reset_counters(fast, counter) >= 4
    assert sum(sent.values()) == len(dispatched)
    assert {"GetItem", "UpdateItem", "PutItem", "TransactWriteItems", "Query", "Scan", "DeleteItem"} <= set(sent)


def test_a_model_class_nothing_refers_to_is_freed(backend):
    """A model class that saved items (its options read, its history settings made) is freed, and its connection
    with it, once the caller drops it and ``reset_state()`` forgets the tables: no cache of the library keeps a
    class alive (a test suite making a class per test would otherwise hold every one, gigabytes in all)."""
    Doc, _ = auto_history_doc(backend)
    doc = Doc(title="a")
    doc.save()
    assert doc.id == 1
    freed = weakref.ref(Doc)
    del Doc, doc
    reset_state()
    gc.collect()
    assert freed() is None


# -- the path of one save --------------------------------------------------------
#
# A warm save (the model's third) is traced with a profiler hook, as benchmarks/save_path.py traces it: calls into
# the package, the modules they run in, and the moves between modules along the calls and returns.

#: The most modules, and moves between them, that one warm save may make (calls within a module are free).
SAVE_MODULES, SAVE_MOVES = 8, 16


def _third_save(make_model: Any) -> Any:
    """The path of the third save of a new model (the first two warm the process up), traced by the tracer of
    benchmarks/save_path.py."""
    save_path = sys.modules.get("save_path")
    if save_path is None:
        spec = importlib.util.spec_from_file_location("save_path", PACKAGE.parent / "benchmarks" / "save_path.py")
        assert spec is not None and spec.loader is not None
        save_path = sys.modules["save_path"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(save_path)
    model = make_model("Path", name=UnicodeAttribute(null=True))
    model(name="first").save()
    model(name="second").save()
    return save_path.trace(lambda: model(name="third").save())


@pytest.mark.backends("moto")
@pytest.mark.modes("fast", "gapless")
def test_a_warm_save_runs_in_few_modules(make_model):
    """A warm fast or gapless save runs in at most 8 of the package's modules."""
    path = _third_save(make_model)
    assert len(path.modules) <= SAVE_MODULES, sorted(path.modules)


@pytest.mark.backends("moto")
@pytest.mark.modes("fast", "gapless")
def test_a_warm_save_goes_down_and_back_up_once(make_model):
    """A warm fast or gapless save moves between modules at most 16 times: each layer about once, down and up."""
    path = _third_save(make_model)
    assert path.moves <= SAVE_MOVES, " ".join(path.steps)


@pytest.mark.backends("moto")
@pytest.mark.modes("fast", "block", "gapless", "query")
def test_an_uncontested_save_runs_no_queue_code(make_model):
    """The queue (``_contention``) runs only after a lost race: no function of it runs on an uncontested save."""
    path = _third_save(make_model)
    assert "_contention" not in path.modules, " ".join(path.steps)


@pytest.mark.backends("moto")
@pytest.mark.modes("fast", "block", "gapless", "query")
def test_a_save_of_a_model_without_features_runs_no_feature_module(make_model):
    """A model without regions, periods or history runs none of their modules when it saves."""
    path = _third_save(make_model)
    assert not path.modules & {"regions", "periods", "_calendar", "history"}, " ".join(path.steps)


def _layers() -> List[List[str]]:
    """.importlinter's layers, top first, each the modules of one layer."""
    text = (ROOT / ".importlinter").read_text()
    block = text.split("layers =", 1)[1]
    return [[name.strip().strip("()") for name in line.split("|")] for line in block.splitlines()
            if line.startswith("    ") and line.strip()]


def test_the_architecture_page_lists_every_module_in_the_order_of_the_layers() -> None:
    """docs/architecture.md's layer table names every module of the package, and the modules of .importlinter's
    layers in the order the layers run (a module of a lower layer never comes before one of a higher)."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    table = page.split("| layer | modules | what it holds |", 1)[1].split("\n\n", 1)[0]
    named = [name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[2])]
    package = {path.stem for path in (ROOT / "pynamodb_autoinc").glob("*.py")} - {"__init__", "__main__", "_version"}
    assert package - set(named) == set()
    rank = {module: n for n, layer in enumerate(_layers()) for module in layer}
    ranks = [rank[name] for name in named if name in rank]
    assert ranks == sorted(ranks)
