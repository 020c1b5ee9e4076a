"""Checkpoints of followed files: where output stopped, and how to know it is the same file.

A checkpoint holds the file's identity (device, inode, and a SHA-256 fingerprint of its first
bytes, up to ``HEAD_BYTES``, as read when it was taken) and the position just past the last run
written to the sinks (byte offset in the file and the next line number). It is resumed only if
all of it still holds: same device and inode, offset not past the end, same fingerprint; an
inode reused by a new file fails the fingerprint (or the size) and the file is read as new.
Files are written atomically (temporary file, then rename) in ``STATE/checkpoints/``.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.errors import StreamfilterError
from ..core.words import counted

__all__ = (
    "HEAD_BYTES",
    "PSEUDO_FILES",
    "Checkpoint",
    "CheckpointStore",
    "ReadPosition",
    "UnreadableCheckpoint",
    "fingerprint",
)

HEAD_BYTES = 1024
PSEUDO_FILES = ("/proc/", "/sys/")  # their sizes read 0 whatever they hold: no truncation is seen by size
TAIL_BYTES = 64  # bytes before the read offset compared to detect a rewrite in place
# a checkpoint not written for this long whose path is gone is removed at a start: a glob's dated
# files (app-20261206.log) each leave one, and every start reads them all (``load_all``)
FORGET_SECONDS = 30 * 86400.0


def fingerprint(head: bytes) -> str:
    """SHA-256 (hex) of a file's first bytes."""
    return hashlib.sha256(head).hexdigest()


