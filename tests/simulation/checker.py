"""What must hold after every simulated run, whatever the schedule and the faults.

An operation (a save, a user's ``TransactWrite``, a ``save_all()``) writes
one or more items; each item's instance is *new* (no ID: the library assigns
one) or carries an explicit ID.

- every error an operation raised is one of the library's documented errors
  (a subclass of :class:`pynamodb_autoinc.exceptions.AutoIncrementError`), or the
  user's own error that the operation expects (:class:`Expect`
  ``foreign``: the exception raised inside a ``with TransactWrite`` block);
- an operation fails only if a request of its own met a fault, or with an
  error it is excused (``ContentionError``; ``SequenceExhaustedError`` under
  ``autoinc_max``; a gapless user transaction that lost the counter race);
  an operation that cannot succeed (a cancelled transaction, an abandoned
  one, a batch with an item that cannot be stored) never does, and with no
  fault it raises what it must;
- no ID was handed to two items;
- every item reported saved is stored under the ID its instance holds, with
  its own owner tag: nothing was overwritten and nothing is missing;
- no new instance ends a run holding an ID whose item is not stored: a failed
  or abandoned write leaves it at ``None``, except ``WriteOutcomeUnknownError``
  (or a ``BulkSaveError`` raised from one), which keeps it: the ID its item is
  stored under, if it is stored;
- every stored item belongs to an operation that reported it saved, or that
  crashed, or that failed after a request of it was applied with its answer
  lost (the only case where a client cannot know), and then the error does
  not claim that nothing was written; an operation that cannot succeed
  stores nothing; no item is stored twice;
- what one transaction writes (the new items of a user's ``TransactWrite``
  and its unrelated put; the new items of one ``save_all()`` transaction) is
  stored whole or not at all;
- the counter is never below the largest stored ID (unless it cycles);
- with ``autoinc_max``, no stored ID and no counter value passes it, and
  ``SequenceExhaustedError`` is raised only when the counter has no room
  left;
- in gapless modes the stored IDs are exactly 1..N and the counter holds N,
  whatever crashed (explicit IDs aside).

Problems that are known library bugs (:data:`KNOWN_BUGS`) are reported apart,
so that exploration goes on looking for new ones; ``strict=True`` counts them
as problems like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from pynamodb_autoinc.exceptions import AutoIncrementError, SequenceExhaustedError, WriteOutcomeUnknownError

from .scheduler import DROP, UNKNOWN, Client, Outcome, Report
from .world import Mode, Snapshot

#: What an error message may say that is false when the save's item was stored after all.
CLAIMS_NOTHING_STORED = ("nothing was written", "the value is spent (a gap)")


@dataclass(frozen=True)
class Case:
    """One save's outcome and the faults its own requests met, with the problem found about it."""

    mode: Mode
    outcome: Outcome
    faults: List[str]
    problem: str


@dataclass(frozen=True)
class KnownBug:
    """A library bug this simulation found, recognised so that exploration can go on looking for others.

    Each gets a strict ``xfail`` test that shows it; when the library is fixed
    the test passes (fails as XPASS), the mark and the entry go, and the test
    stays as a regression test (``test_save_replays.py``).
    """

    name: str
    what: str
    matches: Callable[[Case], bool]


#: Library bugs recognised while a fix is pending. Empty: the three this simulation found
#: (see test_save_replays.py) are fixed, so any recurrence now fails every run.
KNOWN_BUGS: Tuple[KnownBug, ...] = ()


@dataclass
class Verdict:
    """The invariants a run broke: ``problems`` are new, ``known`` names the known bugs met."""

    problems: List[str] = field(default_factory=list)
    known: List[str] = field(default_factory=list)


def outcome_unknown(error: Optional[BaseException]) -> bool:
    """Whether ``error`` says the write's outcome is unknown: a ``WriteOutcomeUnknownError``, or raised from one."""
    seen: Set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, WriteOutcomeUnknownError):
            return True
        seen.add(id(error))
        error = error.__cause__
    return False


