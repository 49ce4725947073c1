"""`check` of a container's `-c` script that holds sglang's flags (issue 30 item 2): judged as the
shell runs it — the script's words, then the arguments its `"$@"` and `$1` give — and corrected
where each word is written; and item 3's diffusion module on check's side."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from h3doctor.errors import UsageError
from h3doctor.inputs.script_line import read
from h3doctor.request import CheckRequest, run

M = "MiniMaxAI/MiniMax-H3"
IMAGE = "lmsysorg/sglang:v0.5.23"
# a container with room for its ranks' /dev/shm (--ipc=host, as sglang's docs write docker run): these
# tests are of the script's flags, so the container's own words pass (H3D415 on a bare line: below)
DOCKER = ["docker", "run", "--gpus", "all", "--ipc=host", IMAGE, "bash", "-lc"]
# the issue's line: sp_degree 4 (every GPU) is not ring 2 x ulysses 1 (H3D228, sglang's own check)
ISSUE = DOCKER + [f'exec sglang serve --model-path {M} "$@"', "--", "--num-gpus", "4", "--ring-degree", "2"]


def check(tokens: list[str]):
    return run(CheckRequest(tokens=tokens, profile="4xH200")).result


def found(result) -> list[tuple[str, str]]:
    return [(f.rule.id, f.severity) for f in result.evaluation.findings]


def sglang_words(tokens: list[str]) -> list[str]:
    line = read(tokens, {})
    return list(line.judged[line.moved_from:])


def test_the_issue_line_is_judged_in_json_and_fixed_in_its_arguments():
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--format", "json", "--profile", "4xH200",
                           "--", *ISSUE], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr  # findings, not a usage error
    report = json.loads(proc.stdout)
    assert report["verdict"] == "fail" and [f["rule"] for f in report["findings"]] == ["H3D228"]
    assert report["findings"][0]["message"] == "sp_degree (4) must equal ring_degree * ulysses_degree (2 * 1 = 2)"
    assert report["command"]["argv"] == ISSUE  # the launch as given
    assert report["corrected_argv"] == ISSUE + ["--ulysses-degree", "2"]  # the script stays one word
    assert [c["added"] for s in report["fix_steps"] for c in s["changes"]] == [["--ulysses-degree", "2"]]


def test_a_script_line_with_the_runtimes_default_shm_is_fixed_on_both_sides_of_the_image():
    bare = ["docker", "run", "--gpus", "all", IMAGE, "bash", "-lc"] + ISSUE[len(DOCKER):]
    result = check(bare)
    assert found(result) == [("H3D228", "error"), ("H3D415", "error")]  # sp, and a 64 MiB /dev/shm for 4 ranks
    assert result.corrected_argv == ["docker", "run", "--shm-size", "16g", *bare[2:], "--ulysses-degree", "2"]
    assert found(check(result.corrected_argv)) == []


def test_the_flags_inside_the_script_and_in_the_arguments_count_in_the_shells_order():
    inside = DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree 2"]
    split = DOCKER + [f'exec sglang serve --model-path {M} --ring-degree 2 "$@"', "--", "--num-gpus", "4"]
    assert found(check(inside)) == found(check(split)) == found(check(ISSUE)) == [("H3D228", "error")]
    # the same flag twice: argparse keeps the last, as the shell hands them over
    assert found(check(DOCKER + [f'exec sglang serve --model-path {M} --num-gpus 8 "$@"', "--",
                                 "--num-gpus", "4"])) == []
    assert found(check(DOCKER + [f'exec sglang serve --model-path {M} --num-gpus 4 "$@"', "--",
                                 "--num-gpus", "8"])) == [("H3D109", "error"), ("H3D910", "error")]


def test_a_fix_inside_the_script_is_made_in_its_text_and_passes_its_own_check():
    tokens = DOCKER + [f"exec sglang serve --model-path {M} --num-gpu 4"]
    result = check(tokens)
    assert found(result) == [("H3D021", "warning")]
    assert result.corrected_argv == DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4"]
    assert sglang_words(result.corrected_argv) == ["--model-path", M, "--num-gpus", "4"]
    assert found(check(result.corrected_argv)) == []


def test_a_fix_of_a_flag_in_the_arguments_is_made_there():
    tokens = DOCKER + [f'exec sglang serve --model-path {M} "$@"', "--", "--num-gpu", "4"]
    assert check(tokens).corrected_argv == tokens[:-2] + ["--num-gpus", "4"]


@pytest.mark.parametrize("tokens,says", [
    (DOCKER + [f'exec sglang serve --model-path {M} "$1" 4', "--", "--num-gpu"], 'positional parameter "$1"'),
    (["docker", "run", "--gpus", "all", "-e", "NG=8", IMAGE, "bash", "-lc",
      f'exec sglang serve --model-path {M} --num-gpus "$NG"'], 'written "$NG"'),
])
def test_a_fix_of_a_word_the_shell_computes_is_not_made_and_said(tokens, says):
    result = check(tokens)
    assert result.fix_steps and result.corrected_argv is None and result.nearest_argv is None
    assert any(g.startswith("no corrected command") and says in g for g in result.gives_up), result.gives_up


def test_a_plain_bash_line_is_read_the_same_way():
    result = check(["bash", "-lc", f'exec sglang serve --model-path {M} "$@"', "--", "--num-gpus", "4",
                    "--ring-degree", "2"])
    assert found(result) == [("H3D228", "error")]
    assert result.corrected_argv[-2:] == ["--ulysses-degree", "2"] and result.corrected_argv[0] == "bash"


def test_a_command_substitution_in_the_script_is_cannot_verify_for_that_word():
    result = check(DOCKER + [f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree $(cat /ring)"])
    h3d228 = next(f for f in result.evaluation.findings if f.rule.id == "H3D228")
    assert h3d228.cannot_verify and h3d228.severity == "warning"


@pytest.mark.parametrize("script", [
    f"exec sglang serve --model-path {M} --num-gpus '4",
    f"exec sglang serve --model-path {M} --num-gpus $(echo 4",
    f"exec sglang serve --model-path {M} " + "--num-gpus 4 " * 90_000,
])
def test_hostile_scripts_are_usage_errors_in_check(script):
    with pytest.raises(UsageError):
        check(DOCKER + [script])


# --- issue 30 item 3: the diffusion server module takes no positional model ------------------

@pytest.mark.parametrize("prefix", [[], DOCKER])
def test_the_diffusion_modules_model_is_corrected_to_model_path(prefix):
    words = ["python3", "-m", "sglang.multimodal_gen.runtime.launch_server", M, "--num-gpus", "4"]
    tokens = prefix + [" ".join(words)] if prefix else words
    result = check(tokens)
    assert "H3D020" in {f.rule.id for f in result.evaluation.findings}  # MODEL: unrecognized arguments
    fixed = ["python3", "-m", "sglang.multimodal_gen.runtime.launch_server", "--model-path", M, "--num-gpus", "4"]
    assert result.corrected_argv == (prefix + [" ".join(fixed)] if prefix else fixed)
    assert found(check(result.corrected_argv)) == []


def test_exec_looks_up_the_shell_a_plain_script_line_starts():
    from h3doctor.sglang.launch_forms import program_lookup

    line = ["bash", "-lc", 'exec sglang serve "$@"', "--", "--model-path", M]
    assert program_lookup(line, {"PATH": "/opt/bin"}) == ("bash", "/opt/bin")  # not the first flag
