"""Error lines against the rules' patterns: which rule each names, how exactly, in which
releases' wording, with the values its holes captured. Nothing is guessed: a line no pattern
matches stays unmatched."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from h3doctor.digits import is_digits
from h3doctor.explain.logread import ErrorLine
from h3doctor.explain.oom import PHASE_RULES, OutOfMemory
from h3doctor.explain.patterns import Pattern, candidates

MAX_MESSAGE_CHARS = 8 * 1024  # sglang's longest messages are under 1 KiB; more is matched cut


@dataclass
class Match:
    rule: str
    exact: bool  # the whole message is the rule's wording (else: the wording was found inside the line)
    how: str  # message (the rule's own message) | wording (wordings.json) | oom
    releases: tuple[str, ...]  # the releases that print these words
    captured: dict[str, str]
    line: int
    text: str
    count: int = 1
    notes: list[str] = field(default_factory=list)
    by: str = "sglang"  # who prints the matched words (Pattern.by)


def match_errors(errors: list[ErrorLine], patterns: tuple[Pattern, ...]) -> tuple[list[Match], list[ErrorLine]]:
    """(the matches, merged per rule and captured values; the error lines nothing matched)."""
    found: dict[tuple, Match] = {}
    unmatched: list[ErrorLine] = []
    holding = candidates(patterns)
    for error in errors:
        message = error.message[:MAX_MESSAGE_CHARS]
        per_rule: dict[str, Match] = {}
        for pattern in holding(message.lower()):
            if pattern.exc_type and error.exc_type and pattern.exc_type != error.exc_type:
                continue
            values = pattern.find(message, whole=True)
            exact = values is not None
            if values is None:
                values = pattern.find(message, whole=False)
            if values is None:
                continue
            captured = {}
            for (name, _), value in zip(pattern.holes, values):
                captured.setdefault(name.rsplit(".", 1)[-1], value)
            known = per_rule.get(pattern.rule)
            if known is None or exact and not known.exact:
                per_rule[pattern.rule] = Match(pattern.rule, exact, pattern.source, pattern.releases, captured,
                                               error.line, error.text, by=pattern.by)
            elif exact == known.exact:  # another release's wording of the same rule fits too
                known.releases = tuple(sorted(set(known.releases) | set(pattern.releases), key=_release_key))
        if not per_rule:
            if error.kind != "bare" or len(errors) == 1:
                unmatched.append(error)
            continue
        for match in per_rule.values():
            key = (match.rule, tuple(sorted(match.captured.items())))
            if key in found:
                found[key].count += 1
            else:
                found[key] = match
    return sorted(found.values(), key=lambda m: (m.line, m.rule)), unmatched


OOM_RULES = frozenset(rule for rules in PHASE_RULES.values() for rule in rules)  # every memory rule an OOM maps to


def oom_as_checked(found: list[Match], confirmed: set[str] | None) -> list[Match]:
    """An out-of-memory error whose phase the log does not tell is mapped to the memory rules the
    check of its launch reports, when it reports one (H3D641: it fits at load, not at its request's
    peak), instead of the load-or-request guess the check contradicts."""
    checked = sorted(OOM_RULES & confirmed) if confirmed else []
    guessed = [m for m in found if m.how == "oom" and m.captured.get("phase") == "unknown"]
    if not checked or not guessed:
        return found
    first = guessed[0]
    told = "the check of this launch reports this memory rule, so the error is read as it"
    return [m for m in found if m not in guessed] + [replace(first, rule=rule, notes=[*first.notes, told])
                                                      for rule in checked]


def oom_matches(oom: OutOfMemory | None) -> list[Match]:
    """An out-of-memory failure, mapped to the memory rules of the phase it happened in."""
    if oom is None:
        return []
    notes = [f"phase {oom.phase}: line {oom.phase_line}: {oom.phase_text}" if oom.phase else
             "the log does not say whether it ran out while loading, warming up or serving"]
    if oom.platform == "mps":
        notes.append("h3doctor's memory model covers CUDA and ROCm; on MPS its memory rules do not run")
    captured = {"phase": oom.phase or "unknown", "platform": oom.platform, **oom.captured}
    return [Match(rule, False, "oom", (), dict(captured), oom.line, oom.text, oom.count, list(notes))
            for rule in PHASE_RULES[oom.phase]]


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if is_digits(p) else 0 for p in version.split("."))
