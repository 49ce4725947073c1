"""Worker, load and first-request scenarios of the issue, end to end through the CLI (JSON).

Each scenario checks the findings sglang would raise (by catalog ID and text), then that the
corrected command h3doctor prints is itself accepted: exit 0, no error, nothing left to fix.
"""

from __future__ import annotations

import pytest

H3 = ["sglang", "serve", "MiniMaxAI/MiniMax-H3"]


def _catalogs(data) -> list[str]:
    return [c for f in data["findings"] for c in f["catalog"].split(",")]


def _errors(data) -> list[str]:
    return [f["catalog"] for f in data["findings"] if f["severity"] == "error"]


def _finding(data, catalog: str) -> dict:
    found = [f for f in data["findings"] if catalog in f["catalog"].split(",")]
    assert found, f"no {catalog} finding in {_catalogs(data)}"
    return found[0]


def _assert_checks_clean(cli, profile: str, argv: list[str]) -> dict:
    code, data, err = cli("check", "--profile", profile, "--", *argv)
    assert code == 0, (err, _errors(data))
    assert _errors(data) == [] and data["fix_status"] == "clean" and data["corrected_argv"] is None
    return data


def _profile(tmp_path, name: str, **facts) -> str:
    base = {
        "description": "four NVIDIA H200 141 GB (Hopper, sm90)",
        "platform": "cuda",
        "device_name": "NVIDIA H200",
        "compute_capability": '"9.0"',
        "gpu_count": 4,
        "gpu_memory_gib": 139.8,
        "host_memory_gib": 2015,
        "flash_attn": "true",
        "fa_kernel": "true",
        "ffmpeg": "true",
        # the host facts a complete profile states (unknown ones are cannot-verify warnings: H3D415, H3D613,
        # H3D416)
        "shm_gib": 64,
        "ffmpeg_encoders": "true",
        "disk_free_gib": 1000,
        # the CUDA stack (H3D614-H3D616)
        "driver_cuda": '"13.0"', "torch_cuda": '"13.0"', "torch_version": '"2.14.1"', "sgl_kernel_sm": "[sm_90]",
        "sgl_kernel_torch": '"2.14"',
    }
    base.update(facts)
    path = tmp_path / f"{name}.yaml"
    path.write_text("".join(f"{k}: {v}\n" for k, v in base.items() if v is not None), encoding="utf-8")
    return str(path)


def test_six_gpus_on_8xh100_fail_ulysses_head_and_alignment_checks(cli):
    code, data, _ = cli("check", "--profile", "8xH100", "--", *H3, "--num-gpus", "6")
    assert code == 1
    l16, l17 = _finding(data, "L16"), _finding(data, "L17")
    assert l16["message"] == "MiniMax H3 TP-local heads 56 must be divisible by Ulysses size 6 (total heads=56, TP=1)."
    assert l17["message"].startswith(
        "MiniMax H3 packed sequence alignment 64 must be divisible by the combined sequence-parallel size 6 "
        "(ulysses=6 x ring=1)."
    )
    assert l16["stage"] == l17["stage"] == "after-download"
    fixed = data["corrected_argv"]
    assert fixed[fixed.index("--num-gpus") + 1] == "6", "six GPUs can run (3 replicas of Ulysses 2): keep them"
    assert fixed == H3 + ["--num-gpus", "6", "--dp-size", "3"]
    clean = _assert_checks_clean(cli, "8xH100", fixed)
    cfg = clean["effective_config"]
    assert (cfg["dp_size"], cfg["ulysses_degree"], cfg["ring_degree"]) == (3, 2, 1)


def test_tp3_fails_the_dit_dimension_check(cli):
    code, data, _ = cli("check", "--profile", "8xH100", "--", *H3, "--num-gpus", "3", "--tp-size", "3")
    assert code == 1
    l15 = _finding(data, "L15")
    assert l15["message"] == "MiniMax H3 num_attention_heads=56 must be divisible by TP size 3."
    assert l15["sglang_where"].endswith("minimax_h3.py:2163")
    fixed = data["corrected_argv"]
    assert fixed[fixed.index("--tp-size") + 1] in ("1", "2", "4", "8")
    _assert_checks_clean(cli, "8xH100", fixed)


def test_tp3_alone_on_one_gpu_also_fails_world_size(cli):
    code, data, _ = cli("check", "--profile", "8xH100", "--", *H3, "--tp-size", "3")
    assert code == 1
    assert {"C27", "W1", "L15"} <= set(_catalogs(data))
    w1 = _finding(data, "W1")
    assert w1["message"] == (
        "world_size (1) is less than tensor_parallel_degree (3) x pipeline_parallel_degree (1) "
        "xsequence_parallel_degree (1) xclassifier_free_guidance_degree (1) xdata_parallel_degree (1)"
    )
    assert w1["stage"] == "worker"
    _assert_checks_clean(cli, "8xH100", data["corrected_argv"])


