"""Paired, interleaved benchmark rows of the gapless queue with and without each of its features (issue 31).

Usage (from the repository root, DynamoDB Local installed as for the tests)::

    python benchmarks/queue_pairs.py [--rounds 5] [--items 40] [--procs 8] [--variants a,b,...]
                                     [--slow-variants a,b] [--against PATH] [--out FILE]

It starts DynamoDB Local once, warms it up, and runs ``--rounds`` rounds. Each round runs, in a shuffled
order, one gapless row of ``--procs`` processes (``--items`` saves each) with the library as it is (the
baseline) and one such row per variant (``benchmarks/queue_variants.py``: one queue feature turned off in
the writer processes); and, for the variants that concern slow writers (``--slow-variants``), the
``throughput.py --slow`` row shape (3 processes, the last one 0.3 s slower per request) with and without.
A variant's pair in a round is its row and that round's baseline row of the same shape. ``--against PATH``
adds a variant whose writers import the library from another checkout (PATH holds ``pynamodb_autoinc/``).

Per row: items/s, requests per item, slowest/fastest writer, failed saves, p99 and max of one save (and the
slow writer's items/s). Per variant: the median over its pairs of (baseline / variant) items/s and of
(baseline / variant) requests per item, and a verdict: the feature pays if it gives at least 10% more items/s
or 20% fewer requests per item, or if without it fairness breaks (a failed save, the slowest writer below half
the fastest, the slow writer not served). Every row is appended to ``FILE.jsonl`` as it ends; the markdown
report goes to stdout and to ``--out``. A measuring script: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import throughput as tp  # noqa: E402
from queue_variants import SLOW_VARIANTS, VARIANTS, known  # noqa: E402

BASELINE = "baseline"
AGAINST = "against"
SLOW_SHAPE = (3, 1)  # processes, of which slow


def figures(row: tp.Row) -> Dict[str, Any]:
    """What the report shows of one row."""
    if row.unavailable:
        return {"unavailable": row.unavailable}
    rates: List[float] = row.writer_rates
    spread = min(rates) / max(rates) if rates and max(rates) > 0 else None
    return {
        "items": row.items,
        "items_s": row.rate,
        "req_item": row.requests / row.items if row.items else None,
        "slowest": min(rates) if rates else None,
        "fastest": max(rates) if rates else None,
        "spread": spread,
        "slow_writer": row.slow_rates[0] if row.slow_rates else None,
        "failed": row.errors,
        "p99_ms": 1000 * (tp.percentile(row.latencies, 99) or 0.0),
        "max_ms": 1000 * (row.latencies[-1] if row.latencies else 0.0),
        "duplicates": row.duplicates,
        "gaps": row.gaps,
        "lost": row.lost,
    }


def run_one(ctx: Any, url: str, name: str, slow: bool, items: int, procs: int, against: Optional[str]) -> tp.Row:
    """One gapless row: the baseline, a variant (``name``) or the other checkout."""
    without = "" if name in (BASELINE, AGAINST) else name
    shape_procs, shape_slow = SLOW_SHAPE if slow else (procs, 0)
    if name == AGAINST:
        os.environ["AUTOINC_BENCH_LIBRARY"] = str(against)  # the spawned writers inherit it
    try:
        return tp.run_row(ctx, tp.BY_KEY["gapless"], "local", url, shape_procs, items, 1, shape_slow, without)
    finally:
        os.environ.pop("AUTOINC_BENCH_LIBRARY", None)


def _median(values: List[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def _f(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _fair(r: Dict[str, Any], slow: bool) -> List[str]:
    """How a row breaks fairness (nothing: it does not), but for the writer spread, which one row of 40 items
    per writer measures too roughly: the verdict takes the median of a variant's spreads (see :func:`report`)."""
    if "unavailable" in r:
        return [r["unavailable"]]
    broken = []
    if r["failed"]:
        broken.append(f"{r['failed']} failed")
    if slow and not r["slow_writer"]:
        broken.append("slow writer not served")
    if r["duplicates"] or r["gaps"] or r["lost"]:
        broken.append(f"dup {r['duplicates']} gaps {r['gaps']} lost {r['lost']}")
    return broken


