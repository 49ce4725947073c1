"""Inline suppressions: `# h3doctor: ignore[H3D305] reason` (several IDs comma-separated, a
prefix ending in `*`) on the offending line, or on the first line of the launch; in Markdown,
`<!-- h3doctor: ignore[H3D305] reason -->` on the line before a fenced block, for the block. Every
suppression that suppresses nothing on any target is reported (H3DL001)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from h3doctor.inputs.launch import rule_matches
from h3doctor.located import Pos

# one spelling in two comment syntaxes: `# h3doctor: ignore[ID] reason` (shell, YAML, Dockerfile)
# and `<!-- h3doctor: ignore[ID] reason -->` (Markdown, before a fenced block)
_COMMENT = re.compile(r"(?:#|<!--)\s*h3doctor:\s*ignore\[([^\]]*)\]\s*(.*?)\s*(?:-->.*)?$")


@dataclass
class Suppression:
    pos: Pos
    rules: tuple[str, ...]
    reason: str
    used: bool = field(default=False, compare=False)

    def matches(self, rule_id: str) -> bool:
        return any(rule_matches(r, rule_id) for r in self.rules)


def inline_suppressions(text: str, spans: dict[int, tuple[int, int]] | None = None) -> dict[int, list[Suppression]]:
    """Line number -> the suppressions that apply on it: those written on it, and those written on
    a line of `spans` (a comment before a Markdown block) on each line of its span."""
    out: dict[int, list[Suppression]] = {}
    if "h3doctor:" not in text:
        return out
    for number, line in enumerate(text.splitlines(), start=1):
        m = _COMMENT.search(line)
        if m:
            rules = tuple(r.strip().upper() for r in m.group(1).split(",") if r.strip())
            out.setdefault(number, []).append(Suppression(Pos(number, m.start() + 1), rules, m.group(2).strip()))
    for line, (first, last) in (spans or {}).items():
        for s in out.get(line, ()):
            for covered in range(first, last + 1):
                out.setdefault(covered, []).append(s)
    return out


def every_suppression(inline: dict[int, list[Suppression]]) -> list[Suppression]:
    """Each suppression once (one covering a block is listed on each of its lines)."""
    return list({id(s): s for sups in inline.values() for s in sups}.values())
