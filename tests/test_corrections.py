"""Corrections and words that keep to what sglang (and a shell) would do: a program that cannot
start, what is quoted as sglang's own text, what the nearest launch keeps of the user's."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
