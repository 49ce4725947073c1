"""Kernels, driver and ffprobe (issue 29): the driver's CUDA from faked /proc files and NVML, the
kernel wheels' sm_* targets from synthetic ELF files with a `.nv_fatbin` section built here, the
torch each wheel was built for from a fake site-packages, ffprobe's version from a stub script,
and the probe's lines and facts from them. Hostile inputs (huge, truncated, FIFO, symlink loop,
a header that would never advance) give "unknown" with a reason, never an exception or a hang."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from h3doctor import cuda_compat
from h3doctor.host import cuda_driver, cuda_stack, fatbin, ffmpeg, kernel_wheels
from h3doctor.host.probe_facts import build

PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
               "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
OPEN_MODULE = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  "
               "(dvs-builder@U16-I3-B03-4-3)  Thu Jan 23 22:50:36 UTC 2025\n")


# -- synthetic ELF files with a .nv_fatbin section ---------------------------------------------

def entry(kind: int, arch: int, payload: bytes = b"\0" * 24, header_size: int = 64) -> bytes:
    head = struct.pack("<HHIQIIHHI", kind, 0x101, header_size, len(payload), 0, 0, 0, 0, arch)
    return head + b"\0" * (header_size - len(head)) + payload


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, len(body)) + body


def elf(fatbin_bytes: bytes | None, *, section_size: int | None = None) -> bytes:
    """A minimal ELF64 LE file: a null section, `.nv_fatbin` (when given) and `.shstrtab`."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data = fatbin_bytes or b""
    data_off = 64
    names_off = data_off + len(data)
    shoff = names_off + len(names)
    shoff += -shoff % 8
    sections = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    if fatbin_bytes is not None:
        sections.append(struct.pack("<IIQQQQIIQQ", 1, 1, 0, 0, data_off,
                                    len(data) if section_size is None else section_size, 0, 0, 8, 0))
    sections.append(struct.pack("<IIQQQQIIQQ", 12, 3, 0, 0, names_off, len(names), 0, 0, 1, 0))
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = struct.pack("<16sHHIQQQIHHHHHH", ident, 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64,
                         len(sections), len(sections) - 1)
    body = header + data + names
    return body + b"\0" * (shoff - len(body)) + b"".join(sections)


