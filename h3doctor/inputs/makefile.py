"""Launches in a Makefile named on the command line: its recipe lines (a tab first), read as the
shell make hands them to. Other lines (rules, variables, directives) become blank lines of the
same length, so every launch word keeps its line and column in the file and `--fix` edits it
there. A recipe's `@`, `-` and `+` prefixes are make's, not the shell's; a make variable
(`$(MODEL)`) or `$$` is left to the shell reader, which reads it as a value known only when make
runs (h3doctor/unresolved.py)."""

from __future__ import annotations

import os
import re

from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.shell import read_script

_NAMES = ("Makefile", "makefile", "GNUmakefile")
_PREFIX = re.compile(r"\t[@+\- \t]*")


def is_makefile_name(path: str) -> bool:
    name = os.path.basename(path)
    return name in _NAMES or name.endswith(".mk")


def read_makefile(path: str, text: str) -> tuple[list[Launch], list[Note]]:
    lines = text.split("\n")
    kept: list[str] = []
    continued = False
    for line in lines:
        recipe = line.startswith("\t") or (continued and kept and kept[-1].strip())
        if recipe:
            m = _PREFIX.match(line)
            cut = m.end() if m else 0
            kept.append(" " * cut + line[cut:])
        else:
            kept.append(" " * len(line))
        continued = bool(recipe) and line.rstrip("\r").endswith("\\")
    launches, notes = read_script(path, "\n".join(kept))
    for launch in launches:
        launch.kind, launch.label = "makefile", f"recipe line {launch.pos.line}"
    return launches, notes
