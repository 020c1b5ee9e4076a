"""Every public module lists its names in __all__, and each listed name exists and is documented."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "streamfilter"
# every module of the package, found on disk (a new one is checked without being listed here)
MODULES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py")
    if p.name != "__main__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_are_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} has no docstring"
    # a layer's package only documents itself; its modules list their names
    exported = module.__all__ if not hasattr(module, "__path__") or name == "streamfilter" else ()
    assert len(set(exported)) == len(exported)
    for attr in exported:
        value = getattr(module, attr)
        if callable(value) and not isinstance(value, type(len)):
            assert getattr(value, "__doc__", None), f"{name}.{attr} has no docstring"