def write(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


# -- the driver's CUDA -------------------------------------------------------------------------

@pytest.mark.parametrize("text, driver, cuda", [
    (PROPRIETARY, "535.104.05", "12.2"),
    (OPEN_MODULE, "570.86.15", "12.8"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  525.60.13  ...\n", "525.60.13", "12.0"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.239.06  ...\n", "470.239.06", "11.4"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  595.10  ...\n", "595.10", "13.1"),  # below 13.2 GA's 595.45.04
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  610.43.02  ...\n", "610.43.02", "13.2+"),  # past the table
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.157  ...\n", "390.157", None),  # older than every row
])
def test_the_proc_file_gives_the_driver_and_its_cuda_by_nvidias_table(tmp_path, text, driver, cuda):
    write(tmp_path / cuda_driver.PROC_VERSION, text.encode())
    got_driver, got_cuda, why = cuda_driver.from_proc(str(tmp_path))
    assert (got_driver, got_cuda) == (driver, cuda), why


@pytest.mark.parametrize("make", ["missing", "fifo", "loop", "garbage", "huge"])
def test_an_unreadable_proc_file_is_unknown(tmp_path, make):
    path = tmp_path / cuda_driver.PROC_VERSION
    path.parent.mkdir(parents=True)
    if make == "fifo":
        os.mkfifo(path)  # nobody writes: a reader that waited would hang
    elif make == "loop":
        os.symlink(path, path)
    elif make == "garbage":
        path.write_bytes(b"\xff\xfe NVRM version: no numbers here\n")
    elif make == "huge":
        with open(path, "wb") as fh:  # sparse: 8 GiB of nothing, read only as far as the cap
            fh.truncate(8 << 30)
    assert cuda_driver.from_proc(str(tmp_path))[:2] == (None, None)


@pytest.mark.parametrize("value, expect", [(12040, "12.4"), (13000, "13.0"), (12080, "12.8"), (0, None),
                                           (None, None), ("12040", None), (True, None), (10 ** 9, None)])
def test_nvmls_int_is_read_as_torch_prints_it(value, expect):
    assert cuda_driver.cuda_of_nvml(value) == expect


@pytest.mark.parametrize("driver, torch, older", [
    ("12.4", "13.0", True),    # sglang#11395: CUDA 13 wheels on a 12.4 driver
    ("11.8", "12.1", True),
    ("12.4", "12.8", False),   # minor version compatibility: runs (PTX JIT aside), never blocked
    ("12.0", "12.9", False),
    ("13.0", "12.8", False),   # a newer driver runs an older runtime
    ("13.0+", "13.2", False),
    ("13.0+", "14.0", None),   # "at least 13.0" says nothing of a CUDA 14 driver
    (None, "13.0", None), ("12.4", None, None), ("twelve", "13.0", None),
])
def test_a_driver_is_too_old_only_below_torchs_cuda_major(driver, torch, older):
    assert cuda_compat.driver_older(driver, torch) is older


@pytest.mark.parametrize("targets, cc, fits", [
    (("sm_90",), 90, True), (("sm_90",), 100, False), (("sm_80", "sm_90"), 120, False),
    (("sm_90", "compute_90"), 100, True),   # PTX of a lower arch JIT-compiles: not blocked
    (("compute_100",), 90, False),          # PTX of a higher arch does not
    (("sm_120",), 121, None),               # sm_120 or sm_120a? the headers do not say
    (("sm_80",), 86, None), ((), 90, False),
])
def test_what_runs_on_a_gpu(targets, cc, fits):
    assert cuda_compat.covers(targets, cc) is fits


# -- the fatbin reader ---------------------------------------------------------------------------

def test_targets_are_read_from_the_fatbin_entry_headers(tmp_path):
    lib = write(tmp_path / "common_ops.so", elf(container(entry(2, 90), entry(1, 90)) + container(entry(2, 100))))
    assert fatbin.targets(lib)[0] == ("compute_90", "sm_90", "sm_100")


def test_padding_between_containers_is_skipped(tmp_path):
    data = container(entry(2, 80)) + b"\0" * 24 + container(entry(2, 86))
    assert fatbin.targets(write(tmp_path / "x.so", elf(data)))[0] == ("sm_80", "sm_86")


def test_an_elf_without_a_fatbin_carries_no_gpu_code(tmp_path):
    assert fatbin.targets(write(tmp_path / "x.so", elf(None)))[0] == ()


@pytest.mark.parametrize("name, data", [
    ("not-elf", b"MZ" + b"\0" * 200),
    ("32-bit", b"\x7fELF\x01\x01" + b"\0" * 100),
    ("truncated-header", elf(container(entry(2, 90)))[:40]),
    ("truncated-section", elf(container(entry(2, 90)))[:70]),
    ("section-past-the-end", elf(container(entry(2, 90)), section_size=1 << 40)),
    ("no-magic", elf(b"\x01" * 64)),
    ("entry-too-short", elf(container(entry(2, 90, payload=b"", header_size=0) + b"\0" * 32))),  # would never advance
    ("entry-past-container", elf(struct.pack("<IHHQ", fatbin.MAGIC, 1, 16, 1 << 30) + entry(2, 90))),
])
def test_a_broken_library_is_unknown_with_a_reason(tmp_path, name, data):
    found, why = fatbin.targets(write(tmp_path / f"{name}.so", data))
    assert found is None and why


def test_an_entry_header_that_would_not_advance_is_refused_at_once(tmp_path):
    data = elf(container(entry(2, 90, payload=b"", header_size=0) + b"\0" * 32))
    assert "too short" in fatbin.targets(write(tmp_path / "x.so", data))[1]


def test_a_section_table_past_the_cap_is_refused_before_it_is_read(tmp_path):
    data = bytearray(elf(container(entry(2, 90))))
    struct.pack_into("<HH", data, 60, 65535, 0)  # e_shnum 65,535 (4 MiB of headers), e_shstrndx 0
    assert "sections" in fatbin.targets(write(tmp_path / "x.so", bytes(data)))[1]


def test_a_section_of_zeros_is_walked_within_the_budget(tmp_path):
    """Zero padding is stepped over 8 bytes at a time, counted: a section of nothing but zeros
    stops at the budget instead of reading its way through however long it is."""
    zeros = b"\0" * (8 * (fatbin.MAX_ENTRIES + 100))
    found, why = fatbin.targets(write(tmp_path / "zeros.so", elf(zeros)))
    assert found is None and "padding" in why


def test_a_huge_sparse_library_costs_only_its_headers(tmp_path):
    path = tmp_path / "huge.so"
    write(path, elf(container(entry(2, 90))))
    with open(path, "r+b") as fh:
        fh.truncate(16 << 30)  # 16 GiB: read by offset, never whole
    assert fatbin.targets(str(path))[0] == ("sm_90",)


@pytest.mark.parametrize("make", ["fifo", "loop", "missing", "directory"])
def test_a_library_that_is_no_file_is_unknown_without_waiting(tmp_path, make):
    path = tmp_path / "lib.so"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "loop":
        os.symlink(path, path)
    elif make == "directory":
        path.mkdir()
    found, why = fatbin.targets(str(path))
    assert found is None and why
    if make == "fifo":  # refused for what it is, not for a read that happened to fail
        assert "not a regular file" in why


# -- the kernel wheels in a fake site-packages -----------------------------------------------------

def dist(site: Path, folder: str, metadata: str, direct_url: str | None = None) -> None:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(metadata)
    if direct_url:
        (info / "direct_url.json").write_text(direct_url)


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site-packages"
    dist(site, "sglang-0.5.23.dist-info", "Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n"
         "Requires-Dist: torch==2.14.1\nRequires-Dist: sglang-kernel==0.4.10\n\ndescription: torch==1.0.0\n")
    # its description quotes a pin (after the headers' blank line): text, not metadata
    dist(site, "sglang_kernel-0.4.10.dist-info", "Name: sglang-kernel\nVersion: 0.4.10\n\nRequires-Dist: torch==1.0.0\n")
    write(site / "sgl_kernel" / "sm90" / "common_ops.abi3.so", elf(container(entry(2, 90))))
    write(site / "sgl_kernel" / "sm100" / "common_ops.abi3.so", elf(container(entry(2, 100), entry(2, 120))))
    dist(site, "flash_attn-2.8.3.dist-info", "Name: flash_attn\nVersion: 2.8.3\n",
         '{"url": "https://example.invalid/flash_attn-2.8.3+cu12torch2.6cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"}')
    write(site / "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so", elf(container(entry(2, 80), entry(2, 90))))
    dist(site, "torch-2.14.1.dist-info", "Name: torch\nVersion: 2.14.1\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("__version__ = '2.14.1'\ncuda: Optional[str] = '13.0'\n")
    return site


def test_sgl_kernel_is_read_where_its_loader_looks(site):
    on_h100 = kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 90)
    on_b200 = kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 100)
    assert on_h100["sgl_kernel_sm"] == ("sm_90",)
    assert on_b200["sgl_kernel_sm"] == ("sm_100", "sm_120")  # sm100/ for every GPU but a 9.0 one
    # no pin of its own: the installed sglang pins torch 2.14.1 beside this very sglang-kernel
    assert on_h100["sgl_kernel_torch"] == "2.14"


def test_flash_attns_torch_is_its_wheels_local_version(site):
    facts = kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 90)
    assert facts["flash_attn_sm"] == ("sm_80", "sm_90") and facts["flash_attn_torch"] == "2.6"
    assert (facts["sage_sm"], facts["sage_why"]) == (None, "not installed")


