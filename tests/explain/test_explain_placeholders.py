"""No raw `{path}` placeholder in what a user reads of a rule: explain's JSON and text for every
rule its own message names, with and without the launch; `h3doctor rule ID`'s text; lint's rule
help (SARIF). A value explain does not know is said in neutral words (explain/unfilled.json)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from h3doctor.engine.conditions import placeholders
from h3doctor.explain import source, unfilled
from h3doctor.explain.report import ExplainRequest, run
from h3doctor.output.explain_text import explain_report
from tests.explain.test_explain import EXAMPLES, RULES, example_messages

HOLE = re.compile(r"\{[A-Za-z_][\w.]*(?:![rsa])?\}")


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


def holes(report) -> dict[str, set[str]]:
    """The placeholders left in the report's JSON and in its text (NO_COLOR, wide: no line cut)."""
    text, commands = io.StringIO(), io.StringIO()
    explain_report(report, Console(file=text, width=400, no_color=True), commands)
    return {"json": {h for s in strings(report.as_dict()) for h in HOLE.findall(s)},
            "text": set(HOLE.findall(text.getvalue() + commands.getvalue()))}


def _texts(rule) -> list[str]:
    return [rule.why, rule.fix_note or ""] + [e.get("why", "") for e in rule.releases]


@pytest.mark.parametrize("rule,example", EXAMPLES, ids=[f"{r.id}::{e['name']}" for r, e in EXAMPLES])
def test_explain_leaves_no_placeholder_with_or_without_the_launch(rule, example, tmp_path):
    """The rule's message as check renders it from the example, explained bare and with the
    example's launch after `--`: no `{...}` in any string of the JSON or in the text, for any
    rule the message names (the rule itself and others sharing its words)."""
    argv, messages = example_messages(rule, example, tmp_path)
    assert messages, "the example no longer fails with its rule"
    for launch in ([], argv):
        report = run(ExplainRequest(source.from_argument(messages[0]), launch, profile=example["profile"],
                                    sglang_version=example.get("sglang_version"), rules=RULES,
                                    intent=dict(example.get("intent", {}))))
        assert rule.id in {m.rule for m in report.matches}
        assert holes(report) == {"json": set(), "text": set()}, (rule.id, bool(launch))


def test_a_value_the_launch_gives_is_filled_not_neutral(tmp_path):
    """With the launch, the values are the check's (H3D804: the distilled count, 8); without it,
    the neutral words, never a wrong number."""
    rule, example = next((r, e) for r, e in EXAMPLES if r.id == "H3D804" and e["name"] == "fasth3-four-steps")
    argv, messages = example_messages(rule, example, tmp_path)
    by_launch = {}
    for launch in ([], argv):
        data = run(ExplainRequest(source.from_argument(messages[0]), launch, profile="1xH200", rules=RULES)).as_dict()
        by_launch[bool(launch)] = next(m for m in data["matches"] if m["rule"] == "H3D804")
    assert "--num-inference-steps 8" in by_launch[True]["fix_note"] and "(8 in this release" in by_launch[True]["why"]
    assert "drop --num-inference-steps" in by_launch[False]["fix_note"] and "8" not in by_launch[False]["fix_note"]


def test_every_placeholder_of_a_rule_text_has_neutral_words_and_every_fragment_is_used():
    """Each placeholder of every rule's why and fix_note (and per-release why) lies in a fragment
    of explain/unfilled.json, so with nothing known the text has no `<name>` fallback either; a
    fragment no rule has any more is stale."""
    used = set()
    for rule in RULES:
        for text in _texts(rule):
            folded = " ".join(text.split())
            present = {f for f, _ in unfilled.fragments() if f in folded}
            for fragment, neutral in unfilled.fragments():
                folded = folded.replace(fragment, neutral)
            assert placeholders(folded) == [], (rule.id, placeholders(folded))  # each occurrence covered
            assert not HOLE.search(unfilled.fill(text, {})), rule.id
            used |= present
    assert {f for f, _ in unfilled.fragments()} - used == set()
    assert all(placeholders(f) for f, _ in unfilled.fragments())


def test_a_placeholder_no_fragment_covers_is_named_not_left_raw():
    """A rule from --rules-dir with a placeholder unfilled.json does not know: `<name>`, as
    `h3doctor rule ID` shows it; a known value is filled."""
    assert unfilled.fill("needs {derived.something_new} of {args.num_gpus}", {"args.num_gpus": 4}) == \
        "needs <something_new> of 4"


def test_rule_help_and_lint_rule_help_leave_no_placeholder(capsys):
    """`h3doctor rule ID` (its text above the examples, whose argv keep their {config} file slot)
    and lint's SARIF rule help render placeholders as <name>."""
    from h3doctor.cli import rule_cmd
    from h3doctor.lint.report import rule_meta

    for rule in RULES:
        rule_cmd(rule.id)
        text = capsys.readouterr().out.split("\nexamples:\n")[0]
        assert not HOLE.search(text), (rule.id, HOLE.findall(text))
    for meta in rule_meta(RULES):
        assert not [h for s in strings(meta) for h in HOLE.findall(s)], meta["id"]
