"""Launch forms: what people put in front of sglang is read, kept verbatim in the corrected command,
and never guessed at."""

from __future__ import annotations

import shlex

import pytest

from h3doctor.sglang.argv import parse_command
from h3doctor.sglang.launch_forms import read_launch_form

# Fails on 4xH200 (ring needs fa; 4 GPUs need ulysses 2): the corrected flags are FIXED_FLAGS.
FLAGS = "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ring-degree 2 --attention-backend sage_attn"
FIXED_FLAGS = "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ring-degree 2 --attention-backend fa --ulysses-degree 2"

# (wrapper, program): the wrapper is kept verbatim, and so is the program when it can serve H3.
KEPT = [
    ("", "sglang serve"),
    ("SGLANG_CACHE_DIT_ENABLED=false CUDA_VISIBLE_DEVICES=0,1,2,3", "sglang serve"),
    ("env", "sglang serve"),
    ("env -i HOME=/home/u PATH=/usr/bin", "sglang serve"),
    ("env -u SGLANG_CACHE_DIR SGLANG_CACHE_DIT_ENABLED=false", "sglang serve"),
    ("exec", "sglang serve"),
    ("nohup", "sglang serve"),
    ("setsid -f", "sglang serve"),
    ("time", "sglang serve"),
    ("time -p", "sglang serve"),
    ("uv run", "sglang serve"),
    ("uv run --with 'sglang[diffusion]==0.5.23' --with-editable ./kernels", "sglang serve"),
    ("uv run --frozen --python=3.11 --", "sglang serve"),
    ("pipx run", "sglang serve"),
    ("pipx run --spec 'sglang[diffusion]==0.5.23'", "sglang serve"),
    ("A=1 env B=2 nohup setsid uv run --with x", "sglang serve"),
    ("", ".venv/bin/sglang serve"),
    ("", "/opt/sglang/bin/sglang serve"),
]


@pytest.mark.parametrize("wrapper,program", KEPT, ids=[f"{w} {p}".strip() for w, p in KEPT])
def test_form_is_checked_and_corrected_with_its_prefix_kept(run_check, wrapper, program):
    command = f"{wrapper} {program} {FLAGS}".strip()
    result = run_check(command)
    ids = sorted(f.rule.id for f in result.evaluation.findings)
    # the same findings as the plain `sglang serve` launch (and a PATH it sets is named: H3D963)
    assert ids == ["H3D228", "H3D305"] + (["H3D963"] if "PATH=" in wrapper else []), ids
    prefix = shlex.split(f"{wrapper} {program}")
    assert result.corrected_argv[: len(prefix)] == prefix
    assert result.corrected_argv[len(prefix):] == shlex.split(FIXED_FLAGS)
    assert _errors(run_check(shlex.join(result.corrected_argv))) == []


@pytest.mark.parametrize("program", [
    "python3 -m sglang.multimodal_gen.runtime.launch_server",
    "python -m sglang.multimodal_gen.runtime.entrypoints.cli.main serve",
    "python -m sglang.multimodal_gen.runtime.entrypoints.cli.main generate",
    "sglang generate",
])
def test_model_path_forms_keep_the_program(run_check, program):
    command = f"nohup {program} --model-path {FLAGS}"
    result = run_check(command)
    # a pure command-line `generate` has no request task (only --config can give one: H3D807,
    # docs/generate.md), so h3doctor gives up there and offers its nearest command
    unfixable = ["H3D807"] if program.endswith("generate") else []
    assert sorted(f.rule.id for f in result.evaluation.findings) == ["H3D228", "H3D305", *unfixable]
    proposal = result.nearest_argv if unfixable else result.corrected_argv
    prefix = shlex.split(f"nohup {program}")
    assert proposal[: len(prefix)] == prefix
    assert _errors(run_check(shlex.join(proposal))) == unfixable


@pytest.mark.parametrize("program", [
    "python3 -m sglang.multimodal_gen.runtime.launch_server",
    "python3.11 -m sglang.multimodal_gen.runtime.entrypoints.cli.main serve",
    "nohup python -u -m sglang.multimodal_gen.runtime.entrypoints.cli.main serve",
])
def test_positional_model_is_unrecognized_and_moved_behind_model_path(run_check, program):
    """Only the `sglang` console script's dispatcher (sglang/cli/serve.py) reads a positional model:
    these parsers leave it to `from_cli_args`, which exits `error: unrecognized arguments: MODEL`
    (server_args.py:3709, 0.5.17-0.5.23). The correction keeps the word, behind --model-path, in
    its place (dropping it leaves sglang failing `model_path is required in kwargs`)."""
    result = run_check(f"{program} MiniMaxAI/MiniMax-H3 --port 30000 --num-gpus 4")
    findings = result.evaluation.findings
    # argparse's leftover first; with the word gone, from_cli_args would raise for the missing model (H3D005)
    assert [f.rule.id for f in findings] == ["H3D020", "H3D005"]
    assert findings[0].message == "error: unrecognized arguments: MiniMaxAI/MiniMax-H3"
    assert result.corrected_argv == shlex.split(program) + [
        "--model-path", "MiniMaxAI/MiniMax-H3", "--port", "30000", "--num-gpus", "4"]
    assert _errors(run_check(shlex.join(result.corrected_argv))) == []