def test_a_kernel_of_another_version_than_sglang_pins_has_no_torch(site):
    os.rename(site / "sglang_kernel-0.4.10.dist-info", site / "sglang_kernel-0.3.1.dist-info")
    assert kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 90)["sgl_kernel_torch"] is None


def test_an_exact_torch_pin_in_the_wheels_metadata_is_read(tmp_path):
    site = tmp_path / "site"
    dist(site, "sageattention-2.2.0.dist-info", "Name: sageattention\nVersion: 2.2.0\nRequires-Dist: torch==2.9.1\n")
    write(site / "sageattention" / "_qattn_sm90.cpython-312-x86_64-linux-gnu.so", elf(container(entry(2, 90))))
    facts = kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 90)
    assert (facts["sage_sm"], facts["sage_torch"]) == (("sm_90",), "2.9")


def test_torchs_version_and_cuda_are_read_from_its_files(site):
    assert kernel_wheels.installed_torch(kernel_wheels.dist_index([str(site)]))[:2] == ("2.14.1", "13.0")


def test_one_unreadable_library_makes_the_kernel_unknown(site):
    target = site / "sgl_kernel" / "sm90" / "common_ops.abi3.so"
    target.unlink()
    os.mkfifo(target)
    facts = kernel_wheels.kernel_facts(kernel_wheels.dist_index([str(site)]), 90)
    assert facts["sgl_kernel_sm"] is None and "not a regular file" in facts["sgl_kernel_why"]


