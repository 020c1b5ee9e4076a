"""The filter's stateless stages in a second process, ahead of the filter, for a regular file.

``FactsWorker`` forks a process that reads the same file in the same chunks as the
command line does, splits it into the same blocks, and computes each block's
``BlockFacts`` (``prepare.Preparer``: scoring text, tokens, layout, signatures,
line shapes), handing them over pickled in slots of shared memory (the pipe
carries only slot numbers). Installed as ``StreamFilter.preparer``, it hands the
filter the facts of each block in order while the worker goes on with the next:
the two processes share the work. When the filter already wants the block before
the one the worker is about to start (it would soon wait), the worker leaves that
block to the filter and starts the next one, so neither process idles while the
other has work (the share each takes follows their speeds on this input). A block
whose facts do not match it (same first line, length, line count and Adler-32) is
computed in the filter's own process, and the worker is not asked again, so the
output is always the same bytes.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from . import lines
from .lines import LineSplitter, bounded
from .prepare import BlockFacts
from .records import LineBlock

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.synchronize import Semaphore

__all__ = ("FactsWorker", "worth_a_worker")

MIN_FILE_BYTES = 4 << 20  # smaller files are done before a second process pays for itself
AHEAD_BLOCKS = 4  # facts of at most this many blocks wait for the filter (about 1 MB each)

_Packed = tuple[BlockFacts, int, npt.NDArray[np.int64], npt.NDArray[np.int64], int]


def worth_a_worker(path: str) -> bool:
    """Whether ``path`` is a regular file large enough for a worker, with CPU to spare for it.

    A second process pays only when it gets most of a CPU: with the machine's load average
    (1 minute, this process counts about one) at or above its CPUs, other work holds the
    rest and the worker takes CPU from it for little gain (measured on 2 CPUs with 2 busy
    loops: 1.7-2.0 s either way for 20 MB; with 1: 1.2-1.4 s either way; idle: about twice
    as fast). ``STREAMFILTER_WORKER=0`` in the environment turns the worker off, ``=1`` on
    whatever the load.
    """
    setting = os.environ.get("STREAMFILTER_WORKER", "")
    if setting == "0":
        return False
    try:
        info = os.stat(path)
    except OSError:
        return False
    if not (os.path.isfile(path) and info.st_size >= MIN_FILE_BYTES):
        return False
    if not hasattr(os, "fork"):  # the worker is a forked process
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cpus > 1 and (setting == "1" or os.getloadavg()[0] < cpus)


def _pack(facts: BlockFacts, checksum: int) -> _Packed:
    """Facts for the hand-over: the term counts (mostly zeros) as their non-zero rows, per-line
    integers as int32 (when the block is under 2 GiB), and neither ``LineLayout.first`` (only the
    signatures used it) nor the scoring text and its line ends (only the stages before used them;
    the filter keeps the line shapes)."""
    rows = np.flatnonzero(facts.tf.any(axis=1)).astype(np.int64)
    layout = facts.layout
    small = np.int32 if facts.n_bytes < (1 << 31) else np.int64
    slim = replace(
        facts,
        tf=facts.tf[:0],
        tokens=facts.tokens.astype(small),
        norm=replace(facts.norm, text=b"", ends=facts.norm.ends[:0]),
        shape_ends=facts.shape_ends.astype(small),
        warnings=facts.warnings.astype(np.int32),
        layout=replace(
            layout, indent=layout.indent.astype(small), chars=layout.chars.astype(small), first=layout.first[:0]
        ),
    )
    return slim, int(facts.tf.shape[0]), rows, facts.tf[rows], checksum


def _unpack(packed: _Packed) -> tuple[BlockFacts, int]:
    slim, n_lines, rows, values, checksum = packed
    tf = np.zeros((n_lines, slim.tf.shape[1]), dtype=np.int64)
    tf[rows] = values
    layout = slim.layout
    facts = replace(
        slim,
        tf=tf,
        tokens=slim.tokens.astype(np.int64),
        shape_ends=slim.shape_ends.astype(np.int64),
        warnings=slim.warnings.astype(np.int64),
        layout=replace(layout, indent=layout.indent.astype(np.int64), chars=layout.chars.astype(np.int64)),
    )
    return facts, checksum


class _Ring:
    """Slots of shared memory (an anonymous mapping made before the fork) that carry the pickled
    facts, so the pipe only carries slot numbers and never fills: the worker waits only when
    every slot is taken, never for the filter's process to read (which needs its GIL)."""

    def __init__(self, slots: int, slot_bytes: int, free: Semaphore) -> None:
        self.slots, self.slot_bytes = slots, slot_bytes
        self.memory = mmap.mmap(-1, slots * slot_bytes)
        self.free = free  # slots the worker may write
        self.next_write = self.next_read = 0
        # the index of the block the filter wants next (written by the filter, read by the worker)
        self.wanted = mmap.mmap(-1, 8)
        self.parent = os.getpid()  # the filter's process (made before the fork)

    def put(self, conn: Connection, packed: _Packed | None) -> None:
        """Worker side: the next facts (None: no more), through a slot when they fit."""
        data = pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)
        if len(data) > self.slot_bytes:  # a block of long lines: through the pipe itself
            conn.send_bytes(b"P" + data)
            return
        while not self.free.acquire(timeout=1.0):
            if os.getppid() != self.parent:  # the filter's process is gone (killed): so is the worker
                raise BrokenPipeError
        at = self.next_write * self.slot_bytes
        self.memory[at : at + len(data)] = data
        conn.send_bytes(b"S%d %d" % (self.next_write, len(data)))
        self.next_write = (self.next_write + 1) % self.slots

    def leave(self, conn: Connection) -> None:
        """Worker side: the next block is left to the filter."""
        conn.send_bytes(b"L")

    def want(self, index: int) -> None:
        """Filter side: block ``index`` (0-based) is the next one the filter needs."""
        self.wanted[:8] = index.to_bytes(8, "little")

    def waiting_for(self, index: int) -> bool:
        """Worker side: whether the filter already wants block ``index`` (or a later one)."""
        return int.from_bytes(self.wanted[:8], "little") >= index

    def get(self, conn: Connection) -> _Packed | Literal[False] | None:
        """Filter side: the next facts (False: the block is left to the filter)."""
        message = conn.recv_bytes()
        if message[:1] == b"L":
            return False
        if message[:1] == b"P":
            packed: _Packed | None = pickle.loads(message[1:])
            return packed
        slot, length = (int(x) for x in message[1:].split())
        at = slot * self.slot_bytes
        packed = pickle.loads(self.memory[at : at + length])
        self.free.release()
        return packed