def _names(types: Sequence[type]) -> str:
    return " or ".join(t.__name__ for t in types)


def check(mode: Mode, clients: Sequence[Client], snapshot: Snapshot, strict: bool = False) -> Verdict:
    """The invariants ``snapshot`` and the clients' reports break; ``strict``: known bugs count as new."""
    verdict = Verdict()
    reports: Dict[str, Report] = {}
    outcomes: Dict[str, Outcome] = {}
    faults: Dict[str, List[str]] = {}
    for client in clients:
        for report in client.reports:
            reports[report.tag] = report
            faults[report.tag] = client.faults.get(report.save, [])
            for outcome in report.items:
                outcomes[outcome.tag] = outcome
                faults[outcome.tag] = faults[report.tag]

    def report_problem(problem: str, tag: Optional[str] = None) -> None:
        if tag is not None and not strict:
            outcome = outcomes.get(tag) or reports[tag].items[0]
            case = Case(mode, outcome, faults[tag], problem)
            bug = next((b for b in KNOWN_BUGS if b.matches(case)), None)
            if bug is not None:
                verdict.known.append(bug.name)
                return
        if problem not in verdict.problems:
            verdict.problems.append(problem)

    # -- how each operation ended --------------------------------------------------
    for tag, op in reports.items():
        expect, error = op.expect, op.error
        label = tag if op.kind == "save" else f"{tag} ({op.kind})"
        if op.status == "ok" and expect.must_fail:
            report_problem(f"{label} succeeded, but it can only fail (with {_names(expect.must_fail)})", tag)
        if op.status != "error":
            continue
        if not isinstance(error, AutoIncrementError) and not isinstance(error, expect.foreign):
            report_problem(f"{label} raised an undocumented error: {type(error).__name__}: {error}", tag)
        elif not faults[tag]:
            if expect.must_fail and not isinstance(error, expect.must_fail + expect.excused):
                report_problem(f"{label} raised {type(error).__name__} ({error}) with no fault, not "
                               f"{_names(expect.must_fail)}", tag)
            elif not expect.must_fail and not isinstance(error, expect.excused):
                report_problem(f"{label} raised {type(error).__name__} ({error}), but no request of it met a fault",
                               tag)

    # -- the ID each instance holds, and where it is stored ----------------------------
    returned: Dict[int, str] = {}
    for tag, outcome in outcomes.items():
        kept, error = outcome.value, outcome.error
        if outcome.status == "error" and outcome.new and kept is not UNKNOWN:
            if isinstance(error, WriteOutcomeUnknownError):
                if kept is None:
                    report_problem(f"{tag} raised WriteOutcomeUnknownError but dropped the instance's ID", tag)
            elif kept is not None and not outcome_unknown(error):
                report_problem(f"{tag} raised {type(error).__name__} but left ID {kept!r} on the instance "
                               "(a failed or abandoned write leaves it at None)", tag)
        if outcome.status != "ok":
            continue
        if not isinstance(kept, int) or isinstance(kept, bool):
            report_problem(f"{tag} returned {kept!r}, not an integer ID", tag)
            continue
        if kept in returned:
            report_problem(f"ID {kept} was handed to two saves: {returned[kept]} and {tag}", tag)
        returned[kept] = tag
        stored = snapshot.items.get(kept)
        if stored is None:
            report_problem(f"{tag} returned ID {kept}, but no item {kept} is stored", tag)
        elif stored != tag:
            report_problem(f"{tag} returned ID {kept}, but item {kept} is owned by {stored} "
                           "(overwritten, or written by another save)", tag)

    # -- every stored item (and unrelated item) is accounted for --------------------
    stored_by: Dict[str, List[int]] = {}
    for key, owner in sorted(snapshot.items.items()):
        stored_by.setdefault(owner, []).append(key)
    for owner, keys in stored_by.items():
        saved = outcomes.get(owner)
        if saved is None:
            report_problem(f"items {keys} are owned by {owner}, a save that never ran")
            continue
        if len(keys) > 1:
            report_problem(f"the save {owner} is stored {len(keys)} times, as {keys}", owner)
        if saved.status != "error":
            continue
        error, kept = saved.error, saved.value
        if isinstance(error, WriteOutcomeUnknownError) and kept not in (UNKNOWN, None) and keys != [kept]:
            report_problem(f"{owner} raised WriteOutcomeUnknownError keeping ID {kept}, but its item is stored as "
                           f"{keys}", owner)
        _failed_but_stored(owner, reports[saved.op or owner], error, faults[owner], f"its item is stored as {keys}",
                           report_problem)
    for extra in sorted(snapshot.extras):
        putter = reports.get(extra)
        if putter is None or putter.extra != extra:
            report_problem(f"the unrelated item {extra!r} is stored, but no operation put it")
        elif putter.status == "error":
            _failed_but_stored(extra, putter, putter.error, faults[extra], f"its unrelated item {extra!r} is stored",
                               report_problem)

    # -- transactions land whole ----------------------------------------------------------
    for tag, op in reports.items():
        for group in op.atomic:
            landed = [t for t in group if t in stored_by or t in snapshot.extras]
            if landed and len(landed) != len(group):
                missing = [t for t in group if t not in landed]
                report_problem(f"{tag} ({op.kind}): one transaction wrote {group}, but only {landed} are stored "
                               f"({missing} are not)", tag)

    # -- the sequence: counter, bound, gaps -------------------------------------------------
    sequence = {key: owner for key, owner in snapshot.items.items()
                if owner not in outcomes or outcomes[owner].new}
    largest = max(sequence, default=None)
    if mode.counter and not mode.cycle and largest is not None and (
            snapshot.counter is None or snapshot.counter < largest):
        report_problem(f"the counter is {snapshot.counter}, below the largest stored ID {largest}")

    limit = mode.limit
    if limit is not None:
        past = sorted(key for key in sequence if key > limit)
        if past:
            report_problem(f"IDs {past} are stored, past autoinc_max = {limit}")
        if snapshot.counter is not None and snapshot.counter > limit:
            report_problem(f"the counter is {snapshot.counter}, past autoinc_max = {limit}")
        room = snapshot.counter is None or snapshot.counter + int(mode.meta.get("autoinc_step", 1)) <= limit
        for tag, op in reports.items():
            if op.status == "error" and isinstance(op.error, SequenceExhaustedError) and room:
                report_problem(f"{tag} raised SequenceExhaustedError, but the counter ended at {snapshot.counter}, "
                               f"with room left below autoinc_max = {limit}", tag)

    if mode.gapless:
        keys = sorted(sequence)
        if keys != list(range(1, len(keys) + 1)):
            report_problem(f"gapless: the stored IDs are {keys}, not 1..{len(keys)}")
        if mode.counter and snapshot.counter != (len(keys) or None):
            report_problem(f"gapless: the counter is {snapshot.counter}, not {len(keys) or None}")
    return verdict


def _failed_but_stored(tag: str, op: Report, error: Optional[BaseException], faults: List[str], what: str,
                       report: Callable[[str, str], None]) -> None:
    """What is stored of a failed operation: only after a lost answer, and never if it cannot succeed."""
    if op.expect.must_fail:
        report(f"{tag} is part of {op.tag} ({op.kind}), which can only fail, but {what}", tag)
    elif not any(f.startswith(DROP) for f in faults):
        report(f"{tag} raised {type(error).__name__} ({error}), but {what}, and no answer of it was lost", tag)
    elif any(claim in str(error) for claim in CLAIMS_NOTHING_STORED):
        report(f"{tag} raised {type(error).__name__} ({error}), but {what}", tag)