# -- ffprobe's version ---------------------------------------------------------------------------

def stub(folder: Path, body: str) -> dict[str, str]:
    folder.mkdir(exist_ok=True)
    exe = folder / "ffprobe"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return {"PATH": str(folder)}


def test_ffprobes_version_is_its_first_lines(tmp_path):
    env = stub(tmp_path / "bin", "echo 'ffprobe version 6.1.1-3ubuntu5 Copyright (c) 2007-2023 the FFmpeg developers'\n")
    assert ffmpeg.ffprobe_version(env)[0] == "6.1.1-3ubuntu5"


@pytest.mark.parametrize("body", ["sleep 30\n", "echo nonsense\n", "exit 3\n"])
def test_an_ffprobe_that_hangs_or_says_nothing_is_unknown(tmp_path, body):
    version, exe, why = ffmpeg.ffprobe_version(stub(tmp_path / "bin", body), timeout=0.5)
    assert version is None and exe and why


def test_no_ffprobe_on_path(tmp_path):
    assert ffmpeg.ffprobe_version({"PATH": str(tmp_path)})[:2] == (None, "")


# -- the probe's lines and facts -------------------------------------------------------------------

def probed(obs_extra: dict, host_extra: dict, cc: tuple[int, int] = (9, 0)):
    dev = {"index": 0, "name": "NVIDIA H200", "cc": f"{cc[0]}.{cc[1]}", "total": 150 << 30, "free": 140 << 30}
    obs = {"plugins": [], "nvidia_procfs": {"gpus": [], "jetson": False},
           "nvml": {"ok": True, "count": 1, "devices": [dev], **obs_extra.pop("nvml", {})},
           "torch": {"ok": True, "version": "2.14.1", "cuda": "13.0", "hip": None},
           "torch_cuda": {"available": True, "count": 1}, "cuda_devices": [dev], **obs_extra}
    return build(obs, {"outcome": "ok"}, {"host_total": 64 << 30, **host_extra},
                 {"SGLANG_DIFFUSION_PLATFORM_OVERRIDE": "cuda"})


def test_nvmls_driver_cuda_older_than_torchs_is_a_problem_line():
    result = probed({"nvml": {"cuda_driver": 12040}}, {})
    line = result.line("driver_cuda")
    assert (line.value, line.status) == ("12.4", "problem") and "H3D614" in line.reason
    assert (result.facts.driver_cuda, result.facts.torch_cuda) == ("12.4", "13.0")
    assert "nvmlSystemGetCudaDriverVersion" in result.facts.sources["driver_cuda"]


def test_the_proc_file_speaks_when_nvml_does_not():
    result = probed({}, {"driver_proc_cuda": "13.0+"})
    assert (result.line("driver_cuda").value, result.line("driver_cuda").status) == ("13.0+", "ok")
    assert "driver-cuda.json" in result.facts.sources["driver_cuda"]


def test_no_driver_reading_is_unknown_on_cuda_only():
    assert probed({}, {}).line("driver_cuda").status == "unknown"


def test_the_kernel_sglang_loads_for_this_gpu_is_judged(site):
    host = cuda_stack.observe({"PATH": ""}, root="/nonexistent", paths=[str(site)])
    h100 = probed({}, host)
    assert h100.facts.sgl_kernel_sm == ("sm_90",) and h100.line("sgl_kernel_sm").status == "ok"
    assert h100.line("sgl_kernel_torch").status == "ok" and h100.facts.sgl_kernel_torch == "2.14"
    assert h100.line("flash_attn_torch").status == "problem"  # built for torch 2.6, 2.14.1 installed
    b200 = probed({}, host, cc=(10, 0))
    assert b200.facts.sgl_kernel_sm == ("sm_100", "sm_120") and b200.line("sgl_kernel_sm").status == "ok"
    gb10 = probed({}, host, cc=(12, 1))
    assert gb10.line("sgl_kernel_sm").status == "unknown"  # sm_120 or sm_120a: cannot tell
    a100 = probed({}, host, cc=(8, 0))
    assert a100.line("sgl_kernel_sm").status == "problem" and "H3D615" in a100.line("sgl_kernel_sm").reason
    assert a100.facts.as_dict()["sgl_kernel_sm"] == ["sm_100", "sm_120"]  # JSON's list


