"""Auto-increment models on a replicated (global) table: the hazard, and the two schemes that avoid it.

Two DynamoDB Local servers stand for two regions and a replicator copies every change between
them, last writer wins (tests/global_double.py). Four real OS processes per region save items;
once they are done and replication has settled, every ID any of them reported is checked in
both regions.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from pynamodb_autoinc import _options
from tests.global_double import REGIONS
from tests.global_worker import build_model

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parent.parent
A, B = REGIONS
PER_REGION = 4
"""Worker processes per region."""
COUNT = 25
"""Saves per worker."""
DELAY = 0.2
"""Seconds before a change reaches the other region."""


def require(*options: str) -> None:
    """Skip the test when the library does not have ``options`` yet."""
    missing = [name for name in options if name not in _options.DEFAULTS]
    if missing:
        pytest.skip(f"pynamodb_autoinc._options.DEFAULTS has no {', '.join(missing)}: the scheme is not built yet")


Save = Tuple[int, str]
"""(ID, owner) of one reported save."""


class GlobalRun:
    """One replicated item table and its replicated counter table; workers in each region save into them."""

    def __init__(self, tmp_path: Path, double: Any, tables: Any) -> None:
        self.tmp_path = tmp_path
        self.double = double
        self.table: str = tables.create("item")
        self.counter_table: str = tables.create("counter", hash_key=("NextKey", "S"))
        self.outs: Dict[str, List[Path]] = {region: [] for region in REGIONS}

    def run(self, options: Dict[str, Any], *, per_region: int = PER_REGION, count: int = COUNT) -> None:
        """Save ``count`` items from each of ``per_region`` processes per region, then let replication settle."""
        go = self.tmp_path / "go"
        procs = []
        for region in REGIONS:
            for worker in range(per_region):
                out = self.tmp_path / f"{region}-{worker}.log"
                self.outs[region].append(out)
                conf = {"table": self.table, "counter_table": self.counter_table, "meta": self.double.meta(region),
                        "options": options, "worker": f"{region}/{worker}", "count": count,
                        "out": str(out), "go": str(go)}
                procs.append(subprocess.Popen([sys.executable, "-m", "tests.global_worker", json.dumps(conf)],
                                              cwd=ROOT))
        outs = [o for region in REGIONS for o in self.outs[region]]
        deadline = time.monotonic() + 120
        while not all(o.exists() and o.read_text().startswith("ready") for o in outs):
            assert time.monotonic() < deadline, "workers did not start"
            assert all(p.poll() is None for p in procs), "a worker died while starting"
            time.sleep(0.05)
        go.touch()
        assert [p.wait(timeout=600) for p in procs] == [0] * len(procs)
        self.double.settle(timeout=120)

    def lines(self, out: Path) -> List[List[str]]:
        return [line.split(maxsplit=3) for line in out.read_text().splitlines() if not line.startswith("ready")]

    def saves(self, region: str) -> List[List[Save]]:
        """Each of ``region``'s workers' reported saves, in the order it made them."""
        return [[(int(f[1]), f[2]) for f in self.lines(out) if f[0] == "ok"] for out in self.outs[region]]

    def all_saves(self) -> List[Save]:
        return [s for region in REGIONS for worker in self.saves(region) for s in worker]

    def errors(self) -> List[str]:
        return [" ".join(f[1:]) for region in REGIONS for out in self.outs[region]
                for f in self.lines(out) if f[0] == "error"]

    def stored(self, region: str) -> Dict[int, str]:
        """Every item of ``region``'s replica: ID to owner."""
        items = self.double.items(region, self.table)
        return {int(item["id"]["N"]): item.get("owner", {}).get("S") for item in items}


@pytest.fixture
def run(tmp_path: Path, global_double: Any, global_tables: Any) -> GlobalRun:
    """A fresh pair of replicated tables (items and counters), replication delayed by ``DELAY``."""
    global_double.delay = DELAY
    return GlobalRun(tmp_path, global_double, global_tables)


def check_no_damage(run: GlobalRun) -> List[Save]:
    """No ID reported twice; every reported save stored, with its owner, in both regions; nothing else stored."""
    assert run.errors() == []
    saves = run.all_saves()
    assert len(saves) == 2 * PER_REGION * COUNT
    twice = sorted(i for i, n in collections.Counter(i for i, _ in saves).items() if n > 1)
    assert twice == [], f"IDs handed out twice: {twice[:20]}"
    for region in REGIONS:
        stored = run.stored(region)
        lost = sorted(i for i, owner in saves if stored.get(i) != owner)
        assert lost == [], f"{region}: saves missing or overwritten: {lost[:20]}"
        assert len(stored) == len(saves), f"{region}: items no worker reported"
    return saves


