"""Field cases from ../shared/cases (one-shot ``streamfilter filter`` only), run through the real CLI.

Each test names its case folder; the case's ``expected.md`` says what must happen. The cases
predate our always-keep rules: ``--tail 30`` and ``--head 3`` keep every line of a file shorter
than 34 lines, so where a case is about segmentation or scoring of a small file the test turns
them off (``--head 0 --tail 0``); everything else runs with the defaults the case names.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CASES, need, run_cli

# the always-keep rules, off: decisions come from windows, scores and signatures only
NO_HEAD_TAIL = ("--head", "0", "--tail", "0")

SUMMARY = re.compile(
    rb"\[streamfilter: dropped (?:lines (\d+)-(\d+)|line (\d+)) \((\d+) lines?, [^)]*\)(?:: [^\n]*)?\]\n"
)


# -- helpers -------------------------------------------------------------------------------------


def case_file(case: str, name: str = "input.log") -> Path:
    return need(CASES / case / name)


def generate_input(case: str, tmp_path: Path) -> Path:
    """Run the case's ``make_input.py`` in a copy under ``tmp_path``; return the input it wrote."""
    script = need(CASES / case / "make_input.py")
    work = tmp_path / case
    work.mkdir()
    shutil.copy(script, work / "make_input.py")
    subprocess.run([sys.executable, "make_input.py"], cwd=work, check=True, timeout=60)
    out = work / "input.log"
    assert out.is_file()
    return out


def split_lines(data: bytes) -> list[bytes]:
    """The input's lines as the CLI numbers them: split on ``\\n`` only, terminators kept."""
    parts = data.split(b"\n")
    tail = parts.pop()
    lines = [p + b"\n" for p in parts]
    if tail:
        lines.append(tail)
    return lines


def assert_clean_exit(proc: subprocess.CompletedProcess[bytes]) -> None:
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    assert b"Traceback" not in proc.stderr


def filter_jsonl(path: Path | None, *args: str, stdin: bytes | None = None) -> list[dict[str, Any]]:
    """Run ``filter --format jsonl ARGS FILE`` (or ``-`` with ``stdin``); return its events."""
    proc = run_cli("filter", "--format", "jsonl", *args, str(path) if path else "-", stdin=stdin)
    assert_clean_exit(proc)
    return [json.loads(x) for x in proc.stdout.splitlines()]


def check_runs(data: bytes, events: list[dict[str, Any]]) -> tuple[set[int], list[dict[str, Any]]]:
    """Assert the runs tile lines 1..N in order and KEEP text is the input's; return kept lines, runs."""
    lines = split_lines(data)
    assert events and events[-1]["event"] == "end"
    end = events[-1]
    runs = events[:-1]
    expect = 1
    kept: set[int] = set()
    for ev in runs:
        assert ev["event"] in ("keep", "drop"), ev
        first, last = ev["first_line"], ev["last_line"]
        assert first == expect, f"gap or overlap before line {first}: {ev}"
        assert last >= first
        assert ev["lines"] == last - first + 1
        chunk = b"".join(lines[first - 1 : last])
        assert ev["end_byte"] - ev["start_byte"] == len(chunk)
        if ev["event"] == "keep":
            kept.update(range(first, last + 1))
            assert ev["text"] == chunk.decode("utf-8", "replace")
        else:
            assert ev["bytes"] == len(chunk)
            where = f"line {first}" if first == last else f"lines {first}-{last}"
            assert ev["summary"].startswith(f"[streamfilter: dropped {where} ")
        expect = last + 1
    assert expect == len(lines) + 1, "the runs do not reach the last line"
    assert end["lines"] == len(lines) and end["bytes"] == len(data)
    assert end["kept_lines"] + end["dropped_lines"] == len(lines)
    assert end["kept_lines"] == len(kept)
    return kept, runs


def run_of(runs: list[dict[str, Any]], line: int) -> dict[str, Any]:
    """The run that covers ``line``."""
    return next(r for r in runs if r["first_line"] <= line <= r["last_line"])


