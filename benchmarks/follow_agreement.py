#!/usr/bin/env python3
"""Do ``follow`` and ``filter`` agree? Corpus logs replayed into a followed file at a CI runner's pace.

Usage:
    python benchmarks/follow_agreement.py [CORPUS] [--cases 60] [--seed 1] [--speed 1] [--jobs 3]
                                          [--max-seconds 20] [--gap-cap 1] [--lines-per-second 40]

A seeded sample of ``--cases`` labelled logs, stratified by kind (each kind its share of the
corpus, at least one), is replayed. For each log a writer appends its lines to a file that
``streamfilter follow FILE --format jsonl --query Q`` (Q the case's own query) follows from an
empty start, at this pace:

* lines that carry a time (GitHub Actions' ``2023-01-01T12:00:00.1234567Z `` prefix, any ISO 8601
  date and time at a line's start, after colour codes; Travis's ``travis_time:end:...,finish=NS``
  markers) are written at the gaps between those times; a line without one goes with the line
  before it (one write, a burst). Each gap is capped at ``--gap-cap`` seconds;
* a log with fewer than 10 such lines is written in bursts of 1 to 20 lines (seeded), at
  ``--lines-per-second`` on average;
* then the whole schedule is scaled down, if need be, so the log takes at most ``--max-seconds``,
  and divided by ``--speed``.

When the writer is done, the follower is left until its output has not grown for
``--quiet-seconds`` (1 s), then sent SIGINT, as a user ends it: it decides and writes what it
holds (``StreamFilter.flush``, the tail rule included) and exits. ``streamfilter filter --format
jsonl --query Q`` runs on the same bytes, and both outputs are scored as
``../shared/eval/evaluate.py`` scores them (its ``account``: recall of labelled lines in KEEP runs,
any of ``keep_alternatives``; the runs tile lines 1..N and KEEP text is verbatim). Printed: mean
recall and full-recall share of each, their ratio, the lines whose decision differs, and the
command that reruns it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from quality import KINDS, labelled  # noqa: E402

# a time at a line's start (after colour codes, a BOM or "[")
_STAMP = re.compile(
    rb"^(?:\xef\xbb\xbf)?(?:\x1b\[[0-9;]*[A-Za-z])*\[?(\d{4}-\d\d-\d\d)[T ](\d\d):(\d\d):(\d\d(?:[.,]\d+)?)"
)
_TRAVIS = re.compile(rb"travis_time:end:[^:]*:start=\d+,finish=(\d+)")
MIN_STAMPED = 10  # fewer timed lines than this: the steady pace


def evaluator(corpus: Path) -> ModuleType:
    """``evaluate.py`` beside the corpus (``../eval``), imported: the scorer's own accounting."""
    path = corpus.parent / "eval" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("evaluate", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"no scorer at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample(corpus: Path, n: int, seed: int) -> list[Path]:
    """``n`` case JSON paths, each kind its share of the corpus (at least one), seeded."""
    by_kind: dict[str, list[Path]] = defaultdict(list)
    for meta in sorted(corpus.glob("*.json")):
        if meta.with_suffix(".log").exists():
            by_kind[json.loads(meta.read_text()).get("kind", "other")].append(meta)
    rng = random.Random(seed)
    total = sum(len(v) for v in by_kind.values())
    chosen: list[Path] = []
    for kind in (*KINDS, *sorted(set(by_kind) - set(KINDS))):
        cases = by_kind.get(kind, [])
        rng.shuffle(cases)
        chosen += cases[: max(1, round(n * len(cases) / total))] if cases else []
    rng.shuffle(chosen)
    return sorted(chosen[:n])


def stamp(line: bytes) -> float | None:
    """The time a line carries, in seconds (of its day; a date change is not looked at), or None."""
    m = _STAMP.match(line)
    if m:
        return int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4).replace(b",", b"."))
    t = _TRAVIS.search(line)
    return int(t.group(1)) / 1e9 if t else None


