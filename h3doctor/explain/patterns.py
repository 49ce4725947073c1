"""sglang's messages as typed patterns: every rule's message for each release that prints it, and
the wordings (wordings.json) of the rules whose message is filled whole from the check's context.

A placeholder becomes a pattern of its type — an integer, a number, a Python literal (`{x!r}`), a
list, a flag, one word, or a run of text — never a bare wildcard over the whole line: a rule whose
message has too little fixed text to tell it from any other line is not matched by its message.
Compiled once per rule set (keyed by the rules' messages) and kept for the process.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Iterable

from h3doctor.explain.locate import Plan, Work, literal_expression, locate, plan
from h3doctor.paths import package_dir

# what each hole's type reads as, and a value of that type (the tests render messages with them)
TYPES: dict[str, tuple[str, str]] = {
    "int": (r"-?\d+", "4"),
    "num": (r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?inf|nan", "9.0"),
    "repr": (r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|None|True|False|-?inf|nan"
             r"|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}", "'fa'"),
    "list": (r"\[[^\]]*\]", "['fa', 'torch_sdpa']"),
    "tuple": (r"\([^)]*\)", "('auto', 'speed')"),
    "flag": (r"-{1,2}[A-Za-z][\w.\-]*(?:/-{1,2}[A-Za-z][\w.\-]*)*", "--tp-size"),
    "word": (r"\S+", "fa"),
    "upper": (r"[A-Z][A-Z0-9_]*", "SDPA"),
    "version": (r"\d+\.\d+\.\d+[\w.+-]*", "1.2.3"),  # a sample value only: any release number fits
    "bool": (r"True|False", "True"),
    "text": (r".*?", "some value"),
}
MIN_FIXED_CHARS = 12  # a template with fewer letters of its own matches too much to name a rule
# an exception type: `KeyError`, `torch.OutOfMemoryError`, `SystemExit`, a bare `Exception`; a bare
# `Error` is not one — sglang writes "Error: --model-path is required" itself
EXC_TYPE = r"(?:[A-Z]\w{0,80}?(?:Error|Exception|Exit|Interrupt)|Exception)"
_EXC_PREFIX = re.compile(r"^(?:[A-Za-z_]\w{0,80}\.){0,8}(?P<type>" + EXC_TYPE + r"): ")
_RULE_HOLE = re.compile(r"\{([A-Za-z_][\w.]*)(!r)?\}")
_WORDING_HOLE = re.compile(r"\{([A-Za-z_]\w*):(\w+)\}")


@dataclass(frozen=True)
class Pattern:
    """One wording of one rule's message, as a regular expression over a normalised error line."""
    rule: str
    releases: tuple[str, ...]  # the releases that print this wording
    source: str  # "message": the rule's own message; "wording": wordings.json
    text: str  # the template as written (first line), `error: ` and an exception prefix removed
    exc_type: str | None  # the exception type the template names (KeyError: '{...}'), if any
    expression: str  # the whole template as one regular expression: the tests' reference, never searched with
    plan: Plan  # the template as chunks placed by their fixed text (locate.py): what explain searches with
    holes: tuple[tuple[str, str], ...]  # (name, type) per group, in order
    anchor: str  # the longest fixed piece, lowercased: a line without it cannot match
    multiline: bool  # the template has more lines than the first
    by: str = "sglang"  # who prints these words (wordings.json `by`: the container runtime for H3D148)

    @property
    def regex(self) -> re.Pattern[str]:
        """The template as one regular expression (super-linear on a hostile line: tests only)."""
        return re.compile(self.expression)

    def find(self, message: str, whole: bool, work: Work | None = None) -> list[str] | None:
        """Each hole's value where the template fits the message (whole, or the leftmost place in it)."""
        return locate(self.plan, message, whole, work)

    def sample(self) -> str:
        """The message rendered with a typed sample value in each hole."""
        return _fill(self, lambda name, kind: TYPES[kind][1])