def check_text(data: bytes, out: bytes) -> tuple[set[int], list[bytes]]:
    """Walk ``--format text`` output against the input.

    Every output line is either the next input line, byte for byte, or a DROP summary whose range
    starts at the next input line; together they reach the last line. Returns (kept line numbers,
    summary lines).
    """
    lines = split_lines(data)
    pos = 0
    nxt = 1
    kept: set[int] = set()
    summaries: list[bytes] = []
    while pos < len(out):
        m = SUMMARY.match(out, pos)
        if m and _span(m)[0] == nxt:
            (first, last), count = _span(m), int(m.group(4))
            assert last >= first and count == last - first + 1, m.group(0)
            summaries.append(m.group(0))
            nxt = last + 1
            pos = m.end()
            continue
        assert nxt <= len(lines), f"output goes on past the last input line at byte {pos}"
        line = lines[nxt - 1]
        assert out[pos : pos + len(line)] == line, f"output at byte {pos} is not input line {nxt} verbatim"
        kept.add(nxt)
        nxt += 1
        pos += len(line)
    assert nxt == len(lines) + 1, f"text output stops before input line {nxt}"
    return kept, summaries


def summary_range(summary: bytes) -> tuple[int, int]:
    """The (first, last) line range of a text DROP summary."""
    m = SUMMARY.fullmatch(summary)
    assert m, summary
    return _span(m)


def _span(m: re.Match[bytes]) -> tuple[int, int]:
    """(first, last) of a SUMMARY match: "lines a-b" or "line a"."""
    if m.group(3) is not None:
        return int(m.group(3)), int(m.group(3))
    return int(m.group(1)), int(m.group(2))


