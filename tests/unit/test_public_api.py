"""Every public module lists its names in __all__, and each listed name exists and is documented."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "streamfilter",
    "streamfilter.records",
    "streamfilter.lines",
    "streamfilter.normalize",
    "streamfilter.tokens",
    "streamfilter.segment",
    "streamfilter.score",
    "streamfilter.signatures",
    "streamfilter.decide",
    "streamfilter.summarize",
    "streamfilter.prepare",
    "streamfilter.worker",
    "streamfilter.filter",
    "streamfilter.output",
    "streamfilter.errors",
    "streamfilter.cli",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_are_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} has no docstring"
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    for attr in exported:
        value = getattr(module, attr)
        if callable(value) and not isinstance(value, type(len)):
            assert getattr(value, "__doc__", None), f"{name}.{attr} has no docstring"
