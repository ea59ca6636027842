"""What must hold after every simulated run, whatever the schedule and the faults.

- every error a save raised is one of the library's documented errors
  (a subclass of :class:`pynamodb_autoinc.AutoIncrementError`), and a save
  fails only if a request of its own met a fault, or with ``ContentionError``;
- no ID was handed to two saves;
- every save that returned an ID is stored under that ID, with its own owner
  tag: nothing was overwritten and nothing is missing;
- a failed save leaves the instance's ID at ``None``, except
  ``WriteOutcomeUnknownError``, which keeps it: the ID its item is stored
  under, if it is stored;
- every stored item belongs to a save that returned its ID, or that crashed,
  or that failed after a request of it was applied with its answer lost (the
  only case where a client cannot know), and then the error does not claim
  that nothing was written; no save is stored twice;
- the counter is never below the largest stored ID;
- in gapless modes the stored IDs are exactly 1..N and the counter holds N,
  whatever crashed.

Problems that are known library bugs (:data:`KNOWN_BUGS`) are reported apart,
so that exploration goes on looking for new ones; ``strict=True`` counts them
as problems like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from pynamodb_autoinc import AutoIncrementError, ContentionError, WriteOutcomeUnknownError

from .scheduler import DROP, Client, Outcome
from .world import ID_AFTER, Mode, Snapshot

UNKNOWN = object()

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
    stays as a regression test (``test_found_bugs.py``).
    """

    name: str
    what: str
    matches: Callable[[Case], bool]


#: Library bugs recognised while a fix is pending. Empty: the three this simulation found
#: (see test_found_bugs.py) are fixed, so any recurrence now fails every run.
KNOWN_BUGS: Tuple[KnownBug, ...] = ()


@dataclass
class Verdict:
    """The invariants a run broke: ``problems`` are new, ``known`` names the known bugs met."""

    problems: List[str] = field(default_factory=list)
    known: List[str] = field(default_factory=list)


def check(mode: Mode, clients: Sequence[Client], snapshot: Snapshot, strict: bool = False) -> Verdict:
    """The invariants ``snapshot`` and the clients' reports break; ``strict``: known bugs count as new."""
    verdict = Verdict()
    outcomes: Dict[str, Outcome] = {}
    faults: Dict[str, List[str]] = {}
    for client in clients:
        for save, outcome in enumerate(client.outcomes):
            outcomes[outcome.tag] = outcome
            faults[outcome.tag] = client.faults.get(save, [])

    def report(problem: str, tag: Optional[str] = None) -> None:
        if tag is not None and not strict:
            case = Case(mode, outcomes[tag], faults[tag], problem)
            bug = next((b for b in KNOWN_BUGS if b.matches(case)), None)
            if bug is not None:
                verdict.known.append(bug.name)
                return
        verdict.problems.append(problem)

    for tag, outcome in outcomes.items():
        if outcome.status != "error":
            continue
        error = outcome.error
        if not isinstance(error, AutoIncrementError):
            report(f"{tag} raised an undocumented error: {type(error).__name__}: {error}", tag)
        elif not faults[tag] and not isinstance(error, ContentionError):
            report(f"{tag} raised {type(error).__name__} ({error}), but no request of it met a fault", tag)
        kept = getattr(error, ID_AFTER, UNKNOWN)
        if kept is UNKNOWN:
            continue  # not a library save (the harness's own allocators)
        if isinstance(error, WriteOutcomeUnknownError):
            if kept is None:
                report(f"{tag} raised WriteOutcomeUnknownError but dropped the instance's ID", tag)
        elif kept is not None:
            report(f"{tag} raised {type(error).__name__} but left ID {kept!r} on the instance "
                   "(a failed save leaves it at None)", tag)

    returned: Dict[int, str] = {}
    for tag, outcome in outcomes.items():
        if outcome.status != "ok":
            continue
        value = outcome.value
        if not isinstance(value, int) or isinstance(value, bool):
            report(f"{tag} returned {value!r}, not an integer ID", tag)
            continue
        if value in returned:
            report(f"ID {value} was handed to two saves: {returned[value]} and {tag}", tag)
        returned[value] = tag
        stored = snapshot.items.get(value)
        if stored is None:
            report(f"{tag} returned ID {value}, but no item {value} is stored", tag)
        elif stored != tag:
            report(f"{tag} returned ID {value}, but item {value} is owned by {stored} "
                   "(overwritten, or written by another save)", tag)

    stored_by: Dict[str, List[int]] = {}
    for key, owner in sorted(snapshot.items.items()):
        stored_by.setdefault(owner, []).append(key)
    for owner, keys in stored_by.items():
        saved = outcomes.get(owner)
        if saved is None:
            report(f"items {keys} are owned by {owner}, a save that never ran")
            continue
        if len(keys) > 1:
            report(f"the save {owner} is stored {len(keys)} times, as {keys}", owner)
        if saved.status != "error":
            continue
        error = saved.error
        kept = getattr(error, ID_AFTER, UNKNOWN)
        if isinstance(error, WriteOutcomeUnknownError) and kept not in (UNKNOWN, None) and keys != [kept]:
            report(f"{owner} raised WriteOutcomeUnknownError keeping ID {kept}, but its item is stored as {keys}",
                   owner)
        if not any(f.startswith(DROP) for f in faults[owner]):
            report(f"{owner} raised {type(error).__name__} ({error}), but its item is stored as {keys}, "
                   "and no answer of it was lost", owner)
        elif any(claim in str(error) for claim in CLAIMS_NOTHING_STORED):
            report(f"{owner} raised {type(error).__name__} ({error}), but its item is stored as {keys}", owner)

    largest = max(snapshot.items, default=None)
    if mode.counter and largest is not None and (snapshot.counter is None or snapshot.counter < largest):
        report(f"the counter is {snapshot.counter}, below the largest stored ID {largest}")

    if mode.gapless:
        keys = sorted(snapshot.items)
        if keys != list(range(1, len(keys) + 1)):
            report(f"gapless: the stored IDs are {keys}, not 1..{len(keys)}")
        if mode.counter and snapshot.counter != (len(keys) or None):
            report(f"gapless: the counter is {snapshot.counter}, not {len(keys) or None}")
    return verdict
