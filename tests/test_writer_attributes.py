"""The per-writer attributes a count keeps on its counter item (docs/periods.md: "the item holds one small
attribute per writer active in the last hour"): each writer (a thread) marks its updates with an attribute of its
own, and those of writers idle for an hour are removed by later counts."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any, List

import pytest

from pynamodb_autoinc.counter import WRITER_PREFIX
from pynamodb_autoinc.periods import clock

pytestmark = pytest.mark.backends("moto")

START = datetime(2026, 3, 1, 12, 0)


def writers(counter: Any, key: str) -> List[str]:
    """The writer attributes stored on counter item ``key``."""
    item = counter._get_connection().get_item(key, consistent_read=True).get("Item", {})
    return sorted(name for name in item if name.startswith(WRITER_PREFIX))


def count_in_new_threads(counter: Any, threads: int) -> None:
    """``threads`` counts, each in a thread of its own (a pool that recycles its threads)."""
    for _ in range(threads):
        worker = threading.Thread(target=counter.increment, args=("hits",), kwargs={"period": None})
        worker.start()
        worker.join()


def test_each_thread_counts_with_an_attribute_of_its_own(backend):
    """Every thread that counts is a writer of its own: ten threads leave ten attributes, the count exact."""
    counter = backend.counter()
    with clock.frozen(START):
        count_in_new_threads(counter, 10)
    assert len(writers(counter, "hits")) == 10
    assert counter.current("hits", period=None) == 10


def test_one_long_lived_writer_removes_the_attributes_of_writers_idle_for_an_hour(backend):
    """A writer that goes on counting removes the attributes of writers idle for more than an hour."""
    counter = backend.counter()
    with clock.frozen(START):
        count_in_new_threads(counter, 5)
    with clock.frozen(START + timedelta(hours=2)):
        for _ in range(2):  # its first count reads the whole item, its second removes the idle writers
            counter.increment("hits", period=None)
    assert len(writers(counter, "hits")) == 1
    assert counter.current("hits", period=None) == 7


def test_threads_that_count_once_leave_one_attribute_per_writer_active_in_the_last_hour(backend):
    """A pool that recycles its threads, each counting once (a thread per request): two hours after 30 such
    counts, 30 more leave the 30 attributes of the writers active in the last hour, not 60."""
    counter = backend.counter()
    with clock.frozen(START):
        count_in_new_threads(counter, 30)
    with clock.frozen(START + timedelta(hours=2)):
        count_in_new_threads(counter, 30)
    assert counter.current("hits", period=None) == 60
    assert len(writers(counter, "hits")) <= 30
