"""Enumerations that differ between sglang releases (flagdata/enums.json) decide the messages and
verdicts of the rules that validate names against them."""

from __future__ import annotations

import shlex

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table

RULES = load_rules()
H3 = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"


def findings(argv: str, version: str, profile: str = "4xH200") -> dict[str, str]:
    target = releases.target(version, None)
    result = check(shlex.split(argv), load_profile(profile), RULES, load_flag_table(target.table_version), {}, {},
                   release=target)
    return {f.rule.id: f.message for f in result.evaluation.findings}


def test_enum_data_is_keyed_by_release():
    assert "snapshot-offload" not in releases.enum_values("COMPONENT_RESIDENCY_MODES", "0.5.19")
    assert "snapshot-offload" in releases.enum_values("COMPONENT_RESIDENCY_MODES", "0.5.20")
    assert releases.enum_values("COMPONENT_RESIDENCY_MODES", "0.5.17") is None
    assert "hybrid_window_attn_h3" not in releases.enum_values("AttentionBackendEnum", "0.5.19")
    assert "fp8_fa_sm120" in releases.enum_values("AttentionBackendEnum", "0.5.21")
    assert releases.enum_values("AttentionRole", "0.5.21") is None
    assert "prompt_encoder" in releases.enum_values("RoleType", "0.5.23")
    assert "prompt_encoder" not in releases.enum_values("RoleType", "0.5.22")


def test_snapshot_offload_is_an_unknown_mode_before_0_5_20():
    argv = f"{H3} --component-residency transformer=snapshot-offload"
    assert findings(argv, "0.5.19")["H3D104"] == (
        "Invalid component residency mode 'snapshot-offload' for 'transformer'; "
        "expected one of: component-offload, layerwise-offload, resident")
    assert "H3D104" not in findings(argv, "0.5.20")


def test_component_backend_names_are_the_releases_enum():
    argv = f"{H3} --component-attention-backends text_encoder=hybrid_window_attn_h3"
    message = findings(argv, "0.5.19")["H3D113"]
    assert message.startswith("Invalid attention backend 'hybrid_window_attn_h3'. Available options are: ['fa2', ")
    assert "'sol_attn'" in message and "'cube_sparse_attn'" not in message
    assert "H3D113" not in findings(argv, "0.5.20")


def test_role_suffixes_exist_from_0_5_22():
    argv = f"{H3} --component-attention-backends text_encoder.both=torch_sdpa"
    assert "H3D114" not in findings(argv, "0.5.21")
    assert findings(argv, "0.5.22")["H3D114"].startswith("Invalid attention role 'both'")


def test_disaggregation_roles_are_the_releases_role_type(tmp_path):
    # the command line has choices; a --config value reaches RoleType.from_string
    config = tmp_path / "launch.json"
    config.write_text('{"disagg_role": "prompt_encoder", "num_gpus": 4}', encoding="utf-8")
    argv = f"sglang serve MiniMaxAI/MiniMax-H3 --config {config}"
    assert findings(argv, "0.5.22")["H3D103"] == (
        "Invalid role: prompt_encoder. Must be one of: monolithic, encoder, denoiser, decoder, server")
    assert findings(argv, "0.5.23")["H3D103"].endswith("disaggregation role 'prompt_encoder' is not supported")


def test_deprecated_quantization_alias_is_mapped_in_0_5_22(tmp_path):
    # two entries for one component (the file's key and the flag's spelling differ only by a dash)
    config = tmp_path / "launch.json"
    config.write_text('{"component_quantizations": {"text-encoder": "kitchen_int8"}, "num_gpus": 4}', encoding="utf-8")
    argv = f"sglang serve MiniMaxAI/MiniMax-H3 --config {config} --component-quantizations.text_encoder convrot_int8"
    assert "H3D102" not in findings(argv, "0.5.22")
    assert findings(argv, "0.5.23")["H3D102"] == (
        "Conflicting quantization overrides for 'text_encoder': 'kitchen_int8' and 'convrot_int8'")


def test_0_5_19_moves_weight_files_only_for_dit_encoder_and_vae_components():
    both = "--component-paths.{c} /w/a.safetensors --component-weights-paths.{c} /w/b.safetensors"
    other = f"{H3} " + both.format(c="conditioning_projection")
    assert "H3D102" not in findings(other, "0.5.19")  # stays a component path: no conflict
    assert findings(other, "0.5.20")["H3D102"].startswith("Conflicting weight overrides for component 'conditioning_projection'")
    vae = f"{H3} " + both.format(c="video_vae")
    assert findings(vae, "0.5.19")["H3D102"].startswith("Conflicting weight overrides for component 'video_vae'")
