"""Library bugs the simulation found, now fixed: each kept as a regression test, by its minimal schedule and by
the random seed that first hit it.

lost-connection-attribute-error
    When every attempt of a request ended without an answer (botocore's
    ``ConnectionClosedError``, whose ``response`` is ``None``), ``save()``
    raised ``AttributeError: 'NoneType' object has no attribute 'get'``: the
    library and PynamoDB's ``cause_response_code`` read the error code off a
    cause that has no response. Fixed by ``exceptions.error_code``.
query-error-unwrapped
    ``strategies.query_last`` let a failed ``Query`` escape as PynamoDB's
    ``QueryError``. It now raises ``CounterError``.
lost-answer-reported-as-not-written
    A write applied by the server whose answer was lost, and whose resends
    were then throttled past botocore's retries, raised ``ItemWriteError``
    saying "nothing was written" and reset the instance's ID, although the item
    was stored. A failed write that was resent or never answered is now
    settled by one consistent read: stored as written means success, and a
    failed read raises ``WriteOutcomeUnknownError``, keeping the ID.

Every run is checked strictly. Schedules are one client, one save;
``MAX_RETRY_ATTEMPTS`` is 2, so three failed attempts exhaust botocore's
retries.
"""

from __future__ import annotations

from typing import Callable, List, Tuple

import pytest

from .explore import Bounds, Scripted, run_once, seeded_run
from .scheduler import DROP, NONE, THROTTLE
from .world import World

MakeWorld = Callable[..., World]


LOST_CONNECTION_SIGN = "raised an undocumented error: AttributeError"
QUERY_ERROR_SIGN = "raised an undocumented error: QueryError"
LOST_ANSWER_SIGN = "but its item is stored"


Script = List[Tuple[int, str]]


def strict_run(world: World, script: Script) -> List[str]:
    """The problems of one client's one save following ``script``, known bugs counted."""
    run = run_once(world, Bounds(clients=1, saves=1, faults=len(script)), Scripted(script), strict=True)
    return run.problems


def assert_fixed(problems: List[str], sign: str) -> None:
    """Pass if nothing broke; say whether what broke is the old bug (``sign``) or something else."""
    assert problems == [], ("the old bug is back: " if all(sign in p for p in problems) else "") + "; ".join(problems)


def three(fault: str) -> Script:
    return [(0, fault)] * 3


@pytest.mark.parametrize(("mode", "script"), [
    ("fast", three(DROP)),
    ("fast", [(0, NONE)] + three(DROP)),
    ("gapless", three(DROP)),
    ("gapless", [(0, NONE)] + three(DROP)),
    ("block", three(DROP)),
    ("query", [(0, NONE)] + three(DROP)),
], ids=["fast-UpdateItem", "fast-PutItem", "gapless-GetItem", "gapless-TransactWriteItems", "block-UpdateItem",
        "query-PutItem"])
def test_lost_connection_raises_a_library_error(make_world: MakeWorld, mode: str, script: Script) -> None:
    """A request that never gets an answer makes save() raise one of the library's errors."""
    assert_fixed(strict_run(make_world(mode), script), LOST_CONNECTION_SIGN)


@pytest.mark.parametrize("fault", [THROTTLE, DROP])
def test_failed_query_raises_a_library_error(make_world: MakeWorld, fault: str) -> None:
    """Query strategy: a read that fails past the retries raises one of the library's errors."""
    assert_fixed(strict_run(make_world("query"), three(fault)), QUERY_ERROR_SIGN)


@pytest.mark.parametrize("mode", ["fast", "gapless", "query"])
def test_applied_write_is_not_reported_as_unwritten(make_world: MakeWorld, mode: str) -> None:
    """A write applied before its answer was lost is not reported as not written when the resends fail."""
    assert_fixed(strict_run(make_world(mode), [(0, NONE), (0, DROP), (0, THROTTLE), (0, THROTTLE)]), LOST_ANSWER_SIGN)


@pytest.mark.parametrize(("mode", "seed", "sign"), [
    pytest.param("fast", 47, LOST_CONNECTION_SIGN, id="fast-seed47"),
    pytest.param("fast", 106, LOST_CONNECTION_SIGN, id="fast-seed106"),
    pytest.param("gapless", 863, LOST_CONNECTION_SIGN, id="gapless-seed863"),
    pytest.param("query", 1538, LOST_CONNECTION_SIGN, id="query-seed1538"),
    pytest.param("query", 1589, QUERY_ERROR_SIGN, id="query-seed1589"),
    pytest.param("fast", 125, LOST_ANSWER_SIGN, id="fast-seed125"),
    pytest.param("fast", 212, LOST_ANSWER_SIGN, id="fast-seed212"),
    pytest.param("query", 1960, LOST_ANSWER_SIGN, id="query-seed1960"),
])
def test_seed_that_found_the_bug(make_world: MakeWorld, mode: str, seed: int, sign: str) -> None:
    """The random seed that first hit each bug breaks no invariant (once the bug is fixed)."""
    assert_fixed(seeded_run(make_world(mode), seed, strict=True).problems, sign)
