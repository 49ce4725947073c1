"""Whether input text is a plain number: ASCII digits only.

`str.isdigit()` is true of superscripts (`'²'`) and other scripts' digits (`'٩'`) too, and `int()`
then raises on some of them (`int('²')`) or reads others as numbers no file of this kind holds. Every
check of input text for digits goes through here (tests/output/test_inert_output.py fails on a bare
`.isdigit()` elsewhere in the package)."""

from __future__ import annotations


def is_digits(text: str) -> bool:
    """One or more ASCII digits and nothing else (what `int()` then reads without error)."""
    return text.isascii() and text.isdigit()
