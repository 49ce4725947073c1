"""The differences between two word lists (a command and its correction), in linear time.

difflib's SequenceMatcher is what says them for a command of ordinary length, but its longest-match
search is quadratic per call and cubic overall on words that repeat (`--tp 1` typed 1,000 times
took 38 s). Here the common head and tail are set aside first (a fix changes a few words of a long
command), and difflib sees only the differing middle while it is short; a longer middle is told
apart word by word when both sides have the same length (a fix that respells or replaces words in
place: difflib's own answer there) and is one replacement otherwise.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Sequence

# the longest differing middle (words on either side) handed to difflib: its cost there is bounded
MAX_MATCHED_WORDS = 128

Opcode = tuple  # (tag, i1, i2, j1, j2), as SequenceMatcher.get_opcodes gives them


def opcodes(a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """SequenceMatcher(None, a, b, autojunk=False).get_opcodes() for commands whose differing
    middle is short; linear in the words whatever they hold."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    out: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    if max(a_end, b_end) - head <= MAX_MATCHED_WORDS:
        from difflib import SequenceMatcher  # only for a command that changes: kept off a clean check's imports

        for tag, i1, i2, j1, j2 in SequenceMatcher(None, a[head:a_end], b[head:b_end], autojunk=False).get_opcodes():
            out.append((tag, head + i1, head + i2, head + j1, head + j2))
    elif a_end == b_end:
        out += _positional(a, b, head, a_end)
    else:
        out.append(("replace" if a_end > head and b_end > head else "delete" if a_end > head else "insert",
                    head, a_end, head, b_end))
    if tail:
        out.append(("equal", a_end, len(a), b_end, len(b)))
    return _merged(out)


def _positional(a: Sequence[str], b: Sequence[str], start: int, end: int) -> list[Opcode]:
    """Runs of equal and of differing words, position by position (same length on both sides)."""
    out: list[Opcode] = []
    run_start = start
    for i in range(start, end + 1):
        if i == end or (a[i] == b[i]) != (a[run_start] == b[run_start]):
            if i > run_start:
                tag = "equal" if a[run_start] == b[run_start] else "replace"
                out.append((tag, run_start, i, run_start, i))
            run_start = i
    return out


def _merged(ops: list[Opcode]) -> list[Opcode]:
    """Adjacent equal runs joined (the head or tail next to an equal run difflib found)."""
    out: list[Opcode] = []
    for op in ops:
        if out and op[0] == "equal" and out[-1][0] == "equal":
            out[-1] = ("equal", out[-1][1], op[2], out[-1][3], op[4])
        elif op[1] != op[2] or op[3] != op[4]:
            out.append(op)
    return out


def changed_span(before: str, after: str) -> tuple[int, int, str] | None:
    """(start, end, text): `before[start:end]` replaced by `text` gives `after`; None when equal
    (one text's edit, such as a fixed file's or a rewritten script's)."""
    if before == after:
        return None
    start = len(os.path.commonprefix([before, after]))  # compared in C, not a character at a time
    same_end = len(os.path.commonprefix([before[start:][::-1], after[start:][::-1]]))  # past the start only
    return start, len(before) - same_end, after[start:len(after) - same_end]
