"""Alternatives (issue: when no change of flags alone saves a launch, offer what to give up).

The no-fix classes of the issue (a hybrid variant without merged weights, cube sparse attention
without its tuned config, sage_fp8 on the wrong GPU) each get alternative commands that re-check
clean, name what they give up, and never become the corrected command.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from importlib import resources

import pytest

from h3doctor.engine.check import check, fix_loop
from h3doctor.host.profiles import load_profile

H3 = "sglang serve MiniMaxAI/MiniMax-H3"

NO_FIX_CLASSES = [
    # (profile, launch, the unfixable rule, what each alternative gives up, in order)
    ("4xH200", f"{H3} --num-gpus 4 --model-variant hybrid", "H3D405",
     ["serves the FL2VA partition instead of hybrid", "serves the Ref2VA partition instead of hybrid"]),
    ("4xH200", f"{H3} --num-gpus 4 --attention-backend cube_sparse_attn", "H3D604",
     ["uses dense FlashAttention instead of cube sparse attention"]),
    ("4xB200", f"{H3} --num-gpus 4 --attention-backend subblock_sparse_attn --attention-backend-config compute_mode=sage_fp8",
     "H3D307", ["uses SubBlock compute_mode=bf16 instead of sage_fp8", "uses dense FlashAttention instead of SubBlock"]),
    ("m3-max", f"{H3} --layerwise-offload-components all --attention-backend subblock_sparse_attn "
               "--attention-backend-config compute_mode=sage_fp8", "H3D307",
     ["uses SubBlock compute_mode=bf16 instead of sage_fp8"]),  # MPS runs SDPA whatever it is asked: no FA one
    ("1xRTX5090", f"{H3} --component-residency all=resident", "H3D540", ["drops your --component-residency placement"]),
]


def _run(rules, table, profile, command, **hw):
    facts = replace(load_profile(profile), **hw) if hw else load_profile(profile)
    return facts, check(shlex.split(command), facts, rules, table, {})


@pytest.mark.parametrize("profile,command,rule,gives_up", NO_FIX_CLASSES, ids=lambda v: v if isinstance(v, str) and v.startswith("H3D") else None)
def test_each_no_fix_class_gets_alternatives_that_re_check_clean(rules, table, profile, command, rule, gives_up):
    hw, result = _run(rules, table, profile, command)
    assert result.fix_status == "no-fix" and rule in result.unfixable
    assert result.corrected_argv is None  # offered, never applied
    assert [a.gives_up[0][: len(g)] for a, g in zip(result.alternatives, gives_up)] == gives_up
    assert len(result.alternatives) == len(gives_up)
    for alt in result.alternatives:
        assert alt.checks_clean and alt.answers == [rule] and alt.still_failing == []
        again = check(alt.argv, hw, rules, table, {})
        assert again.fix_status == "clean", (alt.command, [f.rule.id for f in again.evaluation.findings])
        assert alt.argv[:3] == shlex.split(command)[:3]  # the user's own command, edited


def test_alternatives_do_not_change_what_the_fix_loop_returns(rules, table):
    hw = load_profile("4xH200")
    tokens = shlex.split(f"{H3} --num-gpus 4 --ulysses-degree 3 --model-variant hybrid")
    loop, full = fix_loop(tokens, hw, rules, table, {}), check(tokens, hw, rules, table, {})
    assert full.alternatives and not loop.alternatives
    assert (full.corrected_argv, full.nearest_argv, full.fix_status, full.gives_up, full.unfixable) == (
        loop.corrected_argv, loop.nearest_argv, loop.fix_status, loop.gives_up, loop.unfixable)
    # built on the nearest launch: the layout fix (Ulysses 4) is kept in every alternative
    assert all(a.argv[a.argv.index("--ulysses-degree") + 1] == "4" for a in full.alternatives)


def test_two_unfixable_findings_are_answered_together(rules, table):
    _, result = _run(rules, table, "4xH200", f"{H3} --num-gpus 4 --model-variant hybrid --attention-backend cube_sparse_attn")
    assert set(result.unfixable) == {"H3D405", "H3D604"}
    assert [a.answers for a in result.alternatives] == [["H3D405", "H3D604"]] * 2
    first = result.alternatives[0]
    assert first.command == f"{H3} --num-gpus 4 --model-variant fl2va --attention-backend fa"
    assert first.gives_up[1] == "uses dense FlashAttention instead of cube sparse attention"


def test_an_alternative_that_still_fails_elsewhere_says_so(rules, table):
    _, result = _run(rules, table, "4xH200", f"{H3} --num-gpus 4 --model-variant hybrid", ffmpeg=False)
    assert set(result.unfixable) == {"H3D403", "H3D405"}  # no ffmpeg: no flag fixes that
    assert result.alternatives and all(not a.checks_clean and a.still_failing == ["H3D403"] for a in result.alternatives)
    assert not any("has no automatic fix" in g for a in result.alternatives for g in a.gives_up)


def test_fixable_and_clean_launches_have_none(rules, table):
    for command in (f"{H3} --num-gpus 4", f"{H3} --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"):
        _, result = _run(rules, table, "4xH200", command)
        assert result.fix_status in ("clean", "fixed") and result.alternatives == []


def test_json_and_text_show_the_alternatives(cli):
    from jsonschema import Draft202012Validator

    code, data, _ = cli("check", "--profile", "4xH200", "--", *shlex.split(f"{H3} --num-gpus 4 --model-variant hybrid"))
    assert code == 1 and data["fix_status"] == "no-fix" and data["corrected_argv"] is None
    assert [a["argv"][-1] for a in data["alternatives"]] == ["fl2va", "ref2va"]
    assert all(a["checks_clean"] and a["answers"] == ["H3D405"] for a in data["alternatives"])
    assert data["alternatives"][0]["command"] == f"{H3} --num-gpus 4 --model-variant fl2va"
    schema = json.loads(resources.files("h3doctor.schema").joinpath("report.schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(data)] == []
    code, text, _ = cli("check", "--profile", "4xH200", "--", *shlex.split(f"{H3} --num-gpus 4 --model-variant hybrid"),
                        json_output=False)
    lines = text.splitlines()
    assert f"    {H3} --num-gpus 4 --model-variant ref2va" in lines
    assert any(line.startswith(" 1. serves the FL2VA partition instead of hybrid") for line in lines)


def test_the_rule_command_lists_a_rules_alternatives(cli):
    code, out, _ = cli("rule", "H3D604", json_output=False)
    assert code == 0
    assert "alternative: uses dense FlashAttention instead of cube sparse attention" in out.splitlines()
    code, data, _ = cli("rule", "H3D604", "--format", "json")
    assert [a["gives_up"] for a in data["alternatives"]][0] == "uses dense FlashAttention instead of cube sparse attention"
