"""``FilterConfig(explain=True)``: the traces attached to runs."""

from __future__ import annotations

from streamfilter.filter import FilterConfig, StreamFilter


def test_every_piece_of_a_protected_window_names_its_first_hit_line() -> None:
    """A protected window split over two KEEP events (at ``max_keep_event_bytes``): the piece
    after the hit named no hit_line (0) before; each piece names the hit, line 41."""
    lines = [b"INFO step %d ok" % i for i in range(40)]
    lines += [b"Traceback (most recent call last):"] + [b'  File "m%d.py", line %d, in f' % (i, i) for i in range(6)]
    lines += [b"ValueError: boom"] + [b"INFO after %d" % i for i in range(40)]
    data = b"".join(line + b"\n" for line in lines)
    sf = StreamFilter(FilterConfig(query="nothing", explain=True, tail_lines=0, max_keep_event_bytes=100))
    runs = sf.feed(data) + sf.flush()
    protected = [(r, t) for r in runs if r.decision == "keep" for t in r.traces if t.reason.startswith("protected:")]
    assert len({r.first_line for r, _ in protected}) > 1  # the window is in more than one piece
    assert all(t.hit_line == 41 for _, t in protected), [(r.first_line, t) for r, t in protected]
