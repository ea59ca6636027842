"""Time ``pynamodb-autoinc seed`` on a table of many items, on DynamoDB Local.

    python benchmarks/seed.py [--items 100000] [--segments 4]

Loads the items with batch writes (client-chosen IDs, as a table that
predates the library would hold), then runs the command line in a
subprocess, as an operator would, and prints both times.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.engine import INSTALL_HINT, DynamoDBLocal, find_jar  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--segments", type=int, default=4)
    args = parser.parse_args()
    jar = find_jar()
    if jar is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 1
    with DynamoDBLocal(jar) as server:
        env = {**os.environ, "CLI_TEST_HOST": server.url, "CLI_TEST_PREFIX": "seedbench",
               "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1"}
        os.environ.update(env)
        from tests import cli_models

        User = cli_models.User
        User.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
        started = time.monotonic()

        def load(offset: int) -> None:
            with User.batch_write() as batch:
                for i in range(offset, min(offset + 5000, args.items)):
                    batch.save(User(id=i + 1, name=f"user {i + 1}"))

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(load, range(0, args.items, 5000)))
        loaded = time.monotonic() - started
        command = [sys.executable, "-m", "pynamodb_autoinc", "--host", server.url, "--region", "us-east-1"]
        subprocess.run([*command, "create-table"], env=env, check=True, capture_output=True)
        started = time.monotonic()
        done = subprocess.run([*command, "seed", "tests.cli_models:User", "--segments", str(args.segments)],
                              env=env, cwd=ROOT, capture_output=True, text=True)
        seeded = time.monotonic() - started
        print(f"loaded {args.items:,} items in {loaded:.1f} s")
        print(f"$ pynamodb-autoinc seed tests.cli_models:User --segments {args.segments}")
        print(done.stdout.strip() or done.stderr.strip())
        print(f"seed took {seeded:.1f} s ({args.items / seeded:,.0f} items/s), exit {done.returncode}")
        return done.returncode


if __name__ == "__main__":
    sys.exit(main())
