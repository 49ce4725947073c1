"""The package's imports follow docs/architecture.md: rooms import only what its table allows,
every module belongs to a room the page lists, and no two modules import each other in a circle.

Imports are read from each module's syntax tree (function-level imports included), so a lazy
import that points up is caught as well as a top-level one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
PACKAGE = ROOT / "h3doctor"
PAGE = ROOT / "docs" / "architecture.md"


def _rooms() -> dict[str, tuple[list[str], set[str]]]:
    """room -> (its paths as the page names them, the rooms it may import)."""
    rows: dict[str, tuple[list[str], set[str]]] = {}
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("<!-- rooms:", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("room", "---") or set(cells[0]) <= {"-"}:
            continue
        paths = re.findall(r"`([^`]+)`", cells[1])
        allowed = {r.strip() for r in cells[3].split(",")}
        rows[cells[0]] = (paths, allowed)
    return rows


ROOMS = _rooms()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _room_of(module: str) -> str | None:
    rel = module.split(".")[1:]  # drop "h3doctor"
    for room, (paths, _) in ROOMS.items():
        for p in paths:
            if p.startswith("h3doctor/"):  # a folder room
                folder = p.removeprefix("h3doctor/").strip("/").split("/")
                if rel[: len(folder)] == folder:
                    return room
            elif not rel and p == "__init__.py":
                return room
            elif len(rel) == 1 and p == f"{rel[0]}.py":
                return room
    return None


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, module: str) -> set[str]:
    """The h3doctor modules `module` imports (a `from pkg import name` counts as pkg.name when that
    is a module, else as pkg)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "h3doctor"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "h3doctor":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    found.discard(module)
    return found


GRAPH = {m: _imports(p, m) for m, p in MODULES.items()}


def test_the_page_lists_every_room_and_every_room_exists():
    assert {"ground", "sglang", "engine", "host", "output", "cli"} <= set(ROOMS)
    for room, (paths, allowed) in ROOMS.items():
        assert allowed <= set(ROOMS), f"{room} may import unknown rooms {allowed - set(ROOMS)}"
        for p in paths:
            target = ROOT / p if p.startswith("h3doctor/") else PACKAGE / p
            assert target.exists(), f"docs/architecture.md names {p} for room {room}, which does not exist"


def test_every_module_belongs_to_a_room():
    homeless = sorted(m for m in MODULES if _room_of(m) is None)
    assert not homeless, f"modules in no room of docs/architecture.md: {homeless}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module):
    room = _room_of(module)
    allowed = ROOMS[room][1] | {room}
    bad = sorted(f"{imp} ({_room_of(imp)})" for imp in GRAPH[module] if _room_of(imp) not in allowed)
    assert not bad, f"{module} (room {room}) imports {bad}; docs/architecture.md allows {sorted(allowed)}"


def test_no_import_cycles():
    # Tarjan's strongly connected components over the module graph; a package importing its own
    # submodules (derivations/__init__) is fine, a submodule importing its package back is not.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for m in sorted(MODULES):
        if m not in index:
            visit(m)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_catches_a_forbidden_import(tmp_path):
    # the test itself must be able to fail: an output module importing the probe is refused
    assert _room_of("h3doctor.output.text") == "output"
    assert "host" not in ROOMS["output"][1]
    assert _room_of("h3doctor.host.probe") == "host"
    fake = tmp_path / "fake.py"
    fake.write_text("def f():\n    from h3doctor.host.probe import probe\n", encoding="utf-8")
    assert _imports(fake, "h3doctor.output.fake") == {"h3doctor.host.probe"}
