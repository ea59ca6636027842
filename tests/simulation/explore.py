"""Running one schedule, enumerating all of them depth-first, and sampling them at random from a seed.

A run is a sequence of choices, one per request boundary: which waiting
client sends its request next, and with which fault (``none``, ``crash``,
``drop``, ``throttle``, ``conflict``; see :mod:`tests.simulation.scheduler`).
Given the same choices the same run happens, so

- :class:`DepthFirst` enumerates every choice sequence within the bounds
  (stateless model checking: replay a recorded prefix, then take the first
  option at every new choice point; backtrack to the deepest point with an
  untried option);
- :class:`Seeded` draws each choice from ``random.Random(seed)``: a failing
  seed replays exactly with ``SIM_SEED=<seed>``;
- :class:`Replay` follows a recorded list of choice indices (``SIM_PATH``).

:class:`Bounds` limits a run: clients, saves per client, faults per run, and
optionally *preemptions* (switching away from the client that just ran while
it could go on), the context bound of CHESS: most concurrency bugs need very
few of them, and it keeps the exhaustive space small enough for CI.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Protocol, Sequence, Set, Tuple

from pynamodb_autoinc.exceptions import WriteOutcomeUnknownError

from .checker import check
from .scheduler import (
    FAULTS,
    NONE,
    WAITING,
    Client,
    Outcome,
    Report,
    Scheduler,
    SimAbort,
    SimCrash,
    StepTimeout,
    faults_for,
    instant_retries,
    separate_process_state,
    virtual_clock,
)
from .world import Snapshot, World

#: Seconds one client may take to reach its next request boundary before the run fails.
STEP_TIMEOUT = 20.0


class NondeterminismError(AssertionError):
    """A replayed prefix offered different choices than when it was recorded."""


@dataclass(frozen=True)
class Bounds:
    """The size of a run and how much may go wrong in it."""

    clients: int
    saves: int
    faults: int = 0
    """At most this many faults in one run."""
    preemptions: Optional[int] = None
    """At most this many preemptive switches in one run (None: any number)."""
    budget: Optional[int] = None
    """At most this many preemptions and faults together (None: only the two bounds above)."""
    kinds: Tuple[str, ...] = FAULTS
    """The faults that may be injected."""

    def __str__(self) -> str:
        parts = [f"{self.clients} clients x {self.saves} saves", f"<= {self.faults} faults"]
        if self.preemptions is not None:
            parts.append(f"<= {self.preemptions} preemptions")
        if self.budget is not None:
            parts.append(f"<= {self.budget} preemptions + faults")
        return ", ".join(parts)


@dataclass(frozen=True)
class Choice:
    client: int
    fault: str
    preempt: bool


@dataclass(frozen=True)
class Step:
    client: int
    operation: str
    fault: str

    def __str__(self) -> str:
        return f"c{self.client}:{self.operation}" + ("" if self.fault == NONE else f"!{self.fault}")


@dataclass
class Run:
    """One finished run: the schedule, what each client reported, the final state, what broke."""

    bounds: Bounds
    steps: List[Step]
    clients: List[Client]
    snapshot: Snapshot
    problems: List[str]
    known: List[str] = field(default_factory=list)
    path: List[int] = field(default_factory=list)

    def describe(self) -> str:
        lines = ["schedule: " + " ".join(map(str, self.steps))]
        for client in self.clients:
            lines.append(f"  client {client.index}: " + ", ".join(_report(r) for r in client.reports)
                         + (f"  faults {client.faults}" if client.faults else ""))
        extras = f", unrelated items {sorted(self.snapshot.extras)}" if self.snapshot.extras else ""
        lines.append(f"stored: {dict(sorted(self.snapshot.items.items()))}, counter {self.snapshot.counter}{extras}")
        lines.append("broken: " + "; ".join(self.problems) if self.problems else "all invariants hold")
        if self.known:
            lines.append("known bugs met: " + ", ".join(self.known))
        return "\n".join(lines)


def _outcome(outcome: Outcome) -> str:
    if outcome.status == "ok":
        return f"{outcome.tag}={outcome.value}"
    if outcome.status == "error":
        kept = "" if outcome.value is None else f" keeping {outcome.value!r}"
        return f"{outcome.tag} raised {type(outcome.error).__name__}{kept}"
    return f"{outcome.tag} crashed"


def _report(report: Report) -> str:
    """One operation: a plain save as before (``c0s1=4``), others as ``c0s1 commit [c0s1a=4, c0s1b=5]``."""
    if report.kind == "save" and len(report.items) == 1:
        return _outcome(report.items[0])
    head = f"{report.tag} {report.kind}"
    if report.status == "error":
        head += f" raised {type(report.error).__name__}"
    elif report.status == "crashed":
        head += " crashed"
    return f"{head} [" + ", ".join(_outcome(o) for o in report.items) + "]"


class Chooser(Protocol):
    def choose(self, options: Sequence[Choice]) -> int: ...


def run_once(world: World, bounds: Bounds, chooser: Chooser, step_timeout: float = STEP_TIMEOUT,
             strict: bool = False) -> Run:
    """Run ``bounds.clients`` clients of ``bounds.saves`` saves each, one request at a time, as ``chooser`` picks."""
    world.reset()
    world.interposer.refill_retry_quotas()
    scheduler = Scheduler(step_timeout)
    clients = [Client(i) for i in range(bounds.clients)]
    steps: List[Step] = []
    path: List[int] = []
    error: Optional[StepTimeout] = None
    with separate_process_state(), instant_retries(), virtual_clock():
        world.interposer.scheduler = scheduler
        try:
            for client in clients:
                client.thread = threading.Thread(target=_client_body, args=(world, scheduler, client, bounds.saves),
                                                 name=f"sim-client-{client.index}", daemon=True)
                client.thread.start()
                scheduler.settle(client)  # one at a time, so even their starts are ordered
            previous: Optional[Client] = None
            started: Set[int] = set()
            preemptions = faults = 0
            while True:
                waiting = [c for c in clients if c.state == WAITING]
                if not waiting:
                    break
                options = _options(waiting, previous, started, preemptions, faults, bounds)
                index = chooser.choose(options)
                path.append(index)
                choice = options[index]
                client = clients[choice.client]
                started.add(client.index)
                steps.append(Step(client.index, str(client.operation), choice.fault))
                preemptions += choice.preempt
                faults += choice.fault != NONE
                scheduler.grant(client, choice.fault)
                scheduler.settle(client)
                previous = client
        except StepTimeout as exc:
            error = StepTimeout(f"{exc}\nafter: {' '.join(map(str, steps))}\nchoices: {path}")
        finally:
            scheduler.abort()  # a client still blocked at a boundary unwinds with SimAbort
            for client in clients:
                if client.thread is not None:
                    client.thread.join(step_timeout)
            stuck = [c.index for c in clients if c.thread is not None and c.thread.is_alive()]
            if not stuck:
                world.interposer.scheduler = None
            # else the aborted scheduler stays: a stuck client that gets going stops at its next request
    if stuck:
        raise StepTimeout(f"{error or 'the run ended'}\nclients {stuck} are still running") from None
    if error is not None:
        raise error
    snapshot = world.snapshot()
    verdict = check(world.mode, clients, snapshot, strict)
    return Run(bounds, steps, clients, snapshot, verdict.problems, verdict.known, path)


def _client_body(world: World, scheduler: Scheduler, client: Client, saves: int) -> None:
    scheduler.attach(client)
    try:
        for save in range(saves):
            client.save = save
            operation = world.operation(save, client.tag(save))
            try:
                operation.run()
            except SimCrash:
                client.reports.append(operation.report("crashed"))
                return
            except Exception as exc:
                client.reports.append(operation.report("error", exc))
            else:
                client.reports.append(operation.report("ok"))
    except SimAbort:
        return
    finally:
        scheduler.finish(client)


def _options(waiting: Sequence[Client], previous: Optional[Client], started: Set[int], preemptions: int,
             faults: int, bounds: Bounds) -> List[Choice]:
    """The choices at a boundary: each waiting client, with no fault or with each fault the bounds allow.

    Symmetry: clients that have not sent anything yet are identical (they run
    the same code and differ only in their owner tags), so only the first of
    them is offered; this leaves out exactly the runs that are the same as
    another one with the clients renamed.
    """
    options: List[Choice] = []
    can_continue = previous is not None and previous.state == WAITING
    fresh_offered = False
    spent = preemptions + faults
    for client in sorted(waiting, key=lambda c: (c is not previous, c.index)):
        if client.index not in started:
            if fresh_offered:
                continue
            fresh_offered = True
        preempt = can_continue and client is not previous
        if preempt and (_reached(bounds.preemptions, preemptions) or _reached(bounds.budget, spent)):
            continue
        options.append(Choice(client.index, NONE, preempt))
        if not _reached(bounds.faults, faults) and not _reached(bounds.budget, spent + preempt):
            options.extend(Choice(client.index, kind, preempt)
                           for kind in faults_for(client.operation, client.resend) if kind in bounds.kinds)
    return options


def _reached(bound: Optional[int], used: int) -> bool:
    return bound is not None and used >= bound


class DepthFirst:
    """Every choice sequence, depth-first: replay the recorded prefix, take option 0 beyond it."""

    def __init__(self) -> None:
        self.path: List[int] = []
        self.widths: List[int] = []
        self.depth = 0

    def choose(self, options: Sequence[Choice]) -> int:
        depth, self.depth = self.depth, self.depth + 1
        if depth < len(self.path):
            if self.widths[depth] != len(options):
                raise NondeterminismError(f"choice point {depth} of {self.path} offered {len(options)} options, "
                                          f"{self.widths[depth]} when it was recorded")
            return self.path[depth]
        self.path.append(0)
        self.widths.append(len(options))
        return 0

    def advance(self, mine: Optional[Callable[[Sequence[int]], bool]] = None, split: int = 0) -> bool:
        """Move to the next unexplored sequence; False when there is none.

        With ``mine``, skip every subtree whose first ``split`` choices are known
        and not ``mine``.
        """
        if self.depth != len(self.path):
            raise NondeterminismError(f"the run of {self.path} ended after {self.depth} choices")
        self.depth = 0
        while self._increment():
            if mine is None or len(self.path) < split or mine(self.path[:split]):
                return True
            del self.path[split:], self.widths[split:]
        return False

    def _increment(self) -> bool:
        while self.path:
            if self.path[-1] + 1 < self.widths[-1]:
                self.path[-1] += 1
                return True
            self.path.pop()
            self.widths.pop()
        return False


class Seeded:
    """Random choices from one seed: a client uniformly, then a fault with probability ``rate``."""

    def __init__(self, rng: random.Random, rate: float) -> None:
        self.rng = rng
        self.rate = rate

    def choose(self, options: Sequence[Choice]) -> int:
        client = self.rng.choice(sorted({o.client for o in options}))
        mine = [i for i, o in enumerate(options) if o.client == client]
        faulty = [i for i in mine if options[i].fault != NONE]
        if faulty and self.rng.random() < self.rate:
            return self.rng.choice(faulty)
        return next(i for i in mine if options[i].fault == NONE)


class Replay:
    """Follow recorded choice indices."""

    def __init__(self, path: Sequence[int]) -> None:
        self.path = list(path)
        self.depth = 0

    def choose(self, options: Sequence[Choice]) -> int:
        index = self.path[self.depth] if self.depth < len(self.path) else 0
        self.depth += 1
        if index >= len(options):
            raise NondeterminismError(f"choice {self.depth - 1} is {index}, but only {len(options)} options exist")
        return index


class Scripted:
    """Follow a script of ``(client, fault)`` steps; after it, the lowest waiting client with no fault."""

    def __init__(self, script: Sequence[Tuple[int, str]]) -> None:
        self.script = list(script)
        self.depth = 0

    def choose(self, options: Sequence[Choice]) -> int:
        depth, self.depth = self.depth, self.depth + 1
        if depth >= len(self.script):
            return min((o.client, i) for i, o in enumerate(options) if o.fault == NONE)[1]
        client, fault = self.script[depth]
        for i, option in enumerate(options):
            if (option.client, option.fault) == (client, fault):
                return i
        raise AssertionError(f"step {depth} of the script, {self.script[depth]}, is not among {list(options)}")


def random_bounds(rng: random.Random) -> Tuple[Bounds, float]:
    """The bounds and fault rate of a random run, drawn first from its seed's generator."""
    clients = rng.randint(2, 5)
    saves = rng.randint(1, 4)
    faults = rng.choice((0, 1, 2, 3, 4, 6))
    rate = rng.choice((0.05, 0.15, 0.3))
    return Bounds(clients, saves, faults), rate


