"""A rule's `one_of` fix (issue 30 item 8): options in the rule's order, sglang's own flags before
the container's words; the first that passes re-checked is taken, else the last that edits anything.
H3D241's examples (tests/engine/test_rule_examples.py) show it end to end."""

from __future__ import annotations

from types import SimpleNamespace

from h3doctor.engine.judge import _passes
from h3doctor.engine.fixes import FixContext, apply_edits
from h3doctor.sglang.argv import parse_command
from h3doctor.sglang.flagtable import load_flag_table

ARGV = ["docker", "run", "-e", "SGLANG_CACHE_DIT_ENABLED=true", "lmsysorg/sglang:v0.5.18", "sglang", "serve",
        "MiniMaxAI/MiniMax-H3", "--layerwise-offload-components", "text_encoder,transformer"]
ONE_OF = {"one_of": [
    [{"remove_values": {"flag": "--layerwise-offload-components", "values": ["dit", "transformer"]}}],
    [{"set_env": {"name": "SGLANG_CACHE_DIT_ENABLED", "value": "false"}}],
]}


def _fixed(passes) -> list[str]:
    cmd = parse_command(ARGV, load_flag_table("0.5.18"))
    fx = FixContext(cmd, load_flag_table("0.5.18"), {}, {}, passes)
    return apply_edits(cmd, fx.edits_for(ONE_OF))


def test_the_flag_change_is_taken_when_it_passes():
    assert _fixed(lambda edits: True)[-2:] == ["--layerwise-offload-components", "text_encoder"]
    assert "SGLANG_CACHE_DIT_ENABLED=true" in _fixed(lambda edits: True)


def test_the_containers_word_only_when_the_flag_change_does_not_pass():
    fixed = _fixed(lambda edits: False)
    assert "SGLANG_CACHE_DIT_ENABLED=false" in fixed and fixed[-1] == "text_encoder,transformer"


def _finding(rule: str, severity: str = "error"):
    return SimpleNamespace(rule=SimpleNamespace(id=rule, fix=None), severity=severity, cannot_verify=False,
                           predicts_failure=severity == "error")


def _ev(*findings):
    return SimpleNamespace(findings=list(findings))


def test_an_option_passes_when_its_finding_is_gone_and_nothing_new_fails():
    before = _ev(_finding("H3D241"), _finding("H3D020"))
    assert _passes(before, "H3D241", _ev(_finding("H3D020")))  # what failed before may still fail
    assert not _passes(before, "H3D241", _ev(_finding("H3D241")))  # not fixed
    assert not _passes(before, "H3D241", _ev(_finding("H3D540")))  # a new failure (memory) in its place
    assert _passes(before, "H3D241", _ev(_finding("H3D540", "info")))
