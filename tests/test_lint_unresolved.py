"""Values a launch's file leaves to the shell (issue 30 items 1, 2, 5): an expansion that does not
reach sglang's argv does not matter, one that does is "any value" for its flag, and one that
decides the flag set is a located "not judged", never a silent pass."""

from __future__ import annotations

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.engine.unresolved import NotJudged, unresolved_values
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.unresolved import marked

H3 = ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3"]


@pytest.fixture(scope="module")
def engine():
    return load_rules(None), load_flag_table(), load_profile("8xH200")


def _findings(engine, argv):
    rules, table, hw = engine
    return check(argv, hw, rules, table, {}).evaluation.findings


def test_a_rule_reading_an_unresolved_value_cannot_verify_it(engine):
    findings = {f.rule.id: f for f in _findings(engine, H3 + ["--tp-size", marked("$TP")])}
    assert findings["H3D515"].cannot_verify and findings["H3D515"].severity == "warning"
    assert "--tp-size '$TP'" in findings["H3D515"].unknown_why
    assert not any(f.severity == "error" for f in findings.values())


def test_rules_not_reading_the_unresolved_value_run_as_usual(engine):
    literal = [(f.rule.id, f.severity, f.message) for f in _findings(engine, H3 + ["--tp-size", "3"])]
    port = [(f.rule.id, f.severity, f.message) for f in _findings(engine, H3 + ["--tp-size", "3", "--port", marked("$PORT")])]
    assert literal and port == literal
    assert _findings(engine, H3 + ["--port=" + marked("$PORT")]) == []


@pytest.mark.parametrize("argv, word", [
    (H3 + [marked("$EXTRA_FLAG"), "4"], 4),
    (["sglang", "serve", "--model-path", marked("$MODEL")], 3),
    ([marked("$SGLANG"), "serve", "--model-path", "MiniMaxAI/MiniMax-H3"], 0),
])
def test_a_word_deciding_the_flag_set_is_not_judged_at_that_word(engine, argv, word):
    with pytest.raises(NotJudged) as caught:
        unresolved_values(argv, engine[1])
    assert caught.value.word == word
