"""Re-derive each rule's `where:` (sglang file:line) for one release from the previous one.

Maintainer tool (tools/release.py calls it; the package only reads the JSON it writes). A rule's
`where` is free text holding one or more `path.py:LINES` references (LINES: `12`, `12-30`,
`12, 40-44`; paths relative to the `sglang/` package, or to `sglang/multimodal_gen/`). Each line
number of release P is carried to release X through a line diff of that file between the two
releases:

- a line inside an unchanged block moves by the block's offset;
- a line inside a changed block is found again only when its text (stripped) occurs exactly once
  in P's file and exactly once in X's file;
- anything else (the file is gone, the line was edited, the text is ambiguous) is not guessed:
  the rule is listed for a person, who records the line under `reviewed` in releasedata/X/where.json.

Lines are compared by their stripped text. The diff and the uniqueness tests depend only on which
lines are equal, so the same derivation runs, offline, on a recorded fixture holding a digest per
line (`line_digests`; no sglang code is stored) and gives the same result.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

REF = re.compile(r"([\w./]+\.py):(\d+(?:-\d+)?(?:, ?\d+(?:-\d+)?)*)")
NUMBER = re.compile(r"\d+")
# package-relative prefixes a `where` path may be written against, tried in this order
PREFIXES = ("", "multimodal_gen/")
# a hunk this many lines from a cited line counts as touching it (the condition above a raise)
NEAR = 5


def line_digests(text: str) -> tuple[str, ...]:
    """One short digest per line of stripped text: equal lines, equal digests."""
    return tuple(hashlib.sha1(line.strip().encode()).hexdigest()[:12] for line in text.splitlines())


class Source(Protocol):
    version: str

    def lines(self, path: str) -> tuple[str, ...] | None:
        """The lines of `path` (relative to the sglang package; stripped text or its digests),
        None if no such file."""


@dataclass(eq=False)
class TreeSource:
    """An unpacked release: the directory holding the `sglang/` package."""
    version: str
    root: Path
    _seen: dict[str, tuple[str, ...] | None] = field(default_factory=dict)

    def lines(self, path: str) -> tuple[str, ...] | None:
        if path not in self._seen:
            file = self.root / "sglang" / path
            self._seen[path] = (tuple(line.strip() for line in file.read_text(
                encoding="utf-8", errors="replace").splitlines()) if file.is_file() else None)
        return self._seen[path]


@dataclass(eq=False)
class DigestSource:
    """A recorded fixture: {path: the concatenated 12-character line digests}."""
    version: str
    files: dict[str, str]

    @functools.cached_property
    def _unpacked(self) -> dict[str, tuple[str, ...]]:
        return {p: tuple(s[i:i + 12] for i in range(0, len(s), 12)) for p, s in self.files.items()}

    def lines(self, path: str) -> tuple[str, ...] | None:
        return self._unpacked.get(path)


def resolve(path: str, *sources: Source) -> str | None:
    """The package-relative path `path` names: the first prefix under which every source has it."""
    for prefix in PREFIXES:
        if all(s.lines(prefix + path) is not None for s in sources):
            return prefix + path
    return None


def cited_paths(where: str) -> list[str]:
    return [m.group(1) for m in REF.finditer(where)]


@functools.lru_cache(maxsize=None)
def _opcodes(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[tuple[str, int, int, int, int], ...]:
    return tuple(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())


def map_line(a: tuple[str, ...], b: tuple[str, ...], n: int, *, reverse: bool = False) -> int | None:
    """Line `n` (1-based) of `a` in `b`, or None. `reverse`: map a line of `b` back into `a` with the
    same diff (so a line carried back and then forward lands where it started)."""
    src, dst = (b, a) if reverse else (a, b)
    if not 1 <= n <= len(src):
        return None
    for tag, i1, i2, j1, j2 in _opcodes(a, b):
        lo, hi, other = (j1, j2, i1) if reverse else (i1, i2, j1)
        if lo <= n - 1 < hi:
            if tag == "equal":
                return other + (n - 1 - lo) + 1
            break
    text = src[n - 1]
    if src.count(text) == 1 and dst.count(text) == 1:
        return dst.index(text) + 1
    return None


def map_where(where: str, old: Source, new: Source, *, reverse: bool = False) -> tuple[str | None, str]:
    """`where` (written for `old`) rewritten for `new`, or (None, why not)."""
    out, pos = [], 0
    for m in REF.finditer(where):
        path = resolve(m.group(1), old, new)
        if path is None:
            return None, f"{m.group(1)} is not in both releases"
        a, b = old.lines(path), new.lines(path)  # one diff, old -> new, read either way
        failed: list[str] = []

        def carry(num: re.Match[str]) -> str:
            got = map_line(a, b, int(num.group(0)), reverse=reverse)  # type: ignore[arg-type]
            if got is None:
                failed.append(num.group(0))
                return num.group(0)
            return str(got)

        lines = NUMBER.sub(carry, m.group(2))
        if failed:
            return None, f"{m.group(1)}:{', '.join(failed)} is in code that changed"
        out.append(where[pos:m.start()] + m.group(1) + ":" + lines)
        pos = m.end()
    out.append(where[pos:])
    return "".join(out), ""


def cited_lines(where: str, source: Source) -> dict[str, list[int]]:
    """{package-relative path: the line numbers `where` cites in it}."""
    out: dict[str, list[int]] = {}
    for m in REF.finditer(where):
        path = resolve(m.group(1), source)
        if path is not None:
            out.setdefault(path, []).extend(int(x) for x in NUMBER.findall(m.group(2)))
    return out


@dataclass
class Hunk:
    path: str
    old: tuple[int, int]  # 1-based first line, count (count 0: an insertion after line first-1)
    new: tuple[int, int]
    rules: list[str] = field(default_factory=list)


def hunks(path: str, old: Source, new: Source) -> list[Hunk]:
    a, b = old.lines(path), new.lines(path)
    if a is None or b is None:
        return []
    return [Hunk(path, (i1 + 1, i2 - i1), (j1 + 1, j2 - j1))
            for tag, i1, i2, j1, j2 in _opcodes(a, b) if tag != "equal"]


def touches(hunk: Hunk, lines: Iterable[int], side: str) -> bool:
    first, count = hunk.old if side == "old" else hunk.new
    return any(first - NEAR <= n <= first + max(count, 1) - 1 + NEAR for n in lines)
