"""What kills a server after sglang accepted the launch — a signal in the launcher's exit code,
the kernel's OOM killer, NCCL timeouts, a full disk, a refused Hub download, a kernel wheel for
another GPU or torch — read from the lines torch, NCCL, Hugging Face, the kernel and sglang print.

The signatures are data: literal fragments attached to the rule they point at (a rule file's
`crash:`), or, where no rule judges the cause yet, to a cause in causes.json with its probe check
and fix. Matching is literal and case-insensitive, one C-level scan of the text per fragment, so
its cost is linear in the log whatever the log holds (no pattern here can backtrack).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Iterable

from h3doctor.digits import is_digits
from h3doctor.paths import package_dir

MAX_COUNTED = 10_000  # hits counted per signature; a log repeating one line more says no more


@dataclass(frozen=True)
class Signature:
    text: str  # as written (the report shows it)
    whole: bool  # the whole line is this text (`Killed`), not a fragment inside it
    rule: str | None  # the rule it points at, or
    cause: str | None  # the cause in causes.json
    probe: str  # the probe check that would have caught it

    @property
    def regex(self) -> re.Pattern[str]:
        body = re.escape(self.text.lower())
        if self.whole:
            return re.compile(r"^[ \t]*" + body + r"[ \t]*$", re.M)
        # a fragment ending in a digit does not match inside a longer number (`exit code -9` is not `-90`)
        return re.compile(body + (r"(?![0-9])" if is_digits(self.text[-1:]) else ""))


@dataclass
class Hit:
    signature: Signature
    line: int  # 1-based
    text: str  # the line as read
    count: int = 1
    also: list[str] = field(default_factory=list)  # the other signatures of the same rule or cause found


@cache
def causes() -> dict[str, dict[str, Any]]:
    data = json.loads(package_dir("h3doctor.explain").joinpath("causes.json").read_text(encoding="utf-8"))
    return {c["id"]: c for c in data["causes"]}


def signatures(rules: Iterable[Any]) -> tuple[Signature, ...]:
    """The rules' `crash:` signatures (loaded Rule objects), then the causes'."""
    out = []
    for rule in rules:
        crash = rule.raw.get("crash")
        if crash:
            out += [Signature(s["text"], bool(s.get("line")), rule.id, None, crash["probe"]) for s in crash["signatures"]]
    for cause in causes().values():
        out += [Signature(s["text"], bool(s.get("line")), None, cause["id"], cause["probe"]) for s in cause["signatures"]]
    return tuple(out)


def scan(lines: list[str], sigs: tuple[Signature, ...]) -> list[Hit]:
    """One hit per rule or cause: its first line, and how many lines its signatures are found in."""
    lowered = "\n".join(lines).lower()  # lower() never makes a newline: positions map to the same lines
    starts = [0] + [m.end() for m in re.finditer("\n", lowered)]
    by_target: dict[str, Hit] = {}
    for sig in sigs:
        found = sig.regex.finditer(lowered)
        first = next(found, None)
        if first is None:
            continue
        count = 1 + sum(1 for _ in zip(range(MAX_COUNTED - 1), found))
        line = bisect.bisect_right(starts, first.start())
        key = sig.rule or sig.cause or ""
        hit = by_target.get(key)
        if hit is None:
            by_target[key] = Hit(sig, line, lines[line - 1].strip(), count)
        else:
            hit.also.append(sig.text)
            hit.count += count
            if line < hit.line:
                hit.signature, hit.line, hit.text = sig, line, lines[line - 1].strip()
    return sorted(by_target.values(), key=lambda h: h.line)
