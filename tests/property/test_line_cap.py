"""The socket sources' line cap gives the same bytes for every chunking of the same input."""

from __future__ import annotations

import random
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from streamfilter.live.sockets import LineCap
from tests.integration.test_daemon import connect_unix, runs, start

CAP = 16
LINES = st.lists(
    st.one_of(
        st.binary(max_size=CAP + 8).map(lambda b: b.replace(b"\n", b".")),
        st.integers(CAP + 1, 5 * CAP).map(lambda n: b"L" * n),  # over the cap
    ),
    min_size=1,
    max_size=12,
)


def capped(data: bytes, chunks: list[int]) -> tuple[bytes, list[int]]:
    cap = LineCap(CAP)
    out, at = bytearray(), 0
    for size in chunks:
        out += cap.feed(data[at : at + size])
        at += size
    out += cap.feed(data[at:]) + cap.flush()
    return bytes(out), cap.cut


def _elided(n: int) -> bytes:
    return b" [%d byte%s elided]" % (n, b"s" * (n != 1))


@settings(max_examples=300, deadline=None)
@given(lines=LINES, ended=st.booleans(), chunks=st.lists(st.integers(1, 40), max_size=30))
def test_the_capped_line_its_note_and_the_next_line_do_not_depend_on_chunking(
    lines: list[bytes], ended: bool, chunks: list[int]
) -> None:
    data = b"\n".join(lines) + (b"\n" if ended else b"")
    whole, whole_cut = capped(data, [])
    out, cut = capped(data, chunks)
    assert (out, cut) == (whole, whole_cut)
    # and it is what the cap promises: each line's first CAP bytes, the count of the rest after them
    # (one byte is "1 byte")
    expected = [line if len(line) <= CAP else line[:CAP] + _elided(len(line) - CAP) for line in lines]
    assert out == b"\n".join(expected) + (b"\n" if ended else b"")
    assert cut == [len(line) for line in lines if len(line) > CAP]


def test_a_unix_source_caps_the_same_line_the_same_way_for_any_chunking(tmp_path: Path) -> None:
    """Through a real daemon: three connections send the same bytes in different chunks."""
    sock, out = tmp_path / "in.sock", tmp_path / "out.jsonl"
    live = start(
        tmp_path,
        f'[defaults]\nquery = "ERROR"\n[[source]]\nname = "tools"\ntype = "unix"\npath = "{sock}"\n'
        f'max_line_bytes = 64\nsinks = ["out"]\n'
        f'[[sink]]\nname = "out"\ntype = "file"\npath = "{out}"\nformat = "jsonl"\n',
    )
    payload = b"ERROR before\n" + b"ERROR " + b"x" * 500 + b"\nERROR after the long line\n"
    rng = random.Random(7)
    for k in range(3):
        client = connect_unix(sock)
        at = 0
        while at < len(payload):
            size = len(payload) if k == 0 else rng.randint(1, 70)
            client.sendall(payload[at : at + size])
            at += size
            time.sleep(0.002)
        client.close()
    live.wait_for(lambda: sum(e["event"] == "end" for e in live.events(out)) == 3, 10)
    assert live.stop() == 0
    events = live.events(out)
    texts = ["".join(r["text"] for r in runs(events, f"tools#{k}") if r["event"] == "keep") for k in (1, 2, 3)]
    assert texts[0] == "ERROR before\nERROR " + "x" * 58 + " [442 bytes elided]\nERROR after the long line\n"
    assert texts[1] == texts[0] == texts[2]
