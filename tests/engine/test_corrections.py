"""Corrections and words that keep to what sglang (and a shell) would do: a program that cannot
start, what is quoted as sglang's own text, what the nearest launch keeps of the user's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from h3doctor.engine.ruleset import load_rules
from h3doctor.output.json_report import STAGE_TITLES, stage_title
from launch_helpers import StubSglang

LAUNCH = ["serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def exec_check(stub: StubSglang, program: str, *, path: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    env = stub.env()
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "h3doctor", "check", "--exec", "--profile", "4xH200", "--", program, *LAUNCH],
                          capture_output=True, text=True, env=env, timeout=60, cwd=cwd)


@pytest.fixture
def stub(tmp_path):
    return StubSglang(tmp_path / "stub")


def test_a_file_without_the_execute_bit_is_126_permission_denied(stub, tmp_path):
    program = tmp_path / "sglang"
    program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    program.chmod(0o644)
    proc = exec_check(stub, "./sglang", cwd=tmp_path)
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (126, "h3doctor: ./sglang: Permission denied")
    assert stub.calls() == []


def test_a_directory_is_126_is_a_directory(stub, tmp_path):
    (tmp_path / "sglang").mkdir()
    proc = exec_check(stub, str(tmp_path / "sglang"))
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (126, f"h3doctor: {tmp_path / 'sglang'}: Is a directory")


def test_a_path_to_nothing_is_127_no_such_file(stub, tmp_path):
    proc = exec_check(stub, "./sglang", cwd=tmp_path)
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (127, "h3doctor: ./sglang: No such file or directory")


def test_on_path_without_the_execute_bit_is_126_naming_the_file(stub, tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sglang").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (folder / "sglang").chmod(0o644)
    proc = exec_check(stub, "sglang", path=str(folder))
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (126, f"h3doctor: {folder / 'sglang'}: Permission denied")


def test_an_executable_later_on_path_wins_over_one_that_cannot_run(stub, tmp_path):
    folder = tmp_path / "bin"
    (folder / "sglang").mkdir(parents=True)  # a directory first on PATH is passed over, as bash does
    proc = exec_check(stub, "sglang", path=f"{folder}:{stub.bin}")
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [LAUNCH]


def test_a_directory_on_path_alone_is_command_not_found(stub, tmp_path):
    folder = tmp_path / "bin"
    (folder / "sglang").mkdir(parents=True)
    proc = exec_check(stub, "sglang", path=str(folder))
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (127, "h3doctor: sglang: command not found")


def check_json(*argv: str, version: str | None = None) -> dict:
    release = ["--sglang-version", version] if version else []
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--format", "json", "--profile", "4xH200", *release,
                           "--", *argv], capture_output=True, text=True, timeout=60)
    return json.loads(proc.stdout)


def check_text(*argv: str, profile: str = "4xH200", version: str | None = None, verbose: bool = False) -> list[str]:
    release = ["--sglang-version", version] if version else []
    release += ["--verbose"] if verbose else []
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", profile, *release, "--", *argv],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"})
    return [line.strip() for line in proc.stdout.splitlines()]


def test_h3doctors_own_sentence_is_not_quoted_as_sglang():
    [finding] = check_json("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", version="0.5.16")["findings"]
    assert (finding["rule"], finding["message_by"]) == ("H3D003", "h3doctor")
    sglangs = check_json("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--attention-backend", "nope")
    assert {f["message_by"] for f in sglangs["findings"]} == {"sglang"}


def test_only_sglangs_text_follows_sglang_says():
    rules = load_rules()
    says = {r.id: r.says for r in rules}
    assert says["H3D003"] == "h3doctor says" and says["H3D010"] == "sglang says"


def test_a_cannot_verify_finding_does_not_say_sglang_said_it(tmp_path):
    # the FlashAttention kernel not known (H3D611, sglang's ImportError): a cannot-verify in sglang's words
    from h3doctor.paths import package_dir

    profile = json.loads(package_dir("h3doctor.host.builtin_profiles").joinpath("4xH200.json").read_text(encoding="utf-8"))
    (tmp_path / "p.json").write_text(json.dumps({**profile, "fa_kernel": None}), encoding="utf-8")
    lines = check_text("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", profile=str(tmp_path / "p.json"),
                       verbose=True)
    said = [line for line in lines if "says: ImportError" in line]
    assert said and all(line.startswith("if it fails, sglang says: ") for line in said), lines
    plain = check_text("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--attention-backend", "nope")
    assert any(line.startswith("sglang says: ") for line in plain), plain


def test_a_warning_only_stage_is_not_headed_as_a_rejection():
    assert stage_title("launch", ["warning"]) != STAGE_TITLES["launch"]
    assert stage_title("launch", ["warning", "error"]) == STAGE_TITLES["launch"]
    lines = check_text("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpu", "4", verbose=True)
    assert "sglang's launcher accepts it, with warnings:" in lines
    assert STAGE_TITLES["launch"] + ":" not in lines


def test_an_abbreviation_spelled_out_is_not_a_different_flag():
    [finding] = check_json("sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpu", "4")["findings"]
    [change] = finding["changes"]
    assert finding["rule"] == "H3D021" and "a different flag" not in change
    assert "argparse already resolves --num-gpu to" in change


def test_generate_with_a_positional_model_keeps_the_model_and_the_subcommand():
    """sglang generate takes the model only as --model-path (only serve reads a first word): the
    fix moves the user's word behind it instead of dropping it."""
    report = check_json("sglang", "generate", "FastVideo/FastVideo-FastH3-8-Step-V2", "--prompt", "a cat")
    assert [f["rule"] for f in report["findings"]][:2] == ["H3D001", "H3D020"]
    assert report["nearest_argv"][:4] == ["sglang", "generate", "--model-path", "FastVideo/FastVideo-FastH3-8-Step-V2"]
    assert not any("MiniMaxAI/MiniMax-H3" in text for text in report["gives_up"] + [f["fix_note"] or "" for f in report["findings"]])


SINGULARITY = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--model-variant", "hybrid", "--component-weights-paths.transformer",
               "w.safetensors", "--num-gpus", "2", "--ulysses-degree", "2", "--performance-mode", "speed"]


def test_a_later_releases_dotted_component_flag_is_refused_at_parse():
    """0.5.18's component maps are --component-paths.* and --component-attention-backends.* only."""
    report = check_json(*SINGULARITY, version="0.5.18")
    h3d012 = next(f for f in report["findings"] if f["rule"] == "H3D012")
    assert h3d012["message"] == "error: unrecognized arguments: --component-weights-paths.transformer w.safetensors"
    assert "added in sglang 0.5.19" in h3d012["why"]
    assert "--component-weights-paths.transformer" not in (report["nearest_argv"] or report["corrected_argv"])


def test_a_dotted_component_flag_of_the_target_release_is_parsed():
    report = check_json(*SINGULARITY, version="0.5.23")
    assert not {"H3D012", "H3D020"} & {f["rule"] for f in report["findings"]}
    own = check_json(*SINGULARITY[:3], "--num-gpus", "4", "--component-paths.vae", "v", version="0.5.18")
    assert not {"H3D012", "H3D020"} & {f["rule"] for f in own["findings"]}
