"""Fixtures: a ``backend`` (moto in-process, DynamoDB Local) and a ``mode`` (fast, block, gapless, query)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import threading
import uuid
from copy import copy as shallow_copy
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Type
from unittest import mock

import botocore.handlers  # type: ignore[import-untyped, unused-ignore]
import botocore.hooks  # type: ignore[import-untyped, unused-ignore]
import botocore.session  # type: ignore[import-untyped, unused-ignore]
import pynamodb.connection.base
import pytest
from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

import tests.fake_aws  # noqa: F401  (dummy AWS settings)
import tests.moto_tokens  # noqa: F401  (moto keeps transaction tokens, as DynamoDB does)
from pynamodb_autoinc import AutoIncrementMixin, NextId
from pynamodb_autoinc.counter import bind_counter
from pynamodb_autoinc.testing import reset_state

BACKENDS = ("moto", "local", "moto-server")

#: The backends a test runs on unless ``--backend`` says: moto's server mode (over HTTP, as aiobotocore needs it)
#: only for a test whose ``backends(...)`` marker names it.
DEFAULT_BACKENDS = ("moto", "local")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", action="append", choices=BACKENDS,
                     help="run the behavioural suite on this backend only (repeatable; default: all)")
    parser.addoption("--soak", action="store_true",
                     help="deep runs: 10x the saves of the concurrency tests, the hypothesis profile 'soak' (20x the "
                          "examples) and 4x the random simulation runs (SIM_RANDOM_RUNS=2320)")


def pytest_configure(config: pytest.Config) -> None:
    """``--soak`` chooses the deep settings of the property and simulation tests (an explicit environment wins)."""
    if config.getoption("soak"):
        from tests.simulation.settings import SOAK_RANDOM_RUNS

        os.environ.setdefault("HYPOTHESIS_PROFILE", "soak")
        os.environ.setdefault("SIM_RANDOM_RUNS", str(SOAK_RANDOM_RUNS))
    import tests.hypothesis_setup  # noqa: F401  (loads the Hypothesis profile for every test)

    config.addinivalue_line("markers", "slow: a deep test, a few seconds or more (the model-based check, the "
                                       "simulation's explorations, several processes or servers): the SLOW table "
                                       "of tests/conftest.py marks them; -m 'not slow' leaves them out")
    config.pluginmanager.register(_SlowFirst(), "autoinc-slow-first")


#: The ways a model can number its items; ``make_model`` builds a model in each.
MODES = ("fast", "block", "gapless", "query")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        opted = ["moto-server"] if marker and "moto-server" in marker.args else []
        chosen = metafunc.config.getoption("backend") or [*DEFAULT_BACKENDS, *opted]
        if marker:
            # ``backends()`` with no names: the test sends no request that matters, so one backend will do
            chosen = [name for name in chosen if name in marker.args] if marker.args else chosen[:1]
        metafunc.parametrize("backend_name", chosen)
    if "mode" in metafunc.fixturenames and not _parametrizes(metafunc, "mode"):
        marker = metafunc.definition.get_closest_marker("modes")
        if marker is None or marker.args:
            metafunc.parametrize("mode", marker.args if marker else MODES)
        # ``modes()`` with no names: the test sets its models' mode itself, runs once, and ``mode`` is None


def _sets_own_mode(node: Any) -> bool:
    """Whether ``node`` is marked ``modes()``: its models set their mode themselves."""
    marker = node.get_closest_marker("modes")
    return marker is not None and not marker.args


#: Fixtures that start DynamoDB Local: a test using one runs on the ``local`` backend only.
LOCAL_FIXTURES = frozenset({"local", "dynamodb_local", "global_double", "global_tables"})


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """Deselect a test marked ``backends(...)`` without one of the chosen backends (``--backend``), and a test
    that needs DynamoDB Local (marked ``engine``, or using one of its fixtures) when ``local`` is not chosen; keep
    one copy of a parameter marked ``pytest.param(..., marks=pytest.mark.modes())`` (it sets its own mode)."""
    chosen = config.getoption("backend") or list(BACKENDS)
    kept, dropped = [], []
    seen = set()
    for item in items:
        marker = item.get_closest_marker("backends")
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("engine") or fixtures & LOCAL_FIXTURES:
            wanted = {"local"}
        elif marker and marker.args and "backend_name" in fixtures:
            wanted = set(marker.args)
        else:
            wanted = set(chosen)
        callspec = getattr(item, "callspec", None)
        copy = None
        if callspec is not None and "mode" in callspec.params and _sets_own_mode(item):
            copy = (item.path, getattr(item, "originalname", item.name),
                    tuple(sorted((k, id(v)) for k, v in callspec.params.items() if k != "mode")))
        if not wanted & set(chosen) or copy in seen:
            dropped.append(item)
            continue
        if copy is not None:
            seen.add(copy)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    _mark_slow(items)


#: The deep tests, by node ID (``fnmatch`` patterns, the first match wins), with the seconds each takes on a quiet
#: 2-core machine (measured with ``--durations``, rounded). Each is marked ``slow`` (``-m "not slow"``, the inner
#: loop of docs/contributing.md, leaves them out), and under pytest-xdist they are sent first, longest first, dealt
#: out among the workers, so that work stealing ends on short tests. A test missing here still runs; a pattern
#: matching nothing costs nothing.
SLOW: Tuple[Tuple[str, float], ...] = (
    ("tests/model/test_promise.py::*[[]moto[]]", 55),
    ("tests/model/test_promise.py::*", 12),
    ("tests/test_properties.py::test_sequences_follow_the_reference[[]moto[]]", 45),
    ("tests/test_properties.py::test_sequences_follow_the_reference*", 15),
    ("tests/test_properties.py::test_models_sharing_a_counter_hand_out_each_value_once[[]moto[]]", 22),
    ("tests/test_properties.py::test_models_sharing_a_counter_hand_out_each_value_once*", 5),
    ("tests/test_configuration_property.py::*[[]moto[]]", 16),
    ("tests/test_periodic_counts.py::test_counts_across_periods_of_changing_length_follow_the_reference*", 10),
    # the explorations run on worker processes of their own (tests/simulation/jobs.py): seconds of wall time
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[[]fast[]]", 30),
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[[]tx-fast[]]", 24),
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[[]query[]]", 21),
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[[]gapless[]]", 15),
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[[]block[]]", 12),
    ("tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants*", 6),
    ("tests/simulation/test_exhaustive.py::test_every_fault_sequence_on_one_save[[]gapless[]]", 19),
    ("tests/simulation/test_exhaustive.py::test_every_fault_sequence_on_one_save[[]bulk-gapless[]]", 16),
    ("tests/simulation/test_exhaustive.py::test_every_fault_sequence_on_one_save*", 4),
    # these read the explorations of test_every_schedule_keeps_the_invariants (cached per process: READS)
    ("tests/simulation/test_exhaustive.py::*", 0),
    ("tests/simulation/test_random.py::*[[]gapless[]]", 15),
    ("tests/simulation/test_random.py::*[[]block[]]", 9),
    ("tests/simulation/test_random.py::*[[]query[]]", 8),
    ("tests/simulation/test_random.py::*[[]fast[]]", 6),
    ("tests/simulation/test_random.py::*", 3),
    ("tests/simulation/test_harness.py::test_split_exploration_covers_each_schedule_once", 8),
    ("tests/simulation/test_harness.py::test_abandoned_write_that_gives_the_id_back_passes", 5),
    # several processes, or servers of their own, on DynamoDB Local
    ("tests/test_concurrency.py::*across_processes*", 15),
    ("tests/test_concurrency.py::test_eight_processes_one_counter*", 15),
    ("tests/test_concurrency.py::test_tasks_in_four_processes_one_counter*", 9),
    ("tests/test_concurrency.py::test_mixed_load*", 15),
    ("tests/test_concurrency.py::test_sigkill_mid_run*", 12),
    ("tests/test_history.py::test_eight_processes_save_the_same_items", 20),
    ("tests/test_global_tables_replicated.py::*", 12),
    ("tests/test_docs.py::test_first_day_page_runs", 12),
    ("tests/test_pytest_plugin.py::*", 6),
)


#: Deep tests that read what another test computed (cached per process), by node ID pattern: the test of the same
#: file and parameters they read from. They are sent to the worker that test goes to.
READS: Tuple[Tuple[str, str], ...] = (
    ("tests/simulation/test_exhaustive.py::*", "test_every_schedule_keeps_the_invariants"),
)


def _reads_from(nodeid: str) -> str:
    """The node ID of the test whose work the test ``nodeid`` reads (:data:`READS`), or ``""``."""
    for pattern, test in READS:
        if fnmatch.fnmatchcase(nodeid, pattern):
            path, _, name = nodeid.partition("::")
            params = name.partition("[")[2]
            return f"{path}::{test}[{params}" if params else f"{path}::{test}"
    return ""


def slow_seconds(nodeid: str) -> Optional[float]:
    """The seconds :data:`SLOW` gives the test ``nodeid``, or None where it is not a deep test."""
    for pattern, seconds in SLOW:
        if fnmatch.fnmatchcase(nodeid, pattern):
            return seconds
    return None


def _mark_slow(items: List[pytest.Item]) -> None:
    """Mark each deep test ``slow``, its seconds the marker's argument (read again by :class:`_SlowFirst`)."""
    for item in items:
        seconds = slow_seconds(item.nodeid)
        if seconds is not None:
            item.add_marker(pytest.mark.slow(seconds))


