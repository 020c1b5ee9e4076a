"""The checkpoint store's files (``live.checkpoint``): what a start reads back, and what it forgets."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from streamfilter.live.checkpoint import FORGET_SECONDS, Checkpoint, CheckpointStore


def _saved(store: CheckpointStore, path: Path, age: float) -> Path:
    """Save a checkpoint of ``path`` written ``age`` seconds ago; its file."""
    store.save("app", Checkpoint(str(path), 1, 2, 0, "", 10, 2, 0, False))
    (file,) = sorted(store.folder.glob("app-*.json"), key=os.path.getmtime)[-1:]
    old = time.time() - age
    os.utime(file, (old, old))
    return file


def test_a_start_forgets_old_checkpoints_of_paths_that_are_gone(tmp_path: Path) -> None:
    # a glob's dated files (app-20261206.log) each left a checkpoint for good, and every start
    # read them all
    store = CheckpointStore(tmp_path / "state")
    here = tmp_path / "app.log"
    here.write_text("x\n")
    kept_old = _saved(store, here, FORGET_SECONDS + 86400)  # old, but its path is there
    gone_recent = _saved(store, tmp_path / "app-20261205.log", 3600)  # gone, but lately written
    gone_old = _saved(store, tmp_path / "app-20261001.log", FORGET_SECONDS + 86400)
    paths = sorted(c.path for c in store.load_all("app"))
    assert paths == sorted([str(here), str(tmp_path / "app-20261205.log")])
    assert kept_old.exists() and gone_recent.exists() and not gone_old.exists()


def test_no_descriptor_left_is_not_an_unreadable_checkpoint(tmp_path: Path) -> None:
    # a daemon at its open-files limit said every checkpoint was "cut short, edited" and read those
    # files as if none was saved (helper-42); out of descriptors is an OSError to try again after
    script = f"""
import errno, os, resource, sys
from streamfilter.live.checkpoint import Checkpoint, CheckpointStore, UnreadableCheckpoint
from pathlib import Path
store = CheckpointStore(Path({str(tmp_path)!r}))
store.save("src", Checkpoint("/x/app.log", 1, 2, 0, "", 10, 2, 0, False))
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
try:
    store.load("src", "/x/app.log")
except UnreadableCheckpoint:
    sys.exit("unreadable")
except OSError as e:
    sys.exit(0 if e.errno == errno.EMFILE else "other")
sys.exit("loaded")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