def schedule(lines: list[bytes], args: argparse.Namespace, rng: random.Random) -> list[tuple[float, bytes]]:
    """``(seconds after the start, bytes)`` writes of ``lines`` at a CI runner's pace (module docstring)."""
    stamps = [stamp(line) for line in lines]
    writes: list[tuple[float, bytes]] = []
    if sum(s is not None for s in stamps) >= MIN_STAMPED:
        at, last = 0.0, None
        for line, s in zip(lines, stamps, strict=True):
            if s is not None:
                if last is not None and writes:
                    at += min(max(0.0, s - last), args.gap_cap)
                last = s
            if writes and writes[-1][0] == at:
                writes[-1] = (at, writes[-1][1] + line)
            else:
                writes.append((at, line))
    else:
        at, i = 0.0, 0
        while i < len(lines):
            k = rng.randint(1, 20)
            writes.append((at, b"".join(lines[i : i + k])))
            at += k / args.lines_per_second
            i += k
    span = writes[-1][0] if writes else 0.0
    scale = (min(1.0, args.max_seconds / span) if span > 0 else 1.0) / args.speed
    return [(t * scale, data) for t, data in writes]


def kept_of(events: list[dict[str, Any]], ev: ModuleType, lines: list[bytes]) -> tuple[set[int], list[str]]:
    """Kept line numbers and accounting faults of JSONL ``events``; the rest of a line let out early
    (``"rest": true``) is joined to the run that let its start out."""
    runs: list[dict[str, Any]] = []
    for e in events:
        if e.get("event") not in ("keep", "drop"):
            continue
        if e.get("rest") and runs:
            prev = runs[-1]
            if e["event"] == "keep":
                prev["event"] = "keep"  # (a line is kept if any of it is)
            prev["text"] = prev.get("text", "") + e.get("text", "")
            continue
        runs.append(dict(e))
    for run in runs:  # a kept piece's text is its lines whole again once its rest is joined
        if run["event"] == "keep" and "text" not in run:
            run["text"] = b"".join(lines[run["first_line"] - 1 : run["last_line"]]).decode("utf-8", "replace")
    kept, faults = ev.account(runs, lines)
    return kept, faults


def text_bytes(events: list[dict[str, Any]]) -> int:
    """Bytes of the same runs in the text format: KEEP runs' bytes, a summary line with its ref for
    each DROP run (the first ref's note left out: both outputs have it once)."""
    total = 0
    for e in events:
        if e.get("event") == "keep":
            total += e["end_byte"] - e["start_byte"]
        elif e.get("event") == "drop" and e.get("summary"):
            ref = f"; ref {e['ref']}]" if e.get("ref") else "]"
            total += len((e["summary"][:-1] + ref).encode("utf-8", "surrogateescape")) + 1
    return total