class _SlowFirst:
    """Under pytest-xdist, send the deep tests first, longest first, dealt out among the workers.

    ``--dist worksteal`` gives each worker an equal, consecutive share of the collection, and a worker left
    without tests takes the second half of the longest queue. So each share starts with deep tests of about
    equal seconds in all, longest first, then its part of the others in their usual order: what is stolen at
    the end are the short tests, and no worker starts a long test last. Runs after ``-m``/``-k`` deselection
    (``trylast``), on the final collection, which every worker orders the same way.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: List[pytest.Item]) -> None:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
        if workers < 2 or len(items) < workers:
            return
        deep = [(float(marker.args[0]), i) for i, item in enumerate(items)
                if (marker := item.get_closest_marker("slow")) is not None and marker.args]
        if not deep:
            return
        # xdist's first shares: consecutive runs of the collection, each len(pending) // workers_left long
        sizes, left = [], len(items)
        for w in range(workers):
            sizes.append(left // (workers - w))
            left -= sizes[-1]
        shares: List[List[int]] = [[] for _ in sizes]
        totals = [0.0] * workers
        # longest first, each to the share with the fewest seconds that has room; a test of 0 s goes where the
        # test it reads from went (READS), so that the exploration it reads is there, cached, and not run twice
        placed: Dict[str, int] = {}  # node ID: share
        for seconds, i in sorted(deep, key=lambda d: (-d[0], d[1])):
            room = [w for w in range(workers) if len(shares[w]) < sizes[w]]
            to = placed.get(_reads_from(items[i].nodeid), -1) if seconds == 0 else -1
            if to not in room:
                to = min(room, key=lambda w: totals[w])
            shares[to].append(i)
            totals[to] += seconds
            placed[items[i].nodeid] = to
        taken = {i for share in shares for i in share}
        rest = iter([i for i in range(len(items)) if i not in taken])
        order: List[int] = []
        for size, share in zip(sizes, shares):
            order.extend(share)
            order.extend(next(rest) for _ in range(size - len(share)))
        items[:] = [items[i] for i in order]


def _parametrizes(metafunc: pytest.Metafunc, name: str) -> bool:
    """Whether the test's own @pytest.mark.parametrize sets ``name``."""
    return any(_names(marker, name) for marker in metafunc.definition.iter_markers("parametrize"))


