"""`h3doctor doctor` (and bare `h3doctor`): the machine as flutter doctor shows it — sglang's
release first, one line per probed fact, a summary, exit 1 only for a fact that stops H3 from
serving here. Through data (the report dict, JSON, exit codes), never Rich's rendering."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from h3doctor.host.doctor import report
from h3doctor.host.probe_facts import Line, ProbeResult

from h3doctor.facts import HardwareFacts


def _result(*statuses: tuple[str, str], run: dict | None = None) -> ProbeResult:
    lines = [Line(fact, fact, None if status == "unknown" else "x", status, f"{fact} is {status}", "test")
             for fact, status in statuses]
    return ProbeResult(HardwareFacts(platform="cuda"), lines, {}, run if run is not None else {"outcome": "ok"})


def test_the_installed_sglang_is_the_first_line_and_the_probe_order_is_kept():
    data = report(_result(("platform", "ok"), ("shm_gib", "ok"), ("sglang_version", "ok"), ("disk_free_gib", "ok")))
    assert [c["fact"] for c in data["checks"]] == ["sglang_version", "platform", "shm_gib", "disk_free_gib"]
    assert data["sglang"]["installed"] == "x"


def test_a_problem_fact_fails_the_machine_and_is_named():
    data = report(_result(("sglang_version", "ok"), ("shm_gib", "problem"), ("flash_attn", "unknown")))
    assert data["summary"]["status"] == "problem" and data["summary"]["exit_code"] == 1
    assert "shm_gib" in data["summary"]["text"]


def test_an_unreadable_fact_is_cannot_verify_never_fine():
    data = report(_result(("sglang_version", "ok"), ("flash_attn", "unknown"), ("platform", "n/a")))
    assert data["summary"]["status"] == "unknown" and data["summary"]["exit_code"] == 0
    assert "flash_attn" in data["summary"]["text"]
    assert report(_result(("sglang_version", "ok"), ("platform", "n/a")))["summary"]["status"] == "ok"


def test_a_probe_child_that_hung_is_a_line_of_its_own():
    data = report(_result(("sglang_version", "ok"), ("platform", "ok"),
                          run={"outcome": "timeout", "detail": "the torch probe took longer than 30 s"}))
    line = next(c for c in data["checks"] if c["fact"] == "probe")
    assert line["status"] == "unknown" and "30 s" in line["reason"]
    assert data["summary"]["status"] == "unknown"


def _h3doctor(*args: str, env: dict) -> subprocess.CompletedProcess:
    # torch, if the process imported it, is named on stderr at exit (the probe imports it in its child only)
    code = ("import atexit, sys; atexit.register(lambda: sys.__stderr__.write('TORCH-IN-PROCESS=%s\\n' % "
            "('torch' in sys.modules))); from h3doctor.cli import main; sys.argv = ['h3doctor', *sys.argv[1:]]; main()")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120)


def test_bare_h3doctor_is_the_doctor_and_help_stays_help_on_this_machine(tmp_path):
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    data_run = _h3doctor("doctor", "--format", "json", env=env)
    data = json.loads(data_run.stdout)
    assert data["kind"] == "h3doctor-doctor" and data_run.returncode == data["summary"]["exit_code"]
    assert {"sglang_version", "platform", "gpu_count", "host_memory_gib", "shm_gib", "disk_free_gib",
            "ffmpeg_encoders", "flash_attn", "cgroup_memory_unlimited"} <= {c["fact"] for c in data["checks"]}
    assert "TORCH-IN-PROCESS=False" in data_run.stderr
    bare = _h3doctor(env=env)
    assert bare.returncode == data["summary"]["exit_code"]  # not 2 (help): the doctor ran
    assert "h3doctor doctor" in bare.stdout and data["summary"]["text"] in bare.stdout.replace("\n", " ")
    helped = _h3doctor("--help", env=env)
    assert helped.returncode == 0 and "Usage:" in helped.stdout and "doctor" in helped.stdout
