"""What a terminal is shown: ``live.terminal``'s escaping, and the log lines on a terminal."""

from __future__ import annotations

import json

from streamfilter.live._logging import _shown
from streamfilter.live.terminal import escape_control_text, escape_controls


def test_characters_that_act_on_a_terminal_or_hide_text_are_shown_escaped() -> None:
    # helper-98: tag characters, zero-width spaces, byte-order marks and direction marks had reached
    # a terminal and the MCP client as they were (hidden text an agent reads and a person does not)
    hidden = "a\u200bb \u200e\u200f\u061c \ufeff \u2028 \U000e0049\U000e0047 \u202e \u2066"
    assert escape_control_text(hidden) == (
        b"a\\u200bb \\u200e\\u200f\\u061c \\ufeff \\u2028 \\U000e0049\\U000e0047 \\u202e \\u2066"
    )
    assert escape_controls(b"\x1b]52;c;eA==\x07 \xc2\x9b2J \xff") == b"\\x1b]52;c;eA==\\x07 \\x9b2J \\xff"
    # what a terminal shows as text stays as it is: accents, CJK, emoji with a joiner, tabs
    plain = "caf\u00e9 \u65e5\u672c \U0001f468\u200d\U0001f4bb\tend\r\n"
    assert escape_control_text(plain) == plain.encode()


def test_a_log_line_on_a_terminal_shows_the_names_in_it_escaped() -> None:
    # a file named "inv\x1b]0;PWN\x07\x1b[2J.log" had set the title and cleared the screen in a warning
    event = _shown(None, "warning", {"event": "input.invalid_utf8", "source": "inv\x1b]0;PWN\x07.log", "count": 1})
    assert event == {"event": "input.invalid_utf8", "source": "inv\\x1b]0;PWN\\x07.log", "count": 1}


def test_a_name_that_is_not_utf8_is_shown_with_its_bytes_escaped() -> None:
    # os.fsdecode gives such a name's bytes as lone surrogates, which cannot be written at all: a
    # warning naming "raw\x9b\xff.log" on a terminal had crashed the filter (helper-99)
    assert escape_control_text("raw\udc9b\udcff.log") == b"raw\\x9b\\xff.log"
    event = _shown(None, "warning", {"event": "input.invalid_utf8", "source": "raw\udc9b\udcff.log"})
    assert event["source"] == "raw\\x9b\\xff.log"


def test_jsonl_writes_the_characters_a_terminal_acts_on_as_json_escapes() -> None:
    # a terminal's escaping had written U+009B as "\x9b" inside a JSON string: no JSON (helper-99)
    from streamfilter.core.filter import FilterConfig, StreamFilter
    from streamfilter.core.output import render
    from streamfilter.live.terminal import escape_controls as on_terminal

    sf = StreamFilter(FilterConfig(query="error", tail_lines=0, head_lines=0, prior=False))
    data = "ok\nerror \u009b2J \u202e tag\U000e0041 caf\u00e9\n".encode()
    (keep,) = [r for r in sf.feed(data) + sf.flush() if r.decision == "keep"]
    line = render(keep, "jsonl", "-")
    assert json.loads(on_terminal(line))["text"] == "error \u009b2J \u202e tag\U000e0041 caf\u00e9\n"
    assert "\\u009b" in line.decode() and "\\udb40\\udc41" in line.decode() and "caf\u00e9" in line.decode()