@pytest.mark.parametrize("version", ["0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"])
@pytest.mark.parametrize("program", ["python -m sglang.multimodal_gen.runtime.launch_server",
                                     "python3 -u -m sglang.multimodal_gen.runtime.entrypoints.cli.main serve"])
def test_a_diffusion_module_without_a_model_fails_as_sglang_does(cli, program, version):
    """No dispatcher reads these modules' words: without --model-path, from_cli_args raises
    `ValueError: model_path is required in kwargs` (PipelineConfig.from_kwargs, 0.5.17-0.5.23; seen
    through sglang 0.5.23's own launch_server). It was a pass ("not a MiniMax-H3 launch: no model path")."""
    code, report, _ = cli("check", "--profile", "4xH200", "--sglang-version", version,
                          "--", *shlex.split(program), "--num-gpus", "4")
    assert code == 1 and [(f["rule"], f["message"]) for f in report["findings"]] == [
        ("H3D005", "model_path is required in kwargs")]
    code, report, _ = cli("check", "--profile", "4xH200", "--sglang-version", version,
                          "--", *shlex.split(program), "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    assert "H3D005" not in [f["rule"] for f in report["findings"]]


@pytest.mark.parametrize("wrapper", ["", "CUDA_VISIBLE_DEVICES=0,1,2,3", "env -i PATH=/usr/bin nohup", "uv run --with x"])
@pytest.mark.parametrize("program", ["python -m sglang.cli.main serve", "python3 -u -m sglang.cli.main serve",
                                     ".venv/bin/python3.11 -msglang.cli.main serve"])
def test_cli_main_module_is_corrected_to_sglang_serve(run_check, wrapper, program):  # H3D041
    command = f"{wrapper} {program} {FLAGS}".strip()
    result = run_check(command)
    assert "H3D041" in [f.rule.id for f in result.evaluation.findings]
    expected = shlex.split(wrapper) + ["sglang", "serve"] + shlex.split(FIXED_FLAGS)
    assert result.corrected_argv == expected
    assert _errors(run_check(shlex.join(result.corrected_argv))) == []


@pytest.mark.parametrize("wrapper", ["", "SGLANG_CACHE_DIT_ENABLED=false", "nohup uv run --with x", "env -i PATH=/usr/bin"])
@pytest.mark.parametrize("program,model", [
    ("python -m sglang.launch_server", ["--model", "MiniMaxAI/MiniMax-H3"]),
    ("python3 -u -m sglang.launch_server", ["--model=MiniMaxAI/MiniMax-H3"]),
    (".venv/bin/python3.11 -m sglang.launch_server", ["--model-path", "MiniMaxAI/MiniMax-H3"]),
])
def test_llm_launcher_is_corrected_to_sglang_serve(run_check, wrapper, program, model):  # H3D040
    rest = shlex.split(FLAGS)[1:]  # the flags after the model
    result = run_check(shlex.join(shlex.split(f"{wrapper} {program}") + model + rest))
    finding = next(f for f in result.evaluation.findings if f.rule.id == "H3D040")
    assert finding.message.startswith("'python -m sglang.launch_server' is still supported, but 'sglang serve'")
    spelled = [m.replace("--model=", "--model-path=") if m.startswith("--model=") else
               "--model-path" if m == "--model" else m for m in model]
    fixed_rest = shlex.split(FIXED_FLAGS)[1:]
    assert result.corrected_argv == shlex.split(wrapper) + ["sglang", "serve"] + spelled + fixed_rest
    assert _errors(run_check(shlex.join(result.corrected_argv))) == []


def test_llm_launcher_with_a_non_h3_model_is_not_judged(run_check):
    result = run_check("python -m sglang.launch_server --model Qwen/Qwen3-8B --tp-size 2")
    assert result.evaluation.family.family is None and result.evaluation.findings == []


def test_environment_words_are_what_the_program_sees(table):
    form = read_launch_form(shlex.split("A=1 env -i B=2 sglang serve M"))
    assert form.env == {"B": "2"} and form.env_cleared  # env -i drops A=1 and the caller's environment
    assert form.environment({"HOME": "/h", "C": "3"}) == {"B": "2"}
    form = read_launch_form(shlex.split("A=1 env -u C B=2 nohup sglang serve M"))
    assert form.environment({"C": "3", "D": "4"}) == {"D": "4", "A": "1", "B": "2"}
    cmd = parse_command(shlex.split("env -i SGLANG_CACHE_DIT_ENABLED=true uv run sglang serve M --num-gpus 2"), table)
    assert cmd.args == ["M", "--num-gpus", "2"] and cmd.wrapper_len == 5 and cmd.prefix_len == 7


ADALN = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --minimax-h3-adaln-online"  # H3D512 fixes it with an env word


@pytest.mark.parametrize("command,expected", [
    # the user's own word is replaced where it stands
    (f"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=0 nohup {ADALN}",
     f"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=64 nohup {ADALN}"),
    (f"env -i PATH=/usr/bin SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=0 {ADALN}",
     f"env -i PATH=/usr/bin SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=64 {ADALN}"),
    # a new word goes after `env` and its options (in front of `env -i` it would be dropped)
    (f"env -u HOME PATH=/usr/bin {ADALN}", f"env -u HOME SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=64 PATH=/usr/bin {ADALN}"),
    (f"nohup uv run {ADALN}", f"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=64 nohup uv run {ADALN}"),
])
def test_env_fix_goes_where_the_program_sees_it(run_check, command, expected):
    result = run_check(command, env={"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS": "0"})
    assert "H3D512" in [f.rule.id for f in result.evaluation.findings]
    assert result.corrected_command == expected


def test_env_i_hides_the_callers_environment_from_the_checks(run_check):
    env = {"SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS": "0"}
    assert "H3D512" in [f.rule.id for f in run_check(f"env PATH=/usr/bin {ADALN}", env=env).evaluation.findings]
    # only the PATH the words give is named (H3D963), not the caller's H3D512
    assert [f.rule.id for f in run_check(f"env -i PATH=/usr/bin {ADALN}", env=env).evaluation.findings] == ["H3D963"]


@pytest.mark.parametrize("command,word", [
    ("torchrun --nproc-per-node 4 sglang serve M", "torchrun"),
    ("sudo sglang serve M", "sudo"),
    ("docker ps sglang serve M", "docker"),
    ("nohup torchrun sglang serve M", "torchrun"),
    ("uv run --unknown-uv-option sglang serve M", "--unknown-uv-option"),
    ("uv sync", "uv"),
    ("python script.py --num-gpus 4", "python"),
    ("python -c pass", "-c"),
    ("python -m vllm.entrypoints.openai.api_server --model M", "vllm.entrypoints.openai.api_server"),
    ("pipx run vllm serve M", "vllm"),
    ("env -S 'sglang serve' M", "-S"),
    ("./launch.sh --num-gpus 4", "./launch.sh"),
    ("nohup --num-gpus 4", "--num-gpus"),
    ("nohup exec sglang serve M", "exec"),  # a shell builtin: nohup cannot run it
])
def test_unknown_prefix_is_a_usage_error_naming_the_word(cli, command, word):
    code, out, err = cli("check", "--profile", "4xH200", "--", *shlex.split(command), json_output=False)
    assert code == 2, (out, err)
    assert word in err and "after `--`" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["sglang version", "sglang", "python -m sglang.cli.main version"])