def report(records: List[Dict[str, Any]], variants: Sequence[str], slow_variants: Sequence[str]) -> List[str]:
    """The markdown: each variant's pairs, their medians, and its verdict; then the verdict table."""
    by: Dict[Tuple[int, str, bool], Dict[str, Any]] = {(r["round"], r["name"], r["slow"]): r["figures"]
                                                        for r in records}
    rounds = sorted({r["round"] for r in records})
    out: List[str] = []
    verdicts: List[str] = ["| variant (feature off) | pairs | items/s base/without (median) | req/item "
                           "base/without (median) | slowest/fastest without (median) | fairness without it "
                           "| verdict |", "|---|---|---|---|---|---|---|"]
    columns = ("| round | shape | items/s base | items/s without | ratio | req/item base | req/item without | ratio "
               "| slowest/fastest base | without | slow writer items/s base | without | failed base | without "
               "| p99 ms base | without | max ms base | without |")
    base_broken = [(k, _fair(f, k[2])) for k, f in by.items() if k[1] == BASELINE and _fair(f, k[2])]
    base_spread = _median([f["spread"] for k, f in by.items() if k[1] == BASELINE and not k[2] and f.get("spread")])
    for name in variants:
        shapes = [False, True] if name in slow_variants else [False]
        lines = [f"#### without {name}", "", columns, "|" + "---|" * 18]
        speed: List[float] = []
        requests: List[float] = []
        spreads: List[float] = []
        broken: List[str] = []
        for slow in shapes:
            for n in rounds:
                base, var = by.get((n, BASELINE, slow)), by.get((n, name, slow))
                if base is None or var is None:
                    continue
                broken += [f"round {n}{' slow' if slow else ''}: {b}" for b in _fair(var, slow)]
                if "unavailable" in base or "unavailable" in var:
                    lines.append(f"| {n} | {'3p/1slow' if slow else '8p'} | {base.get('unavailable', '')} | "
                                 f"{var.get('unavailable', '')} |" + " |" * 14)
                    continue
                s_ratio = base["items_s"] / var["items_s"] if var["items_s"] else None
                r_ratio = base["req_item"] / var["req_item"] if base["req_item"] and var["req_item"] else None
                if not slow:
                    if var["spread"] is not None:
                        spreads.append(var["spread"])
                    if s_ratio is not None:
                        speed.append(s_ratio)
                    if r_ratio is not None:
                        requests.append(r_ratio)
                lines.append(
                    f"| {n} | {'3p/1slow' if slow else '8p'} | {base['items_s']:.1f} | {var['items_s']:.1f} | "
                    f"{_f(s_ratio)} | {_f(base['req_item'])} | {_f(var['req_item'])} | {_f(r_ratio)} | "
                    f"{_f(base['spread'])} | {_f(var['spread'])} | {_f(base['slow_writer'], 1)} | "
                    f"{_f(var['slow_writer'], 1)} | {base['failed']} | {var['failed']} | {base['p99_ms']:.0f} | "
                    f"{var['p99_ms']:.0f} | {base['max_ms']:.0f} | {var['max_ms']:.0f} |")
        m_speed, m_req, m_spread = _median(speed), _median(requests), _median(spreads)
        if m_spread is not None and m_spread < 0.5:
            broken.append(f"median slowest/fastest {m_spread:.2f}")
        pays = []
        if m_speed is not None and m_speed >= 1.10:
            pays.append(f"{(m_speed - 1) * 100:.0f}% more items/s")
        if m_req is not None and m_req <= 0.80:
            pays.append(f"{(1 - m_req) * 100:.0f}% fewer requests/item")
        if broken:
            pays.append("fairness breaks without it")
        verdict = "keep (" + "; ".join(pays) + ")" if pays else "remove"
        lines += ["", f"Median over {len(speed)} pairs (8p): items/s base/without {_f(m_speed)}, req/item "
                      f"base/without {_f(m_req)}, slowest/fastest without {_f(m_spread)} (baseline "
                      f"{_f(base_spread)}). Fairness without it: {'; '.join(broken) or 'kept'}. "
                      f"Verdict: **{verdict}**.", ""]
        out += lines
        verdicts.append(f"| {name} | {len(speed)} | {_f(m_speed)} | {_f(m_req)} | {_f(m_spread)} "
                        f"| {'; '.join(broken) or 'kept'} "
                        f"| {verdict} |")
    head = [*verdicts, "", f"Baseline slowest/fastest (median of its 8p rows): {_f(base_spread)}.", ""]
    if base_broken:
        head.append("Baseline rows that broke fairness: " + "; ".join(
            f"round {k[0]}{' slow' if k[2] else ''}: {', '.join(b)}" for k, b in base_broken))
        head.append("")
    return head + out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--items", type=int, default=40, help="saves per writer and row (default 40)")
    parser.add_argument("--procs", type=int, default=8, help="writer processes of a row (default 8)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated, of queue_variants.py; a+b turns off both in one row")
    parser.add_argument("--slow-variants", default=",".join(SLOW_VARIANTS),
                        help="variants that also get the --slow row shape (3 processes, one slow)")
    parser.add_argument("--against", default="", help="a checkout whose pynamodb_autoinc/ is another variant")
    parser.add_argument("--warmup", type=int, default=30, help="untimed gapless saves before the rounds")
    parser.add_argument("--seed", type=int, default=None, help="of the shuffles (default: random)")
    parser.add_argument("--out", default="", help="markdown report file (default: stdout only)")
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    args.slow_variants = [v for v in args.slow_variants.split(",") if v]
    if not all(known(v) for v in args.variants) or set(args.slow_variants) - set(args.variants) - {AGAINST}:
        parser.error(f"variants are some of: {', '.join(VARIANTS)} (or several joined by +)")
    if args.against:
        if not (Path(args.against) / "pynamodb_autoinc").is_dir():
            parser.error("--against takes a directory holding pynamodb_autoinc/")
        args.variants.append(AGAINST)
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    shuffler = random.Random(seed)
    ctx = multiprocessing.get_context("spawn")
    raw = Path(args.out + ".jsonl") if args.out else Path(f"/tmp/queue_pairs-{os.getpid()}.jsonl")
    loads = [tp.load_average()]
    began = time.monotonic()
    header = [tp.machine_line(), f"Command: `{tp.command_line()}` (shuffle seed {seed})"]
    tp.log(f"{header[0]}; library {Path(sys.modules['pynamodb_autoinc'].__file__ or '?').parent}; raw rows: {raw}")
    records: List[Dict[str, Any]] = []
    server = tp.Server("local")
    server.start()
    try:
        tp.warm_up("local", server.url, [tp.BY_KEY["gapless"]], args.warmup)
        for n in range(1, args.rounds + 1):
            rows = [(name, False) for name in [BASELINE, *args.variants]]
            rows += [(name, True) for name in [BASELINE, *args.slow_variants]] if args.slow_variants else []
            shuffler.shuffle(rows)
            for name, slow in rows:
                tp.log(f"round {n}/{args.rounds}: {name}{' (slow shape)' if slow else ''} ...")
                try:
                    row = run_one(ctx, server.url, name, slow, args.items, args.procs, args.against)
                    result = figures(row)
                except Exception as exc:  # keep the other rows
                    tp.log(traceback.format_exc())
                    result = {"unavailable": f"failed: {str(exc).splitlines()[0][:80]}"}
                record = {"round": n, "name": name, "slow": slow, "figures": result, "load": tp.load_average()}
                records.append(record)
                with raw.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                tp.log(f"    {json.dumps(result)}")
    finally:
        server.stop()
    loads.append(tp.load_average())
    text = "\n".join([
        *header,
        f"Machine load (1-minute load average) at the start and the end: {loads[0]}, {loads[1]}; "
        f"{args.rounds} rounds in {time.monotonic() - began:.0f} s.",
        "",
        *report(records, args.variants, args.slow_variants),
    ])
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
