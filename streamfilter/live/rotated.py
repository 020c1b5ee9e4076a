"""What a followed path was rotated to while the daemon was down, found once at a source's start
from its checkpoints and one scan of each directory (``rotated_since``, ``RotatedWhileDown``):
the checkpointed file under its new name, then the path's later generations, oldest first."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from .checkpoint import Checkpoint

__all__ = ("COMPRESSED_NAMES", "RotatedWhileDown", "is_compressed", "rotated_since", "rotation_rank", "rotations_of")

# a rotated name's suffix, after the path's name or before its extension: numbered (``.1``) or dated
# (``-20261206``, ``.2026-12-06``, ``-2026120614``, ``-20261206-1765000000``: logrotate's dateext)
ROTATION_SUFFIX = re.compile(r"(?:[._-]\d+)+")
NUMBERED_DIGITS = 7  # a one-number suffix of fewer digits is a count (``.1``: the newest), not a date
COMPRESSED_NAMES = (".gz", ".bz2", ".xz", ".zst")
COMPRESSED_MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd")  # gzip, bzip2, xz, zstd


def rotation_rank(name: str, base: str) -> int | None:
    """Whether the file name ``name`` is a rotated name of the file name ``base``: ``base`` and a
    suffix (``app.log.1``, ``app.log-20261206``), or the suffix before ``base``'s extension
    (``app.1.log``, logrotate's ``extension``), maybe then a compression extension (``.gz``).

    Returns:
        None if it is not; else a number that orders names of equal modification times, higher
        newer: minus the count of a numbered one (``.1`` is newer than ``.2``), the digits of a
        dated one.
    """
    for compressed in COMPRESSED_NAMES:
        if name.endswith(compressed):
            name = name.removesuffix(compressed)
            break
    stem, ext = os.path.splitext(base)
    for head, tail in ((base, ""), (stem, ext)) if ext else ((base, ""),):
        if len(name) > len(head) + len(tail) and name.startswith(head) and name.endswith(tail):
            suffix = name[len(head) : len(name) - len(tail)]
            if ROTATION_SUFFIX.fullmatch(suffix):
                numbers = re.findall(r"\d+", suffix)
                if len(numbers) == 1 and len(numbers[0]) < NUMBERED_DIGITS:
                    return -int(numbers[0])
                return int("".join(numbers))
    return None


def rotations_of(path: str) -> list[str]:
    """The names in ``path``'s folder named as its rotations (``rotation_rank``: ``app.log.1``,
    ``app.log.2.gz``), in name order; none when the folder cannot be listed."""
    folder, base = os.path.split(path)
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    return [n for n in names if rotation_rank(n, base) is not None]


def is_compressed(path: str) -> bool:
    """Whether the file ``path`` is compressed: by its name, or by its first bytes (gzip, bzip2,
    xz, zstd); False if it cannot be read."""
    if path.endswith(COMPRESSED_NAMES):
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.pread(fd, 8, 0).startswith(COMPRESSED_MAGIC)
    finally:
        os.close(fd)


def rotated_since(
    saved: Checkpoint, entries: Sequence[os.DirEntry[str]], now: tuple[int, int] | None
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """The files a path was rotated to while the daemon was down, from one scan of its directory.

    Args:
        saved: the path's checkpoint, whose file the path no longer names.
        entries: the path's directory, scanned once.
        now: the file (device, inode) the path names now, or None.

    Returns:
        The files to read, oldest first, each its name and ``stat``: the checkpointed file under
        its new name (``app.log.2``), then the path's later generations, the regular files of
        rotated names modified after it (by number when the times are equal: ``app.log.1``), each
        inode once, the path's own file not among them; none when the checkpointed file is not
        there, or is not it any more (its first bytes changed). And the names of the later ones
        that are compressed, left out (they are not read).
    """
    base = os.path.basename(saved.path)
    checkpointed: tuple[tuple[int, int], str, os.stat_result] | None = None
    rotated: list[tuple[tuple[int, int], str, os.stat_result]] = []
    for entry in entries:
        rank = rotation_rank(entry.name, base)
        if entry.inode() != saved.ino and rank is None:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # (gone since the scan)
        key = (info.st_mtime_ns, rank or 0)
        if (info.st_dev, info.st_ino) == (saved.dev, saved.ino):
            checkpointed = (key, entry.path, info)
        elif (info.st_dev, info.st_ino) != now and rank is not None:
            rotated.append((key, entry.path, info))
    if checkpointed is None or not _still(saved, checkpointed[1]):
        return [], []
    files, compressed = [checkpointed[1:]], []
    seen = {(saved.dev, saved.ino)}
    for key, name, info in sorted(rotated, key=lambda r: r[0]):
        if key <= checkpointed[0] or (info.st_dev, info.st_ino) in seen:
            continue  # older (read before the checkpoint), or a second name of one file
        seen.add((info.st_dev, info.st_ino))
        if is_compressed(name):
            compressed.append(name)
        else:
            files.append((name, info))
    return files, compressed


def _still(saved: Checkpoint, name: str) -> bool:
    """Whether the file ``name`` is still the file ``saved`` names (same inode and first bytes, not shorter)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return saved.mismatch(fd) is None
    finally:
        os.close(fd)


class RotatedWhileDown:
    """What a source's checkpoints say was rotated while the daemon was down, found once at its
    start (``FileSource._rotated_while_down``), for its followers to take.

    Attributes:
        queued: per followed path, the files it reads before the file it names now, oldest
            first: each one's name, (device, inode), and the byte offset it is read from (the
            checkpoint's in the checkpointed file, 0 in a later generation).
        handed: per file (device, inode) under a name another path of the source (a glob)
            follows, the checkpoint that path resumes it from (one at byte 0 for a later
            generation).
        followed_before: the source was followed before (it has checkpoints, or an earlier run
            claimed it: ``CheckpointStore.followed``), and a file present now without a checkpoint
            appeared while the daemon was down (``start_at`` is for a source's first start).
        found: the checkpointed files (device, inode) found under another name (rotated while
            the daemon was down): read there, not lost.
    """

    def __init__(self) -> None:
        self.queued: dict[str, list[tuple[str, tuple[int, int], int]]] = {}
        self.handed: dict[tuple[int, int], Checkpoint] = {}
        self.followed_before = False
        self.found: set[tuple[int, int]] = set()
