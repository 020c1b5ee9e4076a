"""Baselines on disk: the lines (texts and shapes) of each command's last green run, in the state directory.

``run`` (and a daemon's run in an envelope) loads the baseline of its command and working
directory before the command starts, and stores a new one when the command exits 0; ``filter
--baseline GOOD.log`` builds one from files (``baseline_of_files``). See ``core.baseline`` for
what a baseline is and how it changes decisions.

A baseline is one file in ``baselines/`` under the state directory, named by a hash of the
working directory and the command: a first line ``streamfilter-baseline 2``, a JSON line (the
command, the directory, the counts), then the sorted shape hashes as little-endian uint32 and the
sorted text hashes as little-endian uint64. Each file holds at most ``core.baseline.MAX_SHAPES``
hashes of each (384 KiB); past ``MAX_BASELINES`` files the least recently used (stored or loaded)
are removed, so the folder stays under about 24 MiB. A file of version 1 (shapes only, which
cannot tell a line printed from one of the same shape) is not read: the run goes as without a
baseline, and its next green run stores one of version 2 in its place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..core.baseline import MAX_SHAPES, Baseline, ShapeCollector
from ..core.errors import InputError
from ..core.lines import LineSplitter
from .expand import state_dir, state_dirs

__all__ = (
    "MAGIC",
    "MAX_BASELINES",
    "MAX_FILE_BYTES",
    "BaselineStore",
    "GreenRun",
    "baseline_of_files",
    "read_baseline",
)

MAGIC = b"streamfilter-baseline 2\n"
MAX_BASELINES = 64  # files kept; the least recently used past it are removed
MAX_HEADER_BYTES = 4096  # the JSON line's longest (the command in it is cut to fit)
READ_BYTES = 1 << 20  # bytes read per call from a baseline's file
MAX_FILE_BYTES = len(MAGIC) + MAX_HEADER_BYTES + 12 * MAX_SHAPES  # the longest baseline file


def read_baseline(data: bytes) -> Baseline:
    """The baseline stored in ``data`` (a baseline file's bytes).

    Raises:
        ValueError: ``data`` is not a baseline file, or a damaged one.
    """
    if not data.startswith(MAGIC):
        old = data.startswith(b"streamfilter-baseline ")
        raise ValueError("a baseline of another version" if old else "not a streamfilter baseline")
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if end < 0:
        raise ValueError("no header line")
    header = json.loads(data[len(MAGIC) : end])
    count, texts, limit, lines = (header.get(k) for k in ("shapes", "texts", "limit", "lines"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (count, texts, limit, lines)):
        raise ValueError("a count in the header is not a whole number")
    if not (0 <= count <= MAX_SHAPES and 0 <= texts <= MAX_SHAPES and 0 <= limit < 1 << 32 and lines >= 0):
        raise ValueError("a count in the header is out of range")
    body = data[end + 1 :]
    if len(body) != 4 * count + 8 * texts:
        raise ValueError("the header does not match the hashes")
    shapes, text = body[: 4 * count], body[4 * count :]
    for table in (np.frombuffer(shapes, dtype="<u4"), np.frombuffer(text, dtype="<u8")):
        if table.shape[0] > 1 and np.any(table[1:] <= table[:-1]):
            raise ValueError("the hashes are not sorted")
    if count and int(np.frombuffer(shapes, dtype="<u4")[-1]) > limit:
        raise ValueError("a shape hash is above the limit")
    return Baseline(shapes, limit, lines, text)


class BaselineStore:
    """The baselines of commands in a folder (default: ``baselines/`` in the state directory).

    Args:
        folder: where the files are.
        cap: most files kept.
    """

    def __init__(self, folder: Path | None = None, cap: int = MAX_BASELINES) -> None:
        # (the state directory, or a temporary one under a home directory that is not there)
        self.folder = folder or next(state_dirs(), state_dir()) / "baselines"
        self.cap = cap

    def path(self, command: str, cwd: str) -> Path:
        """The file of ``command`` (its text, ``shlex.join`` of its argv) run in ``cwd``."""
        key = hashlib.sha256(json.dumps([cwd, command]).encode("utf-8", "surrogateescape")).hexdigest()[:32]
        return self.folder / f"{key}.shapes"

    def load(self, command: str, cwd: str) -> Baseline | None:
        """The baseline of ``command`` in ``cwd``, or None when there is none, or it cannot be read
        or is damaged (a run then goes as without one). Marks it used (it is evicted last)."""
        path = self.path(command, cwd)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
            baseline = read_baseline(data)
        except (OSError, ValueError):
            return None
        with contextlib.suppress(OSError):  # (a folder this user may read but not write)
            os.utime(path)
        return baseline

    def save(self, command: str, cwd: str, baseline: Baseline) -> Path:
        """Store ``baseline`` as that of ``command`` in ``cwd`` (replacing the one before), then
        remove the least recently used files past ``cap``; return the file's path.

        Raises:
            OSError: the folder or the file cannot be written.
        """
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.path(command, cwd)
        facts = {"command": command, "cwd": cwd, "lines": baseline.lines, "limit": baseline.limit}
        counts = {"shapes": baseline.size, "texts": len(baseline.texts) // 8}
        header = json.dumps({**facts, **counts}).encode("utf-8", "surrogateescape")
        if len(header) >= MAX_HEADER_BYTES:  # a long command: cut in the header only (the name has all of it)
            cut = len(command) - (len(header) - MAX_HEADER_BYTES) - 8
            facts["command"] = command[: max(0, cut)] + "..."
            header = json.dumps({**facts, **counts}).encode("utf-8", "surrogateescape")
        # written whole to a temporary file, then renamed over: a reader never sees half a baseline
        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(MAGIC + header + b"\n" + baseline.hashes + baseline.texts)
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self._evict()
        return path

    def _evict(self) -> None:
        """Remove the least recently used baselines past ``cap``."""
        files = []
        for entry in self.folder.glob("*.shapes"):
            with contextlib.suppress(OSError):  # (removed meanwhile by another run)
                files.append((entry.stat().st_mtime_ns, entry.name, entry))
        for _, _, old in sorted(files)[: max(0, len(files) - self.cap)]:
            old.unlink(missing_ok=True)


class GreenRun:
    """One run of a command against its baseline: the one its last green run stored, and the one
    this run collects (stored by ``save`` if the run passes).

    Args:
        store: where the baseline is read and stored; None: no baseline (``--no-baseline``).
        command: the command's text (``shlex.join`` of its argv).
        cwd: the directory it runs in.

    Attributes:
        baseline: the last green run's, or None (no store, none stored, or one that cannot be read).
        collector: gets this run's line hashes (``StreamFilter.collector``; None without a store).
    """

    def __init__(self, store: BaselineStore | None, command: str, cwd: str) -> None:
        self.store, self.command, self.cwd = store, command, cwd
        self.baseline = store.load(command, cwd) if store is not None else None
        self.collector = ShapeCollector() if store is not None else None

    def save(self) -> None:
        """The run passed: its lines become the command's baseline.

        Raises:
            OSError: it cannot be stored.
        """
        if self.store is not None and self.collector is not None:
            self.store.save(self.command, self.cwd, self.collector.baseline())


def baseline_of_files(paths: Sequence[str], max_line_bytes: int) -> Baseline:
    """The baseline of the lines of ``paths`` (logs of green runs), shaped as a filter with this
    ``max_line_bytes`` shapes them (``FilterConfig.max_line_bytes``); each file is read once, in
    chunks, so memory stays bounded whatever their size.

    Raises:
        InputError: a file cannot be read.
    """
    collector = ShapeCollector()
    for path in paths:
        splitter = LineSplitter()
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(READ_BYTES):
                    block = splitter.feed(chunk)
                    if block is not None:
                        collector.add_block(block, max_line_bytes)
        except OSError as exc:
            raise InputError(f"cannot read --baseline {path}: {exc.strerror or exc}") from None
        block = splitter.flush()
        if block is not None:
            collector.add_block(block, max_line_bytes)
    return collector.baseline()
