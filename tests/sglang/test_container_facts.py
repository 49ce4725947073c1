"""Containers judged by the container (issue 29 item 3): a `docker|podman|nerdctl run` launch is
judged with the container's /dev/shm, memory cap, GPU grant and its image's ffmpeg, never the
caller's host facts — through `check` (findings, JSON `assumed` and its sources, exit codes)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from h3doctor.errors import UsageError
from h3doctor.facts import assumed_line
from h3doctor.host.profiles import load_profile
from h3doctor.request import CheckRequest, run
from h3doctor.sglang.container_facts import image_facts, in_container, runtime_size_bytes
from h3doctor.sglang.container_run import read_container_run

H3 = "lmsysorg/sglang:v0.5.23 sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4"


def check(line: str, profile: str = "4xH200", env: dict[str, str] | None = None, **hw_overrides):
    from h3doctor.record import replace

    hw = replace(load_profile(profile), **hw_overrides) if hw_overrides else None
    out = run(CheckRequest(tokens=line.split(), profile=None if hw else profile, hardware=hw, env=env or {}))
    return out.result.evaluation


def ids(ev) -> dict[str, str]:
    return {f.rule.id: f.severity for f in ev.findings}


# --- /dev/shm -------------------------------------------------------------------------------------

@pytest.mark.parametrize("runtime", ["docker", "podman", "nerdctl"])
def test_no_shm_option_is_the_runtimes_64_mib(runtime):
    ev = check(f"{runtime} run --gpus all {H3}")
    assert ev.hardware.shm_gib == 0.0625
    assert ev.hardware.sources["shm_gib"].startswith(f"container: {runtime}'s default")
    assert ids(ev)["H3D415"] == "error"  # the profile's 1007.5 GiB is the host's, not the container's


@pytest.mark.parametrize("option, gib", [("--shm-size 32g", 32.0), ("--shm-size=32g", 32.0), ("--shm-size 1GiB", 1.0),
                                         ("--shm-size 512m", 0.5), ("--shm-size 0", 0.0625)])
def test_shm_size_as_docker_parses_it(option, gib):
    ev = check(f"docker run --gpus all {option} {H3}")
    assert ev.hardware.shm_gib == gib
    assert ("H3D415" in ids(ev)) == (gib < 1)


def test_ipc_host_is_the_hosts_shm():
    ev = check(f"docker run --gpus all --ipc=host {H3}", shm_gib=2.0)
    assert ev.hardware.shm_gib == 2.0 and "--ipc=host" in ev.hardware.sources["shm_gib"]
    assert "H3D415" not in ids(ev)
    small = check(f"docker run --gpus all --ipc host {H3}", shm_gib=0.25)
    assert ids(small)["H3D415"] == "error"  # the host's own /dev/shm is too small: said, not hidden


@pytest.mark.parametrize("option, shm", [("--ipc=none", 0.0), ("--ipc=container:other", None),
                                         ("-v /dev/shm:/dev/shm", 2.0), ("--tmpfs /dev/shm:size=8g", 8.0),
                                         ("--tmpfs /dev/shm", None), ("--mount type=bind,src=/dev/shm,dst=/dev/shm", 2.0)])
def test_other_ipc_modes_and_mounts(option, shm):
    ev = check(f"docker run --gpus all {option} {H3}", shm_gib=2.0)
    assert ev.hardware.shm_gib == shm
    if shm is None:  # cannot verify, never the host's or docker's figure
        assert ids(ev)["H3D415"] == "warning"


@pytest.mark.parametrize("text, expected", [("64m", 64 << 20), ("1g", 1 << 30), ("1.5GB", 3 << 29), ("2 t", 2 << 40),
                                            ("1048576", 1 << 20), ("16gib", 16 << 30)])
def test_runtime_sizes(text, expected):
    assert runtime_size_bytes(text, "--shm-size") == expected


@pytest.mark.parametrize("text", ["big", "1.2.3g", "-1g", "1x", "", "9" * 50])
def test_a_size_docker_refuses_is_a_usage_error_in_its_words(text):
    with pytest.raises(UsageError, match=r'invalid argument .* for "--shm-size" flag: invalid size'):
        check(f"docker run --gpus all --shm-size={text} {H3}")


# --- memory ---------------------------------------------------------------------------------------

def test_memory_caps_the_host_memory():
    ev = check(f"docker run --gpus all --ipc=host --memory 48g {H3}")
    assert ev.hardware.host_memory_gib == 48.0
    assert ev.hardware.sources["host_memory_gib"] == "container: --memory 48g caps the host's 2015 GiB"
    assert ev.hardware.cgroup_memory_unlimited is False
    assert check(f"docker run --gpus all --ipc=host -m 4t {H3}").hardware.host_memory_gib == 2015  # the smaller
    assert check(f"docker run --gpus all --ipc=host -m 0 {H3}").hardware.host_memory_gib == 2015  # 0: no cap
    nocap = check(f"docker run --gpus all --ipc=host {H3}").hardware
    assert nocap.cgroup_memory_unlimited is True and nocap.host_memory_gib == 2015


def test_memory_cap_with_the_host_unknown_is_unknown():
    hw = check(f"docker run --gpus all --ipc=host --memory 48g {H3}", host_memory_gib=None).hardware
    assert hw.host_memory_gib is None


# --- GPUs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("grant, refused", [
    ("--gpus 8", "nvidia-container-cli: device error: 4: unknown device"),
    ("--gpus '\"device=0,5\"'", "nvidia-container-cli: device error: 5: unknown device"),
    ("--gpus count=6", "nvidia-container-cli: device error: 4: unknown device"),
    ("--device nvidia.com/gpu=0,7", "unresolvable CDI devices nvidia.com/gpu=7"),
    ("-e NVIDIA_VISIBLE_DEVICES=0,1,2,3,4", "nvidia-container-cli: device error: 4: unknown device"),
    ("--gpus 4", ""), ("--gpus all", None), ("--gpus '\"device=0,0,1\"'", ""),
])
def test_a_grant_beyond_the_hosts_gpus(grant, refused):
    import shlex

    run_ = read_container_run(shlex.split(f"docker run --ipc=host {grant} {H3}"))
    hw = in_container(load_profile("4xH200"), run_, {})
    assert hw.gpu_grant_error == refused


# --- the image's facts ----------------------------------------------------------------------------

def test_the_images_ffmpeg_not_the_callers():
    ev = check(f"docker run --gpus all --ipc=host {H3}", ffmpeg=False, ffmpeg_encoders=False)
    # imageio-ffmpeg's bundled binary is in sglang's image: libx264 and aac are there
    assert ev.hardware.ffmpeg_encoders is True and "H3D613" not in ids(ev)
    # ffmpeg/ffprobe on PATH: the image's (sglang's CUDA image has them), not the host's "missing"
    assert ev.hardware.ffmpeg is True and "H3D403" not in ids(ev)
    assert ev.hardware.sources["ffmpeg"].startswith("container: lmsysorg/sglang:v0.5.23: ffmpeg and ffprobe on PATH")
    bare = check("sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4", ffmpeg=False, ffmpeg_encoders=False)
    assert ids(bare)["H3D403"] == "error" and ids(bare)["H3D613"] == "error"  # the host's own launch: its own ffmpeg


@pytest.mark.parametrize("image", ["myorg/sglang-custom:1.0", "lmsysorg/sglang:dev", "lmsysorg/sglang:v0.5.16",
                                   "lmsysorg/sglang:cu129-weird"])
def test_an_image_without_data_is_unknown_for_its_facts(image):
    facts = image_facts(image)
    assert all(value is None for value, _ in facts.values())
    ev = check(f"docker run --gpus all --ipc=host {image} sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4",
               ffmpeg=True, ffmpeg_encoders=True)
    assert ev.hardware.ffmpeg is None and ev.hardware.ffmpeg_encoders is None  # never the caller's True


@pytest.mark.parametrize("image", ["lmsysorg/sglang:v0.5.17", "docker.io/lmsysorg/sglang:0.5.22-cu129", "lmsysorg/sglang:latest"])
def test_sglangs_release_images_have_libx264_and_aac(image):
    assert image_facts(image)["ffmpeg_encoders"][0] is True


@pytest.mark.parametrize("release", ["0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"])
def test_sglangs_image_has_ffmpeg_on_path_where_sglang_checks_it(release):
    value, source = image_facts(f"lmsysorg/sglang:v{release}-cu130")["ffmpeg"]
    assert value is True and "adding ffmpeg to the AMD Docker image" in source  # the evidence, named
    ev = check(f"docker run --gpus all --ipc=host lmsysorg/sglang:v{release}-cu130 sglang serve "
               "--model-path MiniMaxAI/MiniMax-H3 --num-gpus 4", ffmpeg=False)
    assert ev.hardware.ffmpeg is True and "H3D403" not in ids(ev)  # the caller's missing ffmpeg is not blamed
    assert ev.hardware.sources["ffmpeg"].startswith(f"container: lmsysorg/sglang:v{release}-cu130: ")


@pytest.mark.parametrize("release", ["0.5.17", "0.5.18"])
def test_ffmpeg_in_images_before_sglangs_check_is_not_known(release):
    value, source = image_facts(f"lmsysorg/sglang:v{release}")["ffmpeg"]
    assert value is None and "no evidence" in source


def test_every_release_the_data_lists_has_each_per_release_fact():
    from h3doctor.sglang.container_facts import _image_data

    data = _image_data()
    for name, fact in data["facts"].items():
        if "by_release" in fact:
            assert sorted(fact["by_release"]) == sorted(data["releases"]), name
            assert all(set(f) == {"value", "source"} and f["source"] for f in fact["by_release"].values()), name


def test_a_release_a_per_release_fact_omits_is_not_known(monkeypatch):
    from h3doctor.sglang import container_facts

    data = json.loads(json.dumps(container_facts._image_data()))
    del data["facts"]["ffmpeg"]["by_release"]["0.5.23"]
    monkeypatch.setattr(container_facts, "_image_data", lambda: data)
    assert image_facts("lmsysorg/sglang:v0.5.23")["ffmpeg"][0] is None
    assert image_facts("lmsysorg/sglang:v0.5.22")["ffmpeg"][0] is True


# --- the report says which facts came from the container ------------------------------------------

def test_assumed_names_the_container_facts_in_text_and_json():
    ev = check(f"docker run --gpus all --shm-size 1g --memory 48g {H3}")
    line = assumed_line(ev.hardware)
    assert "RAM 48 GiB (container)" in line and "/dev/shm 1 GiB (container)" in line
    assert "disk 1000 GiB free," in line  # the host's disk: no mark
    out = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", "4xH200", "--format", "json", "--",
                          *f"docker run --gpus all --shm-size 1g --memory 48g {H3}".split()],
                         capture_output=True, text=True, check=False)
    report = json.loads(out.stdout)
    assert report["assumed"]["shm_gib"] == 1.0 and report["assumed"]["host_memory_gib"] == 48.0
    assert report["assumed_sources"]["shm_gib"] == "container: --shm-size 1g"
    assert report["assumed_sources"]["disk_free_gib"].startswith("builtin:")


def test_a_runtime_option_close_to_checks_own_is_the_runtimes():
    """`docker run --memory 48g` is docker's option, not a misspelt `--host-memory` (it was a usage error)."""
    out = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", "4xH200", "--format", "json", "--",
                          *f"docker run --gpus all --ipc=host --memory 48g {H3}".split()],
                         capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    assert json.loads(out.stdout)["assumed"]["host_memory_gib"] == 48.0


