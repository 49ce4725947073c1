"""Where a diagnostic located at a launch's word ends: the word's extent as the file writes it,
its quotes included (`"sage_attn"`), for SARIF's `endLine`/`endColumn`.

A word is found at its start as written: verbatim, or inside one pair of quotes. A word the file
writes otherwise (a backslash escape, a YAML escape, across lines) keeps its start only: no
extent is better than a wrong one.
"""

from __future__ import annotations

from h3doctor.inputs.launch import Launch
from h3doctor.output.diagnostic import Diagnostic
from h3doctor.record import replace
from h3doctor.unresolved import as_written


def word_end(line: str, column: int, word: str) -> int | None:
    """The column past `word` written at `column` (1-based) of `line`, quotes included; None when
    the word is not written there as it is."""
    at = line[column - 1:]
    if word and at.startswith(word):
        return column + len(word)
    quote = at[:1]
    if word and quote in ("'", '"') and at[1:].startswith(word) and at[1 + len(word):2 + len(word)] == quote:
        return column + len(word) + 2
    return None


def with_extents(records: list[Diagnostic], text: str, path: str, launches: list[Launch]) -> list[Diagnostic]:
    """`records` of the file at `path`, each located at one of the launches' words given its end."""
    words = {(p.line, p.col): tok for launch in launches for tok, p in zip(launch.tokens, launch.token_pos)}
    lines = text.splitlines()
    out = []
    for rec in records:
        at = rec.location
        word = words.get((at.line, at.column)) if at is not None and at.path == path and at.end_line is None else None
        end = word_end(lines[at.line - 1], at.column, as_written(word)) if word and 0 < at.line <= len(lines) else None
        out.append(rec if end is None else replace(rec, location=replace(at, end_line=at.line, end_column=end)))
    return out
