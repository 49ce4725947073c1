"""H3D040's fix (the program becomes `sglang serve`) when the program is written inside a `-c`
script (issue 30): it is made in the script's text, so the fix loop converges and the corrected
command passes its own check; where the program cannot be found as written, no fix is offered
and the reason is said (never a loop that ends "not-converged", never a corrected command that
fails its own check)."""

from __future__ import annotations

import pytest

from h3doctor.request import CheckRequest, run
from h3doctor.sglang import launch_forms

M = "MiniMaxAI/MiniMax-H3"
DOCKER = ["docker", "run", "--gpus", "all", "--ipc=host", "lmsysorg/sglang:v0.5.23", "bash", "-lc"]  # as sglang's docs write it
LLM = "exec python3 -m sglang.launch_server"


def check(tokens: list[str]):
    return run(CheckRequest(tokens=tokens, profile="4xH200")).result


def rules(result) -> list[str]:
    return [f.rule.id for f in result.evaluation.findings]


@pytest.mark.parametrize("tokens, fixed", [
    # the cookbook's form: the flags are the script's arguments
    (DOCKER + [f'{LLM} "$@"', "--", "--model", M, "--num-gpus", "4"],
     DOCKER + ['exec sglang serve "$@"', "--", "--model-path", M, "--num-gpus", "4"]),
    # the flags written in the script, after a command of its own
    (DOCKER + [f'cd /workspace && {LLM} --model {M} --num-gpus 4 "$@"', "--", "--port", "30000"],
     DOCKER + [f'cd /workspace && exec sglang serve --model-path {M} --num-gpus 4 "$@"', "--", "--port", "30000"]),
    # a plain shell line, its flags in the script
    (["bash", "-lc", f"{LLM} --model-path {M} --num-gpus 4"],
     ["bash", "-lc", f"exec sglang serve --model-path {M} --num-gpus 4"]),
])
def test_the_program_in_a_script_is_corrected_there_and_the_loop_converges(tokens, fixed):
    result = check(tokens)
    assert rules(result) == ["H3D040"]
    assert result.fix_status == "fixed" and len(result.fix_steps) == 1  # one round, not a loop
    assert result.corrected_argv == fixed
    assert rules(check(result.corrected_argv)) == []  # the corrected command passes its own check


def test_a_program_not_found_as_written_in_the_script_is_not_fixed_and_said(monkeypatch):
    monkeypatch.setattr(launch_forms, "program_span", lambda script, program: None)
    result = check(DOCKER + [f'{LLM} "$@"', "--", "--model-path", M, "--num-gpus", "4"])
    assert rules(result) == ["H3D040"]
    assert result.corrected_argv is None and result.fix_status != "not-converged"
    assert any("inside the `-c` script" in g for g in result.gives_up), result.gives_up


def test_the_programs_words_are_found_where_the_script_writes_them():
    script = 'cd /w && exec "python3" -m sglang.launch_server "$@" 2>&1 | tee log'
    assert launch_forms.program_span(script, ("python3", "-m", "sglang.launch_server")) == (14, 47)
    assert script[14:47] == '"python3" -m sglang.launch_server'
    assert launch_forms.program_span("echo 'unterminated", ("python3",)) is None