class UnreadableCheckpoint(StreamfilterError):
    """A checkpoint's file is there but cannot be read back (cut short, edited, unreadable).

    Attributes:
        file: the checkpoint's file.
        reason: what is wrong with it.
    """

    def __init__(self, file: Path, reason: str) -> None:
        super().__init__(f"checkpoint {file} cannot be read back: {reason}")
        self.file, self.reason = file, reason


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One followed file's position.

    Attributes:
        path: the followed path.
        dev, ino: the file's device and inode.
        head_len: how many first bytes ``head_sha`` covers (at most ``HEAD_BYTES``).
        head_sha: ``fingerprint`` of those bytes.
        offset: byte offset in the file just past the last run written.
        line: 1-based number of the line that starts at ``offset``, or of the line after
            ``rest_line``.
        rest_line: when ``offset`` is inside a line (it was written before its end came: let
            out at a pause, or ended by a stop), that line's number; the bytes up to its line
            end are its rest. 0: ``offset`` starts a line.
        rest_kept: that line was kept (its rest is kept too).
        base: the stream offset of the file's byte 0: the bytes the stream read from the files
            before it (rotated away), so a resumed stream's offsets go on from where they were
            (they went back to the file's own, and one stream described a byte range twice).
    """

    path: str
    dev: int
    ino: int
    head_len: int
    head_sha: str
    offset: int
    line: int
    rest_line: int = 0
    rest_kept: bool = False
    base: int = 0

    def mismatch(self, fd: int) -> str | None:
        """Why the open file ``fd`` is not the checkpointed one, or None if it is."""
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (self.dev, self.ino):
            return "another inode"
        if info.st_size < self.offset:
            return f"the file ({counted(info.st_size, 'byte')}) is shorter than the checkpoint offset {self.offset}"
        if fingerprint(os.pread(fd, self.head_len, 0)) != self.head_sha:
            return "the first bytes changed (inode reused or file rewritten)"
        return None


class CheckpointStore:
    """Checkpoints of one daemon, one JSON file per followed path.

    Args:
        directory: the state directory; files go to ``checkpoints/`` in it.

    Attributes:
        followed: the sources claimed (``claim``) that an earlier run of the daemon followed.

    Raises:
        OSError: the directory cannot be created.
    """

    def __init__(self, directory: Path) -> None:
        self.folder = directory / "checkpoints"
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._locks: list[int] = []
        self.followed: set[str] = set()

    def claim(self, source: str) -> None:
        """Hold ``source``'s checkpoints for this process (an exclusive ``flock`` on
        ``checkpoints/SOURCE.lock``, released by ``close`` or at exit): a second daemon on the
        same state would read the same files again and write over the same checkpoints. A lock
        file there already says the source was followed before (``followed``).

        Raises:
            StreamfilterError: another process holds them (the message names its pid).
            OSError: the lock file cannot be opened.
        """
        lock = self.folder / f"{source}.lock"
        if lock.exists():  # (left by an earlier run: the source was followed before)
            self.followed.add(source)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise StreamfilterError(
                f"source {source!r}: its checkpoints in {self.folder} are held by another running "
                f"streamfilter (pid {holder}); a second one would read its files again"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._locks.append(fd)

    def close(self) -> None:
        """Release every claim."""
        for fd in self._locks:
            os.close(fd)
        self._locks.clear()

    def _file(self, source: str, path: str) -> Path:
        # (a name that is not UTF-8 holds surrogates for its bytes: hashed as those bytes, as a
        # UTF-8 name is as its own)
        key = hashlib.sha256(f"{source}\0{path}".encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return self.folder / f"{source}-{key}.json"

    def load(self, source: str, path: str) -> Checkpoint | None:
        """The checkpoint of ``path`` in ``source``, or None when none was saved.

        Raises:
            UnreadableCheckpoint: its file is there but is not a checkpoint (cut short, edited) or
                cannot be read.
            OSError: the process has no descriptor left to read it (EMFILE, ENFILE): nothing is
                wrong with the file (it was said to be, helper-42); try again later.
        """
        file = self._file(source, path)
        try:
            return _read(file)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                raise
            raise UnreadableCheckpoint(file, str(e)) from None
        except (ValueError, TypeError) as e:
            raise UnreadableCheckpoint(file, str(e)) from None

    def load_all(self, source: str) -> list[Checkpoint]:
        """Every checkpoint ``source`` has, of any path (a glob's files that are gone too), in no
        particular order. One that cannot be read back is left out: its path's follower warns of it.
        One whose path is gone and that was not written for ``FORGET_SECONDS`` is removed.

        Raises:
            OSError: the checkpoints' directory cannot be listed.
        """
        # (a name is the source's and a 16-digit key: another source whose name starts with this
        # one's, "app-x", has more before its key)
        own = re.compile(rf"{re.escape(source)}-[0-9a-f]{{16}}\.json")
        found = []
        for file in self.folder.iterdir():
            if own.fullmatch(file.name):
                try:
                    saved = _read(file)
                    if time.time() - file.stat().st_mtime > FORGET_SECONDS and not os.path.lexists(saved.path):
                        file.unlink()
                        continue
                    found.append(saved)
                except (OSError, ValueError, TypeError):
                    continue
        return found

    def save(self, source: str, checkpoint: Checkpoint) -> None:
        """Write ``checkpoint`` atomically (a temporary file renamed over it; none is left when
        that fails).

        Raises:
            OSError: it cannot be written.
        """
        target = self._file(source, checkpoint.path)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        try:
            tmp.write_text(json.dumps(asdict(checkpoint)))
            os.replace(tmp, target)
        except OSError:
            tmp.unlink(missing_ok=True)  # (a full disk leaves it empty)
            raise


def _read(file: Path) -> Checkpoint:
    """The checkpoint in ``file``, each field of its type and no count negative (an edited file
    could hold ``"offset": "x"`` or ``-5``).

    Raises:
        OSError: it cannot be read.
        ValueError, TypeError: it is not a checkpoint (not JSON, a key missing or unknown, a
            field that is not of its type, named).
    """
    checkpoint = Checkpoint(**json.loads(file.read_text()))
    for name, kind in (("path", str), ("head_sha", str), ("rest_kept", bool)):
        if not isinstance(getattr(checkpoint, name), kind):
            raise ValueError(f"{name} is not a {kind.__name__}")
    for name in ("dev", "ino", "head_len", "offset", "line", "rest_line", "base"):
        value = getattr(checkpoint, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} is not a count: {value!r}")
    return checkpoint


class ReadPosition:
    """How far one open file was read, and what tells a new generation of it (truncated, or
    rewritten in place) from more of the same: its first bytes (up to ``HEAD_BYTES``), the
    ``TAIL_BYTES`` before the offset, and its size and modification time when last looked at.

    ``ReadPosition()`` is nothing read yet; ``ReadPosition.at(fd, offset)`` takes what the
    file holds before ``offset`` as read.
    """

    def __init__(self) -> None:
        self.offset = 0  # bytes of the file read
        self.head = b""
        self.tail = b""
        self.seen: tuple[int, int] = (-1, -1)  # (size, mtime_ns) at the last rewrite check

    @classmethod
    def at(cls, fd: int, offset: int) -> ReadPosition:
        """The position ``offset`` in the open file ``fd``."""
        pos = cls()
        pos.offset = offset
        pos.head = os.pread(fd, min(offset, HEAD_BYTES), 0)
        pos.tail = os.pread(fd, min(offset, TAIL_BYTES), offset - min(offset, TAIL_BYTES))
        info = os.fstat(fd)
        pos.seen = (info.st_size, info.st_mtime_ns)
        return pos

    def advance(self, data: bytes) -> None:
        """``data``, the next bytes of the file, were read."""
        if self.offset < HEAD_BYTES:
            self.head += data[: HEAD_BYTES - self.offset]
        self.tail = (self.tail + data[-TAIL_BYTES:])[-TAIL_BYTES:]
        self.offset += len(data)

    def change(self, fd: int) -> tuple[str, str] | None:
        """``(event, what)`` if the open file ``fd`` was truncated or rewritten in place, else None.

        The bytes are read again only when the size or modification time changed.
        """
        info = os.fstat(fd)
        if info.st_size < self.offset:
            # (read to offset N, not "truncated at N": what was written past N before the truncation
            # is gone unread, copytruncate's loss, helper-52)
            return "file.truncated", (
                f"truncated after it was read to offset {self.offset} (now {counted(info.st_size, 'byte')}; "
                "what was written past that before the truncation was not read)"
            )
        if (info.st_size, info.st_mtime_ns) == self.seen:
            return None
        self.seen = (info.st_size, info.st_mtime_ns)
        tail_at = self.offset - len(self.tail)
        if os.pread(fd, len(self.head), 0) != self.head or os.pread(fd, len(self.tail), tail_at) != self.tail:
            return "file.rewritten", f"rewritten in place (read to offset {self.offset})"
        return None
