"""The word a near miss was meant to be (`m3max` -> `m3-max`), for an error's "did you mean".

difflib's ratio over a bounded prefix of the word: a hostile 1 MiB name costs no more than a short
one (the comparison is quadratic in the lengths)."""

from __future__ import annotations

_BOUND = 100  # characters of the word compared: no name h3doctor knows is longer


def nearest(word: str, choices, cutoff: float = 0.6) -> str | None:
    """The closest of `choices` to `word` at difflib's `cutoff`, else None."""
    import difflib

    close = difflib.get_close_matches(str(word)[:_BOUND], list(choices), n=1, cutoff=cutoff)
    return close[0] if close else None
