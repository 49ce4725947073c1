"""Launch-stage rules (catalog D, P, F, A, V, M) on inputs rule examples cannot carry:
--config files, custom hardware profiles, and the CLI's JSON report."""

from __future__ import annotations

import json
import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.facts import facts_from_mapping
from h3doctor.host.profiles import load_profile

H = "sglang serve MiniMaxAI/MiniMax-H3"


@pytest.fixture
def run(rules, table):
    def _run(command: str, profile="4xH200", env=None):
        hw = facts_from_mapping(profile, "test") if isinstance(profile, dict) else load_profile(profile)
        return check(shlex.split(command), hw, rules, table, env or {})

    return _run


def ids(result) -> list[str]:
    return [f.rule.id for f in result.evaluation.findings]


def finding(result, rule_id):
    return next(f for f in result.evaluation.findings if f.rule.id == rule_id)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- --config (catalog 1.2 step 4): values are not converted or checked against choices -------

def test_config_string_false_is_truthy_and_fixed_on_the_command_line(run, tmp_path):
    cfg = write(tmp_path, "mac.yaml", 'enable_torch_compile: "false"\nlayerwise_offload_components: [all]\n')
    result = run(f"{H} --config {cfg}", "m3-max")
    assert "H3D950" in ids(result) and "H3D303" in ids(result)  # sglang compiles: "false" is truthy
    assert "enable_torch_compile" in finding(result, "H3D950").message
    assert result.corrected_command == f"{H} --config {cfg} --enable-torch-compile false"


def test_config_boolean_false_is_clean(run, tmp_path):
    cfg = write(tmp_path, "mac.yaml", "enable_torch_compile: false\nlayerwise_offload_components: [all]\n")
    result = run(f"{H} --config {cfg}", "m3-max")
    assert "H3D950" not in ids(result) and "H3D303" not in ids(result)


@pytest.mark.parametrize(
    "name,text,extra,profile,rule,message,fix",
    [
        ("c.json", json.dumps({"performance_mode": "fast"}), " --num-gpus 4", "4xH200", "H3D109",  # B8 (in H3D109)
         "Invalid performance_mode='fast'. Expected one of ('manual', 'auto', 'speed', 'memory').",
         "--performance-mode auto"),
        ("c.yaml", "warmup_mode: always\n", " --num-gpus 4", "4xH200", "H3D110",  # B10
         "Invalid --warmup-mode 'always'; expected one of ('off', 'request', 'server').", "--warmup-mode server"),
        ("c.yaml", "dit_layerwise_residency_lifetime: forever\n", "", "1xH100", "H3D206",  # C7 (in H3D206)
         "Invalid --dit-layerwise-residency-lifetime 'forever'; expected one of ('forward', 'permanent').",
         "--dit-layerwise-residency-lifetime forward"),
        ("c.yaml", "batching_mode: static\n", " --num-gpus 4", "4xH200", "H3D231",  # C31
         "batching_mode must be one of: dynamic", "--batching-mode dynamic"),
    ],
)
def test_config_value_outside_the_choices(run, tmp_path, name, text, extra, profile, rule, message, fix):
    """sglang does not check --config values against argparse's choices; its own checks catch them,
    and the fix gives the flag on the command line, which wins over the file."""
    cfg = write(tmp_path, name, text)
    result = run(f"{H}{extra} --config {cfg}", profile)
    assert finding(result, rule).message == message
    assert result.corrected_command == f"{H}{extra} --config {cfg} {fix}"


def test_config_malformed_file(run, tmp_path):
    cfg = write(tmp_path, "c.yaml", "num_gpus: [4\n")
    result = run(f"{H} --num-gpus 4 --config {cfg}")
    assert "H3D031" in ids(result) and result.fix_status == "no-fix"


def test_removed_config_keys_are_derived(run, tmp_path):  # A8: derived, no rule yet (see report)
    cfg = write(tmp_path, "c.yaml", "warmup: true\ndecoder_tp: 2\n")
    result = run(f"{H} --num-gpus 4 --config {cfg}")
    assert result.evaluation.context["derived.config_removed_message"] == (
        "Removed server argument(s): decoder_tp -> decoder_sp for decoder/VAE parallel decode; "
        "warmup -> warmup_mode=request or warmup_mode=off"
    )


# -- adjust phase --------------------------------------------------------------------------------

def test_more_gpus_than_visible_only_fails_in_auto_mode(run):  # B9
    assert "H3D109" in ids(run(f"{H} --num-gpus 8"))
    assert "H3D109" not in ids(run(f"{H} --num-gpus 8 --performance-mode speed"))
    assert "H3D109" not in ids(run(f"{H} --num-gpus 8", "m3-max"))


def test_base_gpu_id_counts_toward_the_device_range(run):  # B9: [base_gpu_id, base_gpu_id + num_gpus)
    result = run(f"{H} --num-gpus 4 --base-gpu-id 2")
    assert finding(result, "H3D109").message == "AssertionError: Invalid device id"
    assert result.corrected_command == f"{H} --num-gpus 2 --base-gpu-id 2"


def test_attention_backend_config_file_is_loaded_not_rejected(run, tmp_path):  # B15, M6
    cfg = write(tmp_path, "abc.json", json.dumps({"compute_mode": "fp8"}))
    result = run(f"{H} --num-gpus 4 --attention-backend subblock_sparse_attn --attention-backend-config {cfg}")
    assert "H3D115" not in ids(result)
    assert finding(result, "H3D306").message == "SubBlock compute_mode must be 'bf16' or 'sage_fp8', got 'fp8'."


