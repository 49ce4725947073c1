"""explain's pattern search (h3doctor/explain/locate.py): the same matches as the whole-template
regular expression it replaced, on sglang's own error lines and on random ones, with work bounded
on lines built from the templates' own fixed text (issue 27, item 7). Work is counted, not timed."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from h3doctor.engine.ruleset import load_rules
from h3doctor.explain import locate, patterns
from h3doctor.explain.logread import ErrorLine
from h3doctor.explain.match import match_errors
from h3doctor.sglang import releases
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools" / "conformance"))
import compare  # noqa: E402

# lines of the shapes the crash-log reference names (sglang's own words, and ones that are no rule's)
REFERENCE_LINES = [
    "KeyError: 'SDPA'", "AssertionError: Invalid device id", "ZeroDivisionError: integer modulo by zero",
    "error: unrecognized arguments: --bogus 1", "Port 30000 was unavailable, using port 30042 instead",
    "OSError: [Errno 28] No space left on device", "KeyError: 't2va'",
]


@pytest.fixture(scope="module")
def every_pattern() -> tuple[patterns.Pattern, ...]:
    return patterns.compiled(load_rules())


def _old(pattern: patterns.Pattern, message: str, whole: bool) -> list[str] | None:
    m = pattern.regex.fullmatch(message) if whole else pattern.regex.search(message)
    return None if m is None else [m.group(f"h{i}") for i in range(len(pattern.holes))]


def _same_on(pattern_set, messages) -> list[str]:
    differ = []
    for message in messages:
        lowered = message.lower()
        for pattern in pattern_set:
            if pattern.anchor not in lowered:
                continue
            for whole in (True, False):
                old, new = _old(pattern, message, whole), pattern.find(message, whole)
                if old != new:
                    differ.append(f"{pattern.rule} {pattern.text!r} whole={whole} on {message!r}: {old} != {new}")
    return differ


def _golden_messages() -> list[str]:
    out = set()
    for version in releases.known_releases():
        path = compare.goldens_path(version)
        if path.is_file():
            for case in compare.read_jsonl(path)[1]:
                for line in str(case.get("msg") or "").splitlines():
                    out.add(patterns.normalise(line)[1])
    return sorted(out)


def test_the_placed_search_finds_what_the_whole_regex_finds_on_sglangs_lines(every_pattern):
    messages = _golden_messages() + [patterns.normalise(line)[1] for line in REFERENCE_LINES]
    messages += [p.sample() for p in every_pattern]
    assert len(messages) > 300
    differ = _same_on(every_pattern, messages)
    assert not differ, "\n".join(differ[:20])


def test_the_placed_search_finds_what_the_whole_regex_finds_on_random_lines(every_pattern):
    """Each template filled with values drawn from its own fixed words, numbers, quotes and
    brackets, with text around it: where pieces repeat, the two must still agree."""
    rnd = random.Random(27)
    for pattern in every_pattern:
        words = patterns.normalise(patterns._RULE_HOLE.sub(" ", pattern.text))[1].split() or ["x"]
        alphabet = words + ["4", "9.0", "'fa'", "[1, 2]", "(a)", "--tp", "None", ";", ".", "x", "SDPA", "-1"]
        lines = []
        for _ in range(12):
            filled = pattern.text
            filled = patterns._fill(pattern, lambda name, kind: " ".join(rnd.choices(alphabet, k=rnd.randint(1, 3)))
                                    if kind == "text" or rnd.random() < 0.3 else patterns.TYPES[kind][1])
            around = [" ".join(rnd.choices(alphabet, k=rnd.randint(0, 3))) for _ in range(2)]
            lines.append(patterns.normalise(f"{around[0]} {filled} {around[1]}")[1])
            lines.append(patterns.normalise(filled)[1])
        differ = _same_on([pattern], lines)
        assert not differ, "\n".join(differ[:20])


def _own_text_line(pattern: patterns.Pattern, size: int = 4096) -> str:
    """A line of the template's fixed pieces, holes left out, repeated to `size` characters."""
    fixed = " ".join(patterns._RULE_HOLE.sub(" ", patterns._WORDING_HOLE.sub(" ", pattern.text)).split())
    return ((fixed + " ") * (size // (len(fixed) + 1) + 1))[:size]


def test_no_search_expression_holds_a_run_of_text(every_pattern):
    """A run of text is a gap between placed chunks, never part of an expression searched with
    (two such runs in one expression took 80 s on a 4 KB line)."""
    text = patterns.TYPES["text"][0]
    for pattern in every_pattern:
        for chunk in pattern.plan.chunks:
            for regex in (chunk.body, chunk.full, chunk.lead):
                assert regex is None or text not in regex.pattern and ".*" not in regex.pattern, pattern.text


def test_a_line_of_each_templates_own_text_costs_a_bounded_number_of_placements(every_pattern):
    """H3D311's `{backend} needs compute capability {capabilities}; this device reports {found}.`
    on a 4 KB line of its own fixed text: every placement of the first chunk against every one of
    the next is what the whole regex tried; here the placements stop at MAX_PLACEMENTS."""
    h3d311 = [p for p in every_pattern if p.rule == "H3D311" and len(p.plan.chunks) > 1]
    assert h3d311
    for pattern in every_pattern:
        line = _own_text_line(pattern)
        for whole in (True, False):
            work = locate.Work()
            pattern.find(line, whole, work)
            assert work.placements <= locate.MAX_PLACEMENTS, (pattern.text, work.placements)
    work = locate.Work()
    assert h3d311[0].find(_own_text_line(h3d311[0]), False, work) is None
    assert work.placements == locate.MAX_PLACEMENTS  # the budget, not the line, ended the search


def test_explain_matches_without_the_whole_template_expression(every_pattern, monkeypatch):
    """match_errors never searches with a template's whole expression (the regex property is the
    tests' reference only): a line holding every rule's fixed text is matched through the plans."""
    def refuse(self):
        raise AssertionError("explain searched with a whole-template regular expression")
    monkeypatch.setattr(patterns.Pattern, "regex", property(refuse))
    every = " ".join(sorted({p.anchor for p in every_pattern}))
    lines = [ErrorLine(1, every, "ValueError", every, "exception")]
    lines += [ErrorLine(i + 2, _own_text_line(p), None, _own_text_line(p), "exception") for i, p in enumerate(every_pattern)]
    lines += [ErrorLine(9999, p.sample(), p.exc_type, p.sample(), "exception") for p in every_pattern]
    found, _ = match_errors(lines, every_pattern)
    assert len({m.rule for m in found if m.line == 9999}) > 50


# --- a long log: one scan of a line's words picks the patterns it may hold --------------------------

def test_the_word_index_picks_every_pattern_a_full_scan_picks(every_pattern):
    """The index (each pattern filed under its anchor's longest whole word) loses no pattern a test
    of every anchor finds, on sglang's lines and each template's sample."""
    pick = patterns.candidates(every_pattern)
    for message in _golden_messages() + [p.sample() for p in every_pattern] + REFERENCE_LINES:
        lowered = message.lower()
        assert pick(lowered) == [p for p in every_pattern if p.anchor in lowered], message


def test_an_exception_line_without_any_rules_word_tests_only_the_anchors_without_one(every_pattern, monkeypatch):
    """82,000 such lines took ~5 s when each tested all 264 anchors; the index tests only the few
    anchors without a whole word of their own (counted through the anchors' containment test)."""
    tested = []

    class Counting(str):
        def __contains__(self, anchor):
            tested.append(anchor)
            return str.__contains__(self, anchor)
    pick = patterns.candidates(every_pattern)
    assert pick(Counting("valueerror: " + "x" * 180 + " tail of it")) == []
    assert 0 < len(tested) <= 16


def test_a_line_that_cannot_say_out_of_memory_is_not_searched_for_it():
    from h3doctor.explain import oom
    for line in ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "OOM detected. Possible solutions:",
                 "RuntimeError: MPS backend out of memory", "ran OUT OF MEMORY"]:
        assert oom._may_say_oom(line) and oom._OOM.search(line)
    assert not oom._may_say_oom("ValueError: " + "x" * 180)
