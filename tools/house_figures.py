#!/usr/bin/env python3
"""The house's figures for a closing note: modules, rooms (docs/architecture.md's table), import
cycles between modules, the package's lines and its largest files. The rooms, the import graph and
the cycle check are tests/house/test_architecture.py's own, loaded from the tree measured, so these
figures are the ones the tests hold.

    python tools/house_figures.py                  # this checkout
    python tools/house_figures.py --root DIR       # another (an unpacked `git archive` of a commit)
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path


def _architecture(root: Path):
    sys.path.insert(0, str(root / "tests"))  # its repo_paths names that tree
    try:
        spec = importlib.util.spec_from_file_location("house_architecture", root / "tests" / "house" / "test_architecture.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(root / "tests"))
        sys.modules.pop("repo_paths", None)
    return module


def figures(root: Path, largest: int) -> list[str]:
    arch = _architecture(root)
    try:
        arch.test_no_import_cycles()
        cycles = "0"
    except AssertionError as exc:
        cycles = str(exc)
    sizes = sorted(((len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root)))
                    for p in (root / "h3doctor").rglob("*.py")), reverse=True)
    return [f"modules: {len(arch.MODULES)}",
            f"rooms: {len(arch.ROOMS)} ({', '.join(arch.ROOMS)})",
            f"import cycles: {cycles}",
            f"python lines in h3doctor/: {sum(n for n, _ in sizes):,} in {len(sizes)} files",
            f"largest files:", *(f"  {n:>5}  {path}" for n, path in sizes[:largest])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--largest", type=int, default=10)
    args = parser.parse_args()
    sys.stdout.write("\n".join(figures(Path(args.root).resolve(), args.largest)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
