"""A command-line glob (`lint 'deploy/**/*.sh'`) expanded without entering folder links under `**`.

Python's `glob.glob(recursive=True)` follows folder links when it expands `**`: three links
`a -> .` in one folder make it list `a/b/c/a/...` until the path length limit (killed at 60 s). This
expands a pattern one path segment at a time with glob's own meaning (fnmatch for a segment, a
hidden name only when the segment asks for it, `**` for zero or more folders), except that `**`
goes only through real folders: a folder link is listed, never entered, as lint's walk does.
"""

from __future__ import annotations

import fnmatch
import os


def _magic(segment: str) -> bool:
    return any(c in segment for c in "*?[")


def _real_folders(top: str) -> list[str]:
    """`top` and every folder under it that is not hidden, through real folders only."""
    out = [top]
    for directory, dirs, _ in os.walk(top or os.curdir):  # os.walk never enters a folder link
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(directory, d)))
        out.extend(os.path.join(directory, d) for d in dirs)
    return out


def _names(folder: str, segment: str) -> list[str]:
    try:
        names = os.listdir(folder or os.curdir)
    except OSError:
        return []
    if not segment.startswith("."):
        names = [n for n in names if not n.startswith(".")]
    return [os.path.join(folder, n) for n in fnmatch.filter(names, segment)]


def expand_glob(pattern: str) -> list[str]:
    """The paths `pattern` names, sorted (what `glob.glob(pattern, recursive=True)` returns, but
    `**` never goes through a folder link)."""
    head, *segments = pattern.split("/")
    found = [head + "/" if head == "" else head] if not _magic(head) else None
    if found is None:  # a relative pattern whose first segment is a glob
        segments = [head, *segments]
        found = [""]
    elif head == "":
        found = ["/"]
    for k, segment in enumerate(segments):
        last = k == len(segments) - 1
        if segment == "**":
            found = [f for folder in found if os.path.isdir(folder or os.curdir) for f in _real_folders(folder)]
            if last:  # `DIR/**`: the folders and everything in them, files too
                found = [p for f in found for p in ([f] + _names(f, "*"))]
        elif _magic(segment):
            found = [p for folder in found for p in _names(folder, segment)]
        else:
            found = [os.path.join(folder, segment) for folder in found]
            found = [p for p in found if (os.path.lexists(p) if last else os.path.isdir(p))]
        if not last:
            found = [f for f in found if os.path.isdir(f or os.curdir)]
    return sorted({os.path.normpath(p) if p else p for p in found if p})
