"""A value a launch's file writes as a shell expansion it does not resolve (`--port "$PORT"` with
PORT set nowhere in the file): known only when the launch runs.

A reader marks the expansion inside its word (`MARK` in front of the `$…` as written), so a flag
and its value stay two words and `--port=$PORT` stays one; the engine reads a marked flag value as
"any value" (engine/unresolved.py) and a rule reading it says "cannot verify" or does not fire.
In the check's context such a value is `UNRESOLVED`, which the condition language reads as unknown.
"""

from __future__ import annotations

MARK = "\x00"  # NUL never occurs in a word a shell passes on (argv is C strings)


def marked(expansion: str) -> str:
    """The expansion `$PORT` / `${PORT}` / `$(hostname)` as written, marked as unresolved."""
    return MARK + expansion


def has_mark(word: str) -> bool:
    return MARK in word


def as_written(word: str) -> str:
    """The word as the file writes it (`$PORT`), for messages and corrected commands."""
    return word.replace(MARK, "")


class _Unresolved:
    """The context's value of an `args.*` or `derived.*` path that depends on an unresolved word."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<known only when the launch runs>"

    __str__ = __repr__


UNRESOLVED = _Unresolved()


def written(words: list[str] | None) -> list[str] | None:
    """The words as the launch's file (or line) writes them: each marked expansion as written."""
    return None if words is None else [as_written(w) for w in words]
