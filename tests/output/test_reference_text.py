"""The reference commands' text (output/reference_text.py) folded at word boundaries to the width:
`rule ID` over every rule (no line but an example's command is wider, no word is lost), `rules`
and `profiles`; without a width (a pipe) each line is whole. They were written unfolded, so an
80-column terminal cut them mid-word."""

from __future__ import annotations

import io

import pytest

from h3doctor.output.markup import PlainConsole
from h3doctor.output.reference_text import gpu_catalog, profiles_list, rule_report, rules_list
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


def _plain(write, width):
    buf = io.StringIO()
    write(PlainConsole(buf, width))
    return buf.getvalue()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_rule_list_and_the_profiles_fit_the_width_with_their_words_kept(rules, width):
    from h3doctor.facts import assumed_line
    from h3doctor.host.profiles import builtin_profile_names, load_profile

    profiles = [(n, (hw := load_profile(n)).description, assumed_line(hw)) for n in builtin_profile_names()]
    from h3doctor.host.gpus import catalog

    for write in (lambda c: rules_list(list(rules), c), lambda c: profiles_list(profiles, c),
                  lambda c: gpu_catalog(catalog(), c)):
        text, whole = _plain(write, width), _plain(write, None)
        assert all(cells(line) <= width for line in text.splitlines())
        # no word lost (a word longer than the line is cut, as there is no other place)
        assert "".join(text.split()) == "".join(whole.split())
        assert "".join(_plain(write, 40).split()) == "".join(whole.split())  # too narrow for the columns: under the row
    listed = _plain(lambda c: rules_list(list(rules), c), width).splitlines()
    pad = " " * (42 if width >= 62 else 4)  # titles under their column, else under the row
    assert all(line.startswith("H3D") or line.startswith(pad) for line in listed)