def _serve(
    path: str, preparer: Callable[[LineBlock], BlockFacts], chunk_bytes: int, conn: Connection, ring: _Ring
) -> None:
    """The worker: facts of every block of ``path`` in order, then None."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the filter's process decides when to stop
    splitter = LineSplitter()
    index = 0

    def serve(whole: LineBlock | None) -> None:
        nonlocal index
        for block in bounded(whole):  # (the filter's blocks: cut as it cuts them)
            if ring.waiting_for(index - 1):  # the filter is close behind: it does this block, we the next
                ring.leave(conn)
            else:
                ring.put(conn, _pack(preparer(block), zlib.adler32(block.data)))
            index += 1

    try:
        with open(path, "rb") as handle:
            while chunk := handle.read1(chunk_bytes):
                serve(splitter.feed(chunk))
                if splitter.pending_bytes >= lines.HELD_LINE_BYTES:  # the filter lets such a line out in pieces:
                    break  # its blocks differ from here on, and holding it had doubled the peak (helper-81)
            else:
                serve(splitter.flush())
        ring.put(conn, None)
    except OSError:  # the filter went away (broken pipe) or the file could not be read
        pass
    finally:
        conn.close()


class FactsWorker:
    """``BlockFacts`` of a regular file's blocks, computed ahead in a forked process.

    Args:
        path: the file, read again by the worker.
        preparer: the filter's own ``prepare.Preparer`` (the worker inherits it), also
            used here for any block whose facts do not match.
        chunk_bytes: bytes per read, as the filter's reader uses (``read1``), so that
            both split the file into the same blocks.

    Call ``close()`` when done (it ends the worker).
    """

    def __init__(self, path: str, preparer: Callable[[LineBlock], BlockFacts], chunk_bytes: int) -> None:
        import multiprocessing  # here, not at start-up: a run without a worker does not pay for it

        context = multiprocessing.get_context("fork")
        self._conn, child = context.Pipe(duplex=False)
        # the facts of a block take 0.6-0.8 times its bytes on build logs (more for very short
        # lines: a block whose facts do not fit a slot goes through the pipe)
        self._ring = _Ring(AHEAD_BLOCKS, chunk_bytes * 2, context.Semaphore(AHEAD_BLOCKS))
        self._process = context.Process(
            target=_serve, args=(path, preparer, chunk_bytes, child, self._ring), daemon=True
        )
        self._process.start()
        child.close()
        self._local = preparer
        self._live = True
        self._index = 0  # of the filter's next block
        self.taken = 0  # blocks whose facts came from the worker
        self.left = 0  # blocks the worker left to the filter

    def __call__(self, block: LineBlock) -> BlockFacts:
        """The facts of ``block``, the filter's next block: from the worker when they match."""
        if self._live:
            self._ring.want(self._index)
            self._index += 1
            try:
                packed = self._ring.get(self._conn)
            except (EOFError, OSError):
                packed = None
            if packed is False:
                self.left += 1
                return self._local(block)
            if packed is not None:
                facts, checksum = _unpack(packed)
                if facts.matches(block) and checksum == zlib.adler32(block.data):
                    self.taken += 1
                    return facts
            self._live = False  # out of step (or done): every later block is done here
        return self._local(block)

    def close(self) -> None:
        """End the worker (it may still be computing facts nobody will ask for)."""
        self._live = False
        if self._process.is_alive():
            self._process.kill()
        self._process.join()
        self._conn.close()
        self._ring.memory.close()
        self._ring.wanted.close()
