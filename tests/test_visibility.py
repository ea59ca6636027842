"""Visibility: the ``pynamodb_autoinc`` logger and the race_lost / contention_failed signals."""

from __future__ import annotations

import logging
from typing import Any, Dict, List

import pytest

from pynamodb_autoinc import contention_failed, race_lost
from pynamodb_autoinc.exceptions import ContentionError

pytestmark = pytest.mark.modes("gapless")


def test_a_lost_race_sends_race_lost(make_model, rival):
    """Each race a gapless save loses sends race_lost with the instance and the races lost so far."""
    User = make_model("User")
    heard: List[Dict[str, Any]] = []

    def count(sender: Any, **kwargs: Any) -> None:
        heard.append({"sender": sender, **kwargs})

    rival(User, times=2)
    user = User()
    with race_lost.connected_to(count, sender=User):
        user.save()
    assert [h["attempts"] for h in heard] == [1, 2]
    assert all(h["instance"] is user and h["sender"] is User and h["elapsed"] >= 0 for h in heard)


def test_giving_up_sends_contention_failed(make_model, rival):
    """A save that runs out of retries sends contention_failed once, then raises ContentionError."""
    User = make_model("User", autoinc_retries=1)
    heard: List[Dict[str, Any]] = []

    def count(sender: Any, **kwargs: Any) -> None:
        heard.append(kwargs)

    rival(User, times=5)
    user = User()
    with contention_failed.connected_to(count, sender=User), pytest.raises(ContentionError):
        user.save()
    assert len(heard) == 1
    assert heard[0]["instance"] is user and heard[0]["attempts"] == 2
    assert user.id is None


def test_a_failing_metrics_receiver_does_not_break_the_save(make_model, rival, caplog):
    """A race_lost receiver that raises is logged; the save still commits."""
    User = make_model("User")

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("metrics backend down")

    rival(User, times=1)
    user = User()
    with race_lost.connected_to(broken, sender=User), caplog.at_level(logging.ERROR, logger="pynamodb_autoinc"):
        user.save()
    assert user.id == 2
    assert "race_lost receiver of User failed" in caplog.text


def test_a_failing_contention_failed_receiver_leaves_the_contention_error(make_model, rival, caplog):
    """A contention_failed receiver that raises is logged; the save raises ContentionError, not its exception."""
    User = make_model("User", autoinc_retries=1)

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("metrics backend down")

    rival(User, times=5)
    user = User()
    listening = contention_failed.connected_to(broken, sender=User)
    with listening, caplog.at_level(logging.ERROR, logger="pynamodb_autoinc"), pytest.raises(ContentionError):
        user.save()
    assert user.id is None
    assert "contention_failed receiver of User failed" in caplog.text


def test_debug_logs_claims_and_races(make_model, rival, caplog):
    """At DEBUG the pynamodb_autoinc logger tells each claim and each lost race."""
    User = make_model("User")
    rival(User, times=2)
    with caplog.at_level(logging.DEBUG, logger="pynamodb_autoinc"):
        User().save()
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("pynamodb_autoinc")]
    assert any("claims id=1" in m for m in messages), messages
    assert [m for m in messages if "lost race" in m][:2] == [m for m in messages if "lost race" in m]
    assert any("lost race 2" in m for m in messages), messages


def test_debug_logs_queue_waits(make_model, monkeypatch, caplog):
    """At DEBUG a save waiting in the gapless queue behind another writer's ticket logs its waits."""
    from pynamodb_autoinc import _budget, _contention
    from tests.simulation.scheduler import VirtualClock

    monkeypatch.setattr(_budget, "clock", VirtualClock())
    User = make_model("User")
    opts = User.autoinc_options()
    opts.counter.setval(opts.key, 5)
    # a dead writer's ticket
    User._get_connection().connection.dispatch("UpdateItem", _contention.ticket_kwargs(opts.counter, opts.key))
    with caplog.at_level(logging.DEBUG, logger="pynamodb_autoinc"):
        User().save()
    assert any(" waits " in r.getMessage() and "ticket: 2" in r.getMessage() for r in caplog.records)


@pytest.mark.modes()
def test_a_slow_save_is_a_warning(make_model, monkeypatch, rival, caplog):
    """A save that lost a race and took longer than SLOW_SAVE after it to commit is logged as a WARNING naming
    the item (the time counts from the first lost race: a save that loses none is not timed)."""
    from pynamodb_autoinc import _engine

    monkeypatch.setattr(_engine, "SLOW_SAVE", 0.0)
    User = make_model("User", autoinc_gapless=True)
    rival(User, times=1)
    with caplog.at_level(logging.WARNING, logger="pynamodb_autoinc"):
        User().save()
    assert any(r.levelno == logging.WARNING and "User with id=2 took" in r.getMessage() for r in caplog.records)


def test_a_quick_save_logs_no_warning(make_model, caplog):
    """A save that commits at once logs nothing at WARNING."""
    User = make_model("User")
    with caplog.at_level(logging.WARNING, logger="pynamodb_autoinc"):
        User().save()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
