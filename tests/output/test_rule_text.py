"""`h3doctor rule ID`'s text (output/rule_text.py) folded at word boundaries to the width, over
every rule: no line but an example's command is wider, no word is lost, and without a width (a
pipe) each line is whole. It was written unfolded, so an 80-column terminal cut it mid-word."""

from __future__ import annotations

import io

import pytest

from h3doctor.output.markup import PlainConsole
from h3doctor.output.rule_text import rule_report
from h3doctor.output.wrap import cells


def _text(rule, width):
    buf = io.StringIO()
    rule_report(rule, PlainConsole(buf, width), buf)
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 120])
def test_every_rules_text_fits_the_width_with_its_words_kept(rules, width):
    for rule in rules:
        text, whole = _text(rule, width), _text(rule, None)
        commands = {line for line in whole.splitlines() if line.startswith(("  [", "         corrected: "))}
        wide = [line for line in text.splitlines() if cells(line) > width and line not in commands]
        assert not wide, (rule.id, wide)
        assert text.split() == whole.split() or "".join(text.split()) == "".join(whole.split()), rule.id


def test_without_a_width_each_line_is_whole(rules):
    rule = next(r for r in rules if r.id == "H3D641")
    first = _text(rule, None).splitlines()[0]
    assert first == f"H3D641 {rule.name}: {rule.title}"
