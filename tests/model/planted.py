"""Does the model-based check have teeth? Plant one bug at a time in a copy of the package and run the check.

``python -m tests.model.planted`` copies ``pynamodb_autoinc`` to a temporary directory, applies one one-line
mutation (found by the text of its line, so that it survives refactors; a line that no longer exists is
reported "not applicable"), runs ``tests/model/test_promise.py`` on moto against the mutant with a fixed
budget (``--examples``, ``--seconds``; shrinking off: a catch is enough), and prints caught / missed and the
time per bug.

The check must pass on the unmutated package for a catch to mean anything: the harness runs it first, and
while it fails, passes over the check that failed (``MODEL_TOLERATE``) in every later run, and says so.
``--only NAME`` plants the named bugs alone; ``--tolerate check,...`` starts from those checks passed over.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, NamedTuple, Optional, Tuple

ROOT = Path(__file__).resolve().parents[2]


class Bug(NamedTuple):
    name: str
    module: str
    old: str
    """The text of the line to change (stripped of its indentation)."""
    new: str
    """What it becomes (indented as the old line was)."""
    effect: str


BUGS = (
    Bug("cycle-wrap-off-by-one", "sequence.py", "return self.restart_value",
        "return self.restart_value + self.step", "duplicating: CYCLE wraps to the value after the restart value"),
    Bug("block-overlaps-next", "strategies.py", "memory.blocks[sequence] = [values[0], values[-1]]",
        "memory.blocks[sequence] = [values[0], values[-1] + opts.step]",
        "duplicating: a block ends one value into the next block"),
    Bug("release-keeps-id", "strategies.py", 'setattr(self.instance, self.opts.attribute, None)',
        'setattr(self.instance, self.opts.attribute, getattr(self.instance, self.opts.attribute))',
        "losing: a failed save keeps the ID it claimed"),
    Bug("counter-request-overlaps", "_reserve.py", "value = (attr | (seq.start - step)) + step * count",
        "value = (attr | (seq.start - step)) + step * (count - 1)",
        "duplicating: a counter request for n values moves it n-1"),
    Bug("key-check-dropped", "mixin.py", "absent: Condition = type(instance)._hash_key_attribute().does_not_exist()",
        "absent: Condition = type(instance)._hash_key_attribute().does_not_exist() | "
        "type(instance)._hash_key_attribute().exists()", "overwriting: attribute_not_exists dropped"),
    Bug("first-try-judged-applied", "_judge.py", 'return Verdict(NOT_APPLIED, "exists", (0,))',
        'return Verdict(APPLIED, "exists", (0,))',
        "losing: a put refused on its first try (the key taken) misjudged as applied"),
    Bug("unknown-judged-not-written", "_judge.py", "(PUT, SERVER_ERROR): UNKNOWN,", "(PUT, SERVER_ERROR): NOT_APPLIED,",
        "losing/duplicating: a put that landed, answered 500, reported as not written"),
    Bug("group-interrupt-releases", "_group.py", "maybe = _transport.may_have_applied(error)", "maybe = False",
        "duplicating: a group commit interrupted in flight gives its members' IDs back"),
    Bug("refused-value-off-by-one", "_contention.py", 'value = integer(raw.get("N"))',
        'value = integer(raw.get("N")) + 1', "losing: a lost race retries from a counter value one off"),
    Bug("5xx-read-by-code", "_transport.py",
        "kind = _judge.answer_kind(error_code(exc), sent=True, answered=True, status=status)",
        "kind = _judge.answer_kind(error_code(exc), sent=True, answered=True, status=None)",
        "losing: a 5xx whose body names a refusal code read as that refusal (not applied) though it applied"),
    Bug("before-call-reset-dropped", "_transport.py", "_tries().reset()", "pass",
        "losing: a request a pre_dynamodb_send receiver sent first is taken for a try of the library's own"),
    Bug("unclear-judged-not-applied", "_judge.py", "(PUT, UNCLEAR): UNKNOWN,", "(PUT, UNCLEAR): NOT_APPLIED,",
        "losing: a put answered with a page or a code DynamoDB does not document reported as not written"),
    Bug("settled-ignored", "_judge.py", "if fate == SETTLED or (kind == TRANSACT and fate == CANCELLED):",
        "if kind == TRANSACT and fate == CANCELLED:",
        "wrong error: a write proven not applied after a try that may have is reported unknown, its ID kept"),
    Bug("ok-taken-as-proof", "_judge.py", "elif fate not in PROOFS:", "elif fate not in PROOFS and fate != OK:",
        "losing: an answer failing its checksum (then resent) taken as proof that the put did not apply"),
    Bug("exit-releases-doubt", "_engine.py",
        "doubt = write.maybe_applied or isinstance(exc, WriteOutcomeUnknownError)",
        "doubt = isinstance(exc, WriteOutcomeUnknownError)",
        "losing: an exit after a try that may have applied (an interrupt, a budget spent) gives the ID back"),
    Bug("settle-doubts-skipped", "_engine.py", "settle_doubts(write)", "pass",
        "duplicating: a gapless value kept by WriteOutcomeUnknownError handed to the next save unsettled"),
    Bug("group-chain-skips", "_group.py", "claim.assign(claim.opts.sequence.following(claim.key, before.value))",
        "claim.assign(claim.opts.sequence.following(claim.key, before.value + claim.opts.sequence.step))",
        "gaps: each member of a group commit after the first skips a value (a gapless sequence with holes)"),
    Bug("reserve-token-dropped", "_reserve.py", "condition &= claimed.does_not_exist() | (claimed != self.token)",
        "condition = condition", "gaps: botocore's resend of an applied reserve moves the counter again"),
    Bug("abandoned-ignores-interrupt", "strategies.py",
        "if not isinstance(exc, WriteOutcomeUnknownError) and not _transport.may_have_applied(exc):",
        "if not isinstance(exc, WriteOutcomeUnknownError):",
        "losing: a save interrupted after its write may have applied gives its ID back"),
    Bug("save-all-interrupt-releases", "mixin.py",
        "if isinstance(exc, WriteOutcomeUnknownError) or _transport.may_have_applied(exc):",
        "if isinstance(exc, WriteOutcomeUnknownError):",
        "losing: save_all() interrupted while a transaction was in flight gives its IDs back"),
    Bug("version-check-dropped", "history.py",
        "version = record.get_save_kwargs_from_instance(condition=config.history._range_key_attribute()"
        ".does_not_exist())",
        "version = record.get_save_kwargs_from_instance(condition=None)",
        "overwriting: a history version overwrites the stored one"),
)


def plant(package: Path, bug: Bug) -> bool:
    """Apply ``bug`` to the first line whose text is ``bug.old``; False if there is none."""
    path = package / bug.module
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == bug.old:
            indent = line[:len(line) - len(line.lstrip())]
            lines[i] = f"{indent}{bug.new}\n"
            path.write_text("".join(lines))
            return True
    return False


def run_check(package_parent: Path, examples: int, seconds: float, tolerate: List[str]) -> Tuple[str, float, str]:
    """Run the model check with the package imported from ``package_parent``: ("pass" | "fail" | "timeout",
    seconds, the failing check's name or the output's tail)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_parent), str(ROOT)]),
               MODEL_EXAMPLES=str(examples), MODEL_SHRINK="0", MODEL_TOLERATE=",".join(tolerate),
               PYTHONDONTWRITEBYTECODE="1", MODEL_PACKAGE=str(package_parent))
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--import-mode=append",
               "-k", "moto",
               str(ROOT / "tests" / "model" / "test_promise.py")]
    began = time.monotonic()
    try:
        done = subprocess.run(command, cwd=package_parent, env=env, capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - began, ""
    took = time.monotonic() - began
    if done.returncode == 0:
        return "pass", took, ""
    out = done.stdout + done.stderr
    if "Falsifying example" not in out and " failed" not in out:  # the check did not run (an import error)
        return "error", took, out[-400:]
    found = re.search(r"AssertionError: \[([\w-]+)\]", out)
    if found:  # a named check
        return "fail", took, found.group(1)
    # an unnamed assertion: the rule it failed in (the first machine frame below the guard)
    frames = re.findall(r'machine\.py", line \d+, in (\w+)|machine\.py:\d+: in (\w+)', out)
    rules = [a or b for a, b in frames if (a or b) not in ("run", "guarded", "attempt", "settle", "verify")]
    detail = re.search(r"(?:Unexpected|AssertionError): (.{0,300})", out)
    if rules and detail:
        print(f"{'':28} ({rules[0]}: {detail.group(1)})", flush=True)
    return "fail", took, rules[0] if rules else out[-400:]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--tolerate", default="")
    parser.add_argument("--no-baseline", action="store_true", help="trust --tolerate; do not run the package as is")
    args = parser.parse_args(argv)
    tolerate = [t for t in args.tolerate.split(",") if t]
    # the running module must be the copy's, not the worktree's
    with tempfile.TemporaryDirectory(prefix="planted-") as scratch:
        clean = Path(scratch) / "clean"
        shutil.copytree(ROOT / "pynamodb_autoinc", clean / "pynamodb_autoinc")
        while not args.no_baseline:
            verdict, took, what = run_check(clean, args.examples, args.seconds, tolerate)
            print(f"{'baseline':28} {verdict:8} {took:6.1f} s  {what}", flush=True)
            if verdict == "error":
                print(what)
                return 1
            if verdict != "fail" or not re.fullmatch(r"[\w-]+", what) or what in tolerate:
                break
            tolerate.append(what)
            print(f"{'':28} the package as is fails [{what}]: passed over from now on", flush=True)
        caught = applicable = 0
        for bug in BUGS:
            if args.only and bug.name not in args.only:
                continue
            mutant = Path(scratch) / bug.name
            shutil.copytree(clean, mutant)
            if not plant(mutant / "pynamodb_autoinc", bug):
                print(f"{bug.name:28} not applicable ({bug.module}: no line {bug.old!r})", flush=True)
                continue
            applicable += 1
            verdict, took, what = run_check(mutant, args.examples, args.seconds, tolerate)
            result = {"fail": "caught", "pass": "missed", "timeout": "missed (time)"}.get(verdict, "error")
            caught += verdict == "fail"
            print(f"{bug.name:28} {result:14} {took:6.1f} s  {bug.module}: {bug.effect}"
                  + (f"  [{what}]" if what else ""), flush=True)
        print(f"caught {caught} of {applicable} applicable; passed over: {','.join(tolerate) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
