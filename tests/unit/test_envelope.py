"""Run envelopes: control lines are found whatever the chunking; everything else is data, byte for byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from streamfilter.live.envelope import MAX_CONTROL_BYTES, PREFIX, Control, EnvelopeSplitter, control_line

PIECES = [
    control_line("run-start", run="a", command="make", query="error"),
    control_line("run-end", run="a", status=2),
    b"plain line\n",
    b"\x1e not a control line\n",
    b"\x1estreamfilter not json\n",
    b"text then \x1estreamfilter {} mid-line\n",
    b"no newline",
    b"\n",
]


def split(data: bytes, cuts: list[int]) -> list[bytes | Control]:
    splitter = EnvelopeSplitter()
    items: list[bytes | Control] = []
    prev = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        items += splitter.feed(data[prev:cut])
        prev = cut
    items += splitter.flush()
    merged: list[bytes | Control] = []
    for item in items:
        if isinstance(item, bytes) and merged and isinstance(merged[-1], bytes):
            merged[-1] += item
        else:
            merged.append(item)
    return merged


@given(st.lists(st.sampled_from(PIECES), max_size=30).map(b"".join), st.lists(st.integers(0, 5000), max_size=20))
def test_any_chunking_gives_the_same_items_and_data_is_kept(data: bytes, cuts: list[int]) -> None:
    whole = split(data, [])
    assert split(data, cuts) == whole
    # data items and the control lines' raw bytes rebuild the input exactly
    assert b"".join(i if isinstance(i, bytes) else i.raw for i in whole) == data
    starts = data.count(b"\n" + PREFIX) + data.startswith(PREFIX)
    assert sum(isinstance(i, Control) for i in whole) == starts


def test_control_lines_are_parsed_and_other_lines_pass() -> None:
    data = b"before\n" + PIECES[0] + b"out 1\nout 2\n" + PIECES[1] + b"after"
    items = split(data, [3, 20, 21, 40])
    assert items == [
        b"before\n",
        Control("run-start", {"type": "run-start", "run": "a", "command": "make", "query": "error"}, raw=PIECES[0]),
        b"out 1\nout 2\n",
        Control("run-end", {"type": "run-end", "run": "a", "status": 2}, raw=PIECES[1]),
        b"after",
    ]
    assert split(b"\x1estreamfilter not json\n", [])[0].type == "invalid"  # type: ignore[union-attr]
    assert split(b"mid \x1estreamfilter {}\n", []) == [b"mid \x1estreamfilter {}\n"]


def test_an_overlong_control_line_is_data() -> None:
    data = PREFIX + b"x" * (MAX_CONTROL_BYTES + 10) + b"\n"
    assert b"".join(i for i in split(data, [100, 70000]) if isinstance(i, bytes)) == data
