"""Run the command line in a process of its own, forked from one that has already imported it.

Every CLI test runs the command as an operator does: a new process, its own environment and working directory,
its output read from its stdout and stderr, its exit status the process's. Started with ``python``, each such
process spends a third of a second importing botocore, PynamoDB and the package before it parses an argument,
and the CLI tests start a few hundred of them. So one process per pytest process (the *zygote*, started on first
use) imports the command line once and, for each run, forks a child that takes the run's environment, working
directory and ``sys.path``, runs ``pynamodb_autoinc.cli.main`` on its arguments and exits with its status. The
child is a new process, forked from a zygote that has sent no request, made no session and imported no model
module, so nothing of one run reaches the next, nor the test process's state. ``CLI_FORK=0`` runs every command
with ``subprocess.run`` instead (the console script or ``python -m pynamodb_autoinc``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent

FORK_ENV_VAR = "CLI_FORK"
"""``0`` runs each command with ``subprocess.run`` rather than from the zygote."""


def _child(request: Dict[str, Any]) -> None:
    """In the forked child: become the run's process, run the command line and exit with its status."""
    code = 1
    try:
        with open(request["stdout"], "wb") as out, open(request["stderr"], "wb") as err:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # sys.path as `python -m pynamodb_autoinc` from cwd has it: cwd first, then PYTHONPATH, then the rest
        extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [request["cwd"], *extra, *[p for p in sys.path[1:] if p not in _START_PATH_EXTRA]]
        sys.argv = ["pynamodb-autoinc", *request["argv"]]
        from pynamodb_autoinc.cli import main

        code = main(request["argv"])
    except SystemExit as exc:  # argparse's usage errors and --help/--version
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:  # a crash is a traceback on stderr and exit 1, as for python
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to write
                stream.flush()
        os._exit(code)


_START_PATH_EXTRA: List[str] = []


def _serve() -> None:
    """The zygote: import the command line, then fork a child for each request read from stdin (a JSON line) and
    answer its exit status (a line) once it ended."""
    _START_PATH_EXTRA.extend(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    import pynamodb_autoinc.cli  # noqa: F401  (what each child would import first)

    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        # a command still running after its timeout is killed, and answers as subprocess.run's timeout would
        timer = threading.Timer(request["timeout"], os.kill, (pid, signal.SIGKILL))
        timer.start()
        _, status = os.waitpid(pid, 0)
        timer.cancel()
        timer.join()
        code = os.waitstatus_to_exitcode(status)
        sys.stdout.write(f"{code}\n")
        sys.stdout.flush()


class Zygote:
    """The zygote process of this pytest process, started on first use; one run at a time."""

    def __init__(self) -> None:
        self._proc: Optional[subprocess.Popen[str]] = None
        self._lock = threading.Lock()
        atexit.register(self.close)

    def _started(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen([sys.executable, "-m", "tests.cli_runner"], cwd=ROOT, text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        return self._proc

    def run(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
            ) -> subprocess.CompletedProcess:
        with self._lock, tempfile.TemporaryDirectory(prefix="cli-run-") as scratch:
            out, err = Path(scratch, "stdout"), Path(scratch, "stderr")
            proc = self._started()
            stdin: IO[str] = proc.stdin  # type: ignore[assignment]
            stdin.write(json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd),
                                    "stdout": str(out), "stderr": str(err), "timeout": timeout}) + "\n")
            stdin.flush()
            answer = proc.stdout.readline() if proc.stdout else ""
            if not answer:
                raise RuntimeError("the CLI zygote ended; run with CLI_FORK=0 to see the command's own failure")
            if int(answer) == -signal.SIGKILL:
                raise subprocess.TimeoutExpired(["pynamodb-autoinc", *argv], timeout)
            return subprocess.CompletedProcess(["pynamodb-autoinc", *argv], int(answer),
                                               out.read_text(errors="replace"), err.read_text(errors="replace"))

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
        self._proc = None


_ZYGOTE = Zygote()


def run(command: Callable[[], Sequence[str]], argv: Sequence[str], *, env: Mapping[str, str], cwd: Path = ROOT,
        timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the command line with ``argv`` in a new process with ``env`` and ``cwd``, stdout and stderr as text; with
    ``CLI_FORK=0``, started as ``command()`` says a shell would start it (see ``tests.test_cli.command``)."""
    if os.environ.get(FORK_ENV_VAR, "1") == "0" or not hasattr(os, "fork"):
        return subprocess.run([*command(), *argv], capture_output=True, text=True, env=dict(env), cwd=cwd,
                              timeout=timeout)
    return _ZYGOTE.run(argv, env, cwd, timeout)


if __name__ == "__main__":
    _serve()
