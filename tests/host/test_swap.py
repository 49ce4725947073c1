"""Swap on a shared memory pool (docs/host-facts.md host-12, rule H3D419): the swap sglang's
auto-tuner counts (/proc/meminfo SwapTotal, zeroed by a cgroup whose memory.swap.max reads "0"),
read from a faked tree, stated by profiles on such a device, and judged through the CLI's JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest

from h3doctor.facts import assumed, facts_from_mapping
from h3doctor.host import swap
from h3doctor.host.doctor import report
from h3doctor.host.probe import system_facts
from h3doctor.host.probe_facts import build
from repo_paths import REPO, TESTS
from tests.host.test_host_facts import _tree

MEMINFO = "MemTotal:       131072000 kB\nMemFree:        1000 kB\nSwapTotal:      149946368 kB\nSwapFree:  1 kB\n"


def test_swap_total_is_meminfo_s_swaptotal_as_psutil_reads_it(tmp_path):
    _tree(tmp_path, {"proc/meminfo": MEMINFO})
    assert swap.swap_total(str(tmp_path))[0] == 149946368 * 1024  # 143 GiB, sglang's GB10 figure


@pytest.mark.parametrize("text", ["MemTotal: 1 kB\n", "SwapTotal: lots kB\n", "SwapTotal: 12\n", "SwapTotal: 1 MB\n",
                                  "SwapTotal: " + "9" * 40 + " kB\n", "SwapTotal: 8 kB\n" + " " * 70_000])
def test_a_meminfo_without_a_readable_swaptotal_is_unknown_never_no_swap(tmp_path, text):
    _tree(tmp_path, {"proc/meminfo": text})
    assert swap.swap_total(str(tmp_path))[0] is None


def test_a_missing_or_fifo_meminfo_is_unknown_without_waiting(tmp_path):
    assert swap.swap_total(str(tmp_path))[0] is None
    (tmp_path / "proc").mkdir()
    os.mkfifo(tmp_path / "proc/meminfo")  # nobody writes it: a blocking open would hang the probe
    assert swap.swap_total(str(tmp_path))[0] is None


@pytest.mark.parametrize("content, off", [("0\n", True), ("max\n", False), ("1073741824\n", False), (None, False)])
def test_memory_swap_max_is_read_as_sglang_reads_it(tmp_path, content, off):
    # auto_tune.py: only "0" turns the host's swap off for this process; no file (OSError) leaves it counted
    if content is not None:
        _tree(tmp_path, {"sys/fs/cgroup/memory.swap.max": content})
    assert swap.cgroup_swap_off(str(tmp_path))[0] is off


def test_a_memory_swap_max_directory_is_counted_as_swap_on(tmp_path):
    (tmp_path / "sys/fs/cgroup/memory.swap.max").mkdir(parents=True)  # sglang's open raises: swap stays counted
    assert swap.cgroup_swap_off(str(tmp_path))[0] is False


def test_a_memory_swap_max_that_is_a_fifo_or_a_flood_is_unknown(tmp_path):
    _tree(tmp_path, {"sys/fs/cgroup/memory.swap.max": "0" + " " * 100_000})
    assert swap.cgroup_swap_off(str(tmp_path))[0] is None
    os.remove(tmp_path / "sys/fs/cgroup/memory.swap.max")
    os.mkfifo(tmp_path / "sys/fs/cgroup/memory.swap.max")  # sglang would block on it: unknown, not "swap on"
    assert swap.cgroup_swap_off(str(tmp_path))[0] is None


def test_the_probe_states_both_facts_with_their_sources(tmp_path):
    _tree(tmp_path, {"proc/meminfo": MEMINFO, "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.swap.max": "0\n"})
    host = system_facts({"PATH": str(tmp_path / "none"), "HOME": str(tmp_path)}, str(tmp_path))
    facts = build({}, {"outcome": "ok"}, host, {}).facts
    assert (facts.swap_gib, facts.cgroup_swap_off) == (143.0, True)
    assert facts.sources["swap_gib"] == "/proc/meminfo SwapTotal"
    assert facts.sources["cgroup_swap_off"] == "/sys/fs/cgroup/memory.swap.max"


def _doctor_statuses(shares: bool, swap_total: int | None, off: bool | None) -> dict:
    # the doctor's golden machine (a GB10 that shares host memory), its swap facts replaced
    machine = json.loads((TESTS / "golden" / "doctor-machine.json").read_text(encoding="utf-8"))
    machine["host"].update({"swap_total": swap_total, "cgroup_swap_off": off})
    for device in machine["obs"]["cuda_devices"]:
        device["integrated"] = shares
    data = report(build(machine["obs"], machine["run"], machine["host"], machine["env"]))
    return {c["fact"]: c["status"] for c in data["checks"]}


def test_the_doctor_warns_of_swap_only_on_a_gpu_that_shares_host_memory():
    assert _doctor_statuses(True, 8 << 30, False)["swap_gib"] == "warning"
    assert _doctor_statuses(True, 8 << 30, True)["swap_gib"] == "ok"  # memory.swap.max 0: sglang does not warn
    assert _doctor_statuses(True, 0, False)["swap_gib"] == "ok"
    assert _doctor_statuses(True, None, False)["swap_gib"] == "unknown"
    assert _doctor_statuses(False, 8 << 30, False)["swap_gib"] == "n/a"


def test_a_profile_on_a_shared_pool_says_what_it_assumes_of_swap_and_a_discrete_one_does_not():
    shared = facts_from_mapping({"platform": "cuda", "shares_host_memory": True, "swap_gib": 16}, "t.yaml")
    said = assumed(shared)
    assert said["swap_gib"] == 16 and said["cgroup_swap_off"] is None and said["cgroup_memory_unlimited"] is None
    assert "swap_gib" not in assumed(facts_from_mapping({"platform": "cuda"}, "t.yaml"))


def _check(tmp_path, profile: dict, *argv: str) -> subprocess.CompletedProcess:
    path = tmp_path / "gb10.json"
    path.write_text(json.dumps(profile))
    return subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", str(path), "--format", "json", "--",
                           "sglang", "serve", "MiniMaxAI/MiniMax-H3", *argv], capture_output=True, text=True)


GB10 = {"platform": "cuda", "device_name": "NVIDIA GB10", "compute_capability": "12.1", "gpu_count": 1,
        "gpu_memory_gib": 119.7, "host_memory_gib": 119.7, "shares_host_memory": True, "cgroup_memory_unlimited": False}


def test_sglangs_swap_warning_through_the_cli_in_its_words_and_what_the_report_assumed(tmp_path):
    p = _check(tmp_path, {**GB10, "swap_gib": 143.4, "cgroup_swap_off": False}, "--dit-layerwise-offload")
    report_ = json.loads(p.stdout)
    found = [f for f in report_["findings"] if f["rule"] == "H3D419"]
    assert len(found) == 1 and found[0]["severity"] == "warning"
    assert found[0]["message"].startswith("Host and device share one memory pool and swap is enabled (143 GiB): ")
    assert report_["assumed"]["swap_gib"] == 143.4 and report_["assumed"]["cgroup_swap_off"] is False
    schema = json.loads((REPO / "h3doctor" / "schema" / "report.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(report_, schema)  # the report states what it assumed in its own schema
    quiet = json.loads(_check(tmp_path, {**GB10, "swap_gib": 143.4, "cgroup_swap_off": True}).stdout)
    assert "H3D419" not in [f["rule"] for f in quiet["findings"]]


def test_a_profile_s_swap_that_is_no_size_is_a_usage_error(tmp_path):
    p = _check(tmp_path, {**GB10, "swap_gib": "lots"})
    assert p.returncode == 2 and "swap_gib" in p.stderr and "Traceback" not in p.stderr


def test_real_swap_facts_on_this_machine():
    # this machine's own /proc/meminfo and cgroup (CI's too): read, or said why not
    total, _source, reason = swap.swap_total()
    off, _source, off_reason = swap.cgroup_swap_off()
    assert (total is None or total >= 0) and reason and off in (True, False, None) and off_reason

