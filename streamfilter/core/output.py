"""Runs -> output bytes: the ``text`` and ``jsonl`` formats.

``text``: each KEEP run's bytes exactly as they arrived; each DROP run as its
summary line. ``jsonl``: one JSON object a line (see docs/output.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from .records import FilterStats, Run
from .templates import HIDDEN_CHARACTERS

__all__ = ("FORMATS", "end_event", "marker_event", "render")

# each as JSON writes it with ensure_ascii (a pair of surrogates past U+FFFF)
_JSON_HIDDEN = {c: json.dumps(chr(c))[1:-1] for c in HIDDEN_CHARACTERS}

FORMATS = ("text", "jsonl")


def render(
    run: Run, fmt: str, source: str, ref: str = "", extra: Mapping[str, object] | None = None, note: str = ""
) -> bytes:
    """The bytes that represent ``run`` in format ``fmt`` (``text`` or ``jsonl``).

    ``ref``: for a DROP run, where ``streamfilter expand`` can read its bytes back
    (``expand.Ref``); added to the summary line, or as ``"ref"`` in JSONL. ``extra``:
    fields added to the JSONL object after ``source`` (e.g. ``"run"``, an envelope's id).
    ``note``: text put before the ref in a summary line (``expand.TextRefs.note``).
    """
    if fmt == "text":
        if run.decision == "keep":
            return run.data
        if not run.summary:  # the rest of a dropped line that was only its line end
            return b""
        summary = f"{run.summary[:-1]}{'; ' * bool(note)}{note}; ref {ref}]" if ref else run.summary
        return summary.encode("utf-8", "surrogateescape") + b"\n"
    event: dict[str, object] = {
        "event": run.decision,
        "source": source,
        **(extra or {}),
        "first_line": run.first_line,
        "last_line": run.last_line,
        "start_byte": run.start_byte,
        "end_byte": run.end_byte,
        "lines": run.lines,
    }
    if run.rest:
        event["rest"] = True  # the rest of a line counted in an earlier event
    if run.traces or run.traces_omitted:
        event["windows"] = [
            {"first_line": t.first_line, "last_line": t.last_line, "score": t.score, "cut": t.cut, "reason": t.reason}
            | ({"hit_line": t.hit_line} if t.hit_line else {})
            | ({"prior": t.prior, "features": list(t.features)} if t.prior else {})
            | ({"novel": t.novel} if t.novel is not None else {})
            for t in run.traces
        ]
        event["windows_omitted"] = run.traces_omitted
    if run.decision == "keep":
        # JSON carries text: invalid UTF-8 is replaced there, and the exact bytes go beside it in
        # base64, so a JSONL reader (a fleet's consumer) can have them too (helper-82)
        event["text"] = text = run.data.decode("utf-8", "replace")
        if "\ufffd" in text and not _utf8(run.data):
            event["data_base64"] = base64.b64encode(run.data).decode("ascii")
    else:
        event["bytes"] = run.n_bytes
        event["summary"] = run.summary
        if ref:
            event["ref"] = ref
    # a source name's bytes that are not UTF-8 (os.fsdecode's surrogates) as JSON's \udcXX escapes,
    # and the characters a terminal acts on or shows as nothing as JSON escapes too (a terminal's
    # escaping had written U+009B as "\x9b" inside a string: no JSON, helper-99)
    text = json.dumps(event, ensure_ascii=False).translate(_JSON_HIDDEN)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def end_event(stats: FilterStats, source: str, extra: Mapping[str, object] | None = None) -> bytes:
    """The closing JSONL object of a stream, with its totals."""
    event = {"event": "end", "source": source, **(extra or {}), **{k: getattr(stats, k) for k in stats.__slots__}}
    return json.dumps(event).encode("utf-8") + b"\n"


def marker_event(fmt: str, source: str, text: str, event: str = "marker", **facts: object) -> bytes:
    """A visible note in the output (a truncated file, an exit status): a text line or a JSONL event."""
    if fmt == "jsonl":
        return json.dumps({"event": event, "source": source, **facts, "text": text}).encode() + b"\n"
    return f"[streamfilter: {text}]\n".encode("utf-8", "surrogateescape")  # a path's bytes as they are
