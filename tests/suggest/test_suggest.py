"""`h3doctor suggest` (issue: search the launch space with check's rules and memory model).

Must show: for every built-in profile and model family a suggestion that checks clean; on the
hardware the sglang cookbook covers, a suggestion at least as parallel as its recipe and not
predicted to run out of memory. The speed figure of a search is in benchmarks/ (no timing here).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from h3doctor.engine.check import check, evaluate_launch
from h3doctor.facts import facts_from_mapping
from h3doctor.host.profiles import builtin_profile_names, load_profile
from h3doctor.sglang.families import FAMILIES
from h3doctor.suggest import SuggestRequest, run
from h3doctor.suggest.score import MARGIN_GIB, MARGIN_SHARE
from h3doctor.suggest.search import cookbook, search
from repo_paths import TESTS

CALIBRATION = json.loads((TESTS / "memory" / "calibration.json").read_text(encoding="utf-8"))


def _search(rules, table, hw, family="h3", prefer="balanced", **kw):
    model = FAMILIES[family].hub_id
    return search(hw, rules, table, {}, model=model, family=family, prefer=prefer, **kw)


def _assert_checks_clean(suggestion, hw, rules, table, intent=None):
    again = check(suggestion.argv, hw, rules, table, {}, intent or {})
    assert again.fix_status == "clean", (shlex.join(suggestion.argv), [f.rule.id for f in again.evaluation.findings])
    assert not [f.rule.id for f in again.evaluation.findings if f.severity == "error"]
    # not predicted to run out of memory: no memory verdict, only "cannot verify" where the model cannot tell
    assert not [f.rule.id for f in again.evaluation.findings if f.rule.judges_gpu_memory and not f.cannot_verify]
    return again


def _parallel(ctx):
    return ctx["args.tp_size"] * ctx["args.ulysses_degree"] * ctx["args.ring_degree"]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("profile", builtin_profile_names())
def test_every_builtin_profile_and_family_gets_a_suggestion_that_checks_clean(rules, table, profile, family):
    hw = load_profile(profile)
    result = _search(rules, table, hw, family)
    assert result.suggestions, result.rejected
    for s in result.suggestions:  # the best and every runner-up
        _assert_checks_clean(s, hw, rules, table)
        assert s.argv[2] == FAMILIES[family].hub_id and s.score.why
    keys = [s.score.key("balanced") for s in result.suggestions]
    assert keys == sorted(keys, reverse=True), "ranked best first"


def _cookbook_hardware(recipe):
    """The recipe's hardware: the built-in profile where there is one, else the calibration table's."""
    for name in builtin_profile_names():
        hw = load_profile(name)
        if recipe["device"].upper() in (hw.device_name or "").upper() and hw.gpu_count == recipe["gpu_count"]:
            return hw
    for name, spec in CALIBRATION["hardware"].items():
        if recipe["device"].upper() in spec["device_name"].upper() and spec["gpu_count"] == recipe["gpu_count"]:
            return facts_from_mapping(spec, name)
    h100 = load_profile("8xH100")  # the cookbook's 4xH100 runs: the built-in H100 facts, four of them
    assert recipe["device"] == "H100"
    return replace(h100, gpu_count=recipe["gpu_count"], description="four NVIDIA H100 80 GB")


@pytest.mark.parametrize("prefer", ["speed", "balanced"])
@pytest.mark.parametrize("recipe", cookbook(), ids=lambda r: r["id"])
def test_on_cookbook_hardware_the_suggestion_is_as_parallel_and_fits(rules, table, recipe, prefer):
    hw = _cookbook_hardware(recipe)
    result = _search(rules, table, hw, prefer=prefer)
    best = result.suggestions[0]
    again = _assert_checks_clean(best, hw, rules, table)
    layout = recipe["layout"]
    assert _parallel(again.evaluation.context) >= layout["tp"] * layout["ulysses"] * layout["ring"]
    assert recipe in result.recipes


def test_builtin_profiles_the_cookbook_covers(rules, table):
    covered = {name for name in builtin_profile_names() for r in cookbook()
               if r["device"].upper() in (load_profile(name).device_name or "").upper()
               and load_profile(name).gpu_count == r["gpu_count"]}
    assert covered == {"4xH200", "1xRTX5090"}  # the others are covered through the calibration hardware above


@pytest.mark.parametrize("recipe", cookbook(), ids=lambda r: r["id"])
def test_cookbook_data_says_what_its_command_does(rules, table, recipe):
    hw = _cookbook_hardware(recipe)
    ctx = evaluate_launch(shlex.split(f"sglang serve MiniMaxAI/MiniMax-H3 {recipe['argv']}"), hw, [], table, {}).context
    lay = recipe["layout"]
    assert (ctx["args.num_gpus"], ctx["args.tp_size"], ctx["args.ulysses_degree"], ctx["args.ring_degree"]) == (
        recipe["gpu_count"], lay["tp"], lay["ulysses"], lay["ring"])
    assert bool(ctx["args.use_fsdp_inference"]) == lay["fsdp"] and ctx["args.performance_mode"] == recipe["performance_mode"]


def test_speed_keeps_weights_resident_before_it_adds_gpus(rules, table):
    hw = load_profile("8xH100")
    result = _search(rules, table, hw, prefer="speed")
    best = result.suggestions[0].evaluation.context
    assert _parallel(best) == 8 and best["derived.residency"]["transformer"] == "resident"
    # Ulysses 8 does not keep the text encoder resident on 80 GB (H3D640 at the warmup); the best does
    assert best["derived.residency"]["text_encoder"] == "resident"
    scores = [s.score.speed for s in result.suggestions]
    assert scores == sorted(scores, reverse=True)


def test_one_gpu_holds_as_many_dit_blocks_as_fit(rules, table):
    hw = load_profile("1xRTX5090")
    best = _search(rules, table, hw, prefer="speed").suggestions[0]
    ctx = best.evaluation.context
    held = int(ctx["args.dit_layerwise_resident_layers"])
    assert ctx["derived.residency"]["transformer"] == "layerwise-offload" and held > 0
    one_more = [*best.argv[: best.argv.index("--dit-layerwise-resident-layers") + 1], str(held + 1)]
    over = evaluate_launch(one_more, hw, [], table, {}).context
    assert over["derived.memory.likely_over"] is True, "the search stopped short of the most blocks that fit"


def test_memory_preference_maximises_headroom(rules, table):
    hw = load_profile("4xH200")
    memory = _search(rules, table, hw, prefer="memory").suggestions
    speed = _search(rules, table, hw, prefer="speed").suggestions
    head = [s.score.headroom_gib for s in memory]
    assert head[0] == max(head) and head[0] > max(s.score.headroom_gib for s in speed)
    assert memory[0].evaluation.context["args.performance_mode"] == "memory"


def test_balanced_leaves_a_margin_that_speed_does_not(rules, table):
    hw = load_profile("1xH200")  # all resident fits one H200, with little to spare
    speed = _search(rules, table, hw, prefer="speed").suggestions[0].score
    balanced = _search(rules, table, hw, prefer="balanced").suggestions[0].score
    margin = max(MARGIN_GIB, MARGIN_SHARE * hw.gpu_memory_gib)
    assert speed.headroom_gib < margin <= balanced.headroom_gib
    assert speed.speed > balanced.speed


def test_quantization_only_when_asked(rules, table):
    hw = load_profile("1xH100")
    plain = _search(rules, table, hw, prefer="speed").suggestions
    assert not any("--quantization" in s.argv for s in plain)
    fp8 = _search(rules, table, hw, prefer="speed", quantization="fp8").suggestions
    assert fp8 and all(s.argv[s.argv.index("--quantization") + 1] == "fp8" for s in fp8)
    assert fp8[0].score.speed > plain[0].score.speed  # half the DiT bytes: more of it stays resident


def test_a_longer_request_holds_fewer_blocks(rules, table):
    hw = load_profile("1xRTX5090")
    request = {"resolution": "1344x768", "seconds": 6.0}
    warm = _search(rules, table, hw, prefer="speed").suggestions[0]
    long = _search(rules, table, hw, prefer="speed", intent=request).suggestions[0]
    assert long.score.terms["dit_resident"] < warm.score.terms["dit_resident"]
    _assert_checks_clean(long, hw, rules, table, request)


def test_when_nothing_clears_the_measured_workspace_the_most_headroom_comes_first(rules, table):
    hw = load_profile("1xRTX5090")
    request = {"resolution": "1344x768", "seconds": 12.0}
    result = _search(rules, table, hw, prefer="speed", intent=request)
    assert result.relaxed and result.suggestions
    head = [s.score.headroom_gib for s in result.suggestions]
    assert head == sorted(head, reverse=True)
    for s in result.suggestions:  # no error; the warning says why, and check calls none of them clean
        again = check(s.argv, hw, rules, table, {}, request)
        assert not any(f.severity == "error" for f in again.evaluation.findings)
        assert again.fix_status == "no-fix" and "H3D641" in again.unfixable
        assert s.evaluation.context["derived.memory.warmup_over"] is False


def test_a_launch_no_flag_saves_is_not_suggested_under_another_variant(rules, table):
    hw = load_profile("4xH200")
    result = _search(rules, table, hw, variant="hybrid")
    assert result.suggestions == [] and "H3D405" in result.rejected
    assert result.rejected["H3D405"]["count"] >= 1


def test_without_the_fa_kernel_it_suggests_sdpa_and_says_what_that_gives_up(rules, table):
    hw = replace(load_profile("4xH200"), fa_kernel=False)
    best = _search(rules, table, hw).suggestions[0]
    assert best.argv[-2:] == ["--attention-backend", "torch_sdpa"]
    assert best.gives_up and "FlashAttention" in best.gives_up[0]
    _assert_checks_clean(best, hw, rules, table)


def test_cli_json_matches_the_schema_and_exit_codes(cli):
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("h3doctor.schema").joinpath("suggest.schema.json").read_text())
    code, data, _ = cli("suggest", "--profile", "4xH200", "--prefer", "speed", "--request", "1344x768x5s", "--format", "json")
    assert code == 0 and [e.message for e in Draft202012Validator(schema).iter_errors(data)] == []
    assert data["best"]["checks_clean"] and data["request"] == {"resolution": "1344x768", "seconds": 5.0}
    assert all(r["suggestion_as_parallel"] for r in data["cookbook"]) and len(data["runner_ups"]) == 3
    code, data, _ = cli("suggest", "--profile", "4xH200", "--variant", "hybrid", "--runner-ups", "0", "--format", "json")
    assert code == 1 and data["best"] is None and data["rejected"][0]["rule"] == "H3D405"
    assert [e.message for e in Draft202012Validator(schema).iter_errors(data)] == []


@pytest.mark.parametrize("args,needle", [
    (["--request", "1344x768"], "--request must be WIDTHxHEIGHTxSECONDS"),
    (["--request", "1344x768x900s"], "--request must be WIDTHxHEIGHTxSECONDS"),
    (["--model", "black-forest-labs/FLUX.1-dev"], "is not a MiniMax-H3 family model"),
    (["--runner-ups", "99"], "--runner-ups must be between 0 and 10"),
    (["--quantization", "nope"], "--quantization must be one of fp8, convrot_int8"),
    (["--profile", "nope"], "no such hardware profile"),
])
def test_cli_usage_errors(cli, args, needle):
    code, _, err = cli("suggest", *args, json_output=False)
    assert code == 2 and needle in err and "Traceback" not in err


def test_cli_text_prints_the_best_command_on_a_line_of_its_own(cli):
    code, text, _ = cli("suggest", "--profile", "1xRTX5090", "--runner-ups", "1", json_output=False)
    assert code == 0
    lines = text.splitlines()
    best = lines[lines.index("Best (checks clean, fits in memory):") + 1].strip()
    assert best.startswith("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 1")
    code, data, _ = cli("check", "--profile", "1xRTX5090", "--", *shlex.split(best))
    assert code == 0 and data["fix_status"] == "clean"


def test_exec_launches_the_best_command(tmp_path):
    import json as _json
    import os
    import subprocess
    import sys

    # a stand-in sglang on PATH records its argv and exits with its own status
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stand_in = bindir / "sglang"
    stand_in.write_text(f"#!{sys.executable}\nimport json, sys\n"
                        f"open({str(tmp_path / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\nsys.exit(7)\n")
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    shown = subprocess.run([sys.executable, "-m", "h3doctor", "suggest", "--profile", "4xH200", "--runner-ups", "0",
                            "--format", "json"], capture_output=True, text=True, env=env, timeout=120)
    best = _json.loads(shown.stdout)["best"]["argv"]
    run = subprocess.run([sys.executable, "-m", "h3doctor", "suggest", "--profile", "4xH200", "--runner-ups", "0",
                          "--exec"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 7, run.stderr  # the server's own exit status
    assert _json.loads((tmp_path / "argv.json").read_text()) == best[1:]  # exactly the suggested command
    assert run.stdout == ""  # the report went to stderr: stdout is the server's


def test_run_uses_the_request_object(rules):
    data = run(SuggestRequest(profile="cpu", model="FastVideo/FastVideo-FastH3-8-Step-V2", runner_ups=0))
    assert data["family"]["key"] == "fh3" and data["best"]["argv"][2] == "FastVideo/FastVideo-FastH3-8-Step-V2"
    assert data["runner_ups"] == [] and data["best"]["memory"] is None  # CPU: memory is not modelled


def _schema_errors(data):
    from jsonschema import Draft202012Validator

    schema = json.loads(resources.files("h3doctor.schema").joinpath("suggest.schema.json").read_text())
    return [e.message for e in Draft202012Validator(schema).iter_errors(data)]


def test_nothing_fits_is_said_with_the_nearest_and_its_shortfall_exit_1(cli):
    # one RTX 4070: every placement's typical peak is over the 11.6 GiB free, so nothing fits
    code, data, _ = cli("suggest", "--profile", "1xRTX4070", "--runner-ups", "1", "--format", "json")
    assert code == 1 and data["status"] == "none-fits"
    best = data["best"]
    assert best["fits"] is False and "H3D641" in [w["rule"] for w in best["warnings"]]
    memory = best["memory"]
    assert best["shortfall_gib"] > 0
    assert best["shortfall_gib"] == pytest.approx(memory["peak_typical_gib"] - memory["capacity_gib"], abs=0.02)
    assert all(item["fits"] is False for item in data["runner_ups"])
    assert _schema_errors(data) == []
    code, text, _ = cli("suggest", "--profile", "1xRTX4070", "--runner-ups", "0", json_output=False)
    assert code == 1 and "Nothing fits" in text and "(checks clean, fits in memory)" not in text


def test_a_launch_that_fits_is_marked_so_exit_0(cli):
    code, data, _ = cli("suggest", "--profile", "4xH200", "--runner-ups", "1", "--format", "json")
    assert code == 0 and data["status"] == "fits"
    assert all(item["fits"] is True and item["shortfall_gib"] is None for item in [data["best"], *data["runner_ups"]])


def test_cpu_memory_fit_is_not_verified_and_no_gpu_is_claimed(cli):
    code, data, _ = cli("suggest", "--profile", "cpu", "--runner-ups", "1", "--format", "json")
    assert code == 0 and data["status"] == "cannot-verify"  # checks clean; the fit is not shown, and said so
    for item in [data["best"], *data["runner_ups"]]:
        assert item["fits"] is None and item["memory"] is None
        assert not any("GPU per request" in w or "GPUs on one request" in w for w in item["why"]), item["why"]
        assert any("not verified" in w for w in item["why"])


@pytest.mark.parametrize("profile", ["m3-max", "cpu"])
def test_no_memory_score_where_memory_is_not_modelled(cli, profile):
    """MPS and CPU: no memory model, so no memory score (null, "not modelled"), never a made-up 100."""
    code, data, _ = cli("suggest", "--profile", profile, "--runner-ups", "1", "--format", "json")
    items = [data["best"], *data["runner_ups"]]
    assert items and all(item["memory"] is None and item["score"]["memory"] is None for item in items)
    assert _schema_errors(data) == []
    _, text, _ = cli("suggest", "--profile", profile, "--runner-ups", "1", json_output=False)
    scores = [line.strip() for line in text.splitlines() if line.strip().startswith("score:")]
    assert scores and all(line.endswith("memory not modelled") for line in scores), scores
