"""The Release object: one per check, handed to the resolver and every derivation; its data read
on first use; the memory model it carries, exact for the calibrated release and lower bounds for
the older ones; no release number written in code but the newest verified default."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from h3doctor.engine.check import check, evaluate_launch
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang import releases
from h3doctor.sglang.memory import COMPONENTS, constants, model_for
from h3doctor.verified import NEWEST_VERIFIED
from repo_paths import REPO

ROOT = REPO
RULES = load_rules()
H3 = "sglang serve MiniMaxAI/MiniMax-H3"
H3_RELEASES = [r for r in releases.known_releases() if releases.in_range(r, ">=0.5.17")]


def run(argv: str, version: str, profile: str = "4xH200", hw=None):
    target = releases.target(version, None)
    return check(shlex.split(argv), hw or load_profile(profile), RULES, target.table, {}, {}, release=target)


def fired(result, rule_id):
    return [f for f in result.evaluation.findings if f.rule.id == rule_id]


def test_the_release_is_built_from_the_target_and_compares_by_its_fields():
    target = releases.target("0.5.20", None)
    assert target == releases.Release("0.5.20", "option", "0.5.20")
    assert releases.Release("0.5.21").table_version == "0.5.21"  # judged by itself unless told
    newer = releases.target("0.5.30", None)
    assert (newer.version, newer.table_version, newer.newer_than_verified) == ("0.5.30", releases.known_releases()[-1], True)
    assert releases.target(None, None) is releases.NEWEST and releases.NEWEST.version == NEWEST_VERIFIED


def test_its_data_is_read_on_first_use_only():
    fresh = releases.Release("0.5.19", "option")
    assert not {"table", "memory", "sampling", "attention_backends"} & set(vars(fresh))
    assert fresh.table.sglang_version == "0.5.19"
    assert "table" in vars(fresh) and "memory" not in vars(fresh)
    assert fresh.enum("COMPONENT_RESIDENCY_MODES") == releases.enum_values("COMPONENT_RESIDENCY_MODES", "0.5.19")


def test_importing_the_release_module_reads_no_release_data():
    code = ("import sys, h3doctor.sglang.releases as r; r.target('0.5.20', None); "
            "print(sorted(m for m in sys.modules if m in ('h3doctor.sglang.memory', 'h3doctor.sglang.sampling', "
            "'h3doctor.sglang.flagtable')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_check_hands_its_release_to_the_resolver_and_the_derivations():
    target = releases.target("0.5.20", None)
    ev = evaluate_launch(shlex.split(f"{H3} --num-gpus 4"), load_profile("4xH200"), RULES, target.table, {}, {}, target)
    ctx = ev.context
    assert ctx["release.table"] == ctx["sglang_version"] == "0.5.20"
    # the memory derivation read 0.5.20's model (lower bounds), not the calibrated release's
    assert ctx["derived.memory"]["lower_bound"] is True
    newest = evaluate_launch(shlex.split(f"{H3} --num-gpus 4"), load_profile("4xH200"), RULES, releases.NEWEST.table, {}, {},
                             releases.NEWEST)
    assert not newest.context["derived.memory"].get("lower_bound") and newest.context["derived.memory.load_over"] is False


def test_every_h3_release_has_a_memory_model_and_only_the_newest_is_exact():
    for version in H3_RELEASES:
        model = releases.Release(version).memory
        assert model is not None, version
        assert model.exact is (version == NEWEST_VERIFIED), version
    old = model_for("0.5.20")
    assert old.why_bound and "0.5.20" in old.why_bound
    # the byte sizes are the calibrated release's, read as bounds; the older file says so itself
    assert constants("0.5.20")["weights_gib"] == constants(NEWEST_VERIFIED)["weights_gib"]
    assert constants("0.5.20")["sglang_version"] == "0.5.20"


@pytest.mark.parametrize("version", H3_RELEASES)
def test_speed_mode_on_one_rtx5090_cannot_fit_on_every_release(version):
    result = run(f"{H3} --performance-mode speed", version, "1xRTX5090")
    [f] = fired(result, "H3D540")
    assert f.severity == "error" and not f.cannot_verify, version
    ctx = result.evaluation.context
    assert ctx["derived.memory.load_over"] is True
    assert ctx["derived.memory.load_gib"] > ctx["derived.memory.capacity_gib"]
    if version != NEWEST_VERIFIED:
        assert "at least" in f.message
        assert result.corrected_argv is None  # no change is invented from another release's placement


@pytest.mark.parametrize("version", [v for v in H3_RELEASES if v != NEWEST_VERIFIED])
def test_an_unmodelled_placement_that_the_bound_fits_is_cannot_verify_never_a_pass(version):
    # auto mode: sglang's older auto-tuners place the components their own way
    result = run(H3, version, "1xRTX5090")
    # the load's bound fits: H3D540 says nothing (its figure would be 0.0 GiB), H3D544 "cannot verify"
    assert not fired(result, "H3D540") and not fired(result, "H3D640")
    [f] = fired(result, "H3D544")
    assert f.cannot_verify and f.severity == "warning"
    assert result.evaluation.context["derived.memory.load_over"] is None
    # the calibrated release knows the placement (all layerwise below 120 GiB free) and passes it
    assert not fired(run(H3, NEWEST_VERIFIED, "1xRTX5090"), "H3D540")


_OLDER = [v for v in H3_RELEASES if v != NEWEST_VERIFIED]
# a launch each older release's bounds fit (load and warmup), and one whose warmup bound alone fits
_BOUND_FITS = [(f"{H3} --num-gpus 4", "4xH200"), (H3, "1xRTX5090"), (f"{H3} --performance-mode memory", "1xRTX4090"),
               (f"{H3} --performance-mode speed --warmup-resolutions 1920x1088", "1xH200")]


_ZERO_BOUND = re.compile(r"(?<![\d.])0\.0 GiB")


def _memory_findings(result):
    return [f for f in result.evaluation.findings if f.rule.id.startswith(("H3D54", "H3D64"))]


@pytest.mark.parametrize("version", _OLDER)
@pytest.mark.parametrize(("argv", "profile"), _BOUND_FITS)
def test_an_older_release_gets_one_memory_cannot_verify_and_no_zero_bound(version, argv, profile):
    result = run(argv, version, profile)
    assert not any(_ZERO_BOUND.search(f.message) for f in result.evaluation.findings)
    memory = _memory_findings(result)
    # one note for the load and the first forward, and still not clean
    assert [f.rule.id for f in memory if f.cannot_verify] == ["H3D544"], [f.message for f in memory]
    assert not [f for f in memory if not f.cannot_verify]
    [note] = memory
    assert "GiB" not in note.message and f"sglang {version}" in note.message
    assert "not known" in note.message


def test_a_docker_image_of_an_older_release_says_cannot_verify_once_with_no_zero_bound(cli):
    code, data, _ = cli("check", "--profile", "4xH200", "--", "docker", "run", "--gpus", "all", "--ipc=host",
                        "lmsysorg/sglang:v0.5.20-cu129", "sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3",
                        "--num-gpus", "4")
    assert code == 0 and data["sglang_version"] == "0.5.20"
    unverified = [f for f in data["findings"] if f["cannot_verify"]]
    assert [f["rule"] for f in unverified] == ["H3D544"]  # the image's ffmpeg is known (image-facts.json)
    assert not any(_ZERO_BOUND.search(f["message"]) for f in data["findings"])


def test_a_typed_placement_flag_leaves_no_placement_verified_on_an_older_release():
    model = model_for("0.5.20")
    speed = {"performance_mode": "speed"}
    assert model.verified_placement(speed, set()) == {"transformer", "text_encoder"}
    assert model.verified_placement(speed, {"layerwise_offload_components"}) == frozenset()
    assert model.verified_placement({"performance_mode": "auto"}, set()) == frozenset()
    assert model_for(NEWEST_VERIFIED).verified_placement({"performance_mode": "auto"}, {"component_residency"}) == set(COMPONENTS)


def test_a_platform_the_memory_model_does_not_cover_is_cannot_verify():
    result = run(f"{H3} --num-gpus 4 --attention-backend fa", NEWEST_VERIFIED, "cpu")
    ctx = result.evaluation.context
    assert ctx["derived.memory"] is None
    [f] = fired(result, "H3D543")
    assert f.cannot_verify and f.unknown_facts == ("derived.memory.load_over",)
    assert "cpu platform" in f.message and "resident in host RAM" in f.message
    # an unknown platform says so in words; a CUDA host with no memory figure is H3D540's cannot-verify
    odd = replace(load_profile("cpu"), platform="musa")
    [g] = fired(run(f"{H3} --num-gpus 4", NEWEST_VERIFIED, hw=odd), "H3D543")
    assert g.cannot_verify and "musa platform" in g.message
    blind = replace(load_profile("4xH200"), gpu_memory_gib=None, gpu_free_gib=None)
    blind_result = run(f"{H3} --num-gpus 4", NEWEST_VERIFIED, hw=blind)
    assert not fired(blind_result, "H3D543")
    [h] = fired(blind_result, "H3D540")
    assert h.cannot_verify


# any sglang release h3doctor has a flag table for, as a whole version number
_RELEASE_NUMBER = re.compile(r"(?<![\d.])(" + "|".join(map(re.escape, releases.known_releases())) + r")(?![\d])")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_release_number_in_code_but_the_newest_verified_default():
    found = []
    for path in sorted((ROOT / "h3doctor").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and _RELEASE_NUMBER.search(node.value)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
    assert found == ["h3doctor/verified.py:7: " + repr(NEWEST_VERIFIED)]
