"""Hypothesis profiles and per-example backends for the property tests.

Profiles: ``ci`` (the default: half the examples each test asks for on moto,
so that the suite stays quick), ``full`` (the examples each test asks for) and
``soak`` (20 times as many, longer runs, new examples each run); choose one with
``HYPOTHESIS_PROFILE=full pytest tests/test_properties.py`` (``pytest --soak``
chooses ``soak``). Each test states its budget on moto and on DynamoDB Local;
the profile scales both, never below one example, and ``ci`` keeps DynamoDB
Local's few examples whole.

Hypothesis runs many examples inside one test function, and pytest's
function-scoped fixtures would be shared by all of them. So the examples do
not use the ``backend`` fixture: each one enters a fresh :func:`worlds`
backend (a new ``mock_aws``, or uniquely named tables on the session's
DynamoDB Local) and creates its own tables.

Every example builds new model classes, and PynamoDB gives each class's
connection a new botocore session, whose first client loads the DynamoDB
service description again (most of an example's time on moto). Inside a
world, connections share one botocore session instead.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from typing import Any, Callable, ContextManager, Iterator, List, Type
from unittest import mock

import botocore.session  # type: ignore[import-untyped, unused-ignore]
import pynamodb.connection.base
import pytest
from hypothesis import HealthCheck, settings
from pynamodb.models import Model

from tests.conftest import Backend

PROFILES = {"ci": 0.5, "full": 1, "soak": 20}
"""Each profile's multiplier of the examples a test asks for on moto (DynamoDB Local's: at least 1)."""

for _name in PROFILES:
    settings.register_profile(
        _name,
        deadline=None,
        database=None,
        derandomize=_name != "soak",  # CI explores the same examples on every run; soak explores new ones
        print_blob=True,
        stateful_step_count=80 if _name == "soak" else 30,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in PROFILES:
    raise RuntimeError(f"HYPOTHESIS_PROFILE={PROFILE!r}: choose one of {sorted(PROFILES)}")
# Every test runs under the profile, a bare @given too: no example database on disk, no deadline.
settings.load_profile(PROFILE)


def budget(backend_name: str, *, moto: int, local: int) -> settings:
    """The settings of a property on ``backend_name``: ``moto`` or ``local`` examples, times the profile's scale."""
    scale = PROFILES[PROFILE] if backend_name == "moto" else max(1, PROFILES[PROFILE])
    examples = moto if backend_name == "moto" else local
    return settings(settings.get_profile(PROFILE), max_examples=max(1, round(examples * scale)))


World = Callable[[], ContextManager[Backend]]


class Tables(Backend):
    """A backend that drops the model tables it created when the example ends (DynamoDB Local)."""

    made: List[Type[Model]]

    def create(self, model: Type[Model]) -> None:
        if not model.exists():
            model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
            if model.Meta.table_name != "NextId":
                self.made.append(model)


def worlds(backend_name: str, request: pytest.FixtureRequest) -> World:
    """A factory of fresh backends for single examples, on moto or on the session's DynamoDB Local."""
    if backend_name == "moto":
        from moto import mock_aws  # before the session, so that its clients are mocked

        session = botocore.session.get_session()

        @contextlib.contextmanager
        def moto() -> Iterator[Backend]:
            with mock_aws(), shared(session):
                yield Backend("moto", {"region": "us-east-1"})

        return moto

    server: Any = request.getfixturevalue("dynamodb_local")
    meta = {
        "region": "us-east-1",
        "host": server.url,
        "aws_access_key_id": "local",
        "aws_secret_access_key": "local",
    }

    session = botocore.session.get_session()

    @contextlib.contextmanager
    def local() -> Iterator[Backend]:
        backend = Tables("local", dict(meta))
        backend.made = []
        with shared(session):
            try:
                yield backend
            finally:
                for model in backend.made:
                    model.delete_table()

    return local


def shared(session: Any) -> ContextManager[Any]:
    """PynamoDB connections made inside the block use ``session`` (and its loaded service description)."""
    return mock.patch.object(pynamodb.connection.base, "get_session", lambda: session)


def unique(stem: str) -> str:
    """A name no other example uses (counter keys share the NextId table on DynamoDB Local)."""
    return f"{stem}{uuid.uuid4().hex[:12]}"