def test_snapshot_offload_on_shared_memory_cuda(run):  # B5 on an integrated device (GB10-like)
    gb10 = {"platform": "cuda", "compute_capability": "12.1", "gpu_count": 1, "gpu_memory_gib": 119.0,
            "shares_host_memory": True}
    result = run(f"{H} --component-residency text_encoder=snapshot-offload", gb10)
    assert "H3D105" in ids(result)


def test_component_backend_parse_error_wins_over_bad_name(run):  # B14 before B13: the map is parsed first
    result = run(f"{H} --num-gpus 4 --component-attention-backends text_encoder=flash,transformer")
    assert "H3D114" in ids(result) and "H3D113" not in ids(result)


# -- validation ------------------------------------------------------------------------------------

def test_dp_size_zero_divides_by_zero(run):  # C24/C25
    result = run(f"{H} --num-gpus 4 --dp-size 0")
    assert finding(result, "H3D225").message == "ZeroDivisionError: integer modulo by zero"
    assert "H3D224" not in ids(result)


def test_parallel_checks_are_skipped_on_cpu(run):  # C15-C28 are not run on the CPU platform
    assert "H3D215" not in ids(run(f"{H} --kv-gather-degree 0", "cpu"))


# -- model hook: the backend probe (M11) per platform -------------------------------------------

ROCM = {"platform": "rocm", "compute_capability": "9.4", "gpu_count": 8, "gpu_memory_gib": 191.0}


@pytest.mark.parametrize("backend,message", [
    ("sage_attn", "SAGE_ATTN is not supported on rocm."),
    ("video_sparse_attn_h3", "Invalid attention backend for rocm: video_sparse_attn_h3"),
    ("aiter_sage", "Attention backend 'aiter_sage' does not implement packed varlen attention"),
])
def test_rocm_probe(run, backend, message):
    result = run(f"{H} --num-gpus 8 --ulysses-degree 8 --component-attention-backends transformer={backend}", ROCM)
    assert finding(result, "H3D311").message == message


def test_rocm_default_aiter_passes_the_probe(run):
    assert "H3D311" not in ids(run(f"{H} --num-gpus 8", ROCM))


def test_probe_needs_the_capability(run):
    unknown = {"platform": "cuda", "gpu_count": 1, "gpu_memory_gib": 80.0}
    f = finding(run(f"{H} --attention-backend subblock_sparse_attn", unknown), "H3D311")
    assert f.cannot_verify and f.severity == "warning"


def test_vdn_hybrid_on_an_unsupported_gpu(run):
    spark = {"platform": "cuda", "compute_capability": "12.1", "gpu_count": 1, "gpu_memory_gib": 119.0,
             "shares_host_memory": True}
    result = run("sglang serve OpenVDN/vdn-minimax-h3", spark)
    assert finding(result, "H3D311").message.startswith("hybrid_window_attn_h3 (VDN-H3) needs compute capability")
    assert result.corrected_command is None  # VDN-H3 needs the hybrid backend: no flag change helps


def test_hybrid_needs_flash_attention_on_blackwell(run):
    b200_no_fa = {"platform": "cuda", "compute_capability": "10.0", "gpu_count": 1, "gpu_memory_gib": 178.0,
                  "flash_attn": False}
    f = finding(run("sglang serve OpenVDN/vdn-minimax-h3", b200_no_fa), "H3D311")
    assert f.message == "RuntimeError: hybrid_window_attn_h3 requires FlashAttention for its dense legs"


def test_subblock_sage_fp8_on_mac_reports_unknown_capability(run):  # M7 with no capability
    result = run(f"{H} --layerwise-offload-components all --attention-backend subblock_sparse_attn "
                 "--attention-backend-config compute_mode=sage_fp8", "m3-max")
    assert finding(result, "H3D307").message.endswith("found unknown.")


def test_an_unfixable_finding_a_later_fix_removes_is_not_a_no_fix(run):  # M7 then M8 on an A100
    """sage_fp8 SubBlock on sm80: M7 has no fix, but M8's fix (SubBlock cannot run here: fa) takes
    the transformer off SubBlock, so M7 no longer fires and the launch is fixed, not given up."""
    result = run(f"{H} --attention-backend subblock_sparse_attn --attention-backend-config compute_mode=sage_fp8",
                 "1xA100")
    assert {"H3D307", "H3D311"} <= set(ids(result))
    assert result.fix_status == "fixed" and result.unfixable == []
    assert not any(g.startswith("H3D307") for g in result.gives_up)
    assert result.corrected_argv[result.corrected_argv.index("--attention-backend") + 1] == "fa"
    again = run(shlex.join(result.corrected_argv), "1xA100")
    assert again.fix_status == "clean"


# -- the CLI --------------------------------------------------------------------------------------------

def test_cli_reports_launch_rules_in_sglang_order(cli):
    code, out, _ = cli("check", "--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3",
                       "--num-gpus", "8", "--disagg-role", "denoiser")
    assert code == 1
    errors = [f["rule"] for f in out["findings"] if f["severity"] == "error"]
    assert errors[:2] == ["H3D103", "H3D109"]  # B3 (post_init) before B9 (auto-tuner)
    assert out["corrected_command"] == "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"


def test_unknown_gpu_count_cannot_verify_the_device_range(run):  # B9 with a probe that could not count
    f = finding(run(f"{H} --num-gpus 4", {"platform": "cuda", "compute_capability": "9.0", "gpu_count": None,
                                           "gpu_memory_gib": 139.8}), "H3D109")
    assert f.cannot_verify and f.severity == "warning"
