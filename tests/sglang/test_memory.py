"""Memory fit (issue: predict the OOM before the download): the calibration table of published
peaks, the issue's examples, and the launches that ran and must not be flagged."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from h3doctor.engine.check import check
from h3doctor.facts import facts_from_mapping
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.memory import COMPONENTS, budget
from h3doctor.verified import NEWEST_VERIFIED
from repo_paths import REPO, TESTS

TABLE = json.loads((TESTS / "memory" / "calibration.json").read_text(encoding="utf-8"))
MODEL = "sglang serve MiniMaxAI/MiniMax-H3"


def _hw(name):
    spec = TABLE["hardware"].get(name)
    return facts_from_mapping(spec, name) if spec else load_profile(name)


def predict(point, rules, table):
    """(check result, the predicted figure comparable with the point's measurement)."""
    result = check(shlex.split(f"{MODEL} {point['argv']}"), _hw(point["hw"]), rules, table, {}, point.get("request") or {})
    memory = result.evaluation.context["derived.memory"]
    if point["kind"] == "A":  # allocated: neither the CUDA context nor the rule's safety margin
        value = memory["peak_live_gib"] - memory["context_gib"] - memory["live_margin_gib"]
    else:
        value = memory["peak_typical_gib"]
    return result, value, memory


def _ids(result):
    return {f.rule.id for f in result.evaluation.findings if f.severity == "error"}


@pytest.fixture(scope="module")
def env(rules):
    return rules, load_flag_table("0.5.23")


@pytest.mark.parametrize("point", TABLE["points"], ids=lambda p: f"point-{p['id']}")
def test_calibration_point(point, env):
    result, value, memory = predict(point, *env)
    errors = _ids(result)
    if point["outcome"] == "runs":
        assert not errors & {"H3D540", "H3D640"}, f"a launch that ran is flagged: {memory}"
    elif point["outcome"] == "oom-load":
        assert "H3D540" in errors
    elif point["outcome"] == "oom-warmup-fails-open":  # the OOM is named; sglang serves on (one GPU)
        warned = {f.rule.id for f in result.evaluation.findings if f.severity == "warning"}
        assert "H3D642" in warned and not errors & {"H3D540", "H3D640"}, memory
    else:
        assert point["outcome"] == "oom-first-forward"
        assert "H3D640" in errors and "H3D540" not in errors
    if point.get("band_pct") is not None:
        error_pct = 100 * (value - point["measured_gib"]) / point["measured_gib"]
        assert abs(error_pct) <= point["band_pct"], f"predicted {value:.2f} GiB vs measured {point['measured_gib']} ({error_pct:+.1f}%)"


ISSUE_EXAMPLES = [
    # (profile, argv after the model, stage of the expected finding)
    ("1xRTX5090", "--performance-mode speed", "H3D540"),
    ("1xL40S", "--performance-mode speed", "H3D540"),
    ("8xH100", "--num-gpus 4 --ulysses-degree 4 --performance-mode speed", "H3D540"),
]


@pytest.mark.parametrize("profile,argv,rule", ISSUE_EXAMPLES)
def test_issue_examples_fail_and_their_fix_fits(profile, argv, rule, env):
    rules, table = env
    hw = load_profile(profile)
    result = check(shlex.split(f"{MODEL} {argv}"), hw, rules, table, {})
    assert rule in _ids(result)
    assert result.fix_status == "fixed" and result.corrected_argv
    again = check(result.corrected_argv, hw, rules, table, {})
    assert not _ids(again), [f.message for f in again.evaluation.findings]
    memory = again.evaluation.context["derived.memory"]
    assert memory["load_gib"] <= memory["capacity_gib"] and memory["peak_live_gib"] <= memory["capacity_gib"]


def test_generate_on_a_5090_in_speed_mode_is_an_error_with_a_fix(env):
    rules, table = env
    argv = shlex.split('sglang generate --model-path MiniMaxAI/MiniMax-H3 --prompt "a cat" --performance-mode speed')
    result = check(argv, load_profile("1xRTX5090"), rules, table, {})
    assert "H3D540" in _ids(result)
    # the memory fix is made; a pure command-line generate still lacks its request task (H3D807,
    # only --config can give one), so the fixed command is the nearest one
    assert result.fix_status == "no-fix" and "H3D807" in _ids(result)
    assert result.nearest_argv[:5] == argv[:5]  # the user's own tokens stay, in their order
    assert "H3D540" not in _ids(check(result.nearest_argv, load_profile("1xRTX5090"), rules, table, {}))


def test_l40s_ring_of_four_in_speed_mode(env):
    rules, table = env
    hw = facts_from_mapping({"platform": "cuda", "device_name": "NVIDIA L40S", "compute_capability": "8.9",
                             "gpu_count": 4, "gpu_memory_gib": 44.5, "host_memory_gib": 512}, "4xL40S")
    result = check(shlex.split(f"{MODEL} --num-gpus 4 --ulysses-degree 4 --performance-mode speed"), hw, rules, table, {})
    finding = next(f for f in result.evaluation.findings if f.rule.id == "H3D540")
    # L40S peer access is unknown: with or without the text-encoder fold it does not fit
    assert finding.severity == "error" and not finding.cannot_verify


def test_a_component_residency_the_layerwise_list_cannot_move_is_no_fix_not_a_loop(env):
    """--component-residency wins over --layerwise-offload-components: the memory fix must not
    propose a list that changes nothing (it looped until the fix loop gave up)."""
    rules, table = env
    hw = load_profile("1xRTX5090")
    result = check(shlex.split(f"{MODEL} --component-residency all=resident"), hw, rules, table, {})
    assert "H3D540" in _ids(result)
    assert result.fix_status == "no-fix" and "H3D540" in result.unfixable
    partly = check(shlex.split(f"{MODEL} --component-residency transformer=resident --performance-mode speed"),
                   hw, rules, table, {})
    assert partly.fix_status == "no-fix"  # the DiT alone (61.7 GiB) is more than the card
    rest = check(shlex.split(f"{MODEL} --component-residency video_vae=resident --performance-mode speed"),
                 hw, rules, table, {})
    assert rest.fix_status == "fixed"  # the text encoder and the DiT can still move
    assert "--layerwise-offload-components" in rest.corrected_argv


def test_default_4xh200_is_not_flagged(env):
    rules, table = env
    result = check(shlex.split(f"{MODEL} --num-gpus 4"), load_profile("4xH200"), rules, table, {})
    assert not {f.rule.id for f in result.evaluation.findings} & {"H3D540", "H3D640", "H3D641", "H3D542"}


def test_unknown_gpu_memory_is_cannot_verify_not_a_pass(env):
    rules, table = env
    hw = facts_from_mapping({"platform": "cuda", "device_name": "NVIDIA H100", "compute_capability": "9.0",
                             "gpu_count": 1}, "no-memory")
    result = check(shlex.split(f"{MODEL} --performance-mode speed"), hw, rules, table, {})
    load = [f for f in result.evaluation.findings if f.rule.id == "H3D540"]
    assert load and load[0].cannot_verify and load[0].severity == "warning"


def test_budget_is_in_the_effective_configuration(env):
    from h3doctor.output.json_report import build

    rules, table = env
    result = check(shlex.split(f"{MODEL} --num-gpus 4"), load_profile("4xH200"), rules, table, {})
    memory = build(result)["effective_config"]["memory"]
    assert memory["capacity_gib"] == 139.8
    assert set(memory["load_by_component_gib"]) >= {"transformer", "text_encoder", "video_vae", "audio_vae"}
    assert memory["load_gib"] < memory["peak_typical_gib"] < memory["capacity_gib"]


def test_the_bar_shows_weights_streamed_workspace_context_and_overflow(env):
    from h3doctor.output.memory_bar import segments

    rules, table = env
    over = check(shlex.split(f"{MODEL} --performance-mode speed"), load_profile("1xRTX5090"), rules, table, {})
    parts = dict(segments(over.evaluation.context["derived.memory"]))
    assert parts["text_encoder"] == pytest.approx(47.97, abs=0.01) and parts["transformer"] == pytest.approx(61.73, abs=0.01)
    assert "over" in parts and "headroom" not in parts
    memory = over.evaluation.context["derived.memory"]
    assert parts["over"] == pytest.approx(memory["peak_typical_gib"] - memory["capacity_gib"], abs=0.05)
    fits = check(shlex.split(f"{MODEL} --num-gpus 4"), load_profile("4xH200"), rules, table, {})
    parts = dict(segments(fits.evaluation.context["derived.memory"]))
    assert "headroom" in parts and "over" not in parts
    assert sum(parts.values()) == pytest.approx(139.8, abs=0.1)  # the bar spans the card


# A release whose figures are lower bounds (docs/memory.md, "Releases other than the calibrated one")
_PLACEMENTS = ("resident", "component-offload", "layerwise-offload")


@pytest.mark.parametrize("modes", [dict(zip(COMPONENTS, (m, m, m, "resident"))) for m in _PLACEMENTS]
                         + [{"transformer": "layerwise-offload", "text_encoder": "resident", "video_vae": "component-offload"}])
@pytest.mark.parametrize("gpus", [1, 4, 8])
def test_the_lower_bound_never_exceeds_the_calibrated_figures(modes, gpus):
    hw = load_profile("8xH200")
    a = {"num_gpus": gpus, "tp_size": 1, "ulysses_degree": gpus, "ring_degree": 1, "dp_size": 1, "warmup_mode": "server",
         "performance_mode": "auto", "dit_layerwise_resident_layers": 3.0, "dit_offload_prefetch_size": 2.0}
    exact = budget(a, modes, "h3", hw, {}, "serve", {}, NEWEST_VERIFIED)
    bound = budget(a, modes, "h3", hw, {}, "serve", {}, NEWEST_VERIFIED, lower_bound=True)
    assert bound.load_gib <= exact.load_gib
    assert bound.peak_live_gib <= exact.peak_live_gib
    assert bound.load_gib > 0


# The startup warmup that sglang 0.5.23 survives (entrypoints/http_server.py:114-117, fail-open
# without --warmup-resolutions; one GPU per replica, gpu_worker.py:840-860) and the one it does not
_TWENTY_RESIDENT = "--performance-mode memory --layerwise-offload-components dit,text_encoder,vae --dit-layerwise-resident-layers 20"


def _warnings(result):
    return {f.rule.id for f in result.evaluation.findings if f.severity == "warning"}


@pytest.mark.parametrize("extra,fatal", [
    ("", False),  # one GPU, default warmup: sglang logs the failure and serves
    (" --warmup-resolutions 1344x768", True),  # an explicit warmup aborts startup when it fails
])
def test_a_single_gpu_warmup_oom_is_survived_unless_the_warmup_is_explicit(extra, fatal, env):
    rules, table = env
    result = check(shlex.split(f"{MODEL} {_TWENTY_RESIDENT}{extra}"), load_profile("1xRTX5090"), rules, table, {})
    assert ("H3D640" in _ids(result)) is fatal
    assert ("H3D642" in _warnings(result)) is not fatal
    memory = result.evaluation.context["derived.memory"]
    assert memory["warmup_fails_open"] is not fatal and memory["peak_live_gib"] > memory["capacity_gib"]


def test_a_multi_gpu_warmup_oom_is_fatal(env):
    rules, table = env
    hw = _hw("2xRTX5090")
    result = check(shlex.split(f"{MODEL} --num-gpus 2 --ulysses-degree 2 {_TWENTY_RESIDENT}"), hw, rules, table, {})
    assert "H3D640" in _ids(result) and "H3D642" not in _warnings(result)


def test_a_warmup_whose_weights_alone_do_not_fit_is_an_error_on_one_gpu_too(env):
    """No request of any size runs: the resident DiT blocks alone are more than the card."""
    rules, table = env
    result = check(shlex.split(f"{MODEL} --performance-mode memory --layerwise-offload-components dit,text_encoder,vae "
                               "--dit-layerwise-resident-layers 40"), load_profile("1xL40S"), rules, table, {})
    memory = result.evaluation.context["derived.memory"]
    assert "H3D640" in _ids(result) and memory["peak_weights_gib"] > memory["capacity_gib"]


@pytest.mark.parametrize("point_id", ["A", "B"])
def test_the_cookbook_consumer_recipes_are_not_blocked(point_id, env):
    rules, table = env
    point = next(p for p in TABLE["points"] if p["id"] == point_id)
    result = check(shlex.split(f"{MODEL} {point['argv']}"), _hw(point["hw"]), rules, table, {})
    assert not _ids(result), [f.message for f in result.evaluation.findings]
    # what is said is that the full-size startup warmup is predicted over the card and survived;
    # requests of its size fail, so no corrected command is called clean: none fits this card
    assert "H3D642" in _warnings(result)
    assert result.fix_status == "no-fix" and result.corrected_argv is None


def test_the_cookbooks_48_gb_card_is_in_the_catalog_as_calibrated(env):
    """`--profile 1xRTX6000Ada` is the card the calibration's 48 GB tier is judged on, and that tier
    is still an out-of-memory there: its forty resident blocks alone are more than the card."""
    rules, table = env
    point = next(p for p in TABLE["points"] if p["id"] == "Ada")
    catalog, calibrated = load_profile("1xRTX6000Ada"), _hw(point["hw"])
    assert (catalog.gpu_memory_gib, catalog.compute_capability, catalog.device_name) == \
        (calibrated.gpu_memory_gib, calibrated.compute_capability, calibrated.device_name)
    result = check(shlex.split(f"{MODEL} {point['argv']}"), catalog, rules, table, {})
    assert "H3D640" in _ids(result)


def test_a_release_without_its_memory_file_says_so_and_no_figure_reads_none(tmp_path):
    """A shipped h3doctor whose release folder lacks the release's file (a packaging slip, a release
    added without its memory model) cannot judge any fit: one "cannot verify" (H3D543) naming the
    missing model, in its message and in its reason, and no fit rule filling its figures with None
    ("None GiB") or blaming "the GPU's memory". Run on a copy of the package with the file removed."""
    import os
    import shutil
    import subprocess
    import sys

    root = REPO
    shutil.copytree(root / "h3doctor", tmp_path / "h3doctor", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "h3doctor" / "sglang" / "releasedata" / NEWEST_VERIFIED / "memory.json").unlink()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "H3DOCTOR_"))}
    environ.update({"PYTHONPATH": str(tmp_path), "H3DOCTOR_RULES_DIR": str(root / "rules"), "NO_COLOR": "1",
                    "COLUMNS": "200", "XDG_CACHE_HOME": str(tmp_path / "cache")})
    launch = [MODEL.split()[0], *MODEL.split()[1:], "--performance-mode", "speed"]  # over a 5090 when modelled
    outputs = {}
    for fmt in ("json", "text"):
        proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--profile", "1xRTX5090", "--format", fmt,
                               "--", *launch], capture_output=True, text=True, env=environ, timeout=60, cwd=tmp_path)
        outputs[fmt] = proc
    data = json.loads(outputs["json"].stdout)
    missing = f"h3doctor has no memory model for sglang {NEWEST_VERIFIED}"
    assert [f["rule"] for f in data["findings"] if f["rule"] in ("H3D540", "H3D542", "H3D543", "H3D640", "H3D641",
                                                                  "H3D642")] == ["H3D543"]
    [finding] = [f for f in data["findings"] if f["rule"] == "H3D543"]
    assert finding["cannot_verify"] and missing in finding["message"] and missing in finding["cannot_verify_why"]
    for fmt, proc in outputs.items():
        assert proc.returncode == 0, (fmt, proc.stderr)  # a warning, as on any platform the model does not cover
        said = proc.stdout + proc.stderr
        assert "None GiB" not in said and "None GB" not in said and "GPU's memory is not known" not in said, fmt
        assert missing in said, fmt
    assert "None" not in outputs["text"].stdout
