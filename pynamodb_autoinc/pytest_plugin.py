"""pytest fixtures for projects that use pynamodb-autoinc (registered through the ``pytest11`` entry point).
Request your moto or DynamoDB Local fixture first (one using ``pynamodb_autoinc.testing.dynamodb()``), so that the
table is created there: anywhere the test did not name, the fixtures refuse to write (``ConfigurationError``). After
the test they delete the counters it created and no other (``testing.leave_counters_as_found``), so a DynamoDB
Local shared with an application or another pytest-xdist worker keeps their counters."""

from typing import Iterator, Type

import pytest

from . import _endpoint
from .counter import NextId
from .testing import create_counter_table, leave_counters_as_found


@pytest.fixture
def autoinc_counter_table() -> Iterator[Type[NextId]]:
    """The NextId table, created if missing (and left after the test, which cannot know who else uses it); after
    the test, the counters it created are deleted (so its own start at 1 again) and every other counter is kept."""
    name = "autoinc_counter_table"
    _endpoint.check_test_endpoint(NextId, name, fixture=name)
    counter = create_counter_table()
    with leave_counters_as_found(counter=counter, fixture=name):
        yield counter


@pytest.fixture
def autoinc_fresh_counters() -> Iterator[None]:
    """After the test, delete the NextId counters it created (if the table exists), keep every other counter, and
    forget this process's memory of counters (``testing.reset_state()``)."""
    name = "autoinc_fresh_counters"
    with leave_counters_as_found(fixture=name):
        yield