def _engine_jar() -> Any:
    """The DynamoDB Local jar; the test is skipped when it is missing (fails in CI)."""
    from tests import engine

    jar = engine.find_jar()
    if jar is None:
        if os.environ.get("CI"):
            pytest.fail(f"DynamoDB Local is required in CI. {engine.INSTALL_HINT}")
        pytest.skip(f"DynamoDB Local is not installed. {engine.INSTALL_HINT}")
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail(f"Java is required in CI. {engine.INSTALL_HINT}")
        pytest.skip(f"`java` (17+) is not on PATH. {engine.INSTALL_HINT}")
    return jar


@pytest.fixture(scope="session")
def dynamodb_local() -> Iterator[Any]:
    """A DynamoDB Local server for the whole session (fails in CI when it is missing)."""
    from tests import engine

    with engine.DynamoDBLocal(_engine_jar()) as server:
        yield server


@pytest.fixture(scope="session")
def global_double() -> Iterator[Any]:
    """Two DynamoDB Local servers standing for two regions of a global table, replicated (tests/global_double.py)."""
    from tests.global_double import GlobalTableDouble

    with GlobalTableDouble(_engine_jar()) as double:
        yield double


@pytest.fixture
def global_tables(global_double: Any) -> Iterator[Any]:
    """Replicated tables with unique names, deleted after the test; replication starts each test without delay."""
    global_double.delay = 0.0
    tables = global_double.tables()
    yield tables
    tables.close()
    global_double.delay = 0.0


