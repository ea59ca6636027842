"""Trace the path of one warm ``save()`` through the package, on moto.

    python benchmarks/save_path.py [--mode fast|gapless|block|query] [--letters]

A model saves two items, then the third save is traced with
``sys.setprofile``, counting only calls into this package's functions. It
prints the calls, the distinct functions, the modules, the moves between
modules (each change of module along the calls and returns, down and back up)
and the calls made across a module boundary; ``--letters`` also prints the
path, one module per step.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PACKAGE = str(ROOT / "pynamodb_autoinc") + os.sep


@dataclass
class Trace:
    """What one traced call made: the calls into the package and the modules it went through, in order."""

    calls: int = 0
    crossings: int = 0
    functions: Set[Tuple[str, str]] = field(default_factory=set)
    steps: List[str] = field(default_factory=list)

    @property
    def modules(self) -> Set[str]:
        return set(self.steps)

    @property
    def moves(self) -> int:
        return sum(1 for before, after in zip(self.steps, self.steps[1:]) if before != after)


def module_of(frame: FrameType) -> Optional[str]:
    """The package module ``frame`` runs in, or None outside the package."""
    filename = frame.f_code.co_filename
    if not filename.startswith(PACKAGE):
        return None
    return filename[len(PACKAGE):].removesuffix(".py").replace(os.sep, ".")


def trace(call: Any) -> Trace:
    """Run ``call()`` and record its path through the package."""
    path = Trace()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        module = module_of(frame)
        if module is None:
            return
        if event == "call":
            path.calls += 1
            caller = module_of(frame.f_back) if frame.f_back is not None else None
            if caller is not None and caller != module:
                path.crossings += 1
            path.functions.add((module, frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname")
                                else frame.f_code.co_name))
        if not path.steps or path.steps[-1] != module:
            path.steps.append(module)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return path


def measure(mode: str) -> Trace:
    """The path of the third save of a new model in ``mode``, on moto."""
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    from pynamodb_autoinc import AutoIncrementMixin
    from pynamodb_autoinc.testing import create_counter_table, dynamodb

    meta: Dict[str, Any] = {"table_name": f"path-{mode}", "region": "us-east-1"}
    range_key = mode == "query"
    if mode == "gapless":
        meta["autoinc_gapless"] = True
    elif mode == "block":
        meta["autoinc_block"] = 10
    elif mode == "query":
        meta["autoinc_strategy"] = "query"
        meta["autoinc_attribute"] = "id"

    with dynamodb():
        attrs: Dict[str, Any] = {"Meta": type("Meta", (), meta), "name": UnicodeAttribute(null=True)}
        if range_key:
            attrs["parent"] = UnicodeAttribute(hash_key=True)
            attrs["id"] = NumberAttribute(range_key=True)
        else:
            attrs["id"] = NumberAttribute(hash_key=True)
        model: Any = type(f"Path{mode.title()}", (AutoIncrementMixin, Model), attrs)
        create_counter_table()
        model.create_table(billing_mode="PAY_PER_REQUEST", wait=True)

        def save() -> None:
            item = model(parent="p", name="x") if range_key else model(name="x")
            item.save()

        save()
        save()
        return trace(save)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", action="append", choices=("fast", "block", "gapless", "query"))
    parser.add_argument("--letters", action="store_true", help="print the path, one module per step")
    args = parser.parse_args()
    print(f"{'mode':<8} {'calls':>5} {'functions':>9} {'modules':>7} {'moves':>5} {'calls across':>12}")
    for mode in args.mode or ["gapless", "fast"]:
        path = measure(mode)
        print(f"{mode:<8} {path.calls:>5} {len(path.functions):>9} {len(path.modules):>7} {path.moves:>5} "
              f"{path.crossings:>12}")
        if args.letters:
            print("   ", " ".join(path.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
