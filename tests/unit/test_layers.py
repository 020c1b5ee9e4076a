"""The folders are the layers: core imports nothing from live, cli or agents, live nothing from cli
or agents (which sit side by side), and no module imports itself back through others (type-only
imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "streamfilter"
LAYER = {"core": 0, "live": 1, "cli": 2, "agents": 2}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports."""
    modules = {_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:  # `from . import filter` names a module
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        graph[name] = {t for t in found if t in modules and t != name}
    return graph


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYER.get(parts[1]) if len(parts) > 1 else None


def test_lower_layers_never_import_higher_ones() -> None:
    graph = _imports()
    assert any(m.startswith("streamfilter.core.") for m in graph)
    wrong = [
        (module, target)
        for module, targets in graph.items()
        for target in targets
        if _layer(module) is not None and _layer(target) is not None and _layer(target) > _layer(module)  # type: ignore[operator]
    ]
    assert wrong == []


def test_no_module_imports_itself_back() -> None:
    graph = _imports()
    # package __init__ modules re-export: leave them out, their members are the nodes
    nodes = {m for m in graph if not (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}
    cycles = []
    for start in sorted(nodes):
        stack, seen = [(start, (start,))], set()
        while stack:
            module, path = stack.pop()
            for target in graph.get(module, ()):
                if target == start:
                    cycles.append(" -> ".join((*path, target)))
                elif target in nodes and target not in seen:
                    seen.add(target)
                    stack.append((target, (*path, target)))
    assert cycles == []
