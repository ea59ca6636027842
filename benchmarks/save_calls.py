"""What one warm sync ``save()`` costs the client, counted: Python calls per save, on moto in-process.

    python benchmarks/save_calls.py [--saves 200] [--root PATH]

A fast and a gapless model each save 20 items, then ``--saves`` more under ``cProfile``; it prints, per mode,
the calls per save (botocore's, moto's and PynamoDB's included) and those into this package. Counts, unlike
seconds, do not move with a shared machine's load, so two checkouts compare in one run: ``--root`` names the
checkout whose ``pynamodb_autoinc`` is measured (default: this one), e.g. a ``git worktree`` of an earlier
commit. A measuring script: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
from pathlib import Path
from typing import Any, List


def measure(saves: int) -> List[str]:
    from moto import mock_aws
    from pynamodb.attributes import NumberAttribute
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin, NextId

    rows = []
    with mock_aws():
        NextId.create_table(billing_mode="PAY_PER_REQUEST")
        for mode in ("fast", "gapless"):
            meta = type("Meta", (), {"table_name": f"calls-{mode}", "region": "us-east-1",
                                     "autoinc_gapless": mode == "gapless", "autoinc_key": f"calls-{mode}"})
            model: Any = type(f"Calls{mode.title()}", (AutoIncrementMixin, Model),
                              {"Meta": meta, "id": NumberAttribute(hash_key=True)})
            model.create_table(billing_mode="PAY_PER_REQUEST")
            for _ in range(20):
                model().save()
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(saves):
                model().save()
            profile.disable()
            stats: Any = pstats.Stats(profile)
            ours = sum(v[1] for k, v in stats.stats.items() if f"pynamodb_autoinc{os.sep}" in k[0])
            rows.append(f"| {mode} | {stats.total_calls / saves:,.0f} | {ours / saves:,.0f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    os.environ.update({"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing"})
    import pynamodb_autoinc

    if not pynamodb_autoinc.__file__ or not pynamodb_autoinc.__file__.startswith(str(args.root.resolve())):
        raise SystemExit(f"measuring {pynamodb_autoinc.__file__}, not the package under {args.root}")
    rows = measure(args.saves)
    print(f"{pynamodb_autoinc.__file__}; python benchmarks/save_calls.py {' '.join(sys.argv[1:])}")
    print("| mode | calls/save | in the library |\n| --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
