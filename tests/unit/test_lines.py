from __future__ import annotations

import numpy as np
import pytest

from streamfilter.core import lines
from streamfilter.core.lines import LineSplitter, bounded, utf8_cut


def split_all(chunks: list[bytes]) -> list[tuple[int, int, bytes]]:
    """(line number, start offset, bytes) of every line the splitter yields."""
    sp = LineSplitter()
    out: list[tuple[int, int, bytes]] = []
    blocks = [sp.feed(c) for c in chunks] + [sp.flush()]
    for block in blocks:
        if block is None:
            continue
        starts = np.concatenate(([0], block.ends[:-1]))
        for i in range(block.n_lines):
            a, b = int(starts[i]), int(block.ends[i])
            out.append((block.first_line + i, block.start_byte + a, block.data[a:b]))
    return out


def test_partial_line_is_held_until_newline() -> None:
    sp = LineSplitter()
    assert sp.feed(b"abc") is None
    assert sp.pending_bytes == 3
    block = sp.feed(b"def\nxy")
    assert block is not None and block.data == b"abcdef\n" and block.first_line == 1
    last = sp.flush()
    assert last is not None and last.data == b"xy" and last.first_line == 2 and last.start_byte == 7
    assert list(last.ends) == [2]


def test_crlf_and_lone_cr_stay_in_the_bytes() -> None:
    lines = split_all([b"a\r\nb\rc\n", b"\r\n"])
    assert [line for _, _, line in lines] == [b"a\r\n", b"b\rc\n", b"\r\n"]
    assert [n for n, _, _ in lines] == [1, 2, 3]
    assert [s for _, s, _ in lines] == [0, 3, 7]


def test_invalid_utf8_nul_and_split_multibyte_never_raise() -> None:
    euro = "€".encode()
    lines = split_all([b"\xff\xfe\x00x\n" + euro[:1], euro[1:] + b"\n"])
    assert [line for _, _, line in lines] == [b"\xff\xfe\x00x\n", euro + b"\n"]


def test_empty_input_gives_no_lines() -> None:
    assert split_all([b"", b""]) == []


def test_ends_dtype_and_offsets() -> None:
    sp = LineSplitter()
    block = sp.feed(b"x\n\nyy\n")
    assert block is not None
    assert block.ends.dtype == np.int64
    assert list(block.ends) == [2, 3, 6]


@pytest.mark.parametrize(
    ("data", "cut"),
    [
        (b"", 0),
        (b"caf", 3),
        (b"caf\xc3", 3),
        (b"caf\xc3\xa9", 5),
        (b"\xe6\x97", 0),
        (b"a\xf0\x9f\x99", 1),
        (b"a\xf0\x9f\x99\x82", 5),
        (b"bad \xff", 5),  # not a character's first byte: counted whole
        (b"\x80\x80\x80\x80", 4),
    ],
)
def test_utf8_cut_leaves_out_a_character_begun_at_the_end(data: bytes, cut: int) -> None:
    assert utf8_cut(data) == cut


def test_a_block_of_many_lines_is_cut_into_blocks_that_tile_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # (a million blank lines read at once made arrays of 650 MB, helper-69)
    monkeypatch.setattr(lines, "MAX_BLOCK_LINES", 3)
    sp = LineSplitter(first_line=5, start_byte=100)
    block = sp.feed(b"a\n\nbb\nccc\n\n\nd\ne")
    assert block is not None and bounded(None) == []
    parts = bounded(block)
    assert [p.n_lines for p in parts] == [3, 3, 1]
    assert b"".join(p.data for p in parts) == block.data
    assert [(p.first_line, p.start_byte) for p in parts] == [(5, 100), (8, 106), (11, 112)]
    for p in parts:
        assert p.ends[-1] == len(p.data) and p.data.endswith(b"\n")
    monkeypatch.setattr(lines, "MAX_BLOCK_LINES", 7)
    assert bounded(block) == [block]