@dataclass
class Backend:
    """Where the tables of one test live, and the ``Meta`` settings that reach them."""

    name: str
    meta: Dict[str, Any]
    created: List[Type[Model]] = field(default_factory=list)

    def table_name(self, stem: str) -> str:
        return f"{stem}-{uuid.uuid4().hex[:10]}"

    def create(self, model: Type[Model]) -> None:
        # create_table() passes over a table that exists (its own DescribeTable), and moto and DynamoDB Local
        # answer CreateTable with the table ACTIVE: no DescribeTable before it, nor after it to wait
        model.create_table(billing_mode="PAY_PER_REQUEST")

    def counter(self, base: Type[NextId] = NextId, model: Optional[Type[Model]] = None) -> Type[NextId]:
        """``base`` bound to this backend, its table created."""
        bound = bind_counter(base, model or self.probe())
        self.create(bound)
        return bound

    def probe(self) -> Type[Model]:
        meta = type("Meta", (), {"table_name": "probe", **self.meta})
        return type("Probe", (Model,), {"Meta": meta, "id": NumberAttribute(hash_key=True)})


@pytest.fixture
def backend(backend_name: str, request: pytest.FixtureRequest) -> Iterator[Backend]:
    """Each test runs on moto's in-process ``mock_aws`` and on DynamoDB Local (and, where its ``backends(...)``
    marker names it, on moto's server mode)."""
    if backend_name == "moto":
        from moto import mock_aws

        with mock_aws():
            yield Backend("moto", {"region": "us-east-1"})
    else:
        served = request.getfixturevalue("local" if backend_name == "local" else "moto_served")
        # The server lives for the session: start each test with empty counters.
        counter = bind_counter(NextId, served.probe())  # its table made by the server's fixture
        with counter.batch_write() as batch:
            for item in counter.scan(consistent_read=True, attributes_to_get=["NextKey"]):
                batch.delete(item)
        yield served


@pytest.fixture(scope="session")
def _moto_server_url() -> Iterator[str]:
    from tests.wire import moto_server

    with moto_server() as url:
        yield url


@pytest.fixture
def moto_served(_moto_server_url: str) -> Backend:
    """moto's server mode (``ThreadedMotoServer``, one for the session) as a :class:`Backend`, its NextId table
    created: requests go over HTTP, so the async driver's aiobotocore reaches it."""
    backend = Backend("moto-server", {
        "region": "us-east-1",
        "host": _moto_server_url,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    })
    backend.counter()
    return backend


@pytest.fixture
def local(dynamodb_local: Any) -> Backend:
    """DynamoDB Local as a :class:`Backend`, its NextId table created (for tests that need the real engine)."""
    backend = Backend("local", {
        "region": "us-east-1",
        "host": dynamodb_local.url,
        "aws_access_key_id": "local",
        "aws_secret_access_key": "local",
    })
    backend.counter()
    return backend


@pytest.fixture
def rival() -> Iterator[Any]:
    """Another writer: ``rival(model, times=n)`` advances the model's counter before each of its next n transactions."""

    class Rival:
        times = 0
        busy = False

        def __call__(self, model: Any, times: int) -> None:
            opts = model.autoinc_options()
            self.times = times

            def race(_: Any, operation_name: str, **__: Any) -> None:
                if operation_name == "TransactWriteItems" and self.times and not self.busy:
                    self.busy = True
                    self.times -= 1
                    opts.counter.nextval(opts.key)
                    self.busy = False

            self.race = race
            pre_dynamodb_send.connect(race)

    writer = Rival()
    yield writer
    if hasattr(writer, "race"):
        pre_dynamodb_send.disconnect(writer.race)


