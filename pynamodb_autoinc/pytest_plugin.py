"""pytest fixtures for projects that use pynamodb-autoinc (registered through the ``pytest11`` entry point).

``autoinc_counter_table``
    creates the ``NextId`` table on the default endpoint (inside your own
    ``mock_aws()`` or against DynamoDB Local) and yields its model; at the end
    of the test it deletes the counters, so the next test starts at 1.
``autoinc_fresh_counters``
    only resets the counters and this process's reserved blocks after the test
    (a test that made no counter table leaves nothing to reset there).

Request your moto or DynamoDB Local fixture first, so the table is created there.
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
    """The NextId table, created if missing; its counters are deleted after the test."""
    counter = create_counter_table()
    yield counter
    reset_counters(counter=counter)


@pytest.fixture
def autoinc_fresh_counters() -> Iterator[None]:
    """Reset every NextId counter (and this process's blocks) after the test; without a NextId table, only
    this process's memory of counters is reset."""
    yield
    with contextlib.suppress(CounterTableMissingError):
        reset_counters()
