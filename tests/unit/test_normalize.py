from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.core.filter import FilterConfig, StreamFilter
from streamfilter.core.normalize import (
    _SERVICE_PREFIX,
    _TIMESTAMP_PREFIX,
    _line_ends,
    _strip_service_prefixes,
    _strip_timestamps,
    _timestamp_lines,
    normalize_block,
    strip_ansi,
    strip_ansi_reference,
)


@pytest.mark.parametrize(
    "raw",
    [
        b"\x1b[31mred\x1b[0m",  # SGR colour
        b"\x1b[1;38;5;196mred\x1b[m",  # 256-colour
        b"\x1b[2K\x1b[1Gred",  # erase line, cursor column
        b"\x1b[?25lred\x1b[?25h",  # private mode (cursor hide/show)
        b"\x1b]0;title\x07red",  # OSC title, BEL-terminated
        b"\x1b]8;;https://x.test\x1b\\red\x1b]8;;\x1b\\",  # OSC 8 hyperlink, ST-terminated
        b"\x1b(Bred",  # charset designation
        b"\x1b7red\x1b8",  # save/restore cursor
        b"\x1bPq#0;2;0;0;0\x1b\\red",  # DCS string
    ],
)
def test_every_escape_form_is_removed(raw: bytes) -> None:
    assert strip_ansi(raw) == b"red"


def test_escapes_never_eat_a_newline() -> None:
    raw = b"a\x1b]0;unterminated\nb\n"
    assert strip_ansi(raw).count(b"\n") == 2


def test_cr_redraw_keeps_last_frame_and_counts_frames() -> None:
    raw = b"Receiving 1%\rReceiving 50%\rReceiving 100%, done.\r\nnext\n"
    norm = normalize_block(raw, 2, 1 << 20)
    assert norm.text == b"Receiving 100%, done.\r\nnext\n"
    assert list(norm.frames) == [3, 0]


def test_a_failure_a_later_frame_drew_over_goes_before_the_last_frame() -> None:
    # a terminal hid the error; the scoring text keeps it first, where anchored signatures look
    bar = b"".join(b"\rDownloading pkg %3d%%" % p for p in range(0, 100, 5))
    raw = bar + b"\rERROR: checksum mismatch\rretrying...\rERROR: checksum mismatch" + bar + b"\nnext\n"
    norm = normalize_block(raw, 2, 1 << 20)
    assert norm.text == b"ERROR: checksum mismatch  Downloading pkg  95%\nnext\n"
    many = b"".join(b"\rstep %d failed" % i for i in range(50)) + b"\rdone\n"
    assert normalize_block(many, 1, 1 << 20).text == b"step 0 failed  step 1 failed  step 2 failed  done\n"


def test_a_cr_that_starts_its_line_starts_no_frame() -> None:
    raw = b"\rA 10%\rA 50%\rA 100%\n\rjust one\nA 1%\rA 2%\n"
    norm = normalize_block(raw, 3, 1 << 20)
    assert norm.text == b"A 100%\njust one\nA 2%\n"
    assert list(norm.frames) == [3, 0, 2]


def test_crlf_is_not_a_redraw() -> None:
    raw = b"one\r\ntwo\r\n"
    norm = normalize_block(raw, 2, 1 << 20)
    assert norm.text == raw and list(norm.frames) == [0, 0]


def test_valgrinds_blank_line_is_blank_to_score() -> None:
    # ("==123== " alone ends a report as a blank line ends a record; lines with more are as they were)
    raw = b"==123== \n==123==    at 0x1: f (a.c:4)\nrow 1 ok==123== \n==123==\r\n==9==x\n==1== "
    norm = normalize_block(raw, 6, 1 << 20)
    text = b"\n==123==    at 0x1: f (a.c:4)\nrow 1 ok==123== \n\r\n==9==x\n==1== "
    assert norm.text == text
    assert list(norm.ends) == [i + 1 for i, byte in enumerate(text) if byte == 10] + [len(text)]