@dataclass
class Stats:
    """What an exploration covered, and the runs that broke an invariant (picklable, so workers can send it)."""

    runs: int = 0
    steps: int = 0
    faults: Counter = field(default_factory=Counter)
    outcomes: Counter = field(default_factory=Counter)
    known: Counter = field(default_factory=Counter)
    failures: List[Tuple[str, str]] = field(default_factory=list)
    """(how to replay it, what happened) per failing run."""

    def add(self, run: Run, replay: str) -> None:
        self.runs += 1
        self.steps += len(run.steps)
        self.faults.update(s.fault for s in run.steps if s.fault != NONE)
        for client in run.clients:  # an error that keeps the ID (the outcome unknown) is counted apart
            self.outcomes.update("unknown" if o.status == "error" and isinstance(o.error, WriteOutcomeUnknownError)
                                 else o.status for o in client.outcomes)
        self.known.update(run.known)
        if run.problems:
            self.failures.append((replay, run.describe()))

    def merge(self, other: Stats) -> None:
        self.runs += other.runs
        self.steps += other.steps
        self.faults.update(other.faults)
        self.outcomes.update(other.outcomes)
        self.known.update(other.known)
        self.failures.extend(other.failures)

    def summary(self) -> str:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        known = "".join(f"; known bug {k} in {v} runs" for k, v in sorted(self.known.items()))
        return (f"{self.runs} schedules, {self.steps} requests; faults: {faults}; items: {outcomes}{known}; "
                f"failing: {len(self.failures)}")


