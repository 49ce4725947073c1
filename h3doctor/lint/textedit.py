"""Edits of a launch's words in the file's own text: a shell script, or a YAML string scalar
(plain, quoted, literal `|` or folded `>`) edited where its words stand, so the file keeps its
layout — line breaks, `\\` continuations, quoting, line endings — and only the words that change
are touched.

A YAML scalar's words are found in the source by their text, in order; where a word is not
there verbatim (a YAML escape inside it), the caller falls back to the round-trip writer.
"""

from __future__ import annotations

import shlex

from h3doctor.located import Pos, Scalar

Edit = tuple[int, int, list[str]]  # (first token, past the last token, the tokens that replace them)


class LineIndex:
    """Offsets of a text by line and column."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def offset(self, pos: Pos) -> int:
        return self.starts[pos.line - 1] + pos.col - 1


def scalar_spans(text: str, lines: LineIndex, scalar: Scalar, value: str,
                 spans: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The file offsets of each word (`spans`: offsets in the scalar's value), or None when a word
    is not in the source as it is in the value."""
    cursor = lines.offset(scalar.pos)
    if scalar.style in ("|", ">"):  # past the header line (`|`, `>-`, a comment)
        cursor = lines.starts[scalar.pos.line] if scalar.pos.line < len(lines.starts) else len(text)
    stop = lines.offset(scalar.end) if scalar.end is not None else len(text)
    out = []
    for s, e in spans:
        word = value[s:e]
        found = text.find(word, cursor, stop)
        if not word or found < 0:
            return None
        out.append((found, found + len(word)))
        cursor = found + len(word)
    return out


def quote_for(style: str | None, words: str) -> str:
    """Shell words as they are written inside a YAML scalar of `style`."""
    if style == "'":
        return words.replace("'", "''")
    if style == '"':
        return words.replace("\\", "\\\\").replace('"', '\\"')
    return words


def edit_words(text: str, spans: list[tuple[int, int]], edits: list[Edit], style: str | None = None) -> str:
    """`edits` (right to left) applied at the words' offsets. A deletion takes the blanks in front
    of it along; words that were all their line held go with the line (and, on a command's last
    line, with the `\\` that continued the line before)."""
    for a, b, tokens in sorted(edits, key=lambda e: -e[0]):
        if style is None and tokens and b - a == len(tokens):  # word for word: each keeps its place and quoting
            for k in range(b - 1, a - 1, -1):
                start, end = spans[k]
                text = text[:start] + _quoted_like(text[start:end], tokens[k - a]) + text[end:]
            continue
        words = quote_for(style, " ".join(shlex.quote(t) for t in tokens))
        if a < b:
            start, end = spans[a][0], spans[b - 1][1]
            if not words:
                start, end = _deletion(text, start, end)
            text = text[:start] + words + text[end:]
        elif a < len(spans):
            text = text[:spans[a][0]] + words + " " + text[spans[a][0]:]
        else:
            end = spans[-1][1]
            text = text[:end] + " " + words + text[end:]
    return text


def _quoted_like(source: str, token: str) -> str:
    """`token` as a shell word quoted the way the word it replaces was (`"sage_attn"` -> `"fa"`),
    when that quoting reads it back unchanged; otherwise shlex's quoting."""
    if len(source) >= 2 and source[0] == source[-1] == "'" and "'" not in token:
        return f"'{token}'"
    if len(source) >= 2 and source[0] == source[-1] == '"' and not any(c in token for c in '"$`\\!'):
        return f'"{token}"'
    return shlex.quote(token)


def _deletion(text: str, start: int, end: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before, after = text[line_start:start], text[end:line_end].strip(" \t\r")
    if not before.strip(" \t") and after in ("", "\\") and line_start > 0:
        if after == "\\":  # a continued line of its own: drop it whole
            return line_start, line_end + 1
        previous = text[:line_start - 1].rstrip("\r")
        if previous.rstrip(" \t").endswith("\\"):  # the command's last line: the continuation goes too
            cut = len(previous.rstrip(" \t")) - 1
            while cut > 0 and text[cut - 1] in " \t":
                cut -= 1
            return cut, line_end if not text[line_end - 1:line_end] == "\r" else line_end - 1
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return start, end
