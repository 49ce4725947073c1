"""Plain text folded to a width at word boundaries, counted in terminal cells.

The text renderers fold their own lines and print them unwrapped, so a terminal (Rich) and a pipe
(markup.PlainConsole) show the very same lines, and a terminal never cuts a word where its edge
falls (Rich's `soft_wrap=True` leaves that to the terminal). A wide character (CJK) counts two
cells, a combining mark none; a word longer than the line is cut, as there is no other place.
"""

from __future__ import annotations

import unicodedata

# the narrowest line worth folding to: below it a line is cut into single characters
MIN_WIDTH = 20


def cells(text: str) -> int:
    """The terminal cells `text` takes."""
    return sum(_cell(ch) for ch in text)


def _cell(ch: str) -> int:
    if ch.isascii():
        return 1
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def fold(text: str, width: int | None, start: int = 0, indent: int = 0) -> list[str]:
    """`text` as lines that end by cell `width`: the first begins at cell `start` (after a prefix
    the caller prints), each later one is indented by `indent` spaces (a hanging indent); `width`
    None keeps the text one line."""
    if width is None:
        return [text]
    width = max(width, MIN_WIDTH)
    start, indent = min(start, width // 2), min(indent, width // 2)
    lines: list[str] = []
    line, used = "", 0
    room = width - start
    for word in text.split(" "):
        if not word:
            continue
        size = cells(word)
        if line and used + 1 + size <= room:
            line, used = f"{line} {word}", used + 1 + size
            continue
        if line:
            lines.append(line)
            room = width - indent
            line, used = "", 0
        while size > room:  # a word longer than a line: cut it where the line ends
            head, head_size = _head(word, room)
            lines.append(head)
            room = width - indent
            word, size = word[len(head):], size - head_size
        line, used = word, size
    if line or not lines:
        lines.append(line)
    pad = " " * indent
    return lines[:1] + [pad + rest for rest in lines[1:]]


def _head(word: str, room: int) -> tuple[str, int]:
    """The longest start of `word` that fits `room` cells (at least one character)."""
    used = 0
    for i, ch in enumerate(word):
        size = _cell(ch)
        if used + size > room and i:
            return word[:i], used
        used += size
    return word, used