def check_increasing(run: GlobalRun) -> None:
    """Each worker's IDs increase in the order it saved."""
    for region in REGIONS:
        for worker in run.saves(region):
            ids = [i for i, _ in worker]
            assert ids == sorted(set(ids)), f"{region}: a worker's IDs went back: {ids}"


def subsequence(region: str, n: int, start: int = 1, step: int = 1) -> List[int]:
    """Scheme 1: the first ``n`` values region ``i`` of R hands out, start + (i + k·R)·step."""
    i, r = REGIONS.index(region), len(REGIONS)
    return [start + (i + k * r) * step for k in range(n)]


def test_one_counter_written_from_two_regions_hands_out_ids_twice(run):
    """A single replicated counter written from both regions gives one ID to saves in each region, and one item
    overwrites the other when they replicate."""
    # default options: the double's DescribeTable lists no replicas, so the library cannot tell and refuses nothing
    run.run({})
    # a counter moved back by a replicated older version may also hand out the ID of an item already here
    assert {error.split()[0] for error in run.errors()} <= {"ItemExistsError"}
    in_a = {i for worker in run.saves(A) for i, _ in worker}
    in_b = {i for worker in run.saves(B) for i, _ in worker}
    assert in_a & in_b, "no ID was handed out in both regions"
    saves = run.all_saves()
    stored = run.stored(A)
    assert run.stored(B) == stored, "the replicas did not converge"
    assert len(stored) < len(saves), "no save was overwritten"
    overwritten = [(i, owner) for i, owner in saves if stored.get(i) != owner]
    assert len(overwritten) == len(saves) - len(stored)


@pytest.mark.parametrize("options", [
    pytest.param({"autoinc_gapless": False}, id="fast"),
    pytest.param({"autoinc_block": 10}, id="block"),
])
def test_scheme_1_one_counter_per_region(run, options):
    """Scheme 1 (Meta.autoinc_regions): no ID twice, every save stored in both regions, each region on its own
    subsequence, each writer's IDs increasing."""
    require("autoinc_regions")
    run.run({**options, "autoinc_regions": REGIONS})
    check_no_damage(run)
    check_increasing(run)
    for region in REGIONS:
        ids = sorted(i for worker in run.saves(region) for i, _ in worker)
        residue = {(i - 1) % len(REGIONS) for i in ids}
        assert residue == {REGIONS.index(region)}, f"{region}: IDs off its subsequence"


def test_scheme_1_gapless_is_exactly_each_regions_subsequence(run):
    """Scheme 1 in gapless mode: region i of 2 hands out exactly 1 + i + 2k for k = 0..n-1, no hole."""
    require("autoinc_regions")
    run.run({"autoinc_gapless": True, "autoinc_regions": REGIONS})
    check_no_damage(run)
    check_increasing(run)
    for region in REGIONS:
        ids = sorted(i for worker in run.saves(region) for i, _ in worker)
        assert ids == subsequence(region, PER_REGION * COUNT)


def test_scheme_2_home_region_gapless_is_one_sequence(run, global_double):
    """Scheme 2 (Meta.autoinc_home_region/_home_host), gapless: both regions' saves are exactly 1..N, each stored
    in both regions."""
    require("autoinc_home_region", "autoinc_home_host")
    run.run({"autoinc_gapless": True, "autoinc_home_region": A, "autoinc_home_host": global_double.url(A)})
    saves = check_no_damage(run)
    check_increasing(run)
    assert sorted(i for i, _ in saves) == list(range(1, len(saves) + 1))


def test_scheme_1_counter_item_per_region(run, global_double):
    """Scheme 1 keeps one counter item per region, ``<key>@<region>``, replicated to both regions."""
    require("autoinc_regions")
    for region in REGIONS:
        model = build_model(run.table, run.counter_table, global_double.meta(region),
                            {"autoinc_key": "item", "autoinc_regions": REGIONS})
        model(owner=region).save()
    global_double.settle()
    for region in REGIONS:
        keys = sorted(item["NextKey"]["S"] for item in global_double.items(region, run.counter_table))
        assert keys == [f"item@{r}" for r in sorted(REGIONS)]
    assert run.stored(A) == {1: A, 2: B} == run.stored(B)


@pytest.mark.parametrize("options", [
    pytest.param({"autoinc_gapless": False}, id="fast"),
    pytest.param({"autoinc_block": 10}, id="block"),
])
def test_scheme_2_home_region_no_id_twice(run, global_double, options):
    """Scheme 2 in fast and block mode (counter requests to the home region, items put locally): no ID twice,
    every save stored in both regions, each writer's IDs increasing."""
    require("autoinc_home_region", "autoinc_home_host")
    run.run({**options, "autoinc_home_region": A, "autoinc_home_host": global_double.url(A)})
    check_no_damage(run)
    check_increasing(run)
