"""`check --exec` / `--apply-fixes` on a line whose `-c` script holds sglang's flags (issue 30
item 2): the corrected words run exactly, the script one word (a real bash runs the plain line's
script, so the stand-in sglang records what the shell made of the corrected text), and a script
that runs more than sglang is still refused without --allow-unsafe-exec (H3D960)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from launch_helpers import StubSglang

M = "MiniMaxAI/MiniMax-H3"
IMAGE = "lmsysorg/sglang:v0.5.23"


@pytest.fixture
def stub(tmp_path):
    stub = StubSglang(tmp_path / "stub")
    shutil.copy(stub.bin / "sglang", stub.bin / "docker")  # the container runtime exec starts
    return stub


def h3doctor(stub: StubSglang, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", "4xH200", *args],
                          capture_output=True, text=True, env=stub.env(), timeout=120, stdin=subprocess.DEVNULL)


def test_apply_fixes_runs_the_container_line_with_the_fix_inside_the_script(stub):
    line = ["docker", "run", "--gpus", "all", IMAGE, "bash", "-lc",
            f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree 2", "--"]
    proc = h3doctor(stub, "--exec", "--apply-fixes", "--", *line)
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    fixed = f"exec sglang serve --model-path {M} --num-gpus 4 --ring-degree 2 --ulysses-degree 2"
    # docker's argv: the script is one word; the container's own fix too (4 ranks in docker's 64 MiB
    # /dev/shm: H3D415), made in docker's words before the image
    assert call["argv"] == ["run", "--shm-size", "16g", *line[2:-2], fixed, "--"]


def test_apply_fixes_on_a_plain_bash_line_gives_sglang_the_corrected_words(stub):
    line = ["bash", "-c", f"exec sglang serve --model-path '{M}' --num-gpu 4 \"$@\"", "--", "--served-model-name", "h3 'x'"]
    proc = h3doctor(stub, "--exec", "--apply-fixes", "--fail-on", "warning", "--", *line)  # H3D021 is a warning
    assert proc.returncode == 0, proc.stderr
    assert f"h3doctor: exec starts {shutil.which('bash', path=stub.env()['PATH'])}" in proc.stderr.splitlines()
    [call] = stub.calls()  # bash read the corrected script: sglang got the checked words
    assert call["argv"] == ["serve", "--model-path", M, "--num-gpus", "4", "--served-model-name", "h3 'x'"]


def test_a_script_that_runs_more_than_sglang_is_judged_and_refused_unless_allowed(stub):
    line = ["docker", "run", "--gpus", "all", "--ipc=host", IMAGE, "bash", "-lc",
            f"pip install x && exec sglang serve --model-path {M} --num-gpus 4"]
    proc = h3doctor(stub, "--exec", "--", *line)
    assert proc.returncode == 1 and stub.calls() == [] and "H3D960" in proc.stderr
    proc = h3doctor(stub, "--exec", "--allow-unsafe-exec", "--", *line)
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [line[1:]]


def test_no_corrected_command_is_run_when_the_fix_is_to_a_positional_parameter(stub):
    line = ["docker", "run", "--gpus", "all", IMAGE, "bash", "-lc",
            f'exec sglang serve --model-path {M} --num-gpus 4 "$1" 2', "--", "--ring-degre"]
    proc = h3doctor(stub, "--exec", "--apply-fixes", "--fail-on", "warning", "--", *line)
    assert proc.returncode == 1 and stub.calls() == [], proc.stderr
    assert 'positional parameter "$1"' in proc.stderr
