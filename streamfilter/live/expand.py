"""Getting dropped lines back: references (refs) to DROP runs, the stdin archive, ``expand``.

A ref names where the bytes of a DROP run can be read again, and how to tell they are still the
same bytes: ``SOURCE:START-END:CRC``, where START..END-1 are stream byte offsets and CRC is the
CRC-32 of those bytes (8 hex digits). SOURCE is

* the absolute path of the file that was filtered (the file itself is the record), or
* ``stdin-<id>`` for standard input, whose bytes are kept in an archive file in the state
  directory (``$STATE_DIRECTORY`` under systemd, else ``$XDG_STATE_HOME/streamfilter``, else
  ``~/.local/state/streamfilter``); the archive is capped and its oldest files are evicted.

``expand`` works from any process, after the filter has exited, and reports a file that was
rewritten, truncated, rotated away or evicted instead of printing the wrong bytes.

Text output writes a ref whose source is the one the ref before it named as ``@START-END:CRC``
(``TextRefs``). The sources such outputs named are remembered in the state directory
(``remember_source``, the last ``RECENT_SOURCES``), so ``parse_ref`` reads a short ref as it was
printed: against the remembered sources, newest first, the first whose bytes in the range have
the ref's CRC-32.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import fcntl
import gzip
import hashlib
import lzma
import os
import re
import stat
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar, cast

from ..core.errors import StreamfilterError
from ..core.records import Run
from ..core.templates import HIDDEN_CHARACTERS
from ._logging import get_logger
from .checkpoint import PSEUDO_FILES

__all__ = (
    "ARCHIVE_BYTES",
    "ARCHIVE_FILES",
    "RECENT_SOURCES",
    "REF_NOTE",
    "Archive",
    "Ref",
    "RefError",
    "TextRefs",
    "archive_refs",
    "escaped_source",
    "evict",
    "expand",
    "expand_page",
    "is_archive",
    "is_short_ref",
    "parse_ref",
    "ref_of",
    "ref_path",
    "remember_source",
    "short_ref",
    "shown",
    "state_dir",
    "unreferenced_from",
)

# said once per text output, before its first ref (``TextRefs.note``)
REF_NOTE = "to see them: streamfilter expand REF (an @REF is in the file named before)"
ARCHIVE_BYTES = 256 << 20  # all archived streams together, in bytes; the oldest files are evicted
# and at most this many files (a socket source's thousands of short connections, each a file: the
# folder is listed at each eviction)
ARCHIVE_FILES = 4096
ARCHIVE_PREFIX = "stdin-"  # an archive file's name: ``stdin-<id>.log`` (``Archive``)
RECENT_SOURCES = 64  # sources of text outputs remembered for their short refs; the least recent are forgotten
# (an offset has at most 19 digits, as an int64: a longer one is no ref, and Python refuses to read
# a number of over 4300 digits, helper-50)
_REF = re.compile(r"(?P<source>.+):(?P<start>\d{1,19})-(?P<end>\d{1,19}):(?P<crc>[0-9a-f]{8})", re.DOTALL)
# a path's backslashes, control characters and bytes that are not UTF-8 (``os.fsdecode``'s
# surrogates) are escaped in a ref, so a ref is one line of printable UTF-8 (a summary line in
# text output stays one line) and reads back as the same path
_ESCAPES = (
    {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}
    | {0xDC00 + b: f"\\x{b:02x}" for b in range(0x80, 0x100)}
    | {ord("\\"): "\\\\"}
    # and the characters a terminal acts on or shows as nothing, by their UTF-8 bytes (a file named
    # with U+202E reversed the rest of its summary line, helper-98)
    | {c: "".join(f"\\x{b:02x}" for b in chr(c).encode()) for c in HIDDEN_CHARACTERS}
)
# a ref in text output whose source is that of the ref before it (``TextRefs``)
_SHORT = re.compile(r"@\d{1,19}-\d{1,19}:[0-9a-f]{8}")
_UNESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def escaped_source(source: str) -> str:
    """``source`` (a path, or ``stdin-<id>``) as a ref and a ``==> NAME <==`` label write it: one
    line of printable UTF-8, its control characters, backslashes, characters a terminal hides and
    bytes that are not UTF-8 written ``\\xNN`` (``Ref.parse`` reads it back)."""
    return source.translate(_ESCAPES)


def _unescape(m: re.Match[str]) -> str:
    if m[1] == "\\":
        return "\\"
    byte = int(m[1][1:], 16)
    return chr(0xDC00 + byte if byte >= 0x80 else byte)  # a byte >= 0x80 as os.fsdecode gives it


_READ = 1 << 16


class RefError(StreamfilterError):
    """A ref that cannot be expanded: malformed, unknown, expired, or its bytes changed (exit 1)."""


def state_dir() -> Path:
    """The state directory: systemd's ``$STATE_DIRECTORY``, else ``$XDG_STATE_HOME/streamfilter``,
    else ``~/.local/state/streamfilter``. A relative ``XDG_STATE_HOME`` is ignored, as the XDG Base
    Directory spec says (it named a folder in each working directory, and refs that ``expand``
    could not read from another)."""
    if os.environ.get("STATE_DIRECTORY"):
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
    base = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = str(Path.home() / ".local" / "state")
    return Path(base) / "streamfilter"


def evict(path: Path) -> bool:
    """Remove a kept file (an archive, a run's whole output) unless the stream or run that writes it
    still does: it holds a shared ``flock`` on it while it writes (``Archive``, ``OutputCopy``).
    Whether it was removed (not when it was gone already)."""
    try:
        with open(path, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            path.unlink(missing_ok=True)
    except FileNotFoundError:
        return False
    return True


def state_dirs() -> Iterator[Path]:
    """Where state may go, in order: ``state_dir()`` (not under a home directory that is not there),
    then, where that cannot be written (a sandboxed
    agent), ``streamfilter-UID`` in each temporary directory as ``tempfile`` finds them, without its
    last resort, the working directory (in a sandbox where only the project is writable, the
    repository). A temporary one is made (mode 0700) when it is reached, and passed over unless it
    is a directory of this user's that no one else can write to (``_private``)."""
    if not _homeless():
        yield state_dir()
    dirs = [os.environ[name] for name in ("TMPDIR", "TEMP", "TMP") if os.environ.get(name)]
    dirs += [d for d in ("/tmp", "/var/tmp", "/usr/tmp") if d not in dirs]
    for d in dirs:
        if os.path.isdir(d):
            where = Path(os.path.abspath(d)) / f"streamfilter-{os.getuid()}"
            if _private(where):
                yield where


def _private(folder: Path) -> bool:
    """Whether ``folder`` (in a temporary directory anyone may write to) is this user's own: made
    here with mode 0700 when it is not there, else a directory, not a symbolic link, owned by this
    user, that no one else could write to (its mode then narrowed to 0700). Another user who made it
    first (a link to a folder of theirs), or wrote into it (a link in place of ``runs``), could
    change the files read back from it, a run's whole output that an agent is told to read among
    them (helper-80, helper-81), as ssh-agent and tmux refuse such a folder."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
        if info.st_mode & 0o077:
            os.chmod(folder, 0o700)
    except OSError:
        return False
    return True


def _homeless() -> bool:
    """Whether ``state_dir()`` is under a home directory that is not there (``/nonexistent``, Debian's
    ``nobody``): it is not made, parents and all. An empty or relative ``HOME`` names none either
    (Python reads ``HOME=`` as ``/``: state went to ``/.local/state``)."""
    if os.environ.get("STATE_DIRECTORY") or os.path.isabs(os.environ.get("XDG_STATE_HOME", "")):
        return False
    home = os.environ.get("HOME")
    return (home is not None and not os.path.isabs(home)) or not Path.home().is_dir()


def shown(text: str) -> str:
    """``text`` as an error names it: cut in its middle past 200 characters, with its length (a
    megabyte of argument is not echoed back, helper-50)."""
    return text if len(text) <= 200 else f"{text[:120]}…{text[-60:]} ({len(text)} characters)"


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to the bytes ``start .. end-1`` of a source, with their CRC-32 (hex)."""

    source: str
    start: int
    end: int
    checksum: str

    def __str__(self) -> str:
        return f"{escaped_source(self.source)}:{self.start}-{self.end}:{self.checksum}"

    @classmethod
    def parse(cls, text: str) -> Ref:
        """Parse ``SOURCE:START-END:CRC`` (in SOURCE, ``\\\\`` is a backslash and ``\\xHH`` a control
        character or a byte of the name that is not UTF-8).

        Raises:
            RefError: the text is not a ref.
        """
        m = _REF.fullmatch(text)
        if m is None and is_short_ref(text):
            raise RefError(
                f"{shown(text)!r} is a ref without its source: put the source of the full ref above it in the"
                f" output before it, SOURCE:{text[1:]}"
            )
        if m is None or int(m["end"]) < int(m["start"]):
            raise RefError(f"{shown(text)!r} is not a streamfilter ref (SOURCE:START-END:CRC32)")
        if int(m["end"]) == int(m["start"]):  # (its CRC is 00000000 whatever the file: a forged ref, helper-62)
            raise RefError(f"{shown(text)!r} names no byte: no streamfilter output prints such a ref")
        # (bytes of UTF-8 escaped one by one, U+202E's, read back as that character: the source's text)
        source = os.fsdecode(os.fsencode(_UNESCAPE.sub(_unescape, m["source"])))
        return cls(source, int(m["start"]), int(m["end"]), m["crc"])


class Archive:
    """A copy of one stdin stream, so its refs can be expanded later.

    Args:
        directory: the state directory (``state_dir()``), or where state goes when it cannot be
            written (``state_dirs``); files go to ``archive/`` in it.
        cap_bytes: about the most bytes of all archived streams together: the oldest archive
            files are removed (not one whose stream is still archived, ``evict``) until all fit
            in the cap and are fewer than ``cap_files`` when a new stream starts (the folder is
            scanned at most every ``EVICT_SECONDS`` per process, or after a quarter of the cap
            was written), and until they fit in the cap less a sixteenth of it (room for its next
            sixteenth) each time a stream has written another sixteenth; one stream stops being
            archived (its later refs are not given) at half the cap.

    Raises:
        OSError: the archive directory cannot be created or written.
    """

    # the archive folder is scanned for eviction at most this often per process (a daemon opens
    # one archive per connection), or once a quarter of the cap was written since the last scan
    EVICT_SECONDS: ClassVar[float] = 10.0
    _last_scan: ClassVar[float] = -1e9
    _written: ClassVar[int] = 0
    _file: BinaryIO  # (the file written, at ``_path``: ``_open``)
    _path: Path

    def __init__(self, directory: Path, cap_bytes: int = ARCHIVE_BYTES, cap_files: int = ARCHIVE_FILES) -> None:
        self.folder = directory / "archive"
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.limit = cap_bytes // 2
        # room is made as the stream grows, not for all it may hold at its start: a 30-line run had
        # evicted a run ended a second before, the archive at half its cap (helper-103)
        self._cap, self._step = cap_bytes, max(1, cap_bytes // 16)
        self._next_room = self._step  # (bytes archived when room is made next)
        now = time.monotonic()
        if now - Archive._last_scan > self.EVICT_SECONDS or Archive._written > cap_bytes // 4:
            Archive._last_scan, Archive._written = now, 0
            self._evict(cap_bytes, cap_files - 1, None)
        self._open(directory)
        self.archived = 0  # bytes written so far
        self.failed: str | None = None  # why a write failed (a full disk): the stream is archived no further
        self.capped = False  # bytes came past the per-stream limit: they are not archived, nor refs given
        # where the first DROP run past the archived bytes (no ref) starts (``unreferenced_from``): where the
        # notes say refs stop
        self.first_unreferenced: str | None = None
        self._made_room = False  # the other archives were evicted for room on a full disk (once)

    def _open(self, directory: Path, moved: bool = False) -> None:
        """Make the archive file in ``directory``'s ``archive/`` and write from here on to it; with
        ``moved`` (``_move``), one of the current file's name, holding its bytes.

        Raises:
            OSError: it cannot be made.
        """
        folder = directory / "archive"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # decimal, not hex: a summary's token estimate then does not vary with the name's letters
        name = self._path.stem if moved else f"{ARCHIVE_PREFIX}{time.time_ns()}-{os.getpid()}"
        path = folder / f"{name}.log"
        # unbuffered: ``archived`` counts the bytes in the file; its owner's alone, as a run's file
        # is (a command's whole output may hold a token it printed: 0644 had left that to the
        # folder's mode, helper-98)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        file: BinaryIO = open(fd, "wb", buffering=0)
        # held until ``close``: no other stream's archive evicts this one while it is written
        fcntl.flock(fd, fcntl.LOCK_SH)
        if moved:  # (the bytes archived so far go first)
            try:
                with open(self._path, "rb") as handle:
                    for piece in _pieces(handle, 0, self.archived):
                        file.write(piece)
            except OSError:
                file.close()
                path.unlink(missing_ok=True)
                raise
        info = os.fstat(fd)
        self._file, self._id = file, (info.st_dev, info.st_ino)  # (``gone``)
        self.folder, self._path = folder, path
        # what its refs name: its name in the state directory (``expand`` looks there), its path elsewhere
        self.source = name if directory == state_dir() else str(path)

    def _move(self, failed: str) -> bool:
        """The archive's disk is full: go on in a file of the same name in a later folder of
        ``state_dirs()`` (the temporary directory), the bytes archived so far copied there
        (``archive.elsewhere``), and the old file removed (``expand`` finds the refs given into it
        there: ``_elsewhere``). Whether it could (a full state directory had left the rest of a
        run's summaries without refs, where a budget's copy moved, helper-101)."""
        dirs = list(state_dirs())
        here = next((i for i, d in enumerate(dirs) if d == self.folder.parent), len(dirs))
        old_file, old_path = self._file, self._path
        reasons = [f"{self.folder}: {failed}"]
        for where in dirs[here + 1 :]:
            try:
                self._open(where, moved=True)
            except OSError as exc:
                reasons.append(f"{where / 'archive'}: {exc.strerror or exc}")
                continue
            # (the full disk gets its bytes back: a partial copy left there, named by the refs given
            # into it, was evicted by the next run's full disk, those refs failing, helper-104, -105)
            old_file.close()
            old_path.unlink(missing_ok=True)
            get_logger().warning("archive.elsewhere", directory=str(where), error="; ".join(reasons))
            return True
        return False

    def write(self, chunk: bytes) -> None:
        """Append the next bytes of the stream (while under the per-stream limit, and no write failed).
        On a full disk the older half of the other archives (by bytes) is removed, once a stream, and
        the write tried again: a stream archived after a full one still gets refs; failing that, the
        archive moves to a later folder of ``state_dirs()`` (``_move``)."""
        take = memoryview(chunk)[: max(0, self.limit - self.archived)]
        self.capped = self.capped or len(take) < len(chunk)
        while take and self.failed is None:
            try:
                n = self._file.write(take) or 0
            except OSError as exc:
                full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
                if full and not self._made_room:
                    self._made_room = True  # (once: a disk full of other files is not ours to empty)
                    if self._evict(None, None, exc.strerror or "No space left on device"):
                        continue
                if full and self._move(exc.strerror or "No space left on device"):
                    continue
                self.failed = exc.strerror or str(exc)
                return
            take = take[n:]
            self.archived += n
            Archive._written += n
            if self.archived >= self._next_room:
                self._next_room = self.archived + self._step
                self._evict(self._cap - self._step, None, None)

    def covers(self, end: int) -> bool:
        """Whether the stream's bytes up to ``end`` are archived."""
        return end <= self.archived

    def gone(self) -> bool:
        """Whether the archive file is no longer at its path (removed with the state directory
        while its stream ran, helper-41): the refs into it cannot be read back."""
        try:
            info = os.stat(self._path)
        except OSError:
            return True
        return (info.st_dev, info.st_ino) != self._id

    def close(self) -> None:
        """Flush and close the archive file; removed when it holds nothing (no ref points into it)."""
        self._file.close()
        if not self.archived:
            with contextlib.suppress(OSError):
                os.unlink(self._path)

    def _evict(self, room: int | None, files: int | None, full: str | None) -> bool:
        """Remove the oldest archive files until the others take at most ``room`` bytes (None: half
        the bytes they take now) and are at most ``files`` (not one a stream still writes,
        ``evict``); whether any was removed. Said (``archive.evicted``: the refs into them no longer
        read back; on a full disk it had been silent, helper-73): at info for the archive's cap
        (the oldest go, as designed), a warning for a full disk (``full``: its error)."""
        sizes = []
        for entry in self.folder.glob(f"{ARCHIVE_PREFIX}*.log"):
            with contextlib.suppress(FileNotFoundError):  # (evicted meanwhile by another process)
                stat = entry.stat()
                sizes.append((stat.st_mtime, stat.st_size, entry))
        total, count = sum(size for _, size, _ in sizes), len(sizes)
        room = total // 2 if room is None else room
        removed: list[tuple[str, int]] = []
        for _, size, old in sorted(sizes, key=lambda s: s[0]):
            if total <= room and (files is None or count <= files):
                break
            if evict(old):
                total, count = total - size, count - 1
                removed.append((old.stem, size))
        if removed:
            log = get_logger()
            (log.info if full is None else log.warning)(
                "archive.evicted", files=len(removed), bytes=sum(size for _, size in removed),
                oldest=removed[0][0], newest=removed[-1][0], reason=full or "the archive's cap",
                hint="refs into these streams no longer read back",
            )  # fmt: skip
        return bool(removed)


def ref_of(source: str, run: Run, base: int = 0) -> str:
    """The ref of a DROP run whose bytes are in ``source`` from stream offset ``base`` on, or ``""``.

    ``""`` for a KEEP run, a run without a checksum, or one that starts before ``base``
    (before the current file of a rotated stream).
    """
    if run.decision != "drop" or not run.checksum or run.start_byte < base:
        return ""
    return str(Ref(source, run.start_byte - base, run.end_byte - base, run.checksum))


def short_ref(ref: str) -> str:
    """A whole ref ``SOURCE:START-END:CRC`` as a text output writes it after naming its source,
    ``@START-END:CRC`` (anything else as it is: ``""``)."""
    m = _REF.fullmatch(ref)
    return ref if m is None else "@" + ref[m.end("source") + 1 :]


def remember_source(source: str, directory: Path | None = None) -> bool:
    """Remember ``source`` (a ref's, unescaped) as named by a text output just now, in ``sources/``
    under the first of ``state_dirs()`` that can be written (``directory`` alone when given): one
    small file a source, the least recently named past ``RECENT_SOURCES`` removed. Whether it is
    remembered: not when no such folder can be written (``TextRefs`` then writes the output's refs
    whole)."""
    return any(_remember_in(source, where) for where in ([directory] if directory is not None else state_dirs()))


def _remember_in(source: str, directory: Path) -> bool:
    """``remember_source`` in the state directory ``directory``; whether its folder could be written."""
    folder = directory / "sources"
    path = folder / hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    try:
        if path.exists():
            os.utime(path)
            return True
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # written whole, then renamed: a reader never sees half a name
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(source.encode("utf-8", "surrogateescape"))
            os.replace(temp, path)
        except OSError:
            os.unlink(temp)  # (a full disk: it was left there, empty, helper-45)
            raise
    except OSError:
        return False
    with contextlib.suppress(OSError):  # (forgetting the oldest can wait for the next output)
        names = sorted((entry.stat().st_mtime_ns, entry.name) for entry in folder.iterdir() if entry.name[0] != ".")
        for _, name in names[: max(0, len(names) - RECENT_SOURCES)]:
            (folder / name).unlink(missing_ok=True)
    return True


def _recent_sources(directories: Iterable[Path]) -> list[str]:
    """The sources ``remember_source`` remembered in ``directories``, the most recently named first."""
    entries = []
    for directory in directories:
        for entry in (directory / "sources").glob("[0-9a-f]*"):
            with contextlib.suppress(OSError):  # (forgotten meanwhile by another output)
                entries.append((entry.stat().st_mtime_ns, entry.read_bytes().decode("utf-8", "surrogateescape")))
    return [source for _, source in sorted(entries, reverse=True)]


def is_short_ref(text: str) -> bool:
    """Whether ``text`` is a short ref, ``@START-END:CRC`` (``TextRefs``)."""
    return _SHORT.fullmatch(text) is not None


def parse_ref(text: str, directory: Path | None = None, unique: bool = False) -> Ref:
    """The ref ``text`` names: ``SOURCE:START-END:CRC`` (``Ref.parse``), or a short ref
    ``@START-END:CRC`` as a text output printed it, read against the sources text outputs named
    lately (``remember_source``; in the state directory ``directory``, default each of
    ``state_dirs()``), the most recent first: the first whose bytes in the range have the ref's
    CRC-32, or failing that the first whose rotated files (``NAME.1``, ...) hold them. With
    ``unique`` (the lines around the range are asked for), a short ref that several of them hold is
    an error: the bytes are the same, their context need not be.

    Raises:
        RefError: the text is not a ref; or a short one that no remembered source holds, or with
            ``unique`` more than one.
    """
    if not is_short_ref(text):
        return Ref.parse(text)
    start, _, rest = text[1:].partition("-")
    end, _, crc = rest.partition(":")
    where = directory or state_dir()
    sources = _recent_sources([directory] if directory is not None else state_dirs())
    refs = [Ref(source, int(start), int(end), crc) for source in sources]
    held = []
    for ref in refs:
        try:
            _checked(ref, ref_path(ref, where)).close()
        except RefError:
            continue
        held.append(ref)
        if not unique:
            break
    if len(held) > 1:
        # (parallel runs of one test suite print the same passes: the context of one run's short ref
        # was read from another's file, its failure shown as a pass, helper-103)
        names = ", ".join(escaped_source(ref.source) for ref in held[:3])
        raise RefError(
            f"{text!r}: {len(held)} outputs named lately hold these bytes ({names}{', ...' if len(held) > 3 else ''}),"
            f" and the lines around them may differ; give the full ref above it in the output, SOURCE:{text[1:]}"
        )
    if held:
        return held[0]
    # then the files they were rotated to, as a full ref's (``expand_page``): after four rotations
    # the full ref expanded and the short one did not (helper-94)
    for ref in refs:
        path = ref_path(ref, where)
        for rotated in _elsewhere(path):
            try:
                _checked(ref, rotated).close()
            except RefError:
                continue
            return ref
    raise RefError(
        f"{text!r}: none of the last {RECENT_SOURCES} sources named in text output holds these bytes; give the"
        f" source of the full ref above it in the output, SOURCE:{text[1:]}"
    )


class TextRefs:
    """The refs of one text output, each source named once in a row: a ref whose source is the one
    the ref before it named is written ``@START-END:CRC`` (a source is an absolute path, often the
    longest part of a summary line, and the same for every DROP run of a stream).

    For an output read from its start (standard output, a file); a reader that may come in
    between (a socket's subscriber) gets whole refs.

    The first summary with a ref also says how to use one (``note``): once per output, so
    summaries do not grow, and a first-time reader who meets a ref learns what it is for.
    """

    def __init__(self) -> None:
        self._source: str | None = None
        self._told = False

    def note(self, ref: str) -> str:
        """What goes before ``ref`` (as written, ``__call__``) in its summary: ``REF_NOTE`` for
        the first ref of the output, else ``""``."""
        if not ref or self._told:
            return ""
        self._told = True
        return REF_NOTE

    def __call__(self, ref: str) -> str:
        """``ref`` as this output writes it next (``""`` stays ``""``); a source named whole is
        remembered (``remember_source``), so its short refs read back as printed; one that cannot
        be (the state directory is not writable) is named whole each time."""
        m = _REF.fullmatch(ref)
        if m is None:
            return ref
        # remembered again at each ref (its entry's time renewed, or made again): a long run's source
        # was forgotten once 64 others were named since, and its later short refs read back from none
        # (helper-103)
        remembered = remember_source(_UNESCAPE.sub(_unescape, m["source"]))
        if remembered and m["source"] == self._source:
            return short_ref(ref)
        self._source = m["source"] if remembered else None
        return ref


def archive_refs(stream: str) -> tuple[Archive | None, Callable[[Run], str]]:
    """A new archive for a stream without a file of its own (stdin, a socket, a command), and
    the ref maker that points into it. The archive goes to the first of ``state_dirs()`` that can be
    written; outside the state directory a ref names the archive file by its path (so ``expand``
    finds it) and ``archive.elsewhere`` is logged; ``(None, no refs)`` with a logged warning if
    none can be. The first DROP run past the archived bytes (the per-stream limit) logs
    ``archive.full`` once."""
    reasons = [f"{state_dir()}: the home directory {os.environ.get('HOME')!r} is not there"] if _homeless() else []
    for where in state_dirs():
        try:
            archive = Archive(where)
        except OSError as exc:
            reasons.append(f"{where}: {exc.strerror or exc}")
            continue
        if reasons:
            get_logger().warning("archive.elsewhere", source=stream, directory=str(where), error="; ".join(reasons))
        break
    else:
        get_logger().warning("archive.unavailable", source=stream, directory=str(state_dir()), error="; ".join(reasons))
        return None, lambda run: ""

    def ref(run: Run) -> str:
        if run.decision != "drop":
            return ""
        if archive.covers(run.end_byte):
            # (removed with the state directory while the stream ran: a ref into it cannot be read
            # back, and none is given, helper-48; the run's last lines say why)
            return "" if archive.gone() else ref_of(archive.source, run)
        if archive.first_unreferenced is None:  # said once: why this summary and the later ones have no ref
            archive.first_unreferenced = unreferenced_from(run)
            get_logger().warning(
                "archive.full", source=stream, archived_bytes=archive.archived, first_line_without_ref=run.first_line
            )
        return ""

    return archive, ref


def unreferenced_from(run: Run) -> str:
    """Where the DROP run ``run``, the first with no ref, starts, as the notes name it: ``line N``, or
    for a piece of a line's rest, the line and the byte (its earlier pieces had refs, helper-89)."""
    return f"the rest of line {run.first_line} at byte {run.start_byte}" if run.rest else f"line {run.first_line}"


def ref_path(ref: Ref, directory: Path) -> Path:
    """The file ``ref`` names: an archive (``stdin-<id>``) in the state directory ``directory``'s
    ``archive/``, else its source as a path (a relative one is read from the working directory)."""
    if ref.source.startswith(ARCHIVE_PREFIX) and "/" not in ref.source:
        return directory / "archive" / f"{ref.source}.log"
    return Path(ref.source)


def _lines_before(handle: BinaryIO, start: int, count: int, room: int | None = None) -> int:
    """Offset where the ``count`` lines before offset ``start`` (a line start) begin; with ``room``,
    the nearest of them that fit in ``room`` bytes (whole lines)."""
    need = count + 1  # the newline that ends the line before ``start`` counts too
    floor = 0 if room is None else max(0, start - room)
    pos = start
    while pos > floor:
        step = min(_READ, pos - floor)
        handle.seek(pos - step)
        block = handle.read(step)
        i = len(block)
        while (i := block.rfind(b"\n", 0, i)) >= 0:
            need -= 1
            if need == 0:
                return pos - step + i + 1
        pos -= step
    if floor == 0:
        return 0
    # (the lines go on past the room: those that begin after the newline nearest the floor)
    handle.seek(floor - 1)
    block = handle.read(start - floor + 1)
    return floor - 1 + block.find(b"\n") + 1


def _lines_after(handle: BinaryIO, end: int, count: int, room: int | None = None) -> int:
    """Offset where the ``count`` lines after offset ``end`` end (a last one may lack its line
    end); with ``room``, those of them that fit in ``room`` bytes (whole lines)."""
    cap = None if room is None else end + room
    handle.seek(end)
    pos = stop = end  # (the next byte read; the end of the lines counted so far)
    while count > 0:
        size = _READ if cap is None else min(_READ, cap - pos)
        if size <= 0:
            return stop
        block = handle.read(size)
        if not block:
            return pos  # the file's end: its last line counts, line end or not
        at = 0
        while count > 0 and (nl := block.find(b"\n", at)) >= 0:
            stop, at, count = pos + nl + 1, nl + 1, count - 1
        pos += len(block)
    return stop


def expand(ref: Ref, out: BinaryIO, context_lines: int = 0, directory: Path | None = None) -> Path | None:
    """Write the bytes ``ref`` names to ``out``, with ``context_lines`` whole lines before and after.

    The range is read twice in ``_READ``-byte pieces (memory stays flat whatever its size):
    once to check its CRC-32, then to write it, so nothing is written unless it checks. When the
    ref's file no longer holds them (rotated: the path names a new file), a file rotated from it
    in the same directory (``app.log.1``, ``app.log-20261201``, ``app.1.log``; ``app.log.2`` for a
    ref into ``app.log.1`` rotated on; ``app.log.2.gz`` read through gzip, bzip2 or xz) that holds
    them is read instead.

    Returns:
        The rotated file read instead of the ref's own, or None.

    Raises:
        RefError: the source is gone (deleted, rotated away, evicted), shorter than the
            range, or its bytes there no longer have the ref's CRC-32 (rewritten), and no
            rotated file holds them.
    """
    return expand_page(ref, out, context_lines, directory)[0]


def expand_page(
    ref: Ref,
    out: BinaryIO,
    context_lines: int = 0,
    directory: Path | None = None,
    offset: int = 0,
    limit: int | None = None,
    within: Callable[[Path], bool] | None = None,
) -> tuple[Path | None, int | None]:
    """``expand``, one page at a time: the range's bytes from ``offset`` (bytes past its start), at
    most ``limit`` of them, cut after the page's last line end when the range goes on past it (a
    page that holds no line end is cut at ``limit``); the context lines before the first page and
    after the last, as many of them as fit in ``limit`` (whole lines, the nearest first): before a
    range that fits a page, half of what it leaves; before a longer one, an eighth of the page.
    The whole range's CRC-32 is checked for each page. With ``within``, a rotated file it does not
    allow is not read (the caller checks the ref's own path, ``ref_path``).

    Returns:
        The rotated file read instead of the ref's own, or None; and the offset where the next page
        starts, or None when this one reaches the range's end.

    Raises:
        RefError: as ``expand``; or ``offset`` is past the range's end.
    """
    if not 0 <= offset <= max(0, ref.end - ref.start - 1):
        raise RefError(f"ref {ref}: offset {offset} is past its {ref.end - ref.start} bytes")
    path = ref_path(ref, directory or state_dir())
    instead = None
    try:
        handle = _checked(ref, path)
    except RefError as exc:
        unread: list[str] = []  # (compressed rotations that could not be read: the error names them)
        for rotated in _elsewhere(path, unread):
            if within is not None and not within(rotated):
                continue
            try:
                handle = _checked(ref, rotated)
            except _Damaged:
                unread.append(f"{rotated.name} (it does not decompress)")
                continue
            except RefError:
                continue
            instead = rotated
            break
        else:
            if unread:
                # (a .zst rotation, or a damaged .gz, had been passed over without a word, helper-104)
                raise RefError(
                    f"{exc}; not read: {', '.join(unread)}: a rotation decompressed beside it, under its name"
                    " without the compression's, is read"
                ) from None
            raise
    start, end = ref.start + offset, ref.end
    with handle:
        if context_lines > 0:
            _whole_lines(ref, handle)
        # context lines take what the range leaves of ``limit``, nearest lines first: before it, half
        # of that, or an eighth of the first page when the range takes more than a page (20,000 of
        # them had returned 1.4 MB a call, helper-96; a range of pages had none before, helper-97)
        first = ref.start
        if context_lines > 0 and offset == 0:
            share = None if limit is None else (limit - (end - start)) // 2 if end - start < limit else limit // 8
            first = _lines_before(handle, ref.start, context_lines, share)
        room = None if limit is None else limit - (ref.start - first)
        page = None  # (a page's bytes, read once; a whole range is written in pieces)
        if room is not None and end - start > room:
            handle.seek(start)
            page = handle.read(room)
            page = page[: page.rfind(b"\n") + 1 or len(page)]
            end = start + len(page)
        for piece in _pieces(handle, first, ref.start):
            out.write(piece)
        for piece in [page] if page is not None else _pieces(handle, start, end):
            out.write(piece)
        if context_lines > 0 and end == ref.end:
            after = None if room is None else room - (end - start)
            for piece in _pieces(handle, ref.end, _lines_after(handle, ref.end, context_lines, after)):
                out.write(piece)
    return instead, (end - ref.start if end < ref.end else None)


def _whole_lines(ref: Ref, handle: BinaryIO) -> None:
    """RefError unless ``ref``'s range is whole lines of ``handle``: it starts the file or a line, and
    ends a line or the file. Context lines are read only around such a range, as every DROP run is
    but an over-long line's pieces: a forged ref of the first byte of a file, whose CRC-32 is one of
    256, had printed the whole file with context (helper-114); now the whole first line is needed."""
    handle.seek(max(0, ref.start - 1))
    before = handle.read(1) if ref.start > 0 else b"\n"
    handle.seek(ref.end - 1)
    last = handle.read(2)
    if before != b"\n" or not (last.startswith(b"\n") or len(last) == 1):
        raise RefError(
            f"ref {ref}: not whole lines, so no context lines are read around it (every DROP run's ref is whole"
            " lines but an over-long line's pieces: expand it without context)"
        )


class _Damaged(RefError):
    """A compressed rotation that does not decompress (cut short, or not the format its name says)."""


def _checked(ref: Ref, path: Path) -> BinaryIO:
    """``path`` opened, once its bytes in the ref's range have the ref's CRC-32; a rotated file
    logrotate's ``compress`` left (``app.log.2.gz``: a name in ``_DECOMPRESSED``) is read through
    its decompressor, its offsets those of the file it was.

    Raises:
        RefError: it is missing, unreadable, not a regular file, shorter than the range, its
            bytes differ, or it does not decompress.
    """
    if str(path).startswith(PSEUDO_FILES) or os.path.realpath(path).startswith(PSEUDO_FILES):
        # (a /proc input's refs name its archived copy: /proc/self/environ is a forged ref's, helper-62)
        raise RefError(f"ref {ref}: {path} is a /proc or /sys file: no streamfilter ref names one")
    try:
        # (not blocking: a FIFO a forged ref names would wait for a writer; a regular file reads alike)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if is_archive(path):  # (a fleet's refs name a worker's archive, helper-55)
            raise RefError(
                f"ref {ref}: {path.name} is not in the archive of {path.parent.parent}: evicted, or kept by"
                " another machine (a fleet's worker) or state directory; expand it there, or set"
                " STATE_DIRECTORY or XDG_STATE_HOME as its writer had them"
            ) from None
        if any(path.parent == where / "runs" for where in state_dirs()):  # (a run's whole output, helper-103)
            raise RefError(
                f"ref {ref}: {path} no longer exists: evicted (the oldest runs' outputs go when newer ones need"
                " the room), or deleted"
            ) from None
        raise RefError(f"ref {ref}: {path} no longer exists (deleted or rotated)") from None
    except OSError as exc:
        raise RefError(f"ref {ref}: cannot read {path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise RefError(f"ref {ref}: {path} is not a regular file (a ref names bytes of a log file or an archive)")
    os.set_blocking(fd, True)
    handle: BinaryIO = os.fdopen(fd, "rb")
    opener = next((o for suffix, o in _DECOMPRESSED.items() if path.name.endswith(suffix)), None)
    try:
        if opener is not None:
            handle.close()
            handle = opener(path)  # (its size is known once read: the CRC's loop counts it)
        elif info.st_size < ref.end:
            why = "it was truncated, rewritten, or rotated and replaced"
            raise RefError(f"ref {ref}: {path} is now shorter than byte {ref.end} ({why})")
        crc = size = 0
        try:
            for piece in _pieces(handle, ref.start, ref.end):
                crc, size = zlib.crc32(piece, crc), size + len(piece)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise _Damaged(f"ref {ref}: {path} does not decompress: {exc}") from None
        if size < ref.end - ref.start:
            raise RefError(f"ref {ref}: {path} decompresses to fewer than {ref.end} bytes")
        if f"{crc:08x}" != ref.checksum:
            why = "the file was rewritten, or rotated and replaced, or the ref was not printed so"
            raise RefError(
                f"ref {ref}: the bytes at {ref.start}-{ref.end} of {path} do not have the ref's checksum ({why})"
            )
    except BaseException:
        handle.close()
        raise
    return handle


# rotated files read through their decompressor (the standard library's); other compressed names are not read
_DECOMPRESSED: dict[str, Callable[[Path], BinaryIO]] = {
    ".gz": lambda path: cast(BinaryIO, gzip.GzipFile(path, "rb")),
    ".bz2": lambda path: cast(BinaryIO, bz2.BZ2File(path, "rb")),
    ".xz": lambda path: cast(BinaryIO, lzma.LZMAFile(path, "rb")),
}
_COMPRESSED = (".zst", ".zip", ".lz4", ".lzma", ".Z")


def is_archive(path: Path) -> bool:
    """Whether ``path`` is an archive file (``stdin-<id>.log``, ``Archive``) by its name."""
    return path.name.startswith(ARCHIVE_PREFIX)


def _elsewhere(path: Path, unread: list[str] | None = None) -> list[Path]:
    """Where else the bytes of a ref into ``path`` may be: for an archive (``stdin-<id>.log``), the
    file of its name in the other state folders' ``archive/`` (an archive moves there off a full
    disk, ``Archive._move``); for a file, its rotations (``_rotated_from``)."""
    if not is_archive(path):
        return _rotated_from(path, unread)
    moved = (where / "archive" / path.name for where in state_dirs())
    return [other for other in moved if other != path and other.is_file()]


def _rotated_from(path: Path, unread: list[str] | None = None) -> list[Path]:
    """Files in ``path``'s directory named like rotations of it: first ``NAME.1``, ``NAME-DATE``; then
    the others of its family, by its name's first part (``app.1.log`` and ``app.log.2`` for
    ``app.log``, ``app.log.2`` for ``app.log.1``, shifted on by a later rotation), in name order;
    compressed ones too when ``_checked`` can read them (``app.log.2.gz``), the other compressed
    names added to ``unread``."""
    try:
        names = sorted(os.listdir(path.parent))
    except OSError:
        return []
    stem = path.name.split(".", 1)[0].split("-", 1)[0]
    family = [n for n in names if n.startswith((stem + ".", stem + "-")) and n != path.name]
    family.sort(key=lambda n: not n.startswith((path.name + ".", path.name + "-")))  # (stable: name order)
    found = []
    for name in family:
        if name.endswith(_COMPRESSED):
            if unread is not None:
                unread.append(f"{name} (its compression is not one read here)")
        elif (path.parent / name).is_file():
            found.append(path.parent / name)
    return found


def _pieces(handle: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    handle.seek(start)
    left = end - start
    while left > 0:
        piece = handle.read(min(_READ, left))
        if not piece:
            return
        left -= len(piece)
        yield piece
