"""The heap thresholds are set once per process, where the C library has mallopt."""

from __future__ import annotations

import platform

from streamfilter.core._heap import keep_block_buffers


def test_thresholds_are_set_on_glibc_and_only_once() -> None:
    first = keep_block_buffers()
    assert keep_block_buffers() is first  # cached: one call per process
    if platform.libc_ver()[0] == "glibc":
        assert first