def normalise(message: str) -> tuple[str | None, str]:
    """(the exception type, the message) without `error: `, an exception-type prefix and runs of
    whitespace: the way sglang's words are compared (argparse and SystemExit add `error: `)."""
    text = message.strip()
    exc_type = None
    for _ in range(2):
        if text.startswith("error: "):
            text = text[len("error: "):]
        m = _EXC_PREFIX.match(text)
        if m:
            exc_type = exc_type or m.group("type")
            text = text[m.end():]
    return exc_type, " ".join(text.split())


def compiled(rules: Iterable[Any]) -> tuple[Pattern, ...]:
    """Every pattern of these rules (loaded Rule objects), cached per distinct rule set."""
    rules = tuple(rules)
    key = tuple((r.id, r.versions, tuple(r.where_by_release), r.message, tuple((e.get("versions"), e.get("message")) for e in r.releases))
                for r in rules)
    return _compile(key, rules)


_CACHE: dict[tuple, tuple[Pattern, ...]] = {}


def _compile(key: tuple, rules: tuple[Any, ...]) -> tuple[Pattern, ...]:
    hit = _CACHE.get(key)
    if hit is None:
        hit = _CACHE[key] = tuple(_build(rules))
    return hit


MIN_QUOTED_ANCHOR = 16


_WORD = re.compile(r"[a-z_][a-z0-9_]{3,}")


def quoted(patterns: tuple[Pattern, ...]):
    """A test for the longer fixed pieces of these patterns: a log line holding one is read as an
    error line even when nothing marks it as one. Each piece is looked for only in lines holding
    its longest word (one scan of the line for its words, then a set lookup)."""
    by_word: dict[str, list[str]] = {}
    for anchor in {p.anchor for p in patterns if len(p.anchor) >= MIN_QUOTED_ANCHOR}:
        words = _WORD.findall(anchor)
        if words:
            by_word.setdefault(max(words, key=len), []).append(anchor)

    def holds(line: str) -> bool:
        lowered = line.lower()
        for word in set(_WORD.findall(lowered)) & by_word.keys():
            if any(anchor in lowered for anchor in by_word[word]):
                return True
        return False
    return holds


# a whole word of a pattern's fixed text, bounded inside it on both sides (so the line's own words,
# found the same way, hold it whole whatever a hole next to it was filled with)
_WHOLE_WORD = re.compile(r"(?<![a-z0-9_])[a-z_][a-z0-9_]{3,}(?![a-z0-9_])")


def candidates(patterns: tuple[Pattern, ...]):
    """A function from a lowered message to the patterns whose anchor it may hold, in their order:
    each pattern is filed under its anchor's longest whole word, so a line costs one scan for its
    words and a set lookup, not a test per pattern (82,000 exception lines took ~5 s testing 264
    anchors each); the few anchors without such a word are tested on every line."""
    by_word: dict[str, list[int]] = {}
    always: list[int] = []
    for i, pattern in enumerate(patterns):
        words = [m.group() for m in _WHOLE_WORD.finditer(pattern.anchor)
                 if m.start() > 0 and m.end() < len(pattern.anchor)]
        if words:
            by_word.setdefault(max(words, key=len), []).append(i)
        else:
            always.append(i)

    def of(lowered: str) -> list[Pattern]:
        picked = list(always)
        for word in set(_WORD.findall(lowered)) & by_word.keys():
            picked += by_word[word]
        return [patterns[i] for i in sorted(picked) if patterns[i].anchor in lowered]
    return of


@lru_cache(maxsize=1)
def wordings() -> dict[str, Any]:
    return json.loads(package_dir("h3doctor.explain").joinpath("wordings.json").read_text(encoding="utf-8"))


def own_words(rule_id: str) -> bool:
    """Whether the rule's message is h3doctor's own words (sglang never prints it)."""
    return rule_id in wordings()["own"]


