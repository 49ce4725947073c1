"""`.gitignore` patterns matched in time linear in the path and the patterns that can match it.

pathspec (which lint used before) turns each pattern into one regular expression and tries every
expression on every path: `*a*a*a*a*a*a*a*a*c` backtracks polynomially on a long name (minutes for
one path) and 50,000 plain names cost 50,000 regex searches per file. Here a pattern is a list of
path segments matched segment by segment:

* a segment's glob is split on its `*`s into fixed-length pieces (literal characters, `?`, `[...]`)
  placed left to right, each at its leftmost place: exact for `*` within one segment and never
  backtracking (each piece is searched for once from where the previous one ended);
* `**` is a set of reachable segment positions, not a backtracking group;
* a pattern with a plain segment (no glob character) can only match a path holding that segment
  name, so patterns are indexed by it and only the few that can match a path are tried.

The meaning is pathspec's `GitIgnoreSpec` (git's): the last matching pattern wins, a pattern that
matches the path itself outranks one that matches only a folder it is in (so `!dir/file` can
re-include), `!` negates, a trailing `/` matches folders only, a `/` elsewhere anchors the pattern
at the `.gitignore`'s folder, a pattern whose `[...]` range is invalid is dropped. One difference
on purpose: a `[!x]` class never matches the `/` between two segments (pathspec's regex lets it;
git does not). tests/lint/test_gitignore.py compares the two on random patterns and paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIRECT, _INSIDE = 2, 1  # the path itself matched / only a folder it is in: git's precedence


class _BadRange(ValueError):
    """A `[` with no closing `]`: git drops the whole pattern."""


def _pieces(glob: str) -> tuple:
    """The segment glob's pieces between its `*`s, each a (fixed-length regex, its length);
    one piece and no `*`: it must be the whole name. Bracket and escape rules are pathspec's."""
    pieces: list[list] = [["", 0]]
    i, end = 0, len(glob)
    while i < end:
        char = glob[i]
        i += 1
        if char == "*":
            pieces.append(["", 0])
            continue
        if char == "\\":
            if i == end:
                continue
            regex, i = re.escape(glob[i]), i + 1
        elif char == "?":
            regex = "[^/]"
        elif char == "[":
            j = i
            if j < end and glob[j] in "!^":
                j += 1
            if j < end and glob[j] == "]":
                j += 1
            while j < end and glob[j] != "]":
                j += 1
            if j >= end:
                raise _BadRange(glob)
            body = glob[i:j]  # (a name holds no "/", so a negated class stays within it, as git's does)
            regex = "[" + ("^" + body[1:] if body[:1] in ("!", "^") else body).replace("\\", "\\\\") + "]"
            i = j + 1
        else:
            regex = re.escape(char)
        pieces[-1][0] += regex
        pieces[-1][1] += 1
    return tuple((re.compile(regex, re.DOTALL), width) for regex, width in pieces)


def _glob_match(pieces: tuple | str, name: str) -> bool:
    """Whether `name` is matched by the pieces; O(len(name) * pattern length), no backtracking."""
    if isinstance(pieces, str):
        return pieces == name
    if len(pieces) == 1:
        return pieces[0][0].fullmatch(name) is not None
    (first, _), *middle, (last, width) = pieces
    head = first.match(name)
    if head is None:
        return False
    pos = head.end()
    for piece, _ in middle:  # leftmost placement of each piece leaves the most room for the rest
        found = piece.search(name, pos)
        if found is None:
            return False
        pos = found.end()
    start = len(name) - width  # the last piece ends the name: it has one place
    return start >= pos and last.fullmatch(name, start) is not None


