"""Inline suppressions: `# h3doctor: ignore[H3D305] reason` (several IDs comma-separated, a
prefix ending in `*`) on the offending line, or on the first line of the launch. Every
suppression that suppresses nothing on any target is reported (H3DL001)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from h3doctor.inputs.launch import rule_matches
from h3doctor.located import Pos

_COMMENT = re.compile(r"#\s*h3doctor:\s*ignore\[([^\]]*)\]\s*(.*)$")


@dataclass
class Suppression:
    pos: Pos
    rules: tuple[str, ...]
    reason: str
    used: bool = field(default=False, compare=False)

    def matches(self, rule_id: str) -> bool:
        return any(rule_matches(r, rule_id) for r in self.rules)


def inline_suppressions(text: str) -> dict[int, list[Suppression]]:
    """Line number -> the suppressions written on it."""
    out: dict[int, list[Suppression]] = {}
    if "h3doctor:" not in text:
        return out
    for number, line in enumerate(text.splitlines(), start=1):
        m = _COMMENT.search(line)
        if m:
            rules = tuple(r.strip().upper() for r in m.group(1).split(",") if r.strip())
            out.setdefault(number, []).append(Suppression(Pos(number, m.start() + 1), rules, m.group(2).strip()))
    return out