def _build(rules: tuple[Any, ...]) -> list[Pattern]:
    from h3doctor.engine.ruleset import version_in_range
    from h3doctor.sglang.releases import known_releases

    known = known_releases()
    types = _arg_types()
    data = wordings()
    out: list[Pattern] = []
    for rule in rules:
        if rule.id in data["own"]:
            continue
        verified = [v for v in known if rule.in_release(v)]
        by_text: dict[str, list[str]] = {}
        for v in verified:
            by_text.setdefault(rule.for_version(v).message, []).append(v)
        for template, versions in by_text.items():
            pattern = _from_rule_message(rule.id, template, tuple(versions), types)
            if pattern is not None:
                out.append(pattern)
        for wording in data["wordings"].get(rule.id, ()):
            spec = wording.get("versions")
            versions = tuple(v for v in verified if spec is None or version_in_range(v, spec))
            if versions:
                out.append(_from_wording(rule.id, wording["text"], versions, wording.get("by", "sglang")))
    return out


@lru_cache(maxsize=1)
def _arg_types() -> dict[str, str]:
    """ServerArgs dests to hole types, from the newest flag table (types do not move between releases)."""
    from h3doctor.sglang.flagtable import load_flag_table

    kinds = {"int": "int", "float": "num"}
    return {dest: kinds.get(action.type or "", "text") if action.nargs in (None, "?") else "text"
            for dest, action in load_flag_table().by_dest.items()}


def _hole_type(path: str, use_repr: bool, types: dict[str, str]) -> str:
    if use_repr:
        return "repr"
    if path.startswith("args."):
        return types.get(path[len("args."):], "text")
    if path.endswith("_upper"):
        return "upper"
    if path == "hw.cc_int" or path.endswith(("_count", "_degree")):
        return "int"
    if path.endswith(("_gib", "_gb")):
        return "num"
    if path == "release.version":
        return "version"
    return "text"


def _from_rule_message(rule_id: str, template: str, versions: tuple[str, ...], types: dict[str, str]) -> Pattern | None:
    first, _, more = template.strip().partition("\n")
    exc_type, text = normalise(first)
    fixed = _RULE_HOLE.sub("", text)
    # a bare KeyError: '{...}' is told apart by its exception type and its hole's type
    if sum(c.isalpha() for c in fixed) < MIN_FIXED_CHARS and not (exc_type and text != _RULE_HOLE.sub("", text)):
        return None
    pieces = [(m.start(), m.end(), m.group(1), _hole_type(m.group(1), bool(m.group(2)), types))
              for m in _RULE_HOLE.finditer(text)]
    return _pattern(rule_id, versions, "message", text, exc_type, pieces, bool(more.strip()))


def _from_wording(rule_id: str, template: str, versions: tuple[str, ...], by: str = "sglang") -> Pattern:
    exc_type, text = normalise(template)
    pieces = [(m.start(), m.end(), m.group(1), m.group(2)) for m in _WORDING_HOLE.finditer(text)]
    for *_, kind in pieces:
        if kind not in TYPES:
            raise ValueError(f"wordings.json {rule_id}: unknown hole type {kind!r}")
    pattern = _pattern(rule_id, versions, "wording", text, exc_type, pieces, False)
    return pattern if by == "sglang" else replace(pattern, by=by)


def _pattern(rule_id, versions, source, text, exc_type, pieces, multiline) -> Pattern:
    parts, holes, fixed, items, pos = [], [], [], [], 0
    for i, (start, end, name, kind) in enumerate(pieces):
        parts.append(literal_expression(text[pos:start]))
        fixed.append(text[pos:start])
        items.append(("lit", text[pos:start]))
        last = end == len(text)
        body = ".*" if kind == "text" and last else TYPES[kind][0]  # a trailing run of text takes the rest
        parts.append(f"(?P<h{i}>{body})")
        items.append((kind, TYPES[kind][0]))
        holes.append((name, kind))
        pos = end
    parts.append(literal_expression(text[pos:]))
    fixed.append(text[pos:])
    items.append(("lit", text[pos:]))
    anchor = max((f.strip() for f in fixed), key=len).lower()
    return Pattern(rule_id, versions, source, text, exc_type, "".join(parts), plan(items), tuple(holes), anchor,
                   multiline)


def _fill(pattern: Pattern, value) -> str:
    holes = iter(pattern.holes)
    hole = _RULE_HOLE if pattern.source == "message" else _WORDING_HOLE

    def one(m: re.Match[str]) -> str:
        name, kind = next(holes)
        return value(name, kind)
    return hole.sub(one, pattern.text)
