"""The seed scenarios of the core issue, end to end through the CLI (exit codes and JSON)."""

from __future__ import annotations

RING = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"


def _rules(data):
    return [f["rule"] for f in data["findings"]]


def test_ring_with_sage_attn_needs_fa(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--", *RING.split())
    assert code == 1
    m5 = [f for f in data["findings"] if "M5" in f["catalog"].split(",")]
    assert m5 and m5[0]["message"] == "MiniMax-H3 ring parallelism requires the FlashAttention backend for the transformer"
    assert m5[0]["stage"] == "launch" and m5[0]["severity"] == "error"
    fixed = data["corrected_argv"]
    assert fixed == RING.replace("sage_attn", "fa").split()
    code2, data2, _ = cli("check", "--profile", "4xH200", "--", *fixed)
    assert code2 == 0 and data2["findings"] == []


def test_mps_needs_layerwise_offload_of_all_four(cli):
    code, data, _ = cli("check", "--profile", "m3-max", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 1
    m2 = [f for f in data["findings"] if f["catalog"] == "M2"][0]
    assert "['transformer', 'text_encoder', 'video_vae', 'audio_vae']" in m2["message"]
    assert data["corrected_argv"] == [
        "sglang", "serve", "MiniMaxAI/MiniMax-H3",
        "--layerwise-offload-components", "transformer", "text_encoder", "video_vae", "audio_vae",
    ]


def test_mps_with_torch_compile_reports_m3_and_fix_turns_it_off(cli):
    code, data, _ = cli("check", "--profile", "m3-max", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--enable-torch-compile")
    assert code == 1
    # beside them only the memory fit's "cannot verify" (H3D543: MPS memory is not modelled)
    assert [f["catalog"] for f in data["findings"] if not f["cannot_verify"]] == ["M2", "M3"]
    assert [f["rule"] for f in data["findings"] if f["cannot_verify"]] == ["H3D543"]
    fixed = data["corrected_argv"]
    assert fixed[fixed.index("--enable-torch-compile") + 1] == "false"
    code2, data2, _ = cli("check", "--profile", "m3-max", "--", *fixed)
    assert code2 == 0 and [f["rule"] for f in data2["findings"]] == ["H3D543"]


def test_four_h200_default_launch_is_clean(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    assert code == 0
    assert data["findings"] == [] and data["corrected_argv"] is None
    cfg = data["effective_config"]
    assert (cfg["sp_degree"], cfg["ulysses_degree"], cfg["ring_degree"]) == (4, 4, 1)  # catalog 1.4
    assert cfg["residency"]["transformer"] == "resident"  # >= 120 GiB free keeps the DiT resident (2.B)


def test_json_has_the_documented_top_level_keys(cli):
    _, data, _ = cli("check", "--profile", "4xH200", "--", *RING.split())
    for key in ("schema_version", "findings", "corrected_argv", "effective_config", "hardware"):
        assert key in data
    for key in ("rule", "catalog", "severity", "stage", "message"):
        assert key in data["findings"][0]


def test_json_output_matches_the_published_schema(cli):
    import json
    from importlib import resources

    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("h3doctor.schema").joinpath("report.schema.json").read_text())
    for argv, profile in ((RING.split(), "4xH200"), (["sglang", "serve", "MiniMaxAI/MiniMax-H3"], "m3-max"),
                          (["sglang", "serve", "black-forest-labs/FLUX.1-dev"], "cpu")):
        _, data, _ = cli("check", "--profile", profile, "--", *argv)
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(data)]
        assert errors == []
