"""The stateless stages in a second process change nothing: same runs, also when out of step."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamfilter.filter import StreamFilter
from streamfilter.records import Run
from streamfilter.worker import FactsWorker

PIECES = [
    b"\x1b[1m\x1b[32m   Compiling\x1b[0m serde v1.0.%d\n",
    b"tests/test_x.py::test_%d PASSED [ 10%%]\n",
    b"ERROR: build %d failed\n",
    b"Traceback (most recent call last):\n  File \"x.py\", line %d, in f\nValueError: bad\n",
    b"2026-05-07T17:30:12.8056437Z step %d\n",
    b"warning: unused variable %d\n",
    b"progress %d%%\rprogress 100%%\n",
]


def _log(tmp_path: Path) -> Path:
    lines = [PIECES[(i * 7) % len(PIECES)] % i for i in range(40_000)]
    path = tmp_path / "big.log"
    path.write_bytes(b"".join(lines) + b"no newline at the end")
    return path


def _runs(path: Path, worker_chunk: int | None, feed_chunk: int) -> tuple[list[Run], int]:
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
        return runs, worker.taken if worker is not None else 0
    finally:
        if worker is not None:
            worker.close()


@pytest.mark.parametrize("worker_chunk", [1 << 16, 100_000])
def test_a_worker_gives_the_same_runs(tmp_path: Path, worker_chunk: int) -> None:
    # the same chunks: the worker's facts are used; other chunks: they are not, and that is noticed
    path = _log(tmp_path)
    runs, taken = _runs(path, worker_chunk, 1 << 16)
    assert runs == _runs(path, None, 1 << 16)[0]
    assert (taken > 10) == (worker_chunk == 1 << 16)