class SessionMaker:
    """New botocore sessions, each its own, made without parsing or registering anything twice.

    PynamoDB gives each model class's connection a new botocore session (one per thread), and every test makes
    new model classes. A new session parses the DynamoDB service description and the endpoint rules again, and
    registers botocore's ~300 built-in event handlers one by one (each checked with ``inspect``): a quarter of a
    second in all, most of a test's time on moto. The sessions made here share one loader of botocore's data
    files (the parsed files), and start from a copy of one emitter holding the built-in handlers (copied as
    botocore copies a session's emitter for each client it makes). Each session is still new: its credentials,
    settings, components and its own events are its own.
    """

    def __init__(self) -> None:
        self.loader = botocore.session.get_session().get_component("data_loader")
        self._lock = threading.Lock()
        self._emitter: Any = None
        self._handlers: Tuple[int, int] = (0, 0)

    def _builtin_emitter(self) -> Any:
        """An emitter with botocore's built-in handlers, made again if the list changed (a plugin added one)."""
        builtin = botocore.handlers.BUILTIN_HANDLERS
        now = (len(builtin), id(builtin[-1]) if builtin else 0)
        with self._lock:
            if self._emitter is None or self._handlers != now:
                emitter = botocore.hooks.HierarchicalEmitter()
                botocore.session.Session(event_hooks=emitter)  # registers the built-in handlers into it
                self._emitter, self._handlers = emitter, now
            return self._emitter

    def __call__(self) -> Any:
        made = botocore.session.Session(event_hooks=shallow_copy(self._builtin_emitter()),
                                        include_builtin_handlers=False)
        made.register_component("data_loader", self.loader)
        return made


def sessions_sharing_service_data() -> Any:
    """While patched in, every botocore session PynamoDB makes comes from one :class:`SessionMaker`."""
    return mock.patch.object(pynamodb.connection.base, "get_session", SessionMaker())


@pytest.fixture(scope="session", autouse=True)
def _service_data_parsed_once() -> Iterator[None]:
    with sessions_sharing_service_data(), quick_botocore_backoff():
        yield


#: What the tests scale botocore's retry backoff by (see :func:`quick_botocore_backoff`).
BACKOFF_SCALE = 0.02


def quick_botocore_backoff() -> Any:
    """While patched in, botocore waits a fiftieth of its backoff before each resend.

    botocore's standard retry mode waits up to 1, 2 and 4 s (jittered) before resending a throttled request, and
    the tests throttle requests on purpose by the hundred: whole minutes in which a worker sleeps. The resends
    still happen, in the same order, on the same tries; only the wait before each is shorter. Processes the tests
    start (the concurrency workers, the command line) keep botocore's own backoff.
    """
    import botocore.retries.standard  # type: ignore[import-untyped, unused-ignore]

    backoff = botocore.retries.standard.ExponentialBackoff
    real = backoff.delay_amount

    def delay_amount(self: Any, context: Any) -> float:
        return float(real(self, context)) * BACKOFF_SCALE

    return mock.patch.object(backoff, "delay_amount", delay_amount)


@pytest.fixture(autouse=True)
def _fresh_process_state() -> Iterator[None]:
    """Each test starts with no reserved blocks, no remembered counter values, new increment() writers, and
    no table described yet (its first claim describes the model's table and the counter table)."""
    reset_state()
    yield
    reset_state()


ModelFactory = Callable[..., Any]

#: The Meta options that set a model's mode: a model given one of them keeps it, whatever the test's mode.
PINNING = frozenset({"autoinc_gapless", "autoinc_block", "autoinc_strategy"})


#: The Meta options of each mode (a test that sets one of them itself keeps its own).
MODE_OPTIONS: Dict[str, Dict[str, Any]] = {
    "fast": {"autoinc_gapless": False},
    "block": {"autoinc_block": 3},
    "gapless": {"autoinc_gapless": True},
    "query": {"autoinc_strategy": "query", "autoinc_attribute": "id"},
}


@pytest.fixture
def mode() -> None:
    """None in a test marked ``modes()``: it sets the mode of each model it builds (see the modes marker)."""
    return None


def _conftest_modes(node: Any) -> int:
    """How many copies of ``node``'s test conftest makes, one per mode (0: the test chooses its modes itself)."""
    callspec = getattr(node, "callspec", None)
    if callspec is None or "mode" not in callspec.params:
        return 0
    if any(_names(marker, "mode") for marker in node.iter_markers("parametrize")):
        return 0
    marker = node.get_closest_marker("modes")
    return len(marker.args) if marker else len(MODES)


