"""Bad input gets a clear, located error and a documented exit code, never a traceback."""

from __future__ import annotations

import json


def test_unknown_profile(cli):
    code, _, err = cli("check", "--profile", "9xH900", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and "no such hardware profile" in err and "4xH200" in err


def test_malformed_profile_file_is_located(tmp_path, cli):
    bad = tmp_path / "p.yaml"
    bad.write_text("platform: cuda\ngpu_count: [oops\n")
    code, _, err = cli("check", "--profile", str(bad), "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and f"{bad}:" in err and "Traceback" not in err


def test_profile_with_wrong_types(tmp_path, cli):
    bad = tmp_path / "p.yaml"
    bad.write_text("platform: cuda\ngpu_count: four\n")
    code, _, err = cli("check", "--profile", str(bad), "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and "gpu_count" in err


def test_profile_file_round_trip(tmp_path, cli):
    good = tmp_path / "lab.json"
    good.write_text(json.dumps({"platform": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                                "gpu_count": 2, "gpu_memory_gib": 79.1, "ffmpeg": True}))
    code, data, _ = cli("check", "--profile", str(good), "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "2")
    assert code == 0 and data["hardware"]["gpu_free_gib"] == 79.1  # free defaults to total


def test_huge_profile_is_refused(tmp_path, cli):
    big = tmp_path / "big.yaml"
    big.write_text("platform: cuda\n" + "# x\n" * 400_000)
    code, _, err = cli("check", "--profile", str(big), "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code == 2 and "larger than" in err


def test_no_profile_is_a_usage_error(cli):
    code, _, err = cli("check", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3")
    assert code in (0, 1, 2) and "Traceback" not in err


def test_unknown_flag_is_a_finding_not_a_crash(cli):
    code, data, err = cli("check", "--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--no-such-flag-xyz")
    assert code == 1 and "Traceback" not in err
    assert [f["catalog"] for f in data["findings"]] == ["A6"]


def test_unmodelled_flags_pass_through_untouched(cli):
    argv = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--port", "30010", "--host=0.0.0.0", "--ring-degree", "2",
            "--ulysses-degree", "2", "--num-gpus", "4", "--attention-backend", "sage_attn", "--log-level", "debug"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 1
    fixed = data["corrected_argv"]
    assert fixed == [t if t != "sage_attn" else "fa" for t in argv]


def test_not_an_h3_model_exits_zero_with_a_note(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--", "sglang", "serve", "black-forest-labs/FLUX.1-dev")
    assert code == 0 and data["is_h3_launch"] is False and data["note"]


def test_bare_flags_are_read_as_serve_flags(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4")
    assert code == 0 and data["command"]["entry"] == "serve" and data["effective_config"]["num_gpus"] == 4


def test_fail_on_warning_raises_the_threshold(cli):
    argv = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--performance", "speed"]
    code, data, _ = cli("check", "--profile", "4xH200", "--", *argv)
    assert code == 0 and [f["severity"] for f in data["findings"]] == ["warning"]
    code, _, _ = cli("check", "--profile", "4xH200", "--fail-on", "warning", "--", *argv)
    assert code == 1


def test_rules_json_and_rule_explain(cli):
    code, out, _ = cli("rules", "--format", "json", json_output=False)
    rules = json.loads(out)
    assert code == 0 and any(r["id"] == "H3D305" and "M5" in r["catalog"] for r in rules)
    code, out, _ = cli("rule", "H3D305", json_output=False)
    assert code == 0 and "ring parallelism requires the FlashAttention" in out
    code, _, err = cli("rule", "ring-needs-flashatention", json_output=False)
    assert code == 2 and "did you mean ring-needs-flashattention" in err


def test_no_fix_still_fixes_the_rest_and_shows_the_nearest_launch(cli):
    # W5 (hybrid needs merged weights) has no flag fix; C28 (ring 2 on one GPU) does.
    argv = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "1", "--ring-degree", "2", "--model-variant", "hybrid"]
    code, data, _ = cli("check", "--profile", "1xL40S", "--", *argv)
    assert code == 1 and data["fix_status"] == "no-fix" and data["corrected_argv"] is None
    assert data["nearest_argv"] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "1", "--ring-degree", "1",
                                    "--model-variant", "hybrid"]
    assert any(g.startswith("H3D405") for g in data["gives_up"])


def test_bad_h3doctor_options_are_usage_errors(cli):
    for args in (("check", "--format", "xml", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"),
                 ("check", "--profile", "4xH200", "--request-steps", "abc", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"),
                 ("rule",)):
        code, _, err = cli(*args, json_output=False)
        assert code == 2, (args, err)
        assert "Error:" in err and "Traceback" not in err and "internal error" not in err
