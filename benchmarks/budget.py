#!/usr/bin/env python3
"""Recall under ``--budget-tokens``, through the CLI, beside the tail baseline at the same budget.

Usage:
    python benchmarks/budget.py [CORPUS] [--budgets 500 1000 2000] [--query Q] [--jobs 2]
                                [--tokenizer NODE_MODULES] [--write benchmarks/quality.md]

For each budget it runs ``../shared/eval/evaluate.py`` with
``streamfilter filter --budget-tokens N`` and prints mean recall, full-recall share,
median out_ratio and the tail baseline's mean recall at the same byte budget.

``--tokenizer DIR``: a ``node_modules`` folder holding the npm package ``gpt-tokenizer``
(``npm install gpt-tokenizer``); the text outputs are then counted in o200k tokens and the
estimate ``budget.estimate_tokens`` is compared with the count (median and 10th/90th
percentiles of estimate / count - 1, and the shares of outputs over the budget and over it by more
than 10%).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALUATE = ROOT.parent / "shared" / "eval" / "evaluate.py"
CLI = Path(sys.executable).parent / "streamfilter"
sys.path.insert(0, str(ROOT))

from streamfilter.core.budget import estimate_tokens  # noqa: E402

COUNT_JS = """
const { encode } = require(process.argv[2] + '/gpt-tokenizer/cjs/encoding/o200k_base.js');
const fs = require('fs');
for (const f of process.argv.slice(3)) {
  const text = fs.readFileSync(f, 'utf8');
  console.log(JSON.stringify([f, encode(text, {disallowedSpecial: new Set()}).length]));
}
"""


def evaluate(corpus: Path, budget: int, query: str | None, jobs: int) -> dict[str, float]:
    cmd = f"{CLI} filter --budget-tokens {budget} --format {{format}} --query {{query}} {{log}}"
    argv = [sys.executable, str(EVALUATE), str(corpus), "--cmd", cmd, "--jobs", str(jobs), "--quiet"]
    if query:
        argv += ["--query", query]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    summary: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return summary


def token_error(corpus: Path, budget: int, query: str | None, modules: Path, jobs: int) -> dict[str, float]:
    """Estimate vs o200k count on every case's text output at ``budget``."""
    logs = sorted(corpus.glob("*.log"))
    with tempfile.TemporaryDirectory() as tmp:

        def one(log: Path) -> Path:
            meta = json.loads(log.with_suffix(".json").read_text())
            out = Path(tmp) / f"{log.stem}.txt"
            argv = [str(CLI), "filter", "--budget-tokens", str(budget), "--query", query or meta["query"], str(log)]
            out.write_bytes(subprocess.run(argv, capture_output=True, check=True).stdout)
            return out

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            outs = list(pool.map(one, logs))
        script = Path(tmp) / "count.js"
        script.write_text(COUNT_JS)
        counted = subprocess.run(
            ["node", str(script), str(modules), *map(str, outs)], capture_output=True, text=True, check=True
        ).stdout
        errors, over, far_over = [], 0, 0
        for line in counted.splitlines():
            path, tokens = json.loads(line)
            estimate = estimate_tokens(Path(path).read_bytes())
            if tokens:
                errors.append(estimate / tokens - 1)
            over += tokens > budget
            far_over += tokens > 1.1 * budget
    q = statistics.quantiles(errors, n=10)
    return {
        "median_error": statistics.median(errors),
        "p10": q[0],
        "p90": q[-1],
        "over_budget": over / len(outs),
        "over_by_10": far_over / len(outs),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--query", help="replace every case's own query")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--tokenizer", type=Path, metavar="NODE_MODULES", help="count o200k tokens with node")
    parser.add_argument("--write", type=Path, help="append the table to this Markdown file")
    args = parser.parse_args()
    if args.tokenizer and not shutil.which("node"):
        parser.error("--tokenizer needs node on PATH")
    header = "| budget (tokens) | mean recall | full-recall share | median out_ratio | tail mean recall, same bytes |"
    lines = [header, "|---|---|---|---|---|"]
    errors = []
    for budget in args.budgets:
        s = evaluate(args.corpus, budget, args.query, args.jobs)
        lines.append(
            f"| {budget} | {s['mean_recall']:.4f} | {s['full_recall_share']:.4f} | {s['median_out_ratio']:.4f} "
            f"| {s['tail_mean_recall_same_budget']:.4f} |"
        )
        print(lines[-1], flush=True)
        if s["failed_to_run"] or s["not_accounted"]:
            print(f"budget {budget}: {s['failed_to_run']} failed, {s['not_accounted']} not accounted", file=sys.stderr)
        if args.tokenizer:
            e = token_error(args.corpus, budget, args.query, args.tokenizer, args.jobs)
            errors.append(
                f"| {budget} | {e['median_error']:+.3f} | {e['p10']:+.3f} | {e['p90']:+.3f} | {e['over_budget']:.3f} "
                f"| {e['over_by_10']:.3f} |"
            )
            print(errors[-1], flush=True)
    command = "python benchmarks/budget.py " + " ".join(sys.argv[1:])
    text = [
        f"\n## Token budget ({datetime.date.today()}, query: {args.query or 'each case its own'})\n",
        f"`{command}`\n",
        *lines,
    ]
    if errors:
        text += [
            "\nThe estimate (`budget.estimate_tokens`) against o200k tokens of each output (estimate / count - 1):\n",
            "| budget | median | 10th percentile | 90th percentile | share over the budget | share over it by >10% |",
            "|---|---|---|---|---|---|",
            *errors,
        ]
    print("\n".join(text))
    if args.write:
        with args.write.open("a") as f:
            f.write("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
