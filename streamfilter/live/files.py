"""File sources: follow a path or a glob like ``tail -F``, through rotation, truncation and rewrites.

Per followed path, a ``FileFollower`` reads the open file to its end, then checks what the path
names now:

* another inode (rename-and-create rotation, atomic replace, delete and recreate): the old
  file (renamed, or deleted but still open) is read on until it has stayed unchanged for
  ``ROTATE_QUIET_SECONDS``, at most ``ROTATE_WAIT_SECONDS`` after the rotation was seen (a
  writer goes on writing to its open file until it reopens the path), and its unterminated
  last line is ended there; then the new file is read from byte 0 **as the same stream** (line
  numbers and records go on). An old file still written to at that cap (a writer that never
  reopens its log) is read on by a **late reader**, as a stream of its own
  (``<stream>@<inode>``), until it has been quiet for ``LATE_QUIET_SECONDS`` or is deleted and
  quiet; at most ``MAX_LATE_FILES`` per path at once (past that, what is written later to the
  old file is not read, and ``file.rotated`` says ``capped``). The new file is opened as soon
  as it is seen (files that replace it in turn while the old one is waited for are queued
  too), so no generation is skipped;
* the same inode but shorter than what was read (copytruncate, ``>``), or the same inode whose
  first bytes or the bytes just before the read offset changed (a rewrite in place that kept
  or grew the size): a **new generation**: the old one is flushed (with what the writer added
  past the offset before a truncation, read from logrotate's ``copytruncate`` copy when there is
  one: ``_copy``), a marker line says what happened and where, and the file is read again from
  byte 0 as a new stream. A glob does not read such a copy again from its start (``_copy_of``).

A checkpoint names the file being read (device, inode). If the path names another file when the
daemon starts (rotated while it was down), the checkpointed file is looked for in the path's
directory (``app.log.2``, one scan at the source's start: ``rotated_since``); found, and still
the same file, the rest of it is read first, then the path's later generations there (rotated
names modified after it, oldest first: ``app.log.1``; compressed ones are warned of, not read),
then the path's file, each as after a rotation. A file rotated to a name a glob source follows
too (``app.1.log`` for ``*.log``) is resumed by that name's follower instead, from the
checkpoint (``RotatedWhileDown``). A rotated file that was compressed, moved elsewhere or
deleted cannot be found: the path's file is read from its start (``checkpoint.stale``).

Changes are noticed from directory events (watchfiles, on the parent directory, so a replaced
file is still seen) taken as hints, plus a stat check: every few milliseconds while the file
is growing, every ``poll_seconds`` while it is quiet. Reading waits while the sinks are full
(backpressure: the file is the buffer). A path that resolves outside the source's roots (checked
on the opened descriptor, so a symlink swapped in later is caught too) is refused with a log event.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import functools
import glob
import os
import resource
import stat
import time
from collections.abc import Callable, Sequence

import anyio
import anyio.lowlevel
import watchfiles
from anyio.abc import TaskGroup, TaskStatus
from watchfiles._rust_notify import WatchfilesRustInternalError  # (not re-exported by watchfiles)

from ..core.records import Run
from ..core.words import counted
from ._logging import get_logger
from .checkpoint import (
    HEAD_BYTES,
    PSEUDO_FILES,
    Checkpoint,
    CheckpointStore,
    ReadPosition,
    UnreadableCheckpoint,
    fingerprint,
)
from .config import SourceConfig, glob_directory
from .expand import escaped_source, ref_of
from .rotated import COMPRESSED_NAMES, RotatedWhileDown, rotated_since, rotation_rank, rotations_of
from .sinks import Sink
from .stream import LiveStream
from .totals import Totals

__all__ = ("FileFollower", "FileSource", "LeftFiles")

READ_BYTES = 1 << 18  # per read: one feed of this many bytes is the longest the event loop is held
ACTIVE_POLL_SECONDS = 0.004  # stat interval while a file grew within the last second
ACTIVE_SECONDS = 1.0
WATCH_DEBOUNCE_MS = 100
WATCH_STEP_MS = 50
# a directory watch that fails (watchfiles cannot decode a file name that is not UTF-8, or the
# system's watch limit is reached) is tried again this long after (seconds); meanwhile the
# stat checks and rescans find every change, only later
WATCH_RETRY_SECONDS = 30.0
FINISH_SECONDS = 10.0  # most time a stopping stream gets to write what it holds
# After a rotation is seen, the old file is read on until it has been unchanged this long
# (seconds). A writer reopens its log some milliseconds after logrotate's rename (on SIGHUP,
# or at its next write): a second is well past that, and a writer still mid-burst writes more
# often than that. It is also the quiet stat interval (``poll_seconds``' default), so a
# change is seen at least once within it. The cost is latency only: the new file's lines
# wait that long, on disk (the file is the buffer).
ROTATE_QUIET_SECONDS = 1.0
# ... but at most this long after the rotation was seen (seconds; Fluent Bit's Rotate_Wait
# default): a writer that never reopens would otherwise hold the new file back for good.
# What it writes to the old file later is read by a late reader (``FileFollower._read_late``).
ROTATE_WAIT_SECONDS = 5.0
# ... or only this long once a file that took the path since has been written to: its writer
# reopened the path (a path rotated several times a second queued its files behind a second's
# wait each, and lost those past MAX_QUEUED_FILES, helper-50); a rotated file that was not
# written to since the rotation was seen counts as quiet since its last modification
MOVED_QUIET_SECONDS = 0.25
# a late reader stops once its file has not grown for this long (seconds), or for
# ``ROTATE_QUIET_SECONDS`` once the file is deleted; a writer that logs less often than this to a
# file it never reopens has its later lines lost
LATE_QUIET_SECONDS = 60.0
MAX_LATE_FILES = 4  # late readers per followed path at once (open descriptors)
LINE_END_SECONDS = 1.0  # how long a late reader's start waits for the end of the line being written
# files queued behind the one being read (open descriptors): a path replaced faster than each
# file goes quiet would otherwise queue them without bound; past this, the path is opened
# again once the queue has drained (the files in between are not read)
MAX_QUEUED_FILES = 8
MAX_LEFT_FILES = 1024  # files left after a rotation, remembered per source (the oldest forgotten first)
# a glob's path whose file was deleted and that has named none since for this long is let go: its
# stream ends and its follower is dropped (a glob of per-job logs kept one, with its filter, for
# every file it ever matched: 245 KB each, helper-42); a file made there later is a new stream
GONE_SECONDS = 10.0
# a file at a rotated name shorter than what was read of the path's file, and with its first bytes,
# is taken for a copytruncate copy being made while it was written this recently (``_copy_of``)
COPYING_SECONDS = 5.0
CLOCK_SLACK_SECONDS = 0.1  # a file's ctime against time.time(): the kernel's clock for it is coarser


class LeftFiles:
    """The files a source's followers left after a rotation, and how far each was read, so a file
    that another path of the source names then (a glob's ``app.1.log``) goes on from there instead
    of being read again. At most ``MAX_LEFT_FILES``, the oldest forgotten first."""

    def __init__(self) -> None:
        self._left: dict[tuple[int, int], tuple[int, int]] = {}

    def leave(self, file: tuple[int, int], offset: int, line: int) -> None:
        """``file`` (device, inode) was read up to byte ``offset``, where its line ``line`` (1-based) starts."""
        self._left.pop(file, None)
        self._left[file] = (offset, line)
        if len(self._left) > MAX_LEFT_FILES:
            del self._left[next(iter(self._left))]

    def resume(self, file: tuple[int, int], size: int) -> tuple[int, int] | None:
        """``(offset, line)`` to go on from in ``file`` of ``size`` bytes, or None (not left, or now
        shorter than what was read: another file's content)."""
        left = self._left.get(file)
        return left if left is not None and left[0] <= size else None


# checkpoint.stale's hint when what a file got past its checkpoint is lost: by whether the path still
# names the same file (truncated or rewritten in place) or another (the checkpointed one moved or removed)
_STALE_HINTS = {
    True: "truncated or rewritten while the daemon was down: what was written past this offset before that "
    "is not read (a copy of it, logrotate's copytruncate, is not read either)",
    False: "the file read up to this offset was moved out of its folder or removed while the daemon was down: "
    "what was written to it after that is not read",
}


@functools.cache
def _own_output() -> frozenset[tuple[int, int]]:
    """The (device, inode) of this process's stdout and stderr where they are regular files."""
    files = set()
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode):
                files.add((info.st_dev, info.st_ino))
    return frozenset(files)


class FileFollower:
    """Follows one path; see the module docstring.

    Args:
        path: the absolute path followed.
        source: the source's settings (filter, timing, roots, start position, checkpoints).
        stream_name: the name of the path's stream in the output.
        sinks: where runs go.
        checkpoints: the store, or None when checkpoints are off.
        at_startup: the path was present when the daemon started (``start_at`` applies;
            a file that appears later is read from its beginning).
        totals: where the stream's counts are added.
        claim: asks whether this follower may read the file ``(device, inode)``: a file
            reached by two paths of one source (a symlink to another matched file) is read once.
        left: the source's record of files its followers left after a rotation (``LeftFiles``):
            a file found there goes on where the follower that left it stopped.
        restart: what the source's checkpoints say was rotated while the daemon was down
            (``RotatedWhileDown``): the path's rotated files to read first, and the checkpoint
            of a file another path was rotated to this one's name from.
        copy_of: asks, for the open file (its descriptor) this follower found, which other path of
            the source it is a copy of (logrotate's ``copytruncate``: read through that path's
            follower, ``_new_generation``), or None.
        let_go: a glob's path: once its file was deleted and none has been there for
            ``GONE_SECONDS``, ``run`` returns (a plain path is waited for as long as the daemon runs).
    """

    def __init__(
        self,
        path: str,
        source: SourceConfig,
        stream_name: str,
        sinks: Sequence[Sink],
        checkpoints: CheckpointStore | None,
        at_startup: bool,
        totals: Totals | None = None,
        claim: Callable[[tuple[int, int], FileFollower], bool] | None = None,
        left: LeftFiles | None = None,
        restart: RotatedWhileDown | None = None,
        let_go: bool = False,
        copy_of: Callable[[int, FileFollower], str | None] | None = None,
    ) -> None:
        self.path = path
        self.copy_of = copy_of
        self.let_go = let_go
        self.source = source
        self.stream_name = stream_name
        self.sinks = sinks
        self.checkpoints = checkpoints
        self.at_startup = at_startup
        self.totals = totals
        self.claim = claim
        self.left = left
        self.restart = restart
        self._line0 = 1  # the stream's line number of the current file's first line
        self.current: tuple[int, int] | None = None  # (device, inode) of the file being read
        self.stream: LiveStream | None = None
        self.opened = anyio.Event()  # set once the first open was tried
        self._log = get_logger().bind(source=source.name, path=path)
        self._wake = anyio.Event()
        self._pos = ReadPosition()  # how far the current file was read
        self.old: ReadPosition | None = None  # how far the generation before a truncation was read (a copy's)
        self._began = 0.0  # when the file's generation began to be read (time.time(): a copy is made after)
        self.old_began = 0.0
        self._base = 0  # stream offset of the current file's byte 0
        self._active_until = 0.0
        self._refused: tuple[int, int] | None = None  # (dev, ino) refused, not logged again
        self._missing_logged = False
        self._waiting_logged = False  # (file.waiting said, for want of a descriptor)
        self._saved: Checkpoint | None = None  # the last checkpoint written
        self._unwritable = False  # the last save failed (logged once)
        self._checkpoint: Checkpoint | None = None  # the one found at start, loaded once
        # files that replaced the current one, opened when seen and read after it, oldest first
        self._next: list[tuple[int, os.stat_result]] = []
        self._rotation: dict[str, object] = {}  # facts of the last rotation, for ``file.rotated``
        self._skipped: set[int] = set()  # inodes of replacements not queued (the queue was full)
        self._late: TaskGroup | None = None  # where late readers run (``run``'s own task group)
        self._late_files = 0  # late readers running

    def hint(self) -> None:
        """Something changed in the path's directory: look now."""
        self._wake.set()

    async def run(self) -> None:
        """Follow the path until cancelled; then decide and write what is pending, save the checkpoint.
        Late readers of rotated files (``_read_late``) run beside it and end with it."""
        async with anyio.create_task_group() as late:
            self._late = late
            await self._run()

    async def _run(self) -> None:
        fd: int | None = None
        try:
            loaded = self.checkpoints is None or self._load_checkpoint()
            self._resume_rotated()
            gone_since: float | None = None  # when the path was first found naming no file, after one
            while True:
                if not loaded:  # (no descriptor was left to read it: tried again before each open)
                    loaded = self._load_checkpoint()
                    if not loaded:
                        self.opened.set()  # (tried: the daemon's start waits for no more, helper-47)
                        await self._wait()
                        continue
                if self._next:
                    opened: tuple[int, os.stat_result] | None = self._next.pop(0)
                else:
                    opened = self._open()
                    if self._skipped:  # the queue drained: the files passed over meanwhile
                        self._say_skipped(None if opened is None else opened[1].st_ino)
                self.opened.set()
                if opened is None:
                    if self.let_go and self.stream is not None and self._names_none():
                        gone_since = gone_since if gone_since is not None else time.monotonic()
                        if time.monotonic() >= gone_since + GONE_SECONDS:
                            self._log.info("file.let_go", gone_seconds=GONE_SECONDS)
                            return
                    await self._wait()
                    continue
                gone_since = None
                fd, info = opened
                self.current = (info.st_dev, info.st_ino)
                note = self._start(fd, info)
                if note is not None and self.stream is not None:
                    await self.stream.marker(note[0], offset=note[1])
                self._save()  # (a file opened at its end has a checkpoint too: a restart knows it is not new)
                await self._follow(fd)
                if not os.fstat(fd).st_nlink:
                    self.current = None  # deleted: its inode may be given to a new file once closed
                elif self.left is not None and self.stream is not None:
                    self.left.leave(self.current, self._pos.offset, self.stream.emitted_line - self._line0 + 1)
                os.close(fd)
                fd = None
        finally:
            if fd is not None:
                os.close(fd)
            for queued, _ in self._next:
                os.close(queued)
            self._next.clear()
            if self.stream is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_SECONDS):
                    await self.stream.end()
                    self._save()

    def _load_checkpoint(self) -> bool:
        """Load the path's checkpoint; whether that was done (not when the daemon has no descriptor
        left to read it: said once, ``file.waiting``)."""
        assert self.checkpoints is not None
        try:
            self._checkpoint = self.checkpoints.load(self.source.name, self.path)
        except UnreadableCheckpoint as e:  # (read as if none was saved: its start_at says where from)
            self._log.warning("checkpoint.unreadable", file=str(e.file), reason=e.reason)
        except OSError as e:
            self._no_descriptor(e)
            return False
        return True

    def _no_descriptor(self, exc: OSError) -> None:
        """Say, once, that the file waits for a descriptor (EMFILE, ENFILE, from opening it or its
        checkpoint): it is not read until one is free, as each followed file holds one (helper-50:
        "checkpoint.unavailable, tried again" read as a retry that would work)."""
        if not self._waiting_logged:
            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self._log.warning(
                "file.waiting", error=exc.strerror or str(exc), open_files_limit=limit,
                hint="not read until a file descriptor is free: each followed file holds one; raise the limit "
                "(LimitNOFILE= in the unit, ulimit -n)",
            )  # fmt: skip
            self._waiting_logged = True

    def _say_skipped(self, read: int | None) -> None:
        """The files that took the path while the queue was full, but ``read`` (the inode the path
        names now, read next), were not read: say how many, and which (``file.replacements_skipped``)."""
        lost = sorted(self._skipped - {read} if read is not None else self._skipped)
        self._skipped.clear()
        if lost:
            self._log.warning(
                "file.replacements_skipped", files=len(lost), inodes=lost[:16], queue=MAX_QUEUED_FILES,
                reason="the path was replaced faster than each file was read",
            )  # fmt: skip

    def _names_none(self) -> bool:
        """Whether the path names nothing (not even a dangling symlink)."""
        return not os.path.lexists(self.path)

    # -- opening -------------------------------------------------------------------------
    def _resume_rotated(self) -> None:
        """Queue the files the path was rotated to while the daemon was down, found at the
        source's start (``RotatedWhileDown``), so they are read before the file the path names
        now: the rest of the checkpointed file (``app.log.2``), then each later generation
        (``app.log.1``), oldest first; then the path's file, queued too (each queued file is read
        until quiet, as after a rotation)."""
        queued = self.restart.queued.pop(self.path, []) if self.restart is not None else []
        for name, file, offset in queued:
            opened = self._open(name)
            if opened is None:
                continue
            if (opened[1].st_dev, opened[1].st_ino) != file:  # (renamed again since the scan)
                os.close(opened[0])
                continue
            self._log.info("checkpoint.rotated_file", file=name, offset=offset)
            self._next.append(opened)
        if self._next and (opened := self._open()) is not None:
            self._next.append(opened)

    def _names_of(self, ino: int) -> list[str]:
        """The paths in the followed path's directory of the file with inode ``ino`` (``app.log.1``
        once the path was rotated away from it); none if it cannot be read."""
        try:
            with os.scandir(os.path.dirname(self.path)) as entries:
                return [e.path for e in entries if e.inode() == ino and e.is_file(follow_symlinks=False)]
        except OSError:
            return []

    def _open(self, path: str | None = None) -> tuple[int, os.stat_result] | None:
        """Open ``path`` (default: the followed path) if it names a file this follower may read:
        its descriptor and ``fstat``, else None."""
        try:
            fd = os.open(path or self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                self._no_descriptor(exc)
            elif not self._missing_logged:
                self._log.warning("file.unreadable", error=exc.strerror or str(exc))
                self._missing_logged = True
            return None
        self._waiting_logged = False
        info = os.fstat(fd)
        reason = None
        if not stat.S_ISREG(info.st_mode):
            reason = "not a regular file"
        else:
            real = os.path.realpath(f"/proc/self/fd/{fd}")
            if not self.source.in_roots(real):
                reason = "resolves outside the source's roots"
            elif real.startswith(PSEUDO_FILES):
                # its size reads 0 whatever it holds: every read would look like a truncation
                reason = "a /proc or /sys file (its size is not known, so it cannot be followed)"
            elif any(sink.file == (info.st_dev, info.st_ino) for sink in self.sinks):
                # (a symlink made to it at run time: the config's check sees only paths)
                reason = "the source's own output (a sink writes it): it would be read back for ever"
            elif (info.st_dev, info.st_ino) in _own_output():
                # (``daemon > x/daemon.log`` with a source x/*.log: its output came round again, helper-94)
                reason = "the daemon's own stdout or stderr: it would be read back for ever"
        log = self._log.warning
        if reason is None and self.claim is not None and not self.claim((info.st_dev, info.st_ino), self):
            reason = "the same file as another path of this source (read there)"
            log = self._log.info  # (a rotation to a name the glob matches: nothing is wrong)
        if reason is None and self.copy_of is not None and (original := self.copy_of(fd, self)) is not None:
            # (read from byte 0 it repeated what the original's follower had written, helper-94)
            reason = f"a copy of {original} (copytruncate): its lines are read there"
            log = self._log.info
        if reason is not None:
            if self._refused != (info.st_dev, info.st_ino):
                log("file.refused", reason=reason, roots=list(self.source.roots))
                self._refused = (info.st_dev, info.st_ino)
            os.close(fd)
            return None
        self._missing_logged = False
        return fd, info

    def _start(self, fd: int, info: os.stat_result) -> tuple[str, int] | None:
        """Where to read the newly opened file from, and its stream; a marker for the output (its
        text and offset: how far the file had been read) when the checkpointed file was
        truncated or rewritten in place while the daemon was down."""
        if self.stream is not None:  # rotation: the same stream goes on in the new file
            log = self._log.warning if self._rotation.get("capped") else self._log.info
            log("file.rotated", ino=info.st_ino, **self._rotation)
            # the new file's byte 0 follows the old file's last byte read (in stream offsets,
            # which start at the checkpoint's offset when the old file was resumed); a file another
            # path of the source was reading goes on where that path left it
            offset, line = self._resume_left(info)
            self._base += self._pos.offset - offset
            self._line0 = self.stream.emitted_line - line + 1
            self._set_position(fd, offset)
            return None
        offset, line, base = 0, 1, 0
        note = None
        rest_of: tuple[int, bool] | None = None
        saved = self._checkpoint
        handed = self.restart.handed.pop((info.st_dev, info.st_ino), None) if self.restart is not None else None
        if handed is not None and (saved is None or saved.mismatch(fd) is not None):
            saved = handed  # another path's file, rotated to this name while the daemon was down
        if saved is not None:
            why = saved.mismatch(fd)
            if why is None:
                offset, line, base = saved.offset, saved.line, saved.base
                # written up to inside a line: the bytes up to its end are its rest, not a new line
                rest_of = (saved.rest_line, saved.rest_kept) if saved.rest_line else None
                self._log.info(
                    "checkpoint.resumed",
                    offset=offset,
                    line=line,
                    inside_line=saved.rest_line or None,
                    rotated_from=saved.path if saved.path != self.path else None,
                )
            else:
                # a loss unless the checkpointed file is read elsewhere (a rotation of it, read first):
                # the same file truncated or rewritten in place (copytruncate), or one moved to another
                # folder (logrotate's olddir) or removed, while the daemon was down; what it got past
                # the checkpoint is not read (it had been said at info, helper-73, helper-75)
                same = (info.st_dev, info.st_ino) == (saved.dev, saved.ino)
                lost = same or not (self.restart and (saved.dev, saved.ino) in self.restart.found)
                compressed = [n for n in rotations_of(self.path) if n.endswith(COMPRESSED_NAMES)] if lost else []
                said: dict[str, str | list[str]] = {"hint": _STALE_HINTS[same]} if lost else {}
                if compressed:
                    said["compressed"] = compressed  # (where it may be: not read)
                log = self._log.warning if lost else self._log.info
                log("checkpoint.stale", reason=why, offset=saved.offset, **said)
                names = ", ".join(compressed)
                if same:  # (the same file, not a new one: the output says so)
                    # (or a new file given the rotated one's inode: compress without create, helper-99)
                    where = f" (or it was rotated and compressed: {names} is not read)" if compressed else ""
                    text = (
                        f"{self.path} changed while the daemon was down: {why}; what it held past byte "
                        f"{saved.offset} before that was not read{where}; reading it again from byte 0"
                    )
                    note = (text, saved.offset)
                elif lost:  # (the output too: its lines went from line 195 to line 1 without a word, helper-94)
                    where = f" (compressed rotations are not read: {names})" if compressed else ""
                    text = (
                        f"the file {self.path} named when the daemon stopped, read to byte {saved.offset} (line "
                        f"{saved.line}), was rotated or removed while it was down and is not here to read{where}; "
                        f"what it got past byte {saved.offset} was not read; reading the new {self.path} from byte 0"
                    )
                    note = (text, saved.offset)
        elif self.at_startup and self.source.start_at == "end" and not (self.restart and self.restart.followed_before):
            # (start_at is for a source's first start: a file without a checkpoint where an earlier run
            # followed the source is new since, read from byte 0; a job's log made while the daemon
            # restarted had been read from its end, its error lost, helper-73, helper-75)
            offset = info.st_size
        else:
            offset, line = self._resume_left(info)
        self._set_position(fd, offset)
        self._base = base
        self._line0 = 1
        self.stream = self._new_stream(line, base + offset, rest_of)
        self._log.info("source.opened", offset=offset, line=line, ino=info.st_ino)
        return note

    def _resume_left(self, info: os.stat_result) -> tuple[int, int]:
        """``(offset, line)`` to read the file ``info`` from: where another path of the source left
        it after a rotation (``LeftFiles``), else its start."""
        left = self.left.resume((info.st_dev, info.st_ino), info.st_size) if self.left is not None else None
        if left is None:
            return 0, 1
        self._log.info(
            "file.resumed", ino=info.st_ino, offset=left[0], line=left[1], reason="read up to there by another path"
        )
        return left

    def _new_stream(self, line: int, offset: int, rest_of: tuple[int, bool] | None = None) -> LiveStream:
        stream = LiveStream(
            self.stream_name,
            self.source.filter,
            self.source.timing,
            self.sinks,
            self._ref,
            line,
            offset,
            totals=self.totals,
            totals_key=self.source.name,
            rest_of=rest_of,
            hold_tail=self.source.tail_at_end,
        )
        stream.release_after = self.source.timing.idle_seconds  # (the held lines up to the last kept one)
        stream.on_written = self._save  # the checkpoint follows each write at once
        return stream

    def _ref(self, run: Run) -> str:
        """Refs point into the current file (file offsets), checked by CRC-32 on expand: by the
        followed path, or by the name the file has now if the path was rotated away from it."""
        return ref_of(self._current_name(), run, self._base)

    def _current_name(self) -> str:
        """The followed path, or the name the current file has now in its directory if the path
        names another file (or none); the path if the file is not there (deleted)."""
        if self.current is None:
            return self.path
        try:
            now = os.stat(self.path)
            if (now.st_dev, now.st_ino) == self.current:
                return self.path
        except OSError:
            pass  # rotated, and no new file yet
        return next(iter(self._names_of(self.current[1])), self.path)

    def _set_position(self, fd: int, offset: int) -> None:
        self._pos = ReadPosition.at(fd, offset)
        self._began = time.time()

    # -- following -----------------------------------------------------------------------
    async def _follow(self, fd: int) -> None:
        """Read ``fd`` as it grows until the path names another file."""
        assert self.stream is not None
        while True:
            if await self._read(fd):
                continue
            if self._next or self._path_moved(fd):
                await self._read_rotated(fd)
                await self.stream.end_line()
                return
            await self._wait()

    async def _read_rotated(self, fd: int) -> None:
        """Read the rotated file ``fd`` until it has been unchanged for ``ROTATE_QUIET_SECONDS``
        (``MOVED_QUIET_SECONDS`` once a queued file has been written to), at most
        ``ROTATE_WAIT_SECONDS`` (all in seconds) from now; files that take the path meanwhile are
        opened and queued."""
        seen = last_change = time.monotonic()
        late = 0  # bytes read after the rotation was seen
        quiet = ROTATE_QUIET_SECONDS
        while True:
            self._queue_replacement(fd)
            got = await self._read(fd)
            now = time.monotonic()
            if got:
                late += got
                last_change = now
                continue
            if any(os.fstat(queued).st_size for queued, _ in self._next):  # (its writer moved on)
                quiet = MOVED_QUIET_SECONDS
                if not late:
                    last_change = min(last_change, now - max(0.0, time.time() - os.fstat(fd).st_mtime))
            until = min(seen + ROTATE_WAIT_SECONDS, last_change + quiet)
            if now >= until:
                break
            # look at the path often meanwhile: a file that replaces it and is replaced in turn
            # within the quiet stat interval would not be seen at all
            await self._wait(min(until, now + ACTIVE_POLL_SECONDS))
        capped = now < last_change + quiet
        self._rotation = {"old_ino": os.fstat(fd).st_ino, "late_bytes": late, "waited_seconds": round(now - seen, 3)}
        if capped and self._late is not None and self._late_files < MAX_LATE_FILES:
            # still written to: read on beside the new file, by a descriptor of its own, from a
            # line's start (the line being written is ended here once its end comes, within
            # LINE_END_SECONDS: a line cut in two streams is two lines, neither the message)
            await self._read_to_line_end(fd, now + LINE_END_SECONDS)
            self._late_files += 1
            self._late.start_soon(self._read_late, os.dup(fd), self._pos.offset)
            self._rotation["late_reader"] = True
        elif capped:
            self._rotation["capped"] = True

    async def _read_to_line_end(self, fd: int, deadline: float) -> None:
        """Read the rest of the line the file was read up to inside of, if its end is written by
        ``deadline`` (``time.monotonic()`` seconds)."""
        while self._pos.offset and os.pread(fd, 1, self._pos.offset - 1) != b"\n":
            if not await self._read(fd, to_line_end=True):
                if time.monotonic() >= deadline:
                    return
                await anyio.sleep(ACTIVE_POLL_SECONDS)  # (it is being written: its end is near)

    async def _read_late(self, fd: int, offset: int) -> None:
        """Read a rotated file that is still written to, from ``offset`` (bytes), as a stream of its own
        named ``<stream>@<inode>``, until it has been quiet for ``LATE_QUIET_SECONDS`` (or for
        ``ROTATE_QUIET_SECONDS`` once deleted) or the follower stops; then end the stream and close ``fd``."""
        info = os.fstat(fd)
        ino, start = info.st_ino, offset
        # the name it has now: a ref written after it was deleted names it still, its bytes read
        # before then may be in a compressed rotation (expand reads them there)
        name = next(iter(self._names_of(ino)), self.path)
        # where it was seen deleted: the bytes past it are on no disk (written after logrotate's
        # compress made its copy), and a ref into them never read back (helper-104)
        deleted_at: list[int] = []

        def ref(run: Run) -> str:
            if deleted_at and run.end_byte > deleted_at[0]:
                return ""
            return ref_of(next(iter(self._names_of(ino)), name), run, 0)

        for sink in self.sinks:
            sink.shared = True  # two streams of the path write there now: a text sink labels them
        stream = LiveStream(
            f"{self.stream_name}@{ino}",
            self.source.filter,
            self.source.timing,
            self.sinks,
            ref,
            1,
            offset,
            totals=self.totals,
            totals_key=self.source.name,
            hold_tail=self.source.tail_at_end,
        )
        stream.release_after = self.source.timing.idle_seconds
        self._log.info("file.late_reader", ino=ino, offset=offset)
        quiet_since, reason = time.monotonic(), "stopped"
        try:
            while True:
                data = os.pread(fd, READ_BYTES, offset)
                now = time.monotonic()
                info = os.fstat(fd)
                if not deleted_at and not info.st_nlink:
                    deleted_at.append(offset)
                    gone = f"{escaped_source(name)} was deleted while read, at byte {offset}"
                    await stream.marker(f"{gone}: what it got after is on no disk, and has no ref", offset=offset)
                if data:
                    offset += len(data)
                    quiet_since = now
                    await stream.feed(data)
                    await anyio.lowlevel.checkpoint()
                    continue
                if info.st_size < offset:
                    reason = "truncated"
                    break
                if now - quiet_since >= (LATE_QUIET_SECONDS if info.st_nlink else ROTATE_QUIET_SECONDS):
                    reason = "quiet" if info.st_nlink else "deleted"
                    break
                await anyio.sleep(self.source.timing.poll_seconds)
                await stream.tick()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(FINISH_SECONDS):
                await stream.end()
            os.close(fd)
            self._late_files -= 1
            self._log.info("file.late_reader_closed", ino=ino, reason=reason, bytes=offset - start)

    def _queue_replacement(self, fd: int) -> None:
        """Open and queue the file the path names now, if it is neither ``fd`` nor queued already
        (and fewer than ``MAX_QUEUED_FILES`` are)."""
        known = {(k.st_dev, k.st_ino) for k in (os.fstat(fd), *(info for _, info in self._next))}
        try:
            now = os.stat(self.path)
        except OSError:
            return
        if (now.st_dev, now.st_ino) == self._refused or (now.st_dev, now.st_ino) in known:
            return
        if len(self._next) >= MAX_QUEUED_FILES:
            self._skipped.add(now.st_ino)  # (said once the queue has drained: it may be read then)
            return
        opened = self._open()
        if opened is None:
            return
        if (opened[1].st_dev, opened[1].st_ino) in known:
            os.close(opened[0])  # replaced back between the stat and the open
            return
        self._skipped.discard(opened[1].st_ino)  # (passed over before, queued now: it is read)
        self._next.append(opened)

    async def _read(self, fd: int, to_line_end: bool = False) -> int:
        """Read what the file has past the offset (``to_line_end``: up to the first line end in
        it, none if there is none); return the byte count (0: nothing new).

        The file is checked for truncation or a rewrite in place after the read, so a rewrite
        racing the read never puts a fragment of new content into the old generation; a new
        generation is started then and 1 returned (read again, from byte 0).
        """
        assert self.stream is not None
        data = os.pread(fd, READ_BYTES, self._pos.offset)
        if to_line_end:
            data = data[: data.find(b"\n") + 1]
        change = self._pos.change(fd)
        if change is not None:
            await self._new_generation(fd, *change)
            return 1
        if not data:
            return 0
        self._pos.advance(data)
        self._active_until = time.monotonic() + ACTIVE_SECONDS
        await self.stream.feed(data)
        self._save()
        await anyio.lowlevel.checkpoint()  # a file that is all there must not starve the other tasks
        return len(data)

    async def _new_generation(self, fd: int, event: str, what: str) -> None:
        assert self.stream is not None
        self._log.warning(event, offset=self._pos.offset, size=os.fstat(fd).st_size)
        copy = self._copy()
        if copy is not None:  # copytruncate: what the writer added past the offset before the truncation
            name, copy_fd, info = copy
            read_to = self._pos.offset
            try:
                while data := os.pread(copy_fd, min(READ_BYTES, info.st_size - self._pos.offset), self._pos.offset):
                    self._pos.advance(data)
                    await self.stream.feed(data)
            finally:
                os.close(copy_fd)
            self._log.info("file.copy_read", copy=name, offset=read_to, bytes=self._pos.offset - read_to)
            what = (
                f"{'truncated' if event == 'file.truncated' else 'rewritten'} after it was read to offset "
                f"{read_to}; what was written past that before, {counted(self._pos.offset - read_to, 'byte')}, "
                f"was read from its copy {name}"
            )
        await self.stream.end()
        if copy is not None and self.left is not None:  # (a glob's follower of the copy goes on from its end)
            line = self.stream.emitted_line - self._line0 + 1
            self.left.leave((copy[2].st_dev, copy[2].st_ino), self._pos.offset, line)
        self.old, self.old_began = self._pos, self._began
        await self.stream.marker(f"{self.path} {what}; reading it again from byte 0", offset=self._pos.offset)
        self._set_position(fd, 0)
        self._base = 0
        self.stream = self._new_stream(1, 0)

    def generations(self) -> list[tuple[ReadPosition, float]]:
        """How far the file being read, and the generation a truncation ended, were read, and when
        each began to be read (``time.time()``)."""
        now = [(self._pos, self._began)]
        return now if self.old is None else [*now, (self.old, self.old_began)]

    def _copy(self) -> tuple[str, int, os.stat_result] | None:
        """logrotate's ``copytruncate`` copy of the generation just truncated, in the path's folder
        under a rotated name (``app.log.1``; not a compressed one), opened: its name, descriptor and
        ``fstat``; the one made since the generation began to be read whose first bytes and the bytes
        before the read offset are those read, and that is at least that long. None when there is none."""
        folder = os.path.dirname(self.path)
        pos = self._pos
        for name in rotations_of(self.path):
            if name.endswith(COMPRESSED_NAMES):
                continue
            try:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
            except OSError:
                continue
            info = os.fstat(fd)
            tail_at = pos.offset - len(pos.tail)
            if (
                stat.S_ISREG(info.st_mode)
                and info.st_ctime >= self._began - CLOCK_SLACK_SECONDS  # (made since: not an older file)
                and info.st_size >= pos.offset
                and os.pread(fd, len(pos.head), 0) == pos.head
                and os.pread(fd, len(pos.tail), tail_at) == pos.tail
            ):
                return os.path.join(folder, name), fd, info
            os.close(fd)
        return None

    def _path_moved(self, fd: int) -> bool:
        """Whether the open file is done with: the path names another file (it was renamed,
        replaced, or deleted and made again), or the path is gone and so is the file (deleted:
        it is then read as a rotated file is, until quiet, and closed). A file renamed away with
        no file at the path yet is read on: logrotate makes the new file after the rename."""
        try:
            now = os.stat(self.path)
        except FileNotFoundError:
            info = os.fstat(fd)  # after the stat: a file unlinked between the two still had a link
            if not self._missing_logged:
                if info.st_nlink:
                    self._log.info("file.renamed", ino=info.st_ino, names=self._names_of(info.st_ino))
                else:
                    self._log.info("file.deleted", ino=info.st_ino)
                self._missing_logged = True
            return not info.st_nlink
        info = os.fstat(fd)
        return (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino)

    async def _wait(self, until: float | None = None) -> None:
        """Until a hint, the next stat check, the stream's idle deadline, or ``until`` (a
        ``time.monotonic()`` value, seconds); then settle if due."""
        now = time.monotonic()
        timeout = ACTIVE_POLL_SECONDS if now < self._active_until else self.source.timing.poll_seconds
        if until is not None:
            timeout = min(timeout, max(0.0, until - now))
        due = self.stream.due() if self.stream is not None else None
        if due is not None:
            timeout = min(timeout, max(0.0, due - now))
        with anyio.move_on_after(timeout):
            await self._wake.wait()
        self._wake = anyio.Event()
        if self.stream is not None:
            await self.stream.tick()
            self._save()

    def _save(self) -> None:
        if self.checkpoints is None or self.stream is None or self.current is None:
            return
        offset = self.stream.emitted_byte - self._base
        if offset < 0 or offset > self._pos.offset:
            return
        # the file being read, not what the path names: after a rotation, until the switch,
        # the path names the new file while the offset is still in the old one
        dev, ino = self.current
        head = self._pos.head[: min(offset, HEAD_BYTES)]
        rest_line, rest_kept = self.stream.written_inside_line or (0, False)
        checkpoint = Checkpoint(
            self.path,
            dev,
            ino,
            len(head),
            fingerprint(head),
            offset,
            self.stream.emitted_line,
            rest_line,
            rest_kept,
            self._base,
        )
        if checkpoint != self._saved:
            try:
                self.checkpoints.save(self.source.name, checkpoint)
            except OSError as exc:
                if not self._unwritable:  # (once until one is written again: a save follows each write)
                    self._log.warning("checkpoint.unwritable", error=exc.strerror or str(exc), offset=offset)
                self._unwritable = True
                return
            if self._unwritable:
                self._log.info("checkpoint.written", offset=offset)
            self._saved, self._unwritable = checkpoint, False


class FileSource:
    """A ``file`` source: one path or a glob, each matching file followed by a ``FileFollower``.

    Files present at the source's first start start at ``start_at``; files that appear later (seen
    by a directory event or the periodic rescan), or while the daemon was down (no checkpoint of
    theirs, where an earlier run followed the source: ``RotatedWhileDown.followed_before``), are
    read from byte 0.
    """

    def __init__(
        self,
        source: SourceConfig,
        sinks: Sequence[Sink],
        checkpoints: CheckpointStore | None,
        task_group: TaskGroup,
        totals: Totals | None = None,
    ) -> None:
        self.source = source
        self.totals = totals
        self.sinks = sinks
        self.checkpoints = checkpoints
        self._tg = task_group
        self.magic = glob.has_magic(source.path)
        self.followers: dict[str, FileFollower] = {}
        self._compressed: set[str] = set()  # compressed files the glob matches, said once (of those there now)
        self._left = LeftFiles()
        self._restart = RotatedWhileDown()
        self._log = get_logger().bind(source=source.name)
        self._stop = anyio.Event()  # the current directory watch's stop event
        self._watch_failed = ""  # why the directory watch last failed (logged once per cause)

    def stop_watching(self) -> None:
        """End the directory watch now (its thread would otherwise only see a cancel at its next event)."""
        self._stop.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Open what exists, start watching, then report started and follow until cancelled."""
        matches = self._matches()
        self._restart = self._rotated_while_down(set(matches))  # (before any follower opens a file)
        for path in matches:
            self._add(path, at_startup=True)
        if not self.magic and self.source.path not in self.followers:
            self._add(self.source.path, at_startup=False)
        elif not self.followers:
            self._warn_if_no_directory()
        for follower in list(self.followers.values()):
            await follower.opened.wait()
        self._tg.start_soon(self._watch)
        task_status.started()
        while True:
            await anyio.sleep(self.source.timing.poll_seconds)
            for path in self._matches():
                if path not in self.followers:
                    self._add(path, at_startup=False)

    def _warn_if_no_directory(self) -> None:
        """A glob that matches nothing yet: say so when its directory is missing, as for a plain path."""
        fixed = glob_directory(self.source.path)
        if not os.path.isdir(fixed):
            self._log.warning("source.directory_missing", directory=fixed)

    def _matches(self) -> list[str]:
        """The files the source's path names now: a glob's, but those compressed, said once each
        (``app.log*`` matches logrotate's ``app.log.2.gz``: followed, its gzip bytes were filtered as
        lines, helper-94)."""
        if not self.magic:
            return [self.source.path] if os.path.exists(self.source.path) else []
        files = sorted(p for p in glob.glob(self.source.path) if os.path.isfile(p))
        compressed = {p for p in files if p.endswith(COMPRESSED_NAMES)}
        for path in sorted(compressed - self._compressed):
            self._log.info("file.compressed", path=path, hint="a compressed file is not read")
        self._compressed = compressed
        return [p for p in files if p not in compressed]

    def _add(self, path: str, at_startup: bool) -> None:
        name = f"{self.source.name}:{path}" if self.magic else self.source.name
        follower = FileFollower(
            path,
            self.source,
            name,
            self.sinks,
            self.checkpoints,
            at_startup,
            self.totals,
            self._claim,
            self._left,
            self._restart,
            let_go=self.magic,
            copy_of=self._copy_of if self.magic else None,
        )
        self.followers[path] = follower
        if not at_startup and os.path.exists(path):  # (a missing path is followed until it appears)
            self._log.info("file.found", path=path)
        elif not os.path.isdir(os.path.dirname(path)):  # waited for all the same: it may be made later
            self._log.warning("source.directory_missing", directory=os.path.dirname(path))
        elif not os.path.exists(path):
            self._log.info("file.missing", path=path, hint="waiting for it to appear")
        self._tg.start_soon(self._follow, follower)

    async def _follow(self, follower: FileFollower) -> None:
        """Run ``follower``; once it lets its path go, forget it (the rescan finds a new file there)."""
        await follower.run()
        if self.followers.get(follower.path) is follower:
            del self.followers[follower.path]

    def _rotated_while_down(self, matches: set[str]) -> RotatedWhileDown:
        """Find, from the source's checkpoints, the files its paths were rotated to while the
        daemon was down (``rotated_since``; each directory scanned once): a file under a name the
        source follows too (a glob's ``app.1.log``) is handed to that name's follower, the others
        are queued for the path's. A file that is one path's checkpointed file and another's
        later generation goes on from the checkpoint; one checkpointed by two paths (a kill
        between their saves), from the further one."""
        restart = RotatedWhileDown()
        if self.checkpoints is None:
            return restart
        try:
            saved_all = self.checkpoints.load_all(self.source.name)
        except OSError as exc:  # (each follower then warns of its own checkpoint's trouble)
            self._log.warning("checkpoint.unreadable", file=str(self.checkpoints.folder), reason=str(exc))
            return restart
        restart.followed_before = bool(saved_all) or self.source.name in self.checkpoints.followed
        scans: dict[str, list[os.DirEntry[str]]] = {}
        found: list[tuple[Checkpoint, list[tuple[str, os.stat_result]]]] = []
        for saved in saved_all:
            try:
                info = os.stat(saved.path)
                now: tuple[int, int] | None = (info.st_dev, info.st_ino)
            except FileNotFoundError:
                now = None  # rotated, and no new file yet
            except OSError:
                continue
            if now == (saved.dev, saved.ino):
                continue  # not rotated: resumed by its path's follower
            directory = os.path.dirname(saved.path)
            if directory not in scans:
                try:
                    with os.scandir(directory) as entries:
                        scans[directory] = list(entries)
                except OSError:
                    scans[directory] = []
            files, compressed = rotated_since(saved, scans[directory], now)
            restart.found.update((info.st_dev, info.st_ino) for _, info in files)
            if compressed:
                self._log.warning("checkpoint.rotated_compressed", path=saved.path, files=compressed, read=False)
            if files:
                found.append((saved, files))
        checkpointed: dict[tuple[int, int], Checkpoint] = {}
        for saved, _ in found:
            other = checkpointed.get((saved.dev, saved.ino))
            if other is None or other.offset < saved.offset:
                checkpointed[(saved.dev, saved.ino)] = saved
        taken: set[tuple[int, int]] = set()
        for saved, files in found:
            for name, info in files:
                file = (info.st_dev, info.st_ino)
                start = checkpointed.get(file, Checkpoint(saved.path, *file, 0, fingerprint(b""), 0, 1))
                if file in taken or start.path != saved.path:
                    continue  # queued already, or another path's checkpointed file
                taken.add(file)
                if name in matches:
                    restart.handed[file] = start
                else:
                    restart.queued.setdefault(saved.path, []).append((name, file, start.offset))
        return restart

    def _copy_of(self, fd: int, follower: FileFollower) -> str | None:
        """The path of this source that the open file ``fd``, found at ``follower``'s rotated name
        of it (``app.log.1`` of ``app.log``), is a copy of, as far as another follower read its file
        or the generation a truncation ended: made since that generation began to be read, with the
        same first bytes and the same bytes before that offset; or, while it is shorter and was
        written in the last ``COPYING_SECONDS`` (a copy being made), the same first bytes as far as
        it goes. None for a file there when the source started, or left there after a rotation,
        read on from where it was left (``LeftFiles``)."""
        info = os.fstat(fd)
        if follower.at_startup or self._left.resume((info.st_dev, info.st_ino), info.st_size) is not None:
            return None  # (a file there at the start is no copy being made: a banner's, helper-99)
        folder, name = os.path.split(follower.path)
        head = os.pread(fd, HEAD_BYTES, 0)
        copying = time.time() - info.st_mtime < COPYING_SECONDS
        for other in self.followers.values():
            if other is follower or os.path.dirname(other.path) != folder:
                continue
            if rotation_rank(name, os.path.basename(other.path)) is None:
                continue
            for pos, began in other.generations():
                if info.st_ctime < began - CLOCK_SLACK_SECONDS:
                    continue  # (made before that generation was read from: not its copy)
                if not pos.head or not (pos.head.startswith(head) or head.startswith(pos.head)):
                    continue
                if info.st_size >= pos.offset:
                    if os.pread(fd, len(pos.tail), pos.offset - len(pos.tail)) == pos.tail:
                        return other.path
                elif copying:
                    return other.path
        return None

    def _claim(self, file: tuple[int, int], follower: FileFollower) -> bool:
        """Whether no other follower of this source is reading ``file`` (device, inode)."""
        return not any(f.current == file for f in self.followers.values() if f is not follower)

    def _directories(self) -> list[str]:
        dirs = {os.path.dirname(self.source.path)} | {os.path.dirname(p) for p in self.followers}
        return sorted(d for d in dirs if os.path.isdir(d))

    async def _watch(self) -> None:
        """Directory events as hints; watches are re-made when the set of directories changes."""
        while True:
            dirs = self._directories()
            if not dirs:
                await anyio.sleep(self.source.timing.poll_seconds)
                continue
            stop = self._stop = anyio.Event()
            failed = ""
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._rewatch_when_changed, dirs, stop)
                    async for changes in watchfiles.awatch(
                        *dirs,
                        watch_filter=None,
                        debounce=WATCH_DEBOUNCE_MS,
                        step=WATCH_STEP_MS,
                        recursive=False,
                        stop_event=stop,
                    ):
                        self._dispatch(changes)
                    tg.cancel_scope.cancel()
            except* (WatchfilesRustInternalError, OSError) as group:
                cause: BaseException = group
                while isinstance(cause, BaseExceptionGroup):  # (the task group's, nested)
                    cause = cause.exceptions[0]
                failed = str(cause)
            if failed:
                if failed != self._watch_failed:  # said once per cause, not every retry
                    self._log.warning("source.watch_failed", error=failed, retry_seconds=WATCH_RETRY_SECONDS)
                    self._watch_failed = failed
                await anyio.sleep(WATCH_RETRY_SECONDS)

    async def _rewatch_when_changed(self, dirs: list[str], stop: anyio.Event) -> None:
        # the directory set changes when files appear elsewhere: found by this periodic look
        while self._directories() == dirs:  # noqa: ASYNC110
            await anyio.sleep(self.source.timing.poll_seconds)
        stop.set()

    def _dispatch(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        for _, path in changes:
            follower = self.followers.get(path)
            if follower is not None:
                follower.hint()
            elif self.magic and fnmatch.fnmatch(path, self.source.path) and os.path.isfile(path):
                if not path.endswith(COMPRESSED_NAMES):  # (said by the next scan, ``_matches``)
                    self._add(path, at_startup=False)
