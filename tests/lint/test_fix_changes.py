"""Fixes, change by change (issue 30 item 8): each change of a correction is safe or unsafe on its
own, whatever else the launch got wrong; a fix never writes a literal over a word the deployment
gives (`$(VAR)`, `${VAR}`, `"$VAR"`). Through the real CLI and the report's data."""

from __future__ import annotations

import json

import pytest

from h3doctor.engine.results import Change, Evaluation, FixStep
from h3doctor.lint.applicability import unsafe_steps
from tests.lint.test_lint_fixes import run, write

# `--model-pth` is an abbreviation sglang's argparse takes; h3doctor spells it out first (H3D021)
EIGHT = "MiniMaxAI/MiniMax-H3 --num-gpus 8 --ulysses-degree 8 --performance-mode speed"


def test_a_change_is_unsafe_even_when_the_launch_also_had_a_misspelling(tmp_path):
    # the misspelt model flag leaves the launch with no resolved configuration: compared whole,
    # the halved GPUs went unseen and `--fix` wrote them
    text = f"targets: [4xH200]\ncommand: sglang serve --model-pth {EIGHT}\n"
    recipe = write(tmp_path / "r.yaml", text)
    code, out, err = run("lint", "--no-config", "--fix", str(recipe), cwd=tmp_path)
    assert recipe.read_text() == text, err
    assert code == 1 and "unsafe fix not applied (apply with --unsafe-fixes)" in out
    # the report names the change and why, per rule
    assert ("H3D910 (replaces `--num-gpus 8` with `--num-gpus 4`; replaces `--ulysses-degree 8` with "
            "`--ulysses-degree 4`): lowers --num-gpus from 8 to 4, lowers --ulysses-degree from 8 to 4 (on 4xH200)"
            ) in " ".join(out.split())  # the note is folded to the width like every line of the report
    # alone, the same change is unsafe too
    alone = write(tmp_path / "alone.yaml", f"targets: [4xH200]\ncommand: sglang serve {EIGHT}\n")
    code, out, _ = run("lint", "--no-config", "--fix", str(alone), cwd=tmp_path)
    assert code == 1 and "lowers --num-gpus from 8 to 4" in out and "--num-gpus 8" in alone.read_text()


def _step(rule_id: str, effective: dict, *changes: Change) -> FixStep:
    rule = type("R", (), {"id": rule_id})()
    ev = Evaluation(None, None, None, {}, [], None, effective)
    return FixStep(rule, "", changes, False, (), ev)


def test_each_step_is_compared_with_the_configuration_after_it_not_the_launch_as_written():
    spell = Change(("--model-pth",), ("--model-path",), same_flag=True)
    lower = Change(("--num-gpus", "8"), ("--num-gpus", "4"))
    offload = {"num_gpus": 8, "layerwise_offload_components": ["image_encoder"]}  # sglang's own choice
    steps = [_step("H3D021", {}, spell), _step("H3D109", offload, lower)]
    # the spelled-out flag is judged from nothing resolved: the offload sglang picks by itself is
    # not the fix's; the lowered GPUs are the second change's
    assert unsafe_steps(steps, {"num_gpus": 4, "layerwise_offload_components": ["image_encoder"]}) == [
        "H3D109 (replaces `--num-gpus 8` with `--num-gpus 4`): lowers --num-gpus from 8 to 4"]
    # a step that takes nothing away is safe, whatever the steps before it changed
    assert unsafe_steps(steps, dict(offload)) == []


# --- a fix never writes a literal over a value the deployment gives ----------------------------

RING = "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2"
SCRIPT = f'#!/bin/sh\nexec sglang serve {RING} --attention-backend "$BACKEND" --bogus-flag\n'
POD = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: h3}}
spec:
  template:
    spec:
      containers:
        - name: h3
          image: lmsysorg/sglang:v0.5.23
          env:
            - name: BACKEND
              valueFrom: {{secretKeyRef: {{name: tuning, key: backend}}}}
          command: [sglang, serve]
          args: [{", ".join(RING.split())}, --attention-backend, $(BACKEND), --bogus-flag]
"""
COMPOSE = f"""\
services:
  h3:
    image: lmsysorg/sglang:v0.5.23
    command: sglang serve {RING} --attention-backend ${{BACKEND}} --bogus-flag
"""


@pytest.mark.parametrize("name, text, word", [
    ("serve.sh", SCRIPT, '"$BACKEND"'),  # the script's own quoting, kept
    ("deploy.yaml", POD, "$(BACKEND)"),
    ("compose.yaml", COMPOSE, "${BACKEND}"),
])
def test_a_value_the_deployment_gives_is_never_replaced_by_a_literal(tmp_path, name, text, word):
    """The deployment's `--attention-backend` is any value: ring attention on it cannot be verified
    (never fixed to `fa`); the launch's other fix is made and the word stays as written."""
    path = write(tmp_path / name, text)
    code, out, err = run("lint", "--no-config", "--target", "4xH200", "--fix", str(path), cwd=tmp_path)
    after = path.read_text()
    assert "--bogus-flag" not in after and word in after and "--attention-backend fa" not in after, (out, err)


def _replacing(rule_id: str, word: str) -> FixStep:
    from h3doctor.unresolved import marked

    rule = type("R", (), {"id": rule_id})()
    return FixStep(rule, "", (Change(("--attention-backend", marked(word)), ("--attention-backend", "fa")),),
                   False, (), None)


