"""lint parses a launch once: its pre-checks (another model's launch, H3DL020; a word the shell
computes that decides the launch, H3DL002) read the parse lint's session makes, and the judge's
first evaluation takes that parse rather than parsing the words again (lint/session.py
`launch_words`, sglang/argv.py `parsed_once`).

Counted, not timed, with tests/engine/test_judge.py's counters.
"""

from __future__ import annotations

import pytest

from h3doctor import api
from tests.engine.test_judge import calls  # noqa: F401 - the counting fixture

H3 = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"


def _lint(tmp_path, command: str, targets: list[str]):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"targets: [{', '.join(targets)}]\ncommand: {command}\n", encoding="utf-8")
    return api.lint([str(recipe)], no_config=True)


@pytest.mark.parametrize("targets", [["4xH200"], ["4xH200", "8xH200"]])
def test_a_clean_launch_is_read_and_parsed_once_on_any_number_of_targets(tmp_path, calls, targets):  # noqa: F811
    report = _lint(tmp_path, H3, targets)
    assert report.verdict == "pass"
    assert dict(calls) == {"read_launch_form": 1, "parse_command": 1, "evaluate": len(targets)}


def test_another_models_launch_is_parsed_once_and_not_evaluated(tmp_path, calls):  # noqa: F811
    report = _lint(tmp_path, "sglang serve Qwen/Qwen-Image --num-gpus 4", ["4xH200"])
    assert [f["rule"] for f in report.to_dict()["findings"]] == ["H3DL020"]
    assert dict(calls) == {"read_launch_form": 1, "parse_command": 1}


def test_a_launch_the_shell_decides_is_parsed_once_and_not_evaluated(tmp_path, calls):  # noqa: F811
    script = tmp_path / "serve.sh"
    script.write_text('#!/bin/sh\nsglang serve "$MODEL" --num-gpus 4\n', encoding="utf-8")
    report = api.lint([str(script)], no_config=True, targets=["4xH200"])
    assert [f["rule"] for f in report.to_dict()["findings"]] == ["H3DL002"]
    assert dict(calls) == {"read_launch_form": 1, "parse_command": 1}