def test_world_size_smaller_than_layout(cli):
    argv = H3 + ["--num-gpus", "4", "--tp-size", "2", "--sp-degree", "4"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 1
    assert _errors(data) == ["W1"], "the launcher's divisibility checks pass; only the worker fails"
    fixed = data["corrected_argv"]
    assert fixed[fixed.index("--num-gpus") + 1] == "4"
    _assert_checks_clean(cli, "4xH200", fixed)


def test_vdn_with_ring_drops_ring_for_ulysses(cli):
    argv = ["sglang", "serve", "OpenVDN/vdn-minimax-h3", "--num-gpus", "4", "--ring-degree", "2"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 1
    assert {"M15", "M16"} <= set(_catalogs(data))
    fixed = data["corrected_argv"]
    assert "--ring-degree" not in fixed or fixed[fixed.index("--ring-degree") + 1] == "1"
    assert "--attention-backend" not in fixed
    clean = _assert_checks_clean(cli, "4xH200", fixed)
    assert clean["effective_config"]["ulysses_degree"] == 4


def test_fasth3_with_model_variant(cli):
    argv = ["sglang", "serve", "FastVideo/FastVideo-FastH3-8-Step-V2", "--num-gpus", "4", "--model-variant", "ref2va"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 1
    assert _finding(data, "M12")["stage"] == "launch"
    assert "W4" not in _catalogs(data), "the worker's variant check never sees FastH3 (M12 rejects it first)"
    fixed = data["corrected_argv"]
    assert "--model-variant" not in fixed
    _assert_checks_clean(cli, "4xH200", fixed)


def test_cfg_parallel_on_one_gpu_has_only_one_fix(cli):
    code, data, _ = cli("check", "--profile", "1xH100", "--", *H3, "--enable-cfg-parallel")
    assert code == 1
    assert {"C27", "C29"} <= set(_catalogs(data))
    fixed = data["corrected_argv"]
    assert fixed == H3, "more GPUs never help: H3 has no CFG parallelism (catalog 4.1.9)"
    assert any("CFG parallelism" in g for g in data["gives_up"])
    _assert_checks_clean(cli, "1xH100", fixed)


def test_direct_gpu_weight_loading_on_1xh100_auto_mode(cli, rules):
    if not any("C11" in r.catalog for r in rules):
        pytest.skip("the C11 rule (--direct-gpu-weight-loading vs the automatic DiT layerwise offload) is not written yet")
    code, data, _ = cli("check", "--profile", "1xH100", "--", *H3, "--direct-gpu-weight-loading")
    assert code == 1
    c11 = _finding(data, "C11")
    assert c11["message"] == "--direct-gpu-weight-loading requires a GPU-resident DiT; disable DiT CPU and layerwise offload"
    assert c11["stage"] == "launch"
    assert data["effective_config"]["residency"]["transformer"] == "layerwise-offload"  # < 120 GiB free
    fixed = data["corrected_argv"]
    assert fixed is not None
    _assert_checks_clean(cli, "1xH100", fixed)


def test_ring_on_rtx5090_class_gpu_fails_at_the_first_forward(cli):
    argv = H3 + ["--ring-degree", "2", "--attention-backend", "fa"]
    code, data, _ = cli("check", "--profile", "1xRTX5090", "--", *argv)
    assert code == 1
    r1 = _finding(data, "R1")
    assert r1["message"] == (
        "MiniMax H3 ring parallelism requires the FlashAttention backend (matches --ring-degree's general restriction)."
    )
    assert r1["stage"] == "first-request" and r1["severity"] == "error"
    assert "M5" not in _catalogs(data), "the launch check sees fa and passes"
    assert data["effective_config"]["dit_runtime_attention_backend"] == "torch_sdpa"
    fixed = data["corrected_argv"]
    assert fixed[fixed.index("--ring-degree") + 1] == "1"
    _assert_checks_clean(cli, "1xRTX5090", fixed)


def test_adaln_online_with_zero_plan_width(cli):
    argv = H3 + ["--num-gpus", "4", "--minimax-h3-adaln-online", "--minimax-h3-adaln-plan-width", "0"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 1
    l13 = _finding(data, "L13")
    assert l13["message"] == (
        "MiniMax H3 AdaLN cache max_plan_width must be positive; set --minimax-h3-adaln-plan-width to at least 1"
    )
    assert l13["stage"] == "after-download"
    fixed = data["corrected_argv"]
    assert fixed == argv[:-1] + ["4"]
    _assert_checks_clean(cli, "4xH200", fixed)


def test_no_ffmpeg_on_path(cli, tmp_path):
    profile = _profile(tmp_path, "no-ffmpeg", ffmpeg="false")
    code, data, _ = cli("check", "--profile", profile, "--", *H3, "--num-gpus", "4")
    assert code == 1
    w3 = _finding(data, "W3")
    assert w3["message"].startswith(
        "MiniMax H3 requires ffmpeg and ffprobe for media processing and validated output delivery; missing executables:"
    )
    assert w3["stage"] == "worker" and not w3["cannot_verify"]
    assert data["fix_status"] == "no-fix" and data["corrected_argv"] is None
    assert any("ffmpeg" in g for g in data["gives_up"])


def test_unknown_ffmpeg_is_cannot_verify(cli, tmp_path):
    profile = _profile(tmp_path, "ffmpeg-unknown", ffmpeg=None)
    code, data, _ = cli("check", "--profile", profile, "--", *H3, "--num-gpus", "4")
    assert code == 0
    w3 = _finding(data, "W3")
    assert w3["cannot_verify"] and w3["severity"] == "warning" and "hw.ffmpeg" in w3["unknown_facts"]


def test_rocm_skips_the_ffmpeg_check(cli, tmp_path):
    profile = _profile(tmp_path, "rocm-no-ffmpeg", platform="rocm", device_name="AMD Instinct MI300X",
                       compute_capability=None, flash_attn="false", ffmpeg="false")
    _, data, _ = cli("check", "--profile", profile, "--", *H3, "--num-gpus", "4")
    assert "W3" not in _catalogs(data)


def test_missing_fa_kernel_fails_the_first_forward(cli, tmp_path):
    profile = _profile(tmp_path, "no-fa-kernel", fa_kernel="false")
    code, data, _ = cli("check", "--profile", profile, "--", *H3, "--num-gpus", "4")
    assert code == 1
    r11 = _finding(data, "R11")
    assert r11["stage"] == "first-request" and r11["severity"] == "error" and not r11["cannot_verify"]
    assert data["fix_status"] == "no-fix"
    # torch_sdpa never loads the FA kernel
    _assert_checks_clean(cli, profile, H3 + ["--num-gpus", "4", "--attention-backend", "torch_sdpa"])


def test_fa_kernel_installed_is_clean(cli, tmp_path):
    profile = _profile(tmp_path, "fa-kernel", fa_kernel="true")
    data = _assert_checks_clean(cli, profile, H3 + ["--num-gpus", "4"])
    assert data["findings"] == []


def test_quality_high_needs_speed_mode_on_4xh200(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--request-quality", "high", "--request-steps", "50",
                        "--", *H3, "--num-gpus", "4")
    assert code == 1
    f = _finding(data, "R12")
    assert f["message"] == (
        "MiniMax-H3 quality=\"high\" is validated only for the strict 4xH200 fl2va deployment; mismatches: "
        "{'performance_mode': {'expected': 'speed', 'actual': 'auto'}}"
    )
    fixed = data["corrected_argv"]
    assert fixed == H3 + ["--num-gpus", "4", "--performance-mode", "speed"]
    code2, data2, _ = cli("check", "--profile", "4xH200", "--request-quality", "high", "--request-steps", "50",
                          "--", *fixed)
    assert code2 == 0 and _errors(data2) == [] and data2["fix_status"] == "clean"


def test_quality_high_off_h200_has_no_fix(cli):
    code, data, _ = cli("check", "--profile", "8xH100", "--request-quality", "high", "--", *H3, "--num-gpus", "4",
                        "--performance-mode", "speed")
    assert code == 1
    f = _finding(data, "R12")
    assert "'device': {'expected': 'NVIDIA H200 (compute capability 9.0)', 'actual': 'NVIDIA H100 80GB HBM3 (compute capability 90)'}" in f["message"]
    assert data["fix_status"] == "no-fix" and data["corrected_argv"] is None


@pytest.mark.parametrize("model,text", [
    ("FastVideo/FastVideo-FastH3-8-Step-V2", "FastH3 has no audited high-quality deployment"),
    ("FastVideo/FastVideo-FastH3-Omni-8-Step-V1", "FastH3 has no audited high-quality deployment"),
    ("OpenVDN/vdn-minimax-h3", "the VDN-H3 8-step hybrid checkpoint has no audited high-quality deployment"),
])
def test_quality_high_never_passes_on_distilled_models(cli, model, text):
    code, data, _ = cli("check", "--profile", "4xH200", "--request-quality", "high", "--",
                        "sglang", "serve", model, "--num-gpus", "4", "--performance-mode", "speed")
    assert code == 1
    assert text in _finding(data, "R12")["message"]
    assert data["corrected_argv"] is None


def test_invalid_request_quality(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--request-quality", "best", "--", *H3, "--num-gpus", "4")
    assert code == 1
    assert _finding(data, "R12")["message"] == "quality must be one of ['exact', 'lossless', 'high'], got 'best'"


def test_adaln_online_steps_beyond_the_slab(cli):
    argv = H3 + ["--num-gpus", "4", "--minimax-h3-adaln-online"]
    code, data, _ = cli("check", "--profile", "4xH200", "--request-steps", "80", "--", *argv)
    assert code == 1
    assert _finding(data, "R8")["message"] == (
        "num_inference_steps=80 needs up to 80 AdaLN plans but the online slab holds 64; "
        "raise SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS"
    )
    code2, data2, _ = cli("check", "--profile", "4xH200", "--request-steps", "80", "--",
                          "SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS=96", *argv)
    assert code2 == 0 and "R8" not in _catalogs(data2)