def test_sgl_kernel_missing_on_cuda_is_a_problem_and_sage_missing_is_not(tmp_path):
    host = cuda_stack.observe({"PATH": ""}, root="/nonexistent", paths=[str(tmp_path)])
    result = probed({}, host)
    assert result.line("sgl_kernel_sm").status == "problem"
    assert result.line("sage_sm").status == "n/a" and result.facts.sage_sm is None


# -- the probe child's NVML reading, end to end, and a check on the facts ------------------------

from tests.host.test_probe import H200, env, fake_probe  # noqa: E402,F401 - the probe tests' fakes and fixture


def test_the_probe_child_asks_nvml_for_the_drivers_cuda_and_the_check_judges_it(tmp_path, env):  # noqa: F811
    from h3doctor.engine.check import check
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.sglang import releases
    from h3doctor.sglang.flagtable import load_flag_table

    r = fake_probe(tmp_path, env, torch={"cuda": "13.0", "devices": H200}, nvml={"devices": H200, "cuda_driver": 12040})
    assert (r.facts.driver_cuda, r.facts.torch_cuda) == ("12.4", "13.0")
    assert r.line("driver_cuda").status == "problem"
    release = releases.target(None, None)
    result = check(["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"], r.facts, load_rules(),
                   load_flag_table(release.table_version), {}, {}, release=release)
    [finding] = [f for f in result.evaluation.findings if f.rule.id == "H3D614"]
    assert not finding.cannot_verify and "(found version 12040)" in finding.message


def test_nvidia_ml_py_without_the_cuda_version_call_keeps_the_devices(tmp_path, env):  # noqa: F811
    r = fake_probe(tmp_path, env, nvml={"devices": H200, "old_bindings": True})
    assert (r.facts.platform, r.facts.gpu_count) == ("cuda", 4)
    assert r.facts.driver_cuda is None or r.line("driver_cuda").source.startswith("/proc")


def test_doctor_shows_each_new_fact_and_a_too_old_driver_fails_the_machine(site):
    from h3doctor.host.doctor import report

    host = cuda_stack.observe({"PATH": ""}, root="/nonexistent", paths=[str(site)])
    data = report(probed({"nvml": {"cuda_driver": 12040}}, host))
    status = {c["fact"]: c["status"] for c in data["checks"]}
    assert {k: status[k] for k in ("driver_cuda", "torch_cuda", "sgl_kernel_sm", "sgl_kernel_torch", "flash_attn_sm",
                                   "flash_attn_torch", "sage_sm", "ffprobe_version")} == {
        "driver_cuda": "problem", "torch_cuda": "ok", "sgl_kernel_sm": "ok", "sgl_kernel_torch": "ok",
        "flash_attn_sm": "ok", "flash_attn_torch": "problem", "sage_sm": "n/a", "ffprobe_version": "n/a"}
    assert data["summary"]["exit_code"] == 1 and "driver CUDA" in data["summary"]["text"]


def test_a_saved_profile_keeps_the_kernel_facts(site):
    import yaml

    from h3doctor.facts import facts_from_mapping
    from h3doctor.host.probe import profile_text

    host = cuda_stack.observe({"PATH": ""}, root="/nonexistent", paths=[str(site)])
    result = probed({"nvml": {"cuda_driver": 13000}}, host)
    again = facts_from_mapping(yaml.safe_load(profile_text(result)), "here.yaml")
    assert (again.driver_cuda, again.sgl_kernel_sm, again.flash_attn_torch) == ("13.0", ("sm_90",), "2.6")


@pytest.mark.parametrize("bad", [["sm90"], ["sm_x"], [90], "sm_90"])
def test_a_profiles_targets_must_be_targets(bad):
    from h3doctor.errors import UsageError
    from h3doctor.facts import facts_from_mapping

    with pytest.raises(UsageError):
        facts_from_mapping({"platform": "cuda", "sgl_kernel_sm": bad}, "p.yaml")
