"""The download a launch starts and sglang's host spill, judged through a check on a faked Hugging
Face cache (engine/derivations/download.py; rules H3D146, H3D147, H3D416, H3D417): findings and
derived values, never rendered text."""

from __future__ import annotations

import shlex
from dataclasses import replace

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from tests.sglang.test_hub_cache import FILES, GB, cache

RULES = load_rules()
H3 = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"
PARTITION = [p for p in FILES if p.startswith("FL2VA/") and not p.endswith(".onnx")]


def run(argv: str, version: str | None = None, **hw):
    release = releases.target(version, None)
    facts = replace(load_profile("4xH200"), **hw)
    result = check(shlex.split(argv), facts, RULES, load_flag_table(release.table_version), {}, {}, release=release)
    ev = result.evaluation
    return {f.rule.id: f for f in ev.findings}, ev.context


def test_a_complete_snapshot_downloads_nothing_whatever_the_disk(tmp_path):
    found, ctx = run(H3, hf_cache_dir=cache(tmp_path, present=PARTITION), disk_free_gib=1)
    assert ctx["derived.download_need_gib"] == 0 and ctx["derived.host.hub_snapshot"] == "complete"
    assert not {"H3D416", "H3D146", "H3D147"} & set(found)
    found, _ = run("HF_HUB_OFFLINE=1 " + H3, hf_cache_dir=cache(tmp_path / "again", present=PARTITION))
    assert "H3D147" not in found


def test_only_the_missing_files_count_against_the_disk(tmp_path):
    root = cache(tmp_path, present=["FL2VA/model_index.json", "FL2VA/text_encoder/model.safetensors"])
    found, ctx = run(H3, hf_cache_dir=root, disk_free_gib=50)
    assert ctx["derived.download_need_gib"] == round(66 * GB / 2**30, 2)  # the two transformer shards
    short = found["H3D416"]
    assert short.severity == "error" and not short.cannot_verify and "11.47 GiB short" in short.message
    found, _ = run(H3, hf_cache_dir=root, disk_free_gib=70)
    assert "H3D416" not in found and found["H3D146"].severity == "info"
    assert "61.47 GiB" in found["H3D146"].message and "token is present" in found["H3D146"].message


def test_a_snapshot_the_listing_does_not_contradict_is_used_as_it_is(tmp_path):
    found, ctx = run(H3, hf_cache_dir=cache(tmp_path, listing=None, present=["FL2VA/model_index.json"]),
                     disk_free_gib=1)
    assert ctx["derived.host.hub_snapshot"] == "present" and "H3D416" not in found and "H3D146" not in found


def test_nothing_cached_is_the_partition_s_published_size(tmp_path):
    found, ctx = run(H3, hf_cache_dir=str(tmp_path / "empty"), disk_free_gib=100)
    assert ctx["derived.download_need_gib"] == round(144 * GB / 2**30, 2) and "H3D416" in found


def test_the_variant_selects_its_partition(tmp_path):
    # FL2VA complete, Ref2VA's file missing by the listing: ref2va downloads it
    root = cache(tmp_path, present=PARTITION)
    found, ctx = run(H3 + " --model-variant ref2va", hf_cache_dir=root, disk_free_gib=10)
    assert ctx["derived.download_need_gib"] == round(66 * GB / 2**30, 2) and "H3D416" in found


def test_offline_without_the_snapshot_is_sglang_s_error(tmp_path):
    found, _ = run("HF_HUB_OFFLINE=1 " + H3, hf_cache_dir=cache(tmp_path, present=["FL2VA/model_index.json"]))
    offline = found["H3D147"]
    assert offline.severity == "error" and offline.message.startswith(
        "Could not find model at MiniMaxAI/MiniMax-H3 and failed to download from Hugging Face Hub: Cannot find")
    assert "H3D416" not in found and "H3D146" not in found  # offline nothing downloads


def test_with_a_profile_the_cache_is_unknown_and_only_a_disk_that_holds_the_partition_passes():
    found, _ = run(H3, disk_free_gib=50)
    assert found["H3D416"].cannot_verify and "134.11 GiB" in found["H3D416"].unknown_why
    found, _ = run(H3, disk_free_gib=135)  # the published 134.11 GiB fits
    assert "H3D416" not in found
    found, _ = run("HF_HUB_OFFLINE=1 " + H3)
    assert found["H3D147"].cannot_verify


def test_a_local_folder_downloads_nothing(tmp_path):
    found, ctx = run(f"sglang serve {tmp_path}/MiniMax-H3 --num-gpus 4", hf_cache_dir=str(tmp_path / "empty"),
                     disk_free_gib=None)
    assert ctx["derived.hub_repo"] is None and not {"H3D416", "H3D146", "H3D147"} & set(found)


def test_modelscope_s_cache_is_not_read(tmp_path):
    found, ctx = run("SGLANG_USE_MODELSCOPE=true " + H3, hf_cache_dir=cache(tmp_path, present=PARTITION),
                     disk_free_gib=50)
    assert ctx["derived.host.hub_snapshot"] is None and found["H3D416"].cannot_verify


@pytest.mark.parametrize("free, fallback", [(3, 9.57), (20, 0.0), (1, 10.4)])
def test_spill_space_short_says_the_host_memory_the_fallback_adds(free, fallback):
    # 50 fused tensors of 10.4/50 GiB, each written while free >= its size + 2 GiB (host_spill.py:114)
    found, ctx = run("sglang serve MiniMaxAI/MiniMax-H3 --dit-layerwise-offload", shares_host_memory=True,
                     spill_free_gib=free)
    assert ctx["derived.spill_fallback_gib"] == fallback
    assert ("H3D417" in found) == (fallback > 0)
    if fallback:
        assert found["H3D417"].severity == "warning" and found["H3D417"].message.startswith(
            f"Host spill disabled for this load: {free} GiB free")
        assert f"{fallback} GiB of anonymous host memory" in found["H3D417"].fix_note


def test_no_spill_before_0_5_20():
    found, ctx = run("sglang serve MiniMaxAI/MiniMax-H3 --dit-layerwise-offload", "0.5.19", shares_host_memory=True,
                     spill_free_gib=0)
    assert "H3D417" not in found
