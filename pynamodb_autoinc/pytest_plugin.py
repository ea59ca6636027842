"""pytest fixtures for projects that use pynamodb-autoinc (registered through the ``pytest11`` entry point):
``autoinc_counter_table`` and ``autoinc_fresh_counters``. Request your moto or DynamoDB Local fixture first, so
that the table is created there.
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Type

import pytest

from .counter import NextId
from .exceptions import CounterTableMissingError
from .testing import create_counter_table, reset_counters


@pytest.fixture
def autoinc_counter_table() -> Iterator[Type[NextId]]:
    """The NextId table, created on the default endpoint if missing; its counters are deleted after the test, so
    the next test starts at 1."""
    counter = create_counter_table()
    yield counter
    reset_counters(counter=counter)


@pytest.fixture
def autoinc_fresh_counters() -> Iterator[None]:
    """Reset every NextId counter and this process's blocks after the test (without a NextId table, only this
    process's memory of counters)."""
    yield
    with contextlib.suppress(CounterTableMissingError):
        reset_counters()