@dataclass(frozen=True)
class _Pattern:
    index: int
    include: bool  # False: a `!` pattern
    parts: tuple  # "**" or a segment's pieces
    dir_only: bool
    whole: str | None = None  # ".", "/" or "dir/": a pattern that is all `**` (pathspec's special cases)
    key: str | None = None  # a plain segment a path must hold to match

    def match(self, segments: list[str]) -> int:
        """_DIRECT, _INSIDE or 0."""
        if self.whole is not None:
            if self.whole == ".":
                return _DIRECT if segments != [""] else 0
            if len(segments) < 2:
                return 0
            return _INSIDE if self.whole == "dir/" else _DIRECT
        n = len(segments)
        at = {0}
        last = len(self.parts) - 1
        for i, part in enumerate(self.parts):
            if part == "**":
                if i == last:  # "a/**": something must follow
                    if any(p < n for p in at):
                        return _INSIDE if self.dir_only else _DIRECT
                    return 0
                low = min(at) if i else 0
                at = set(range(low, n))
            else:
                at = {p + 1 for p in at if p < n and _glob_match(part, segments[p])}
            if not at:
                return 0
        if n in at:
            return _DIRECT
        return _INSIDE  # the last segment matched a folder the path is in


def _compile(line: str, index: int) -> _Pattern | None:
    text = line if line.endswith("\\ ") else line.rstrip()
    if not text or text.startswith("#") or text == "/":
        return None
    include = not text.startswith("!")
    if not include:
        text = text[1:]
    segs = text.split("/")
    dir_only = not segs[-1]
    if not segs[0]:
        del segs[0]
    elif (len(segs) == 1 or (len(segs) == 2 and not segs[1])) and segs[0] != "**":
        segs.insert(0, "**")  # no "/" but a trailing one: matches at any depth
    if not segs:
        return None  # "!" or "!/": nothing (pathspec raises; git ignores the line)
    if not segs[-1]:
        segs[-1] = "**"
    segs = [s for k, s in enumerate(segs) if not (s == "**" and k and segs[k - 1] == "**")]
    if segs == ["**"]:
        return _Pattern(index, include, (), dir_only, "dir/" if dir_only else ".")
    if segs == ["**", "*"]:
        return _Pattern(index, include, (), dir_only, ".")
    if segs == ["**", "*", "**"]:
        return _Pattern(index, include, (), dir_only, "dir/" if dir_only else "/")
    try:  # a lone `*` is one character or more (pathspec's `[^/]+`)
        parts = tuple(s if s == "**" or _is_plain(s) else _pieces("?*" if s == "*" else s) for s in segs)
    except (_BadRange, re.error):  # `[z-a]` too: git matches nothing with it
        return None
    return _Pattern(index, include, parts, dir_only, key=_plain_segment(segs))


_GLOB_CHARS = frozenset("*?[\\")


def _is_plain(segment: str) -> bool:
    """No glob character: compared as a string (50,000 compiled regexes took seconds)."""
    return not (_GLOB_CHARS & set(segment))


def _plain_segment(segs: list[str]) -> str | None:
    """A segment of the pattern with no glob character: a path must hold it to match."""
    for s in segs:
        if s and s != "**" and _is_plain(s):
            return s
    return None


class GitIgnore:
    """One `.gitignore`'s patterns (or the configuration's `exclude`), in order."""

    def __init__(self, lines) -> None:
        self.by_segment: dict[str, list[_Pattern]] = {}
        self.everywhere: list[_Pattern] = []
        self.tried = 0  # patterns tried on paths so far: the tests hold this to the few that can match
        for index, line in enumerate(lines):
            pattern = _compile(line, index)
            if pattern is None:
                continue
            if pattern.key is None:
                self.everywhere.append(pattern)
            else:
                self.by_segment.setdefault(pattern.key, []).append(pattern)

    def match_file(self, path: str) -> bool:
        """Whether the path (relative, `/`-separated, a folder's ending in `/`) is ignored."""
        segments = path.split("/")
        candidates = list(self.everywhere)
        for name in set(segments):
            candidates.extend(self.by_segment.get(name, ()))
        candidates.sort(key=lambda p: p.index, reverse=True)
        inside: bool | None = None
        for pattern in candidates:  # the last match wins; the path itself outranks a folder it is in
            self.tried += 1
            kind = pattern.match(segments)
            if kind == _DIRECT:
                return pattern.include
            if kind == _INSIDE and inside is None:
                inside = pattern.include
        return bool(inside)
