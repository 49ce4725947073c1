"""Host facts (docs/host-facts.md): the cgroup cap, /dev/shm, disk, the ffmpeg encoders, read from a
faked tree and a stub ffmpeg; profiles state them; --host-memory/--shm/--disk override them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from h3doctor.errors import UsageError
from h3doctor.facts import assumed, facts_from_mapping, size_gib, with_overrides
from h3doctor.host import ffmpeg, system
from h3doctor.host.probe import system_facts
from h3doctor.host.probe_facts import build
from h3doctor.host.profiles import builtin_profile_names, load_profile

GIB = 1 << 30


def _tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cgroup_v2_tightest_cap_in_the_chain(tmp_path):
    _tree(tmp_path, {"proc/self/cgroup": "0::/job/step\n",
                     "sys/fs/cgroup/memory.max": "max\n",
                     "sys/fs/cgroup/job/memory.max": f"{96 * GIB}\n",
                     "sys/fs/cgroup/job/step/memory.max": f"{64 * GIB}\n",
                     "sys/fs/cgroup/job/step/memory.current": f"{GIB}\n"})
    cap, usage, source, _ = system.cgroup_memory(str(tmp_path))
    assert (cap, usage) == (64 * GIB, GIB) and source == "cgroup v2 /sys/fs/cgroup/job/step/memory.max"


def test_cgroup_v1_and_its_unlimited_sentinel(tmp_path):
    _tree(tmp_path, {"proc/self/cgroup": "4:memory:/docker/abc\n",
                     "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"})
    assert system.cgroup_memory(str(tmp_path))[:2] == (None, None)
    (tmp_path / "sys/fs/cgroup/memory/memory.limit_in_bytes").write_text(f"{8 * GIB}\n")
    assert system.cgroup_memory(str(tmp_path))[0] == 8 * GIB


def test_no_cgroup_mount_is_said(tmp_path):
    cap, _usage, _source, reason = system.cgroup_memory(str(tmp_path))
    assert cap is None and reason == "no cgroup memory controller mounted"


def test_a_cgroup_file_that_is_no_number_is_no_cap_and_a_fifo_does_not_hang(tmp_path):
    _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "x" * 100_000})
    assert system.cgroup_memory(str(tmp_path))[0] is None
    os.remove(tmp_path / "sys/fs/cgroup/memory.max")
    os.mkfifo(tmp_path / "sys/fs/cgroup/memory.max")
    assert system.cgroup_memory(str(tmp_path))[0] is None


def test_the_probe_reports_the_cap_as_host_memory(tmp_path):
    _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": f"{1117 * GIB}\n"})
    host = {"host_total": 2015 * GIB, "host_available": 2000 * GIB, "host_memory_source": "/proc/meminfo",
            **system_facts({"PATH": str(tmp_path / "none"), "HOME": str(tmp_path)}, str(tmp_path))}
    r = build({}, {"outcome": "ok"}, host, {})
    assert r.facts.host_memory_gib == 1117.0 and "cgroup v2" in r.facts.sources["host_memory_gib"]


def test_shm_and_disk(tmp_path):
    assert system.shm(str(tmp_path))[0] is None  # no /dev/shm: unknown, not the disk under it
    (tmp_path / "dev/shm").mkdir(parents=True)
    size, free, _source, _ = system.shm(str(tmp_path))
    assert size and free is not None
    # a cache folder not created yet is measured at its nearest existing parent
    assert system.filesystem(str(tmp_path / "a/b/c"))[2] == str(tmp_path)
    assert system.hf_hub_cache({"HF_HOME": "/h"}) == "/h/hub"
    assert system.hf_hub_cache({"HF_HUB_CACHE": "/c", "HF_HOME": "/h"}) == "/c"


def _stub(tmp_path, listing: str, name="ffmpeg", code=0):
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({listing!r})\nsys.exit({code})\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


LISTING = "Encoders:\n V..... = Video\n ------\n V....D libx265  H.265\n A....D aac  AAC\n"


def test_ffmpeg_stub_without_libx264_is_a_problem(tmp_path):
    _stub(tmp_path, LISTING)
    facts = ffmpeg.encoder_facts({"PATH": str(tmp_path)}, None)
    assert facts["ffmpeg_missing_encoders"] == ["libx264"]
    r = build({}, {"outcome": "ok"}, facts, {})
    assert r.facts.ffmpeg_encoders is False and r.line("ffmpeg_encoders").status == "problem"


def test_ffmpeg_order_env_first_and_a_good_listing(tmp_path):
    good = _stub(tmp_path, LISTING.replace("libx265", "libx264"), name="good")
    _stub(tmp_path, LISTING)
    facts = ffmpeg.encoder_facts({"PATH": str(tmp_path), "IMAGEIO_FFMPEG_EXE": str(good)}, None)
    assert facts["ffmpeg_encoder_exe"] == str(good) and facts["ffmpeg_missing_encoders"] == []


def test_ffmpeg_unreadable_is_unknown_not_clean(tmp_path):
    _stub(tmp_path, "garbage\n")
    assert build({}, {"outcome": "ok"}, ffmpeg.encoder_facts({"PATH": str(tmp_path)}, None), {}).facts.ffmpeg_encoders is None
    _stub(tmp_path, LISTING.replace("libx265", "libx264"), code=1)
    assert "ffmpeg_missing_encoders" not in ffmpeg.encoder_facts({"PATH": str(tmp_path)}, None)


def test_ffmpeg_that_hangs_or_floods_is_cut(tmp_path):
    hang = tmp_path / "hang"
    hang.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    hang.chmod(0o755)
    out, why = ffmpeg.run_bounded([str(hang)], timeout=0.5)
    assert out is None and "did not answer" in why
    flood = tmp_path / "flood"
    flood.write_text(f"#!{sys.executable}\nimport sys\nwhile True: sys.stdout.write('x' * 65536)\n")
    flood.chmod(0o755)
    out, why = ffmpeg.run_bounded([str(flood)], timeout=5)
    assert out is None and "more than" in why


def test_no_ffmpeg_at_all_cannot_encode(tmp_path):
    facts = ffmpeg.encoder_facts({"PATH": str(tmp_path)}, None)
    assert build({}, {"outcome": "ok"}, facts, {}).facts.ffmpeg_encoders is False


@pytest.mark.parametrize("text,gib", [("64m", 0.0625), ("16g", 16.0), ("2t", 2048.0), ("100", 100.0), ("1.5GiB", 1.5)])
def test_sizes(text, gib):
    assert size_gib(text, "--shm") == gib


@pytest.mark.parametrize("text", ["", "-1", "6x4", "nan", "inf", "1e9", "1" * 30, "g"])
def test_bad_sizes_are_usage_errors(text):
    with pytest.raises(UsageError, match="--shm takes a size"):
        size_gib(text, "--shm")


def test_every_builtin_profile_states_every_host_fact():
    for name in builtin_profile_names():
        facts = assumed(load_profile(name))
        missing = [k for k, v in facts.items() if v is None and not (k == "fa_kernel" and name in ("cpu", "m3-max", "m4-pro"))]
        assert missing == [], name


def test_a_profile_without_a_fact_leaves_it_unknown():
    hw = facts_from_mapping({"platform": "cuda", "gpu_count": 4}, "test")
    assert assumed(hw)["shm_gib"] is None and assumed(hw)["disk_free_gib"] is None and assumed(hw)["ffmpeg_encoders"] is None


def test_overrides_are_sourced_to_their_option():
    hw = with_overrides(load_profile("4xH200"), {"--shm": 0.0625})
    assert hw.shm_gib == 0.0625 and hw.sources["shm_gib"] == "--shm"


def _check(*args):
    return subprocess.run([sys.executable, "-m", "h3doctor", "check", *args], capture_output=True, text=True)


def test_cli_shm_override_fires_h3d415_and_json_says_what_it_assumed():
    p = _check("--profile", "4xH200", "--shm", "64m", "--format", "json", "--", "sglang", "serve",
               "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    report = json.loads(p.stdout)
    assert p.returncode == 1 and [f["rule"] for f in report["findings"]] == ["H3D415"]
    assert report["assumed"]["shm_gib"] == 0.0625 and report["assumed"]["disk_free_gib"] == 1000
    bad = _check("--profile", "4xH200", "--disk", "lots", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert bad.returncode == 2 and "--disk takes a size" in bad.stderr and "Traceback" not in bad.stderr


def test_real_host_facts_on_this_machine():
    # the real cgroup, /dev/shm and disk of the machine the suite runs on (CI too): read, or said why not
    facts = system_facts(dict(os.environ))
    assert facts["cgroup_reason"] and facts["shm_reason"] and facts["disk_reason"]
    assert facts["disk_free"] is not None  # the HF cache or its parent is always on some disk


@pytest.mark.parametrize("content, unlimited", [("max\n", True), (f"{120 * GIB}\n", False), (None, True)])
def test_root_memory_max_read_as_sglang_reads_it(tmp_path, content, unlimited):
    # sglang's auto_tune.py: the mount's own memory.max; "max" or no file at all is no limit
    if content is not None:
        _tree(tmp_path, {"sys/fs/cgroup/memory.max": content, "sys/fs/cgroup/job/memory.max": f"{GIB}\n"})
    assert system.root_memory_max_unlimited(str(tmp_path))[0] is unlimited


def test_root_memory_max_that_is_a_fifo_or_a_flood_is_unknown(tmp_path):
    _tree(tmp_path, {"sys/fs/cgroup/memory.max": "max" + " " * 100_000})
    assert system.root_memory_max_unlimited(str(tmp_path))[0] is None
    os.remove(tmp_path / "sys/fs/cgroup/memory.max")
    os.mkfifo(tmp_path / "sys/fs/cgroup/memory.max")  # sglang would block on it: not "no limit", unknown
    assert system.root_memory_max_unlimited(str(tmp_path))[0] is None


def test_the_probe_states_the_root_memory_max_with_its_source(tmp_path):
    _tree(tmp_path, {"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})
    host = system_facts({"PATH": str(tmp_path / "none"), "HOME": str(tmp_path)}, str(tmp_path))
    r = build({}, {"outcome": "ok"}, host, {})
    assert r.facts.cgroup_memory_unlimited is True
    assert r.facts.sources["cgroup_memory_unlimited"] == "/sys/fs/cgroup/memory.max"