def replay(meta: Path, args: argparse.Namespace, ev: ModuleType) -> dict[str, Any]:
    """One case: follow's and filter's kept lines, recall and agreement."""
    case = json.loads(meta.read_text())
    data = meta.with_suffix(".log").read_bytes()
    lines = ev.split_lines(data)
    query = case["query"]
    rng = random.Random(f"{args.seed}:{meta.stem}")
    writes = schedule(lines, args, rng)
    with tempfile.TemporaryDirectory() as tmp:
        log, out = Path(tmp) / f"{meta.stem}.log", Path(tmp) / "out.jsonl"
        log.write_bytes(b"")
        with out.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "streamfilter", "follow", str(log), "--format", "jsonl", "--query", query],
                stdout=sink,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
            )
            time.sleep(1.0)  # start-up
            start = time.monotonic()
            with log.open("ab", buffering=0) as f:
                for at, chunk in writes:
                    delay = start + at - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    f.write(chunk)
            written = time.monotonic() - start
            size, still = -1, time.monotonic()
            while time.monotonic() - still < args.quiet_seconds:
                time.sleep(0.05)
                now = out.stat().st_size
                if now != size:
                    size, still = now, time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        follow_events = [json.loads(x) for x in out.read_bytes().splitlines() if x.strip()]
    argv = ["filter", "--format", "jsonl", "--query", query, str(meta.with_suffix(".log"))]
    batch = subprocess.run(
        [sys.executable, "-m", "streamfilter", *argv],
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    filter_events = [json.loads(x) for x in batch.stdout.splitlines() if x.strip()]
    n = len(lines)
    choices = [labelled(case["keep"], n)] + [labelled([r], n) for r in case.get("keep_alternatives", [])]
    row: dict[str, Any] = {"case": meta.stem, "kind": case.get("kind", "other"), "lines": n, "seconds": written}
    for name, events in (("filter", filter_events), ("follow", follow_events)):
        kept, faults = kept_of(events, ev, lines)
        row[name] = {
            "recall": ev.best_recall(choices, kept),
            "full": any(w <= kept for w in choices),
            "kept": kept,
            "bytes": text_bytes(events),
            "faults": faults[:3],
        }
    row["only_filter"] = len(row["filter"]["kept"] - row["follow"]["kept"])
    row["only_follow"] = len(row["follow"]["kept"] - row["filter"]["kept"])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--cases", type=int, default=60, help="logs in the sample")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", type=float, default=1.0, help="replay this many times faster")
    parser.add_argument("--jobs", type=int, default=3, help="logs replayed at once (at most 4)")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="longest replay of one log")
    parser.add_argument("--gap-cap", type=float, default=1.0, help="longest gap between two timed lines (s)")
    parser.add_argument("--lines-per-second", type=float, default=40.0, help="pace of logs without times")
    parser.add_argument("--quiet-seconds", type=float, default=1.0, help="follower quiet this long: SIGINT")
    parser.add_argument("--misses", type=int, default=0, help="print the N cases follow loses most on")
    parser.add_argument("--only", action="append", default=[], help="replay only the sampled cases whose name has this")
    args = parser.parse_args()
    ev = evaluator(args.corpus)
    cases = sample(args.corpus, args.cases, args.seed)
    if args.only:
        cases = [c for c in cases if any(o in c.stem for o in args.only)]
    jobs = max(1, min(4, args.jobs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        rows = list(pool.map(lambda m: replay(m, args, ev), cases))
    faults = [(r["case"], name, r[name]["faults"]) for r in rows for name in ("filter", "follow") if r[name]["faults"]]
    mean = {n: statistics.mean(r[n]["recall"] for r in rows) for n in ("filter", "follow")}
    full = {n: statistics.mean(float(r[n]["full"]) for r in rows) for n in ("filter", "follow")}
    kept = {n: sum(len(r[n]["kept"]) for r in rows) for n in ("filter", "follow")}
    total = sum(r["lines"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    print(f"{len(rows)} cases (seed {args.seed}), {total} lines, replayed in {seconds:.0f} s in all")
    out = {n: [r[n]["bytes"] for r in rows] for n in ("filter", "follow")}
    print("| | mean recall | full-recall share | kept lines | output bytes (text) | median output bytes |")
    print("|---|---|---|---|---|---|")
    for n in ("filter", "follow"):
        print(f"| {n} | {mean[n]:.4f} | {full[n]:.3f} | {kept[n]} | {sum(out[n])} | {statistics.median(out[n]):.0f} |")
    ratio = mean["follow"] / mean["filter"] if mean["filter"] else 1.0
    bytes_ratio = sum(out["follow"]) / max(1, sum(out["filter"]))
    full_ratio = full["follow"] / max(full["filter"], 1e-9)
    print(f"| follow / filter | {ratio:.4f} | {full_ratio:.3f} | | {bytes_ratio:.3f} | |")
    only_filter, only_follow = sum(r["only_filter"] for r in rows), sum(r["only_follow"] for r in rows)
    differ = sum(1 for r in rows if r["only_filter"] or r["only_follow"])
    print(f"lines kept by filter only: {only_filter}; by follow only: {only_follow}; cases that differ: {differ}")
    print(f"accounting faults: {len(faults)} {faults[:3]}")
    for r in sorted(rows, key=lambda r: r["follow"]["recall"] - r["filter"]["recall"])[: args.misses]:
        lost = sorted(r["filter"]["kept"] - r["follow"]["kept"])[:12]
        print(f"{r['filter']['recall']:.2f} -> {r['follow']['recall']:.2f} {r['case']} filter-only lines {lost}")
    print("rerun: python benchmarks/follow_agreement.py " + " ".join(sys.argv[1:]))
    return 0 if not faults else 1


if __name__ == "__main__":
    sys.exit(main())