def test_double_cr_before_text_is_one_redraw() -> None:
    assert normalize_block(b"old\r\rnew\n", 1, 1 << 20).text == b"new\n"


def test_long_line_is_capped_for_scoring_only() -> None:
    raw = b"short\n" + b"a" * 1000 + b" ERROR at the end\n" + b"tail\n"
    norm = normalize_block(raw, 3, 100)
    lines = norm.text.split(b"\n")
    assert len(lines) == 4 and lines[0] == b"short" and lines[2] == b"tail"
    assert lines[1].endswith(b"ERROR at the end") and len(lines[1]) <= 101
    assert norm.capped == (1,)


@pytest.mark.parametrize(
    "pairs",
    [
        [  # CI timestamps
            (b"2026-05-07T17:30:12.8056437Z   FAIL test/config/get.ts", b"  FAIL test/config/get.ts"),
            (b"2019-07-23 14:21:34.571 xcodebuild[3111:8516] note", b"xcodebuild[3111:8516] note"),
            (b"[2024-01-02 03:04:05] ERROR x", b"ERROR x"),
            (b"2024-01-02 is a date, not a prefix", b"2024-01-02 is a date, not a prefix"),
        ],
        [  # docker compose: "Traceback" then starts its line for the signatures, "  File" is indented
            (b"web-1  | Traceback (most recent call last):", b"Traceback (most recent call last):"),
            (b'web-1  |   File "/app/main.py", line 70', b'  File "/app/main.py", line 70'),
            (b"db_12    | KeyError: 'x'", b"KeyError: 'x'"),
            (b"File      | % Stmts | % Branch", b"File      | % Stmts | % Branch"),  # a coverage table
            (b"    3 | int g2(long y) {", b"    3 | int g2(long y) {"),  # a compiler's source line
            (b"x-1 |no space after the bar", b"x-1 |no space after the bar"),
        ],
        [  # both, in either order: GitHub Actions running docker compose (a fresh-user helper's find:
            # the timestamp first kept compose's prefix, and most of a jest run's failures were dropped)
            (b"2026-05-07T17:30:12.8056437Z web-1  |   \xe2\x97\x8f math > adds", b"  \xe2\x97\x8f math > adds"),
            (b"web-1  | 2026-05-07T17:30:12.805Z FAIL src/bad.test.js", b"FAIL src/bad.test.js"),
            (b"2026-05-07T17:30:12.8056437Z File      | % Stmts", b"File      | % Stmts"),
        ],
    ],
)
def test_line_prefixes_are_not_part_of_the_scoring_text(pairs: list[tuple[bytes, bytes]]) -> None:
    norm = normalize_block(b"".join(raw + b"\n" for raw, _ in pairs), len(pairs), 1 << 20)
    assert norm.text.split(b"\n")[: len(pairs)] == [scored for _, scored in pairs]


SERVICE_PIECES = [b"web-1", b"db_12", b"a", b"-", b"_", b"7", b" ", b"    ", b"| ", b"|", b"\n", b"x|y", b"File  | %"]


@given(st.lists(st.sampled_from(SERVICE_PIECES), max_size=60))
@settings(max_examples=1000, deadline=None)
def test_service_prefixes_stripped_as_by_one_sub(pieces: list[bytes]) -> None:
    text = b"".join(pieces)
    ends = _line_ends_of(text)
    expected = re.compile(b"(?m)^" + _SERVICE_PREFIX.pattern).sub(b"", text)
    stripped, stripped_ends = _strip_service_prefixes(text, ends)
    assert stripped == expected
    assert stripped_ends.tolist() == _line_ends(expected, ends.shape[0]).tolist()


ESCAPE_PIECES = [b"\x1b", b"[", b"]", b"P", b"X", b"^", b"_", b"\\", b"\x07", b"\n", b"1", b";", b"m", b" ", b"(", b"B"]
ESCAPE_PIECES += [b"?", b"@", b"~", b"\x7f", b"7", b"\x1b[1;32m", b"\x1b]8;;", b"\xc3\xa9", b"a"]


