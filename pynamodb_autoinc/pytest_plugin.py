"""pytest fixtures for projects that use pynamodb-autoinc (registered through the ``pytest11`` entry point).
Request your moto or DynamoDB Local fixture first (one using ``pynamodb_autoinc.testing.dynamodb()``), so that the
table is created there: anywhere the test did not name, the fixtures refuse to write (``ConfigurationError``)."""

import contextlib
from typing import Iterator, Type

import pytest

from . import _endpoint
from .counter import NextId
from .exceptions import CounterTableMissingError
from .testing import create_counter_table, reset_counters


@pytest.fixture
def autoinc_counter_table() -> Iterator[Type[NextId]]:
    """The NextId table, created if missing; its counters are deleted after the test (the next one starts at 1)."""
    _endpoint.check_test_endpoint(NextId, "autoinc_counter_table", fixture="autoinc_counter_table")
    counter = create_counter_table()
    yield counter
    reset_counters(counter=counter)


@pytest.fixture
def autoinc_fresh_counters() -> Iterator[None]:
    """After the test, reset every NextId counter (if the table exists) and this process's memory of counters."""
    _endpoint.check_test_endpoint(NextId, "autoinc_fresh_counters", fixture="autoinc_fresh_counters")
    yield
    with contextlib.suppress(CounterTableMissingError):
        reset_counters()
