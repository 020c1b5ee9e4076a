"""The checkpoint store's files (``live.checkpoint``): what a start reads back, and what it forgets."""

from __future__ import annotations

import os
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
