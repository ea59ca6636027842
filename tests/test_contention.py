"""Gapless mode under a lost counter race, made to happen deterministically."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from pynamodb.signals import pre_dynamodb_send

from pynamodb_autoinc import ContentionError


@pytest.fixture
def rival(make_model):
    """Before each transaction, another writer advances the counter (``rival.times`` times)."""

    class Rival:
        times = 0
        busy = False

    def make(model) -> Callable[..., None]:
        opts = model.autoinc_options()

        def race(_: Any, operation_name: str, **__: Any) -> None:
            if operation_name == "TransactWriteItems" and Rival.times and not Rival.busy:
                Rival.busy = True
                Rival.times -= 1
                opts.counter.nextval(opts.key)
                Rival.busy = False

        return race

    Rival.make = staticmethod(make)  # type: ignore[attr-defined]
    return Rival


def test_lost_race_is_retried(make_model, rival):
    """When another writer moves the counter first, the save re-reads it and takes the next value."""
    User = make_model("User", autoinc_gapless=True, autoinc_backoff=0)
    rival.times = 3
    with pre_dynamodb_send.connected_to(rival.make(User)):
        user = User()
        user.save()
    assert user.id == 4
    assert [u.id for u in User.scan()] == [4]


def test_retries_run_out(make_model, rival):
    """After autoinc_retries lost races the save raises ContentionError and writes nothing."""
    User = make_model("User", autoinc_gapless=True, autoinc_retries=2, autoinc_backoff=0)
    rival.times = 100
    with pre_dynamodb_send.connected_to(rival.make(User)):
        user = User()
        with pytest.raises(ContentionError, match="changed under concurrent writers 3 times in a row"):
            user.save()
    assert user.id is None
    assert list(User.scan()) == []
    assert rival.times == 97


def test_backoff_is_bounded():
    """Full-jitter delays stay within [0, min(1s, base * 2**(attempt-1))]."""
    from pynamodb_autoinc.strategies import backoff_delay

    delays = [backoff_delay(0.01, attempt) for attempt in range(1, 12) for _ in range(50)]
    assert all(0 <= d <= 1.0 for d in delays)
    assert max(backoff_delay(0.01, 1) for _ in range(50)) <= 0.01
