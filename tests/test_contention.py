"""Gapless mode under a lost counter race, made to happen deterministically by the ``rival`` writer."""

from __future__ import annotations

import pytest

from pynamodb_autoinc.exceptions import ContentionError


@pytest.mark.modes()  # its models set their own mode
def test_lost_race_is_retried(make_model, rival):
    """When another writer moves the counter first, the save re-reads it and takes the next value."""
    User = make_model("User", autoinc_gapless=True, autoinc_backoff=0)
    rival(User, times=3)
    user = User()
    user.save()
    assert user.id == 4
    assert [u.id for u in User.scan()] == [4]


@pytest.mark.modes()  # its models set their own mode
def test_retries_run_out(make_model, rival):
    """After autoinc_retries lost races the save raises ContentionError and writes nothing."""
    User = make_model("User", autoinc_gapless=True, autoinc_retries=2, autoinc_backoff=0)
    rival(User, times=100)
    user = User()
    with pytest.raises(ContentionError, match="changed under concurrent writers 3 times in a row"):
        user.save()
    assert user.id is None
    assert list(User.scan()) == []
    assert rival.times == 97


def test_backoff_is_bounded():
    """Full-jitter delays stay within [0, min(1s, base * 2**(attempt-1))]."""
    from pynamodb_autoinc._budget import backoff_delay

    delays = [backoff_delay(0.01, attempt) for attempt in range(1, 12) for _ in range(50)]
    assert all(0 <= d <= 1.0 for d in delays)
    assert max(backoff_delay(0.01, 1) for _ in range(50)) <= 0.01


@pytest.mark.parametrize("expected", [None, 0, 41, -7, 10**37])
@pytest.mark.parametrize("ticket", [None, 1, 12])
@pytest.mark.parametrize("standing", [None, "NextStanding_ab12"])
@pytest.mark.parametrize("flags", [(False, False, False), (True, False, False), (True, True, False),
                                   (True, False, True), (True, True, True)])
def test_swap_request_from_a_template_is_the_one_pynamodb_builds(expected, ticket, standing, flags):
    """A counter swap is built once per shape and filled in with each call's numbers: the request is the
    one PynamoDB builds for those numbers, whatever the queue arguments, and a filled-in request is a copy
    that a caller may change without changing the next one."""
    from pynamodb_autoinc import NextId
    from pynamodb_autoinc._engine import build_swap_kwargs, swap_kwargs
    from pynamodb_autoinc.sequence import SequenceOptions

    class Counter(NextId):
        class Meta:
            table_name = "template-check"
            region = "us-east-1"

    queue, by_standing, requeue = flags
    if by_standing and (standing is None or ticket is not None):
        by_standing = False
    sequence = SequenceOptions.of(start=1, step=2)
    value = (expected or 0) + 2
    args = dict(queue=queue, ticket=ticket, standing=standing, by_standing=by_standing, requeue=requeue,
                sequence=sequence)
    first = swap_kwargs(Counter, "user", expected, value, **args)
    assert first == build_swap_kwargs(Counter, "user", expected, value, **args)
    first["ExpressionAttributeValues"].clear()
    first["Key"]["NextKey"]["S"] = "changed"
    again = swap_kwargs(Counter, "user", expected, value + 2, **args)
    assert again == build_swap_kwargs(Counter, "user", expected, value + 2, **args)
