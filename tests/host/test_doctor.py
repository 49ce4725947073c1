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
    assert "FlashAttention" in data["summary"]["text"]  # the doctor's label for flash_attn (doctor.WORDS)
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
    # folded to $COLUMNS where it is set: the summary's words, whatever the width
    assert "h3doctor doctor" in bare.stdout and " ".join(data["summary"]["text"].split()) in " ".join(bare.stdout.split())
    helped = _h3doctor("--help", env=env)
    assert helped.returncode == 0 and "Usage:" in helped.stdout and "doctor" in helped.stdout


# -- the doctor's words (issue 31 item 3): what was found, and whether it matters for H3 here ------

def _machine(shared, unlimited=True, shared_status="ok") -> ProbeResult:
    lines = [Line("sglang_version", "sglang", "0.5.23", "ok", "installed", "test"),
             Line("shares_host_memory", "shared host memory", shared, shared_status, "test", "test"),
             Line("cgroup_memory_unlimited", "cgroup memory.max", unlimited, "unknown" if unlimited is None else "ok",
                  "cannot be opened: sglang counts that as no limit", "/sys/fs/cgroup/memory.max")]
    return ProbeResult(HardwareFacts(platform="cuda"), lines, {}, {"outcome": "ok"})


def _cgroup(data: dict) -> dict:
    return next(c for c in data["checks"] if c["fact"] == "cgroup_memory_unlimited")


def test_no_cgroup_limit_warns_only_on_a_gpu_that_shares_host_memory():
    """Shared memory (a GB10, Apple silicon): '!' warning, named in the summary, exit 0 (sglang warns,
    H3D144, and serves). A discrete GPU or the CPU: it does not apply ('-'), never a '✓ yes'. Not
    known whether it shares: does not apply, and says it is not known. Fails when doctor._matters is
    removed (the probe's 'ok' stands)."""
    shared = report(_machine(True))
    assert _cgroup(shared)["status"] == "warning" and "H3D144" in _cgroup(shared)["why"]
    assert (shared["summary"]["status"], shared["summary"]["exit_code"]) == ("warning", 0)
    assert "sglang will warn about: cgroup memory limit" in shared["summary"]["text"]
    discrete = report(_machine(False))
    assert _cgroup(discrete)["status"] == "n/a" and "which this one does not" in _cgroup(discrete)["why"]
    assert discrete["summary"]["status"] == "ok"
    unknown = report(_machine(None, shared_status="unknown"))
    assert _cgroup(unknown)["status"] == "n/a" and "not known" in _cgroup(unknown)["why"]
    limited = report(_machine(True, unlimited=False))
    assert _cgroup(limited)["status"] == "ok" and _cgroup(limited)["says"] == "set"
    unread = report(_machine(True, unlimited=None))
    assert _cgroup(unread)["status"] == "unknown" and _cgroup(unread)["says"] == "unknown"


def test_a_fact_says_what_was_found_never_a_question_answered_yes_or_a_dash():
    """The cgroup fact is 'cgroup memory limit: none', not 'cgroup memory.max: yes'; a fact that does
    not apply says 'none' (was '—', which made two dashes with the separator); a value the reason
    repeats is said once. Fails when WORDS, said() or the de-duplication is removed."""
    data = report(_machine(True))
    assert (_cgroup(data)["label"], _cgroup(data)["says"]) == ("cgroup memory limit", "none")
    lines = [Line("sglang_version", "sglang", "0.5.23", "ok", "installed", "t"),
             Line("device_name", "device", None, "n/a", "the CPU platform has no GPU", "t"),
             Line("hf_token", "Hub token", False, "ok", "none: public repos only", "t"),
             Line("ffmpeg_encoders", "ffmpeg encoders", True, "ok", "lists libx264 and aac", "t"),
             Line("gpu_count", "GPUs", 1, "ok", "1 visible", "t")]
    checks = {c["fact"]: c for c in report(ProbeResult(HardwareFacts(platform="cpu"), lines, {}, {}))["checks"]}
    assert (checks["device_name"]["says"], checks["device_name"]["why"]) == ("none", "the CPU platform has no GPU")
    assert (checks["hf_token"]["says"], checks["hf_token"]["why"]) == ("none", "public repos only")
    assert checks["ffmpeg_encoders"]["says"] == "libx264 and aac"
    assert checks["gpu_count"]["says"] == "1"  # a count of 1 is no bool's word
    assert all(c["says"] not in ("", "—") for c in checks.values())


def test_a_fact_the_doctor_has_no_words_for_reads_as_the_probe_gives_it():
    """A fact host/ adds later (a kernel, a driver) needs no entry in doctor.WORDS: its label, its
    value in the generic words, its status and reason as the probe gives them."""
    lines = [Line("sglang_version", "sglang", "0.5.23", "ok", "installed", "t"),
             Line("kernel_release", "kernel", "6.8.0-60-generic", "ok", "uname -r", "os.uname"),
             Line("pinned_gib", "pinned memory", 12.5, "unknown", "ulimit -l unread", "t"),
             Line("iommu", "IOMMU passthrough", False, "ok", "off", "t")]
    checks = {c["fact"]: c for c in report(ProbeResult(HardwareFacts(platform="cuda"), lines, {}, {}))["checks"]}
    assert [(c["label"], c["says"], c["status"]) for c in checks.values()][1:] == [
        ("kernel", "6.8.0-60-generic", "ok"), ("pinned memory", "12.5 GiB", "unknown"), ("IOMMU passthrough", "no", "ok")]


def test_doctor_help_names_every_glyph_the_report_prints():
    """`h3doctor doctor --help`'s legend names each glyph of doctor_text.GLYPHS with what it means
    (was '! cannot verify' only; '?' is cannot verify, '!' a warning)."""
    from h3doctor.output.doctor_text import GLYPHS
    from h3doctor.output.markup import plain

    proc = subprocess.run([sys.executable, "-m", "h3doctor", "doctor", "--help"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "COLUMNS": "200"})
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0
    for status, meaning in {"ok": "fine", "problem": "stops H3", "warning": "sglang will warn",
                            "unknown": "cannot verify", "n/a": "does not apply"}.items():
        assert f"{plain(GLYPHS[status])} {meaning}" in text, (status, text)


def test_free_disk_below_one_variants_download_is_cannot_verify_never_a_tick():
    """41 GiB free under the HF cache and a variant that downloads ~134 GiB: the doctor cannot say
    the disk is fine (only a check of a launch reads whether the cache already holds it): '?', and
    the summary says a fact cannot be verified, not "nothing stops MiniMax-H3". Enough disk, or no
    download figure, leaves the probe's ✓. Fails when doctor._disk_matters is removed."""
    def machine(free_gib):
        result = _machine(False)
        result.lines.append(Line("disk_free_gib", "free disk (HF cache)", free_gib, "ok", "free under the cache", "statvfs"))
        return result

    def disk(data):
        return next(c for c in data["checks"] if c["fact"] == "disk_free_gib")

    short = report(machine(41.0), download_gib=134.1)
    assert disk(short)["status"] == "unknown" and "134.1 GiB" in disk(short)["why"]
    assert short["summary"]["status"] == "unknown" and "free disk (HF cache)" in short["summary"]["text"]
    assert disk(report(machine(500.0), download_gib=134.1))["status"] == "ok"
    assert disk(report(machine(41.0)))["status"] == "ok"
