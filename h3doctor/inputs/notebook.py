"""Launches in Jupyter notebooks (`.ipynb`): a code cell's `!sglang serve ...` lines and the
whole of a `%%bash` / `%%sh` / `%%script bash` cell are shell text; Python and the cells' outputs
are not judged.

A notebook is JSON whose code cells hold their source as a list of lines. It is read with
safeload's JSON reader (depth capped, NaN refused) within its own size limit — notebooks carry
their outputs (plots as base64), so they are larger than launch files. Each cell is read as a
shell script of its own; its launches are located in the notebook file at the JSON string of
each line (found in order in the text), and labelled with the cell and its line, as Jupyter
numbers them (cell 1 first). Notebooks are never rewritten (`--fix` and `--add-noqa` leave JSON
alone).
"""

from __future__ import annotations

import json
import re

from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.shell import read_script
from h3doctor.located import Pos
from h3doctor.safeload import LoadError, load_json

NOTEBOOK_SUFFIX = ".ipynb"
NOTEBOOK_ALLOWANCE = 16  # times a launch file's limit (16 MiB by default)
_SHELL_MAGIC = re.compile(r"%%(?:bash|sh|script\s+(?:ba|z)?sh)\b")
_BANG = re.compile(r"^([ \t]*)(!!?)")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def read_notebook(path: str, text: str) -> tuple[list[Launch], list[Note]]:
    data = load_json(text, origin=path, columns=True)
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise LoadError("not a Jupyter notebook: no list of cells", location=path)
    launches: list[Launch] = []
    notes: list[Note] = []
    finder = _LineFinder(text)
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = _source_lines(cell.get("source"), path, number)
        # a list's items are the file's JSON strings; a source given as one string has none per line
        places = [finder.find(line) for line in source] if isinstance(cell.get("source"), list) else [None] * len(source)
        found, cell_notes = read_script(path, _shell_text(source))
        for launch in found:
            launch.kind = "notebook"
            launch.label = f"cell {number} line {launch.pos.line}"
            launch.pos = _in_file(launch.pos, places)
            launch.token_pos = [_in_file(p, places) for p in launch.token_pos]
            launch.segments = []  # offsets in the cell, not in the file: never edited
        launches += found
        notes += [Note(n.path, _in_file(n.pos, places), f"cell {number} line {n.pos.line}: {n.message}", n.notice)
                  for n in cell_notes]
    return launches, notes


def _source_lines(source: object, path: str, number: int) -> list[str]:
    if isinstance(source, str):
        return source.splitlines(keepends=True)
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source).splitlines(keepends=True)
    raise LoadError(f"cell {number}: its source is not text", location=path)


def _shell_text(source: list[str]) -> str:
    """The cell as a shell script: all of a shell-magic cell past its first line; in a Python
    cell, the `!command` lines (and the lines they continue with `\\`), the rest blank."""
    if source and _SHELL_MAGIC.match(source[0].lstrip()):
        return "\n" + "".join(source[1:])
    out, continued = [], False
    for line in source:
        bang = _BANG.match(line)
        if bang is not None:
            kept = bang.group(1) + " " * len(bang.group(2)) + line[bang.end():]
        else:
            kept = line if continued else ""
        continued = kept.rstrip("\r\n").endswith("\\")
        out.append(kept.rstrip("\r\n") + "\n")
    return "".join(out)


class _LineFinder:
    """Where each source line's JSON string is in the file, searched forward from the last one
    found (cells and lines are in file order), so finding them all is one pass over the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.row, self.row_at = 0, 0  # lines counted up to row_at: each part of the text counted once

    def find(self, line: str) -> Pos | None:
        """None once a line was not found: the file writes its strings otherwise, and searching on
        for every later line would scan the rest of the text each time (quadratic in a crafted file)."""
        if self.at < 0:
            return None
        for encoded in dict.fromkeys((json.dumps(line, ensure_ascii=False), json.dumps(line))):
            at = self.text.find(encoded, self.at)
            if at >= 0:
                self.row += self.text.count("\n", self.row_at, at)
                self.row_at = self.at = at + len(encoded)
                self.row += encoded.count("\n")  # none: JSON escapes a line end in a string
                return Pos(self.row + 1, at - (self.text.rfind("\n", 0, at) + 1) + 2)  # past the opening quote
        self.at = -1
        return None


def _in_file(pos: Pos, places: list[Pos | None]) -> Pos:
    """A position in a cell (line, column) as a position in the notebook file: the column counts
    from the line's JSON string (escapes before it shift it: close, not exact). A line that was
    not found (the file writes its strings differently) is located at the notebook's start."""
    place = places[pos.line - 1] if 0 < pos.line <= len(places) else None
    return Pos(place.line, place.col + pos.col - 1) if place is not None else Pos(1, 1)
