"""Warnings as the API server passes them to kubectl: one line each, printable, at most 120
characters (Kubernetes' advice for admission warnings), and a bounded number of them."""

from __future__ import annotations

MAX_CHARS = 120
MAX_WARNINGS = 12


def warning_lines(said: list[str]) -> tuple[str, ...]:
    lines = list(dict.fromkeys(_one_line(s) for s in said))
    if len(lines) > MAX_WARNINGS:
        lines = lines[:MAX_WARNINGS - 1] + [f"h3doctor: {len(lines) - MAX_WARNINGS + 1} more warnings not shown"]
    return tuple(lines)


def _one_line(text: str) -> str:
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= MAX_CHARS else flat[:MAX_CHARS - 3] + "..."
