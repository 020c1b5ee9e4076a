"""The stateless stages in a second process change nothing: same runs, also when out of step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamfilter.core import lines
from streamfilter.core.filter import StreamFilter
from streamfilter.core.records import Run
from streamfilter.core.worker import MIN_FILE_BYTES, FactsWorker, worth_a_worker

PIECES = [
    b"\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.%d\n",
    b"tests/test_x.py::test_%d PASSED [ 10%%]\n",
    b"ERROR: build %d failed\n",
    b'Traceback (most recent call last):\n  File "x.py", line %d, in f\nValueError: bad\n',
    b"2026-05-07T17:30:12.8056437Z step %d\n",
    b"warning: unused variable %d\n",
    b"progress %d%%\rprogress 100%%\n",
]


def _log(tmp_path: Path) -> Path:
    lines = [PIECES[(i * 7) % len(PIECES)] % i for i in range(40_000)]
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(lines) + b"no newline at the end")
    return path


def _runs(path: Path, worker_chunk: int | None, feed_chunk: int) -> tuple[list[Run], int, int]:
    sf = StreamFilter()
    worker = FactsWorker(str(path), sf.preparer, worker_chunk) if worker_chunk else None
    if worker is not None:
        sf.preparer = worker
    try:
        runs: list[Run] = []
        with open(path, "rb") as handle:
            while chunk := handle.read1(feed_chunk):
                runs += sf.feed(chunk)
        runs += sf.flush()
        return runs, *((worker.taken, worker.left) if worker is not None else (0, 0))
    finally:
        if worker is not None:
            worker.close()


def test_a_worker_cuts_the_blocks_as_the_filter_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # reads of more lines than a block holds: the worker's blocks are the filter's, so its facts are used
    monkeypatch.setattr(lines, "MAX_BLOCK_LINES", 50)
    path = _log(tmp_path)
    runs, taken, _ = _runs(path, 1 << 16, 1 << 16)
    assert runs == _runs(path, None, 1 << 16)[0] and taken > 100


@pytest.mark.parametrize("worker_chunk", [1 << 16, 100_000])
def test_a_worker_gives_the_same_runs(tmp_path: Path, worker_chunk: int) -> None:
    # the same chunks: the worker's facts are used; other chunks: they are not, and that is noticed
    path = _log(tmp_path)
    runs, taken, left = _runs(path, worker_chunk, 1 << 16)
    assert runs == _runs(path, None, 1 << 16)[0]
    assert (taken > 10) == (worker_chunk == 1 << 16)
    # the filter wants the first block from the start: the worker leaves it and the second
    # to the filter, so facts from both processes make up these runs
    assert left >= 2


def test_a_worker_stops_at_a_line_the_filter_lets_out_in_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the worker held a 159 MB progress line whole, twice the filter's peak (helper-81): at the
    # cap (max_line_bytes' 1 MiB here) it stops, and the filter does the rest, the same runs
    monkeypatch.setattr(lines, "HELD_LINE_BYTES", 4096)
    path = _log(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[:300_000] + b"\rDownloading 50%" * 100_000 + b"\n" + whole[300_000:])
    runs, taken, _ = _runs(path, 1 << 16, 1 << 16)
    assert runs == _runs(path, None, 1 << 16)[0] and taken >= 1
    assert any(r.rest for r in runs)


def test_a_worker_only_for_a_large_file_with_a_cpu_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = tmp_path / "small.log", tmp_path / "large.log"
    small.write_bytes(b"x\n" * 10)
    large.write_bytes(b"x" * (MIN_FILE_BYTES + 1))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert worth_a_worker(str(large)) and not worth_a_worker(str(small)) and not worth_a_worker(str(tmp_path))
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 3.0, 2.0))  # both CPUs busy: no gain
    assert not worth_a_worker(str(large))
    monkeypatch.setenv("STREAMFILTER_WORKER", "1")
    assert worth_a_worker(str(large))
    monkeypatch.setenv("STREAMFILTER_WORKER", "0")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert not worth_a_worker(str(large))


def test_the_command_line_prints_the_same_with_and_without_a_worker(tmp_path: Path) -> None:
    path = _log(tmp_path)
    path.write_bytes(path.read_bytes() * 4)  # past MIN_FILE_BYTES
    outputs = []
    for setting in ("1", "0"):
        proc = subprocess.run(
            [sys.executable, "-m", "streamfilter", "filter", "--format", "jsonl", str(path)],
            capture_output=True,
            env={**os.environ, "STREAMFILTER_WORKER": setting},
            timeout=120,
            check=True,
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1] and b'"event": "drop"' in outputs[0]