def owner(prefix: Sequence[int], workers: int) -> int:
    """Which of ``workers`` explores the subtree under ``prefix`` (the same answer in every process)."""
    value = 0
    for index in prefix:
        value = (value * 31 + index + 1) % 1_000_003
    return value % workers


def exhaust(world: World, bounds: Bounds, stop_after: int = 1, share: Tuple[int, int] = (0, 1),
            split: int = 4, stop: Callable[[], bool] = lambda: False) -> Stats:
    """Run every schedule within ``bounds``; stop after ``stop_after`` failing ones.

    ``share=(i, n)``: explore only the subtrees whose first ``split`` choices
    worker ``i`` of ``n`` owns (:func:`owner`); the ``n`` shares together
    cover every schedule exactly once. A worker runs each foreign subtree's
    first schedule once, to learn its choices, and does not count it.
    ``stop()`` true ends the exploration early (its caller is gone).
    """
    index, workers = share

    def mine(path: Sequence[int]) -> bool:
        return workers == 1 or owner(path[:split], workers) == index

    stats = Stats()
    explorer = DepthFirst()
    while not stop():
        try:
            run = run_once(world, bounds, explorer)
        except (StepTimeout, NondeterminismError) as exc:
            stats.failures.append((f"SIM_PATH={','.join(map(str, explorer.path))}", f"{type(exc).__name__}: {exc}"))
            return stats  # a stuck client may still hold the world: stop here
        if mine(explorer.path):
            stats.add(run, f"SIM_PATH={','.join(map(str, explorer.path))}")
            if len(stats.failures) >= stop_after:
                return stats
        try:
            if not explorer.advance(mine, split):
                return stats
        except NondeterminismError as exc:
            stats.failures.append((f"SIM_PATH={','.join(map(str, explorer.path))}", f"{type(exc).__name__}: {exc}"))
            return stats
    return stats


def seeded_run(world: World, seed: int, strict: bool = False) -> Run:
    """The random run of ``seed``: its bounds, its fault rate and every choice come from ``random.Random(seed)``."""
    rng = random.Random(seed)
    bounds, rate = random_bounds(rng)
    return run_once(world, bounds, Seeded(rng, rate), strict=strict)


def sample(world: World, seeds: Sequence[int], stop_after: int = 1, stop: Callable[[], bool] = lambda: False) -> Stats:
    """One random run per seed (its bounds drawn from the seed too); stop after ``stop_after`` failing ones."""
    stats = Stats()
    for seed in seeds:
        if stop():
            break
        try:
            run = seeded_run(world, seed)
        except StepTimeout as exc:
            stats.failures.append((f"SIM_SEED={seed}", f"StepTimeout: {exc}"))
            break  # a stuck client may still hold the world: stop here
        stats.add(run, f"SIM_SEED={seed} ({run.bounds})")
        if len(stats.failures) >= stop_after:
            break
    return stats