def test_a_huge_gpu_count_is_a_number_not_a_list():
    """`--gpus 10**15` is refused at the host's count; no list of a thousand million million indices is made."""
    hw = in_container(load_profile("4xH200"), read_container_run(f"docker run --gpus {10**15} {H3}".split()), {})
    assert (hw.gpus_granted, hw.gpu_grant_error) == (10**15, "nvidia-container-cli: device error: 4: unknown device")


def test_h3d148_through_check_in_docker_s_words_and_cannot_verify_on_an_unknown_count():
    ev = check(f"docker run --gpus 8 --ipc=host {H3}")
    found = next(f for f in ev.findings if f.rule.id == "H3D148")
    assert (found.severity, found.message) == ("error", "nvidia-container-cli: device error: 4: unknown device")
    unknown = check(f"docker run --gpus 8 --ipc=host {H3}", gpu_count=None)
    assert next(f for f in unknown.findings if f.rule.id == "H3D148").cannot_verify
    assert "H3D148" not in ids(check(f"docker run --gpus 4 --ipc=host {H3}"))
    assert "H3D148" not in ids(check("sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4"))


# --- H3D415's fix edits the container's line ------------------------------------------------------

@pytest.mark.parametrize("line, fixed", [
    # no --shm-size: put right after `run`, every other word kept
    ("docker run --gpus all -p 30000:30000 -e HF_TOKEN=x {h3}", "docker run --shm-size 16g --gpus all -p 30000:30000 -e HF_TOKEN=x {h3}"),
    ("docker container run --gpus all {h3}", "docker container run --shm-size 16g --gpus all {h3}"),
    # a small one: its value replaced where it stands, in the form written (the runtime keeps the last)
    ("docker run --shm-size 64m --gpus all --shm-size=512m {h3}", "docker run --shm-size 64m --gpus all --shm-size=16g {h3}"),
    # a value that looks like the option is the label's, not the option
    ("docker run --label --shm-size --gpus all {h3}", "docker run --shm-size 16g --label --shm-size --gpus all {h3}"),
    ("docker run -it -l --shm-size --gpus all {h3}", "docker run --shm-size 16g -it -l --shm-size --gpus all {h3}"),
])
def test_the_shm_fix_edits_only_the_runtime_option(line, fixed):
    result = run(CheckRequest(tokens=line.format(h3=H3).split(), profile="4xH200", env={})).result
    assert result.corrected_command == fixed.format(h3=H3)
    assert "H3D415" not in ids(check(fixed.format(h3=H3)))  # the corrected line passes its own check


def test_the_shm_fix_leaves_a_host_launch_alone():
    result = run(CheckRequest(tokens="sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4".split(),
                              hardware=__import__("h3doctor.record", fromlist=["replace"]).replace(
                                  load_profile("4xH200"), shm_gib=0.0625), env={})).result
    assert result.corrected_command is None and "H3D415" in ids(result.evaluation)