@given(st.lists(st.sampled_from(ESCAPE_PIECES), max_size=40))
@settings(max_examples=1000, deadline=None)
def test_numpy_strip_equals_the_regex(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert strip_ansi(data) == strip_ansi_reference(data)
    n_lines = data.count(b"\n") + (not data.endswith(b"\n"))
    raw_ends = np.flatnonzero(np.frombuffer(data + b"\n", dtype=np.uint8) == 10)[:n_lines] + 1
    raw_ends[-1:] = np.minimum(raw_ends[-1:], len(data))
    with_ends = normalize_block(data, n_lines, 1 << 20, raw_ends.astype(np.int64))
    without = normalize_block(data, n_lines, 1 << 20)
    assert with_ends.text == without.text
    assert with_ends.ends.tolist() == without.ends.tolist()


STAMP_PIECES = [b"2026-05-07T17:30:12.8056437Z ", b"[2026-05-07 17:30:12] ", b"2026-05-07T17:30:12+02:00 "]
STAMP_PIECES += [b"2026-", b"[20", b"run 1\n", b"\n", b"x" * 30 + b"\n", b"12345-67\n"]
STAMP_PIECES += [b"2026-05-07 17:30:12", b".", b",", b"1234567890", b"Z", b"+", b"-", b"0", b":", b"]", b" ", b"["]


def _line_ends_of(text: bytes) -> np.ndarray:
    ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10).astype(np.int64) + 1
    if not text.endswith(b"\n") and text:
        ends = np.append(ends, np.int64(len(text)))
    return ends


@given(st.lists(st.sampled_from(STAMP_PIECES), max_size=60))
@settings(max_examples=1000, deadline=None)
def test_timestamps_stripped_line_by_line_as_by_one_sub(pieces: list[bytes]) -> None:
    text = b"plain\n" * 500 + b"".join(pieces)
    ends = _line_ends_of(text)
    for at, first in ((0, 0), (3000, 500)):
        part, part_ends = text[at:], ends[first:] - at
        expected = _TIMESTAMP_PREFIX.sub(b"\n", b"\n" + part)[1:]
        stripped, stripped_ends = _strip_timestamps(part, part_ends, _timestamp_lines(part, part_ends))
        assert stripped == expected
        assert stripped_ends.tolist() == _line_ends(expected, part_ends.shape[0]).tolist()


MIXED_PIECES = [p for p in ESCAPE_PIECES + STAMP_PIECES if b"\r" not in p]


@given(st.lists(st.sampled_from(MIXED_PIECES), max_size=60))
@settings(max_examples=2000, deadline=None)
def test_escapes_and_timestamps_removed_as_by_the_two_regexes(pieces: list[bytes]) -> None:
    # colored timestamps (an escape before or inside one) and timestamps after escapes, in one block
    data = b"".join(pieces)
    n_lines = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
    expected = _TIMESTAMP_PREFIX.sub(b"\n", b"\n" + strip_ansi_reference(data))[1:]
    norm = normalize_block(data, n_lines, 1 << 20)
    assert norm.text == expected
    assert norm.ends.tolist() == _line_ends(expected, n_lines).tolist()


@pytest.mark.parametrize("log", ["jest-verbose.log", "pytest-budget.log", "unittest-lists.log"])
@pytest.mark.parametrize(
    "prefix", [b"2026-05-07T17:30:12.8056437Z ", b"web-1  | ", b"2026-05-07T17:30:12.8056437Z web-1  | "]
)
def test_a_prefix_on_every_line_changes_no_decision(log: str, prefix: bytes) -> None:
    data = (Path(__file__).resolve().parents[1] / "data" / log).read_bytes()
    prefixed = b"".join(prefix + line for line in data.splitlines(keepends=True))

    def decisions(text: bytes) -> list[tuple[str, int, int]]:
        sf = StreamFilter(FilterConfig())
        return [(r.decision, r.first_line, r.last_line) for r in sf.feed(text) + sf.flush()]

    assert decisions(prefixed) == decisions(data)