def test_non_launch_subcommand_is_a_usage_error(cli, command):
    code, _, err = cli("check", "--profile", "4xH200", "--", *shlex.split(command), json_output=False)
    assert code == 2 and "not a launch" in err


def test_bare_flags_and_bare_model_still_read_as_sglang_serve(run_check):
    assert run_check("--model-path MiniMaxAI/MiniMax-H3 --num-gpus 4").evaluation.cmd.launcher == "bare"
    result = run_check("MiniMaxAI/MiniMax-H3 --num-gpus 4")
    assert result.evaluation.family.family is not None and result.fix_status == "clean"


def test_issue_examples_are_read_as_launches(cli):
    # launches through `python -m` / `uv run`, once misread as a model called `python` / `uv`
    code, data, _ = cli("check", "--profile", "4xH200", "--", "python", "-m", "sglang.launch_server", "--model",
                        "MiniMax-H3", "--ring-degree", "2", "--attention-backend", "flashinfer")
    assert code == 1 and data["is_h3_launch"] and data["command"]["launcher"] == "python -m sglang.launch_server"
    assert data["findings"][0]["rule"] == "H3D040"
    assert data["corrected_argv"][:4] == ["sglang", "serve", "--model-path", "MiniMax-H3"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", "uv", "run", "sglang", "serve", "MiniMaxAI/MiniMax-H3",
                        "--num-gpus", "4")
    assert code == 0 and data["is_h3_launch"] and data["corrected_argv"] is None
    code, data, _ = cli("check", "--profile", "4xH200", "--", "python3", "-m", "sglang.cli.main", "serve",
                        "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    assert code == 1 and data["corrected_argv"] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def _errors(result) -> list[str]:
    return [f.rule.id for f in result.evaluation.findings if f.severity == "error"]
