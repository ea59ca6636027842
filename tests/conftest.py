"""Fixtures: a ``backend`` (moto in-process, DynamoDB Local) and a ``mode`` (fast, block, gapless, query)."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Type

import pytest
from pynamodb.attributes import Attribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model
from pynamodb.signals import pre_dynamodb_send

import tests.fake_aws  # noqa: F401  (dummy AWS settings)
from pynamodb_autoinc import AutoIncrementMixin, NextId
from pynamodb_autoinc.counter import bind_counter

BACKENDS = ("moto", "local")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", action="append", choices=BACKENDS,
                     help="run the behavioural suite on this backend only (repeatable; default: all)")
    parser.addoption("--soak", action="store_true", help="run the concurrency tests with many more allocations")


#: The ways a model can number its items; ``make_model`` builds a model in each.
MODES = ("fast", "block", "gapless", "query")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend_name" in metafunc.fixturenames:
        chosen = metafunc.config.getoption("backend") or list(BACKENDS)
        metafunc.parametrize("backend_name", chosen)
    if "mode" in metafunc.fixturenames and not _parametrizes(metafunc, "mode"):
        marker = metafunc.definition.get_closest_marker("modes")
        metafunc.parametrize("mode", marker.args if marker else MODES)


def _parametrizes(metafunc: pytest.Metafunc, name: str) -> bool:
    """Whether the test's own @pytest.mark.parametrize sets ``name``."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if name in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return True
    return False


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
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

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
    """Each test runs on moto's in-process ``mock_aws`` and on DynamoDB Local."""
    if backend_name == "moto":
        from moto import mock_aws

        with mock_aws():
            yield Backend("moto", {"region": "us-east-1"})
    else:
        local = request.getfixturevalue("local")
        # The server lives for the session: start each test with empty counters.
        counter = local.counter()
        with counter.batch_write() as batch:
            for item in counter.scan(consistent_read=True, attributes_to_get=["NextKey"]):
                batch.delete(item)
        yield local


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


@pytest.fixture(autouse=True)
def _fresh_process_state() -> Iterator[None]:
    """Each test starts with no reserved blocks, no remembered counter values, new increment() writers, and
    no table described yet (its first claim describes the model's table and the counter table)."""
    from pynamodb_autoinc import _contention, counter, regions, strategies

    regions.reset()
    strategies._state.reset()
    _contention._process.__init__()  # type: ignore[misc]
    counter._forget_writers()
    yield
    regions.reset()
    strategies._state.reset()
    _contention._process.__init__()  # type: ignore[misc]
    counter._forget_writers()


ModelFactory = Callable[..., Any]


#: The Meta options of each mode (a test that sets one of them itself keeps its own).
MODE_OPTIONS: Dict[str, Dict[str, Any]] = {
    "fast": {"autoinc_gapless": False},
    "block": {"autoinc_block": 3},
    "gapless": {"autoinc_gapless": True},
    "query": {"autoinc_strategy": "query", "autoinc_attribute": "id"},
}


@pytest.fixture
def make_model(backend: Backend, mode: str) -> ModelFactory:
    """Build an auto-increment model class on ``backend`` in ``mode``, with its tables.

    ``make_model("User", name=UnicodeAttribute(null=True), autoinc_key="user")``:
    keyword arguments that are attributes become attributes, the rest go into
    ``Meta``. The hash key is ``id = NumberAttribute(hash_key=True)`` unless
    an attribute with ``hash_key=True`` is given.
    """

    def make(cls_name: str = "Item", *, create: bool = True, bases: Tuple[type, ...] = (), **options: Any) -> Any:
        attrs = {k: v for k, v in options.items() if isinstance(v, Attribute)}
        meta = {k: v for k, v in options.items() if k not in attrs}
        pinned = {"autoinc_gapless", "autoinc_block", "autoinc_strategy"} & set(meta)
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
        defaults = {} if pinned else MODE_OPTIONS[mode]
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

    return make


@pytest.fixture
def requests() -> Iterator[List[Tuple[str, str]]]:
    """Every DynamoDB request sent during the test, as (operation, table)."""
    sent: List[Tuple[str, str]] = []

    def record(_: Any, operation_name: str, table_name: str, **__: Any) -> None:
        sent.append((operation_name, table_name))

    with pre_dynamodb_send.connected_to(record):
        yield sent