def test_a_fix_step_over_a_deployment_value_is_named_and_held_back():
    """Any fix step whose change replaces or drops a marked word is the deployment's to decide:
    `overwritten` names its rule and the word as the file writes it (lint/fix.correct then holds
    that rule back and searches again). Fails when the marked word is not looked for."""
    from h3doctor.engine.results import CheckResult
    from h3doctor.lint.deployment_values import notes, overwritten

    result = CheckResult(None, None, "fixed", [], [], fix_steps=[_replacing("H3D116", "$BACKEND")])
    given = overwritten(result)
    assert given == {"H3D116": "$BACKEND"}
    assert notes(given) == ["the fix of H3D116 would write over `$BACKEND`, a value the deployment gives, not the "
                            "file; change it where the deployment sets it"]
    plain = CheckResult(None, None, "fixed", [], [], fix_steps=[FixStep(
        type("R", (), {"id": "H3D116"})(), "", (Change(("--attention-backend", "torch_sdpa"), ("--attention-backend", "fa")),),
        False, (), None)])
    assert overwritten(plain) == {}


# --- SARIF: each finding's fix, located; the word's extent ------------------------------------

def _sarif(path, tmp_path, target: str = "4xH200") -> list[dict]:
    from tests.lint.test_lint import _sarif_validator

    _code, out, _err = run("lint", "--no-config", "--target", target, "--format", "sarif", str(path), cwd=tmp_path)
    doc = json.loads(out)
    errors = sorted(_sarif_validator().iter_errors(doc), key=str)
    assert not errors, errors[:3]
    return doc["runs"][0]["results"]


def _applied(text: str, replacement: dict) -> str:
    """The replacement applied to the text, as a SARIF consumer would (1-based, end exclusive)."""
    lines = text.splitlines(keepends=True)
    region = replacement["deletedRegion"]

    def offset(line: int, col: int) -> int:
        return sum(len(x) for x in lines[:line - 1]) + col - 1

    start, end = offset(region["startLine"], region["startColumn"]), offset(region["endLine"], region["endColumn"])
    return text[:start] + replacement["insertedContent"]["text"] + text[end:]


SAGE_SCRIPT = f'#!/bin/sh\nexec sglang serve {RING} \\\n    --attention-backend "sage_attn"   # tuned\n'


def test_sarif_carries_the_launchs_located_fix_and_the_words_extent(tmp_path):
    script = write(tmp_path / "serve.sh", SAGE_SCRIPT)
    result = next(r for r in _sarif(script, tmp_path) if r["ruleId"] == "H3D305")
    region = result["locations"][0]["physicalLocation"]["region"]
    line = SAGE_SCRIPT.splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1:region["endColumn"] - 1] == "--attention-backend"
    [fix] = result["fixes"]
    assert fix["properties"]["applicability"] == "safe" and "--attention-backend fa" in fix["description"]["text"]
    [change] = fix["artifactChanges"]
    [replacement] = change["replacements"]
    # the edited span only (never the whole file), and applying it is what --fix writes
    assert replacement["deletedRegion"]["startLine"] == replacement["deletedRegion"]["endLine"] == 3
    assert _applied(SAGE_SCRIPT, replacement) == SAGE_SCRIPT.replace('"sage_attn"', '"fa"')
    run("lint", "--no-config", "--target", "4xH200", "--fix", str(script), cwd=tmp_path)
    assert script.read_text() == _applied(SAGE_SCRIPT, replacement)


def test_a_quoted_word_extends_over_its_quotes_and_an_unsafe_fix_says_so(tmp_path):
    recipe = write(tmp_path / "r.yaml", 'command: [sglang, serve, MiniMaxAI/MiniMax-H3, '
                                        '"--num-gpus", "4", --ulysses-degree, "2", --ring-degree, "2"]\n')
    results = _sarif(recipe, tmp_path, "1xH100")
    located = [r for r in results if r.get("fixes")]
    assert located and all(r["fixes"][0]["properties"]["applicability"] == "unsafe" for r in located)
    text = recipe.read_text()
    for r in results:
        region = r["locations"][0]["physicalLocation"]["region"]
        if "endColumn" in region:  # a word's extent: the word as written, quotes included
            word = text.splitlines()[region["startLine"] - 1][region["startColumn"] - 1:region["endColumn"] - 1]
            assert word.startswith(('"', "-")) and (word.endswith('"') or not word.startswith('"')), word
    assert any(text.splitlines()[0][r["locations"][0]["physicalLocation"]["region"]["startColumn"] - 1:
                                   r["locations"][0]["physicalLocation"]["region"]["endColumn"] - 1] == '"--num-gpus"'
               for r in results if "endColumn" in r["locations"][0]["physicalLocation"]["region"])


@pytest.mark.parametrize("line, column, word, end", [
    ('exec x --a "sage_attn" y', 12, "sage_attn", 23),  # quotes included
    ("exec x --a 'b c' y", 12, "b c", 17),
    ("exec x --a sage y", 12, "sage", 16),
    ('exec x --a "sa\\"ge" y', 12, 'sa"ge', None),  # an escape: no extent rather than a wrong one
    ("exec x --a other y", 12, "sage", None),
])
def test_word_end(line, column, word, end):
    from h3doctor.lint.extent import word_end

    assert word_end(line, column, word) == end


def test_changed_span_is_the_edit_not_the_file():
    from h3doctor.tokendiff import changed_span

    assert changed_span("a b sage c\nnext\n", "a b fa c\nnext\n") == (4, 8, "fa")
    assert changed_span("same", "same") is None
