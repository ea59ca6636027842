"""Library bugs the simulation found on the write paths other than ``save()``: each by its minimal schedule and
by the first random seed that hit it. They fail until the library is fixed, then stay as regression tests.

transaction-abandoned-keeps-id
    ``with TransactWrite(...) as tx: tx.save(new); raise ...``: the user's
    exception leaves the block, nothing is sent, and the instance keeps the ID
    it got in ``tx.save()`` (fast: a spent value; gapless: the reserved one,
    which the next save hands out again).
transaction-failed-allocation-keeps-id
    ``tx.save(a); tx.save(b)`` where ``b``'s allocation fails (the counter
    request gets no answer past botocore's retries): ``CounterError`` leaves
    the block, nothing is sent, and ``a`` keeps its ID.
save-all-foreign-error-keeps-ids
    ``save_all()`` with an instance that cannot be serialized (a required
    attribute is None): PynamoDB's ``ValueError`` escapes after the IDs were
    assigned, and every new instance of the batch keeps its ID, though
    nothing was written.
block-passes-max-on-new-counter
    ``autoinc_block = 3`` and ``autoinc_max = 2``: the first reservation on a
    counter that does not exist yet sets it to 3 (``if_not_exists`` is not
    checked against the max), and the block's third value is handed out.
lost-answer-reported-as-exhausted
    Blocks of 3 under ``autoinc_max = 5``: once a block no longer fits, the
    one value left is reserved alone, from inside the ``except
    SequenceExhaustedError`` that refused the block. If that request's last
    attempt gets no answer, ``exceptions.error_code`` finds no code on it
    and follows ``__context__`` to the refused block's
    ``ConditionalCheckFailedException``: the save raises
    ``SequenceExhaustedError`` ("4 + 1 would pass 5; nothing was spent")
    while the counter, at 4, has room, and the request did spend a value.

Every run is checked strictly; the schedules are one client, no fault unless
the script says so. ``MAX_RETRY_ATTEMPTS`` is 2, so three lost answers exhaust
botocore's retries.
"""

from __future__ import annotations

from typing import Callable, List, Tuple

import pytest

from .explore import Bounds, Scripted, run_once, seeded_run
from .scheduler import DROP, NONE, THROTTLE
from .world import Mode, World

MakeWorld = Callable[..., World]
Script = List[Tuple[int, str]]

ABANDONED_SIGN = "raised UserAbort but left ID"
FAILED_ALLOCATION_SIGN = "raised CounterError but left ID"
FOREIGN_ERROR_SIGN = "raised AttributeNullError but left ID"
PAST_MAX_SIGN = "past autoinc_max"
FALSE_EXHAUSTION_SIGN = "raised SequenceExhaustedError, but the counter ended at"


def strict_run(world: World, saves: int, script: Script) -> List[str]:
    """The problems of one client's ``saves`` operations following ``script``, known bugs counted."""
    run = run_once(world, Bounds(clients=1, saves=saves, faults=len(script)), Scripted(script), strict=True)
    return run.problems


def assert_fixed(problems: List[str], sign: str) -> None:
    """Pass if nothing broke; say whether what broke is the bug (``sign``) or something else."""
    assert problems == [], ("the bug: " if all(sign in p for p in problems) else "") + "; ".join(problems)


@pytest.mark.parametrize("mode", ["tx-fast", "tx-gapless"])
def test_abandoned_transaction_leaves_no_id(make_world: MakeWorld, mode: str) -> None:
    """A transaction committed, one cancelled, one left by the user's exception: none keeps an unstored ID."""
    assert_fixed(strict_run(make_world(mode), 3, []), ABANDONED_SIGN)


@pytest.mark.parametrize("mode", ["tx-fast", "tx-gapless"])
def test_failed_allocation_in_a_transaction_leaves_no_id(make_world: MakeWorld, mode: str) -> None:
    """The second new instance's counter request never gets an answer: the first one gives its ID back."""
    assert_fixed(strict_run(make_world(mode), 1, [(0, NONE)] + [(0, DROP)] * 3), FAILED_ALLOCATION_SIGN)


@pytest.mark.parametrize("mode", ["bulk-fast", "bulk-gapless"])
def test_failed_batch_leaves_no_id(make_world: MakeWorld, mode: str) -> None:
    """A batch, then a batch with an instance that cannot be stored: the failed batch keeps no ID."""
    assert_fixed(strict_run(make_world(mode), 2, []), FOREIGN_ERROR_SIGN)


def test_block_never_passes_the_max(make_world: MakeWorld) -> None:
    """Blocks of 3 under autoinc_max = 2, on a new counter: 1 and 2 are handed out, then SequenceExhaustedError."""
    assert_fixed(strict_run(make_world("block-max-2"), 3, []), PAST_MAX_SIGN)


def test_lost_answer_is_not_reported_as_exhaustion(make_world: MakeWorld) -> None:
    """Client 0 takes 1..3; client 1's block is refused, and its one-value request is throttled twice, then its
    answer is lost: the save fails, but not with SequenceExhaustedError while 5 is still free."""
    world = make_world(Mode("block-max-5", {"autoinc_block": 3, "autoinc_max": 5}))
    script = [(0, NONE), (0, NONE), (1, NONE), (1, NONE), (1, THROTTLE), (1, THROTTLE), (1, DROP)]
    run = run_once(world, Bounds(clients=2, saves=1, faults=3), Scripted(script), strict=True)
    assert_fixed(run.problems, FALSE_EXHAUSTION_SIGN)


@pytest.mark.parametrize(("mode", "seed", "sign"), [
    pytest.param("tx-fast", 2001, ABANDONED_SIGN, id="tx-fast-seed2001"),
    pytest.param("tx-gapless", 2040, ABANDONED_SIGN, id="tx-gapless-seed2040"),
    pytest.param("bulk-fast", 2080, FOREIGN_ERROR_SIGN, id="bulk-fast-seed2080"),
    pytest.param("bulk-gapless", 2120, FOREIGN_ERROR_SIGN, id="bulk-gapless-seed2120"),
    pytest.param("block-max-2", 2200, PAST_MAX_SIGN, id="block-max-2-seed2200"),
])
def test_seed_that_found_the_bug(make_world: MakeWorld, mode: str, seed: int, sign: str) -> None:
    """The random seed that first hit each bug breaks no invariant (once the bug is fixed)."""
    assert_fixed(seeded_run(make_world(mode), seed, strict=True).problems, sign)