def _names(marker: Any, name: str) -> bool:
    """Whether the ``parametrize`` marker sets ``name``."""
    names = marker.args[0]
    return name in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names)


def _mode_reaches(node: Any, past: str) -> bool:
    """Whether the test function, or a fixture other than ``past``, asks for ``mode``."""
    info = node._fixtureinfo
    return "mode" in info.argnames or any(
        "mode" in defs[-1].argnames for name, defs in info.name2fixturedefs.items() if name not in (past, "mode"))


@pytest.fixture
def make_model(backend: Backend, mode: Optional[str], request: pytest.FixtureRequest) -> Iterator[ModelFactory]:
    """Build an auto-increment model class on ``backend`` in ``mode``, with its tables.

    ``make_model("User", name=UnicodeAttribute(null=True), autoinc_key="user")``:
    keyword arguments that are attributes become attributes, the rest go into
    ``Meta``. The hash key is ``id = NumberAttribute(hash_key=True)`` unless
    an attribute with ``hash_key=True`` is given.
    """

    def make(cls_name: str = "Item", *, create: bool = True, bases: Tuple[type, ...] = (), **options: Any) -> Any:
        attrs = {k: v for k, v in options.items() if isinstance(v, Attribute)}
        meta = {k: v for k, v in options.items() if k not in attrs}
        pinned = PINNING & set(meta)
        if not pinned:
            if own:
                raise ValueError(f"{cls_name} sets no autoinc_gapless, autoinc_block or autoinc_strategy, but "
                                 "the test (or its parameter) is marked modes() (it sets its own mode): set one, "
                                 "or name the modes the test runs in, e.g. @pytest.mark.modes('fast', 'gapless')")
            used.append(cls_name)
        if not any(a.is_hash_key for a in attrs.values()):
            if mode == "query" and not pinned:
                # one shared partition, numbered by the range key
                attrs = {"part": UnicodeAttribute(hash_key=True, default="p"),
                         "id": NumberAttribute(range_key=True), **attrs}
            else:
                attrs = {"id": NumberAttribute(hash_key=True), **attrs}
        elif mode == "query" and not pinned:
            raise ValueError(f"{cls_name} brings its own key: mark the test with the modes it runs in, "
                             "e.g. @pytest.mark.modes('fast', 'block', 'gapless')")
        defaults = MODE_OPTIONS[mode] if mode is not None and not pinned else {}
        meta_cls = type("Meta", (), {
            "table_name": backend.table_name(cls_name.lower()),
            **defaults,
            **backend.meta,
            **meta,
        })
        model = type(cls_name, (*bases, AutoIncrementMixin, Model), {"Meta": meta_cls, **attrs})
        if create:
            backend.counter(model=model)
            backend.create(model)
        return model

    own = mode is None or _sets_own_mode(request.node)
    used: List[str] = []
    yield make
    if not used and not own and _conftest_modes(request.node) > 1 and not _mode_reaches(request.node, "make_model"):
        pytest.fail("every model of this test sets its own mode, so its copies per mode are the same test: "
                    "mark it @pytest.mark.modes() to run it once", pytrace=False)


@pytest.fixture
def requests() -> Iterator[List[Tuple[str, str]]]:
    """Every DynamoDB request sent during the test, as (operation, table)."""
    sent: List[Tuple[str, str]] = []

    def record(_: Any, operation_name: str, table_name: str, **__: Any) -> None:
        sent.append((operation_name, table_name))

    with pre_dynamodb_send.connected_to(record):
        yield sent


@pytest.fixture
def api_key(backend: Backend) -> Any:
    """The article's item: an API key with request_count and active_period."""
    meta = type("Meta", (), {"table_name": backend.table_name("apikeys"), **backend.meta})
    model: Any = type("ApiKey", (Model,), {
        "Meta": meta,
        "key": UnicodeAttribute(hash_key=True),
        "request_count": NumberAttribute(null=True),
        "active_period": UnicodeAttribute(null=True),
    })
    backend.create(model)
    model(key="k1").save()
    return model


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, os.environ.get(name, "local"))