def warnings_of(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    """The structured (JSON) log lines on stderr."""
    return [json.loads(x) for x in proc.stderr.splitlines() if x.strip()]


# -- B08 -----------------------------------------------------------------------------------------

B08_QUERY = "quota exceeded"


def test_B08_long_line_does_not_hide_following_lines(tmp_path: Path) -> None:
    log = generate_input("B08", tmp_path)
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 4 and len(lines[1]) > 2 * 1024 * 1024

    kept, runs = check_runs(data, filter_jsonl(log, "--query", B08_QUERY, *NO_HEAD_TAIL))
    assert 3 in kept, "the ERROR line after the 2 MiB line is not kept"
    # line 2 is not kept here, so it must be counted in a DROP run with its size and line number
    drop = run_of(runs, 2)
    assert drop["event"] == "drop"
    assert drop["bytes"] >= len(lines[1])

    proc = run_cli("filter", "--query", B08_QUERY, *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    text_kept, summaries = check_text(data, proc.stdout)
    assert text_kept == kept
    assert lines[2] in proc.stdout
    (summary,) = [s for s in summaries if summary_range(s)[0] <= 2 <= summary_range(s)[1]]
    assert b"MiB" in summary, summary  # its byte size, not just a line count
    assert len(proc.stdout) < 4096

    # one structured warning naming the file, the line number and its byte length
    long_line = [w for w in warnings_of(proc) if w.get("event") == "input.long_line"]
    assert len(long_line) == 1, proc.stderr
    assert long_line[0]["source"] == str(log)
    assert long_line[0]["line"] == 2
    assert long_line[0]["bytes"] in (len(lines[1]), len(lines[1]) - 1)


def test_B08_kept_long_line_is_capped_with_elided_marker(tmp_path: Path) -> None:
    log = generate_input("B08", tmp_path)
    data = log.read_bytes()
    lines = split_lines(data)
    cap = 64 * 1024
    proc = run_cli("filter", "--query", B08_QUERY, "--max-line-bytes", str(cap), str(log))
    assert_clean_exit(proc)
    assert lines[2] in proc.stdout
    # line 2 is either kept up to the cap with an explicit marker, or summarized in a DROP run
    elided = re.search(rb"\[\.\.\. ?\d+ bytes elided\]", proc.stdout)
    dropped = any(_span(m)[0] <= 2 <= _span(m)[1] for m in SUMMARY.finditer(proc.stdout))
    assert elided or dropped, "line 2 is neither capped with an elided marker nor summarized"
    assert len(proc.stdout) <= cap + 4096


# -- B10 -----------------------------------------------------------------------------------------


def test_B10_invalid_utf8_and_nul_bytes() -> None:
    log = case_file("B10")
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 6 and b"\x00" in lines[3] and b"\xff\xfe" in lines[1]

    for query, must_keep in (("FAIL t-sign", 5), ("cert blob", 2)):
        kept, _ = check_runs(data, filter_jsonl(log, "--query", query, *NO_HEAD_TAIL))
        assert must_keep in kept, f"query {query!r}: line {must_keep} is not KEEP"

        proc = run_cli("filter", "--query", query, *NO_HEAD_TAIL, str(log))
        assert_clean_exit(proc)
        # byte-exact: the walk compares raw bytes, so a re-encoded line 2 would fail here
        text_kept, _ = check_text(data, proc.stdout)
        assert text_kept == kept
        if must_keep == 2:
            assert lines[1] in proc.stdout

        # one warning per file (lines 2 and 3 are both invalid), naming the first bad line
        invalid = [w for w in warnings_of(proc) if w.get("event") == "input.invalid_utf8"]
        assert len(invalid) == 1, proc.stderr
        assert invalid[0]["line"] == 2 and invalid[0]["source"] == str(log)
        assert proc.stdout.count(b"input.invalid_utf8") == 0


# -- B11 -----------------------------------------------------------------------------------------


def test_B11_crlf_line_endings_keep_record_boundaries() -> None:
    log = case_file("B11")
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 7 and all(line.endswith(b"\r\n") for line in lines)
    error_record = b"".join(lines[2:5])

    # "denied" alone: the term must match "denied\r\n" (no \r inside terms)
    for query in ("access denied", "denied"):
        kept, runs = check_runs(data, filter_jsonl(log, "--query", query, *NO_HEAD_TAIL))
        assert {3, 4, 5} <= kept, f"query {query!r}: the ERROR record is not KEEP"
        assert run_of(runs, 3) is run_of(runs, 5), "the ERROR record is split across runs"
        # three records: the \r\n lines end them, so INFO starting / INFO retrying are not carried along
        assert 1 not in kept and 7 not in kept, f"query {query!r}: CRLF blank lines did not end a record"

        proc = run_cli("filter", "--query", query, *NO_HEAD_TAIL, str(log))
        assert_clean_exit(proc)
        check_text(data, proc.stdout)
        assert error_record in proc.stdout  # byte for byte, CRLF included

    # control: with a query that matches nothing, the ERROR record is still kept (an ERROR line is a
    # failure signature, whatever the query), and the INFO records around it are still not
    kept, _ = check_runs(data, filter_jsonl(log, "--query", "zzzunrelated", *NO_HEAD_TAIL))
    assert {3, 4, 5} <= kept and not kept & {1, 7}


# -- B13 -----------------------------------------------------------------------------------------

B13_QUERY = "checksum mismatch"


def test_B13_error_after_progress_frames_is_kept() -> None:
    log = case_file("B13")
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 7 and lines[2].count(b"\r") == 100

    kept, runs = check_runs(data, filter_jsonl(log, "--query", B13_QUERY, *NO_HEAD_TAIL))
    assert {6, 7} <= kept, "the ERROR line and its hint are not KEEP"
    assert run_of(runs, 6) is run_of(runs, 7)

    proc = run_cli("filter", "--query", B13_QUERY, *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    assert b"".join(lines[5:7]) in proc.stdout


def test_B13_progress_frames_are_collapsed() -> None:
    log = case_file("B13")
    data = log.read_bytes()
    lines = split_lines(data)

    kept, runs = check_runs(data, filter_jsonl(log, "--query", B13_QUERY, *NO_HEAD_TAIL))
    assert {6, 7} <= kept
    proc = run_cli("filter", "--query", B13_QUERY, *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    out = proc.stdout
    assert b"".join(lines[5:7]) in out

    # the three progress lines: DROP with the frame count, or KEEP reduced to their final frame
    if not kept & {3, 4, 5}:
        summary = run_of(runs, 3)["summary"]
        assert run_of(runs, 5) is run_of(runs, 3)
        assert re.search(r"; 3 progress lines, 300 frames collapsed\): ", summary), summary
    else:
        assert b"Receiving objects: 100% (1200/1200), 3.10 MiB | 9.00 MiB/s, done." in out
        assert re.search(rb"\d+ frames collapsed", out)
    # no intermediate frame anywhere, and the whole output well under 1 KB
    for frame in (b"Receiving objects:  50% (600/1200)", b"Resolving deltas:  50% (400/800)", b"250/500"):
        assert frame not in out
    assert len(out) < 1024, f"{len(out)} bytes of output"


# -- B14 -----------------------------------------------------------------------------------------


def test_B14_blank_lines_inside_one_error_record() -> None:
    log = case_file("B14")
    data = log.read_bytes()
    assert len(split_lines(data)) == 15

    kept, runs = check_runs(data, filter_jsonl(log, "--query", "malformed JSON", *NO_HEAD_TAIL))
    assert [(r["event"], r["first_line"], r["last_line"]) for r in runs] == [
        ("keep", 1, 12),
        ("drop", 13, 15),
    ]
    assert runs[1]["lines"] == 3

    proc = run_cli("filter", "--query", "malformed JSON", *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    text_kept, summaries = check_text(data, proc.stdout)
    assert text_kept == kept == set(range(1, 13))
    assert len(summaries) == 1 and summaries[0].startswith(b"[streamfilter: dropped lines 13-15 (3 lines, ")


# -- B17 -----------------------------------------------------------------------------------------


def test_B17_java_trace_larger_than_a_window(tmp_path: Path) -> None:
    log = generate_input("B17", tmp_path)
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 526
    caused = next(i for i, line in enumerate(lines, 1) if line.startswith(b"Caused by:"))
    more = next(i for i, line in enumerate(lines, 1) if line == b"\t... 480 more\n")
    assert (caused, more) == (504, 525)

    args = ("--query", "deadlock ledger")
    events = filter_jsonl(log, *args)
    kept, runs = check_runs(data, events)
    assert {2, 3} <= kept, "the header or the column-0 exception line is not KEEP"
    assert set(range(caused, more + 1)) <= kept, "the Caused by: line or its frames are not KEEP"
    assert sum(r["lines"] for r in runs) == 526
    for r in runs:
        if r["event"] == "drop":
            where = f"line {r['first_line']}" if r["lines"] == 1 else f"lines {r['first_line']}-{r['last_line']}"
            head = f"[streamfilter: dropped {where} ({r['lines']} line"
            assert r["summary"].startswith(head), r["summary"]

    # the same bytes through stdin: the same runs (only the source name and where refs point differ)
    piped = filter_jsonl(None, *args, stdin=data)

    def strip(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k not in ("source", "ref")} for e in evs]

    assert strip(piped) == strip(events)


# -- B18 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["failed", "failed assertionerror"])
def test_B18_query_term_in_half_the_windows_still_keeps(query: str) -> None:
    log = case_file("B18")
    data = log.read_bytes()
    assert len(split_lines(data)) == 12
    # --context 0 too: the FAILED lines are failure signatures, whose context would keep records 1 and 3
    kept, _ = check_runs(data, filter_jsonl(log, "--query", query, *NO_HEAD_TAIL, "--context", "0"))
    record = {1: {1, 2}, 2: {4, 5, 6}, 3: {8, 9}, 4: {11, 12}}
    assert record[2] <= kept, "record 2 (first failure) is not KEEP"
    assert record[4] <= kept, "record 4 (second failure) is not KEEP"
    assert not record[1] & kept, f"record 1 (passing) is kept: {sorted(record[1] & kept)}"
    assert not record[3] & kept, f"record 3 (passing) is kept: {sorted(record[3] & kept)}"


# -- B20 -----------------------------------------------------------------------------------------


def test_B20_failure_evidence_shares_no_term_with_query() -> None:
    log = case_file("B20")
    data = log.read_bytes()
    assert len(split_lines(data)) == 24

    kept, runs = check_runs(data, filter_jsonl(log, "--query", "failed error", *NO_HEAD_TAIL))
    run = run_of(runs, 2)
    assert run["event"] == "keep" and run["last_line"] >= 16, "lines 2-16 are not one KEEP run"
    assert set(range(20, 25)) <= kept, "the summary record (lines 20-24) is not KEEP"

    proc = run_cli("filter", "--query", "failed error", *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    check_text(data, proc.stdout)
    for evidence in (
        b"\xe2\x97\x8f config loader",
        b'Expected: "https://registry.example.com/"',
        b"Received: undefined",
        b"    > 43 |",
        b"at Object.<anonymous>",
    ):
        assert evidence in proc.stdout


# -- B21 -----------------------------------------------------------------------------------------


def test_B21_hard_failure_is_not_a_benign_summary() -> None:
    log = case_file("B21")
    data = log.read_bytes()
    lines = split_lines(data)
    assert len(lines) == 17

    events = filter_jsonl(log, "--query", "assert failed", *NO_HEAD_TAIL)
    kept, runs = check_runs(data, events)
    for n in (*range(8, 14), 16):
        if n in kept:
            continue
        # the alternative expected.md allows: quoted verbatim in the DROP summary that covers it
        assert lines[n - 1].decode().rstrip("\n") in run_of(runs, n)["summary"], f"line {n} is lost"
    # summaries state mechanical facts only, never an outcome
    for r in runs:
        if r["event"] == "drop":
            assert re.fullmatch(SUMMARY.pattern.decode(), r["summary"] + "\n"), r["summary"]
            assert not re.search(r"(?i)no tests|all passed|success|nothing to run|\bok\b", r["summary"])

    proc = run_cli("filter", "--query", "assert failed", *NO_HEAD_TAIL, str(log))
    assert_clean_exit(proc)
    check_text(data, proc.stdout)
    assert b"E   ModuleNotFoundError: No module named 'weasyprint'" in proc.stdout
    assert b"Interrupted: 1 error during collection" in proc.stdout


# -- B22 -----------------------------------------------------------------------------------------


def test_B22_dropped_lines_accounted_in_lines_with_ranges() -> None:
    # short: all 5 lines verbatim, or each dropped line accounted for by its number
    short = case_file("B22", "short.txt")
    data = short.read_bytes()
    assert len(split_lines(data)) == 5
    query = "contact_precedence default"
    kept, _ = check_runs(data, filter_jsonl(short, "--query", query))
    proc = run_cli("filter", "--query", query, str(short))
    assert_clean_exit(proc)
    # each kept line is its own input line (its own file:line: prefix) at its own position
    text_kept, _ = check_text(data, proc.stdout)
    assert text_kept == kept

    # long: the error record and at most the rest of its window; the rest tiles as DROP markers
    long = case_file("B22", "long.log")
    data = long.read_bytes()
    assert len(split_lines(data)) == 135
    args = ("--query", "timeout", "--window-lines", "8", *NO_HEAD_TAIL)
    kept, _ = check_runs(data, filter_jsonl(long, *args))
    assert {58, 59} <= kept
    assert len(kept) <= 8 and kept <= set(range(52, 66)), f"kept beyond the error's window: {sorted(kept)}"

    proc = run_cli("filter", *args, str(long))
    assert_clean_exit(proc)
    text_kept, summaries = check_text(data, proc.stdout)
    assert text_kept == kept
    counted = sum(summary_range(s)[1] - summary_range(s)[0] + 1 for s in summaries)
    assert len(text_kept) + counted == 135
    for s in summaries:
        assert re.search(rb": \d+\xc3\x97 \S", s), f"no line template in {s!r}"


def test_B22_drop_markers_carry_readback_reference() -> None:
    long = case_file("B22", "long.log")
    data = long.read_bytes()
    _, runs = check_runs(data, filter_jsonl(long, "--query", "timeout", *NO_HEAD_TAIL))
    drops = [r for r in runs if r["event"] == "drop"]
    assert drops
    for r in drops:
        # every marker carries a ref that gives back exactly the dropped bytes
        got = run_cli("expand", r["ref"])
        assert got.returncode == 0, got.stderr
        assert got.stdout == data[r["start_byte"] : r["end_byte"]]
