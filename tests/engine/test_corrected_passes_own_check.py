"""A corrected command passes its own check, warnings included (issue 29, item 5).

The fix loop never stops at a launch a rule predicts will fail (`predicts_failure: true`, or any
error): every corrected command h3doctor prints is checked again here and must come back with no
error and no failure-predicting finding; where no flag change fits the hardware the result says so
(no corrected command, the nearest launch, what it still fails and its shortfall). In-process:
every built-in profile x the README's and the cookbook's launches; through the CLI: `explain`'s
corrected command and the launch `lint --fix` writes.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from h3doctor.engine.check import check
from h3doctor.host.profiles import load_profile
from h3doctor.output.json_report import build as build_report
from h3doctor.paths import package_dir
from h3doctor.record import replace
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.suggest.search import cookbook

MODEL = "sglang serve MiniMaxAI/MiniMax-H3"
# the launches the README shows (its quick start and memory examples), then the cookbook's recipes
README_LAUNCHES = [
    "",
    "--num-gpus 4",
    "--performance-mode speed",
    "--num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn",
    "--num-gpus 4 --performance-mode speed",
]
LAUNCHES = README_LAUNCHES + sorted({r["argv"] for r in cookbook() if r["family"] == "h3"})
PROFILES = sorted(p.name.removesuffix(".json") for p in package_dir("h3doctor.host").joinpath("builtin_profiles").iterdir()
                  if p.name.endswith(".json"))


def _failing(result):
    return [f.rule.id for f in result.evaluation.findings if f.predicts_failure]


def test_the_load_time_oom_on_one_h100_is_corrected_to_a_launch_that_checks_clean(rules, table):
    hw = load_profile("1xH100")
    result = check(shlex.split(f"{MODEL} --performance-mode speed"), hw, rules, table, {})
    assert "H3D540" in _failing(result) and result.fix_status == "fixed"
    again = check(result.corrected_argv, hw, rules, table, {})
    assert not _failing(again), [f.message for f in again.evaluation.findings]
    assert again.fix_status == "clean"
    # the user's words stay, in their form and order
    assert result.corrected_argv[:5] == shlex.split(f"{MODEL} --performance-mode speed")


def test_a_fix_never_repeats_what_the_command_already_says(rules, table):
    """The old corrected command (text encoder streamed) left H3D641; its fix must change the
    launch, not add the flag it has, and the result must pass its own check."""
    hw = load_profile("1xH100")
    argv = shlex.split(f"{MODEL} --performance-mode speed --layerwise-offload-components text_encoder")
    result = check(argv, hw, rules, table, {})
    assert "H3D641" in _failing(result)
    assert result.corrected_argv and result.corrected_argv != argv
    assert result.corrected_argv.count("--layerwise-offload-components") == 1
    assert not _failing(check(result.corrected_argv, hw, rules, table, {}))


@pytest.mark.parametrize("profile", PROFILES)
def test_every_printed_corrected_command_passes_its_own_check(profile, rules, table):
    hw = load_profile(profile)
    for launch in LAUNCHES:
        result = check(shlex.split(f"{MODEL} {launch}"), hw, rules, table, {})
        if result.corrected_argv is None:
            if _failing(result) and result.fix_status == "no-fix" and result.shortfall_gib is not None:
                assert result.fits_nowhere and result.still_fails
            continue
        again = check(result.corrected_argv, hw, rules, table, {})
        assert not _failing(again), (profile, launch, result.corrected_command,
                                     [f.message for f in again.evaluation.findings])


# 60 GB of RAM: the RTX 5090 desktop sglang PR #39021 saw killed by the kernel (H3D418, host-10)
SMALL_HOST_GIB = 55.9


@pytest.mark.parametrize("version", ["0.5.18", "0.5.19"])
def test_on_a_small_host_every_corrected_command_passes_its_own_check_pinned_memory_included(version, rules):
    """Every profile x the README's and the cookbook's launches on a host of 60 GB, where the
    releases that round their pinned stores up kill a worker (H3D418, an error: the loop never
    stops at it). 0.5.19's fix (--pin-cpu-memory false) gives a command that re-checks without it;
    on 0.5.18 no flag lowers the need enough, so there is no corrected command and no fix step."""
    release = releases.target(version, None)
    table = load_flag_table(release.table_version)
    fixed = unfixed = 0
    for profile in PROFILES:
        hw = replace(load_profile(profile), host_memory_gib=SMALL_HOST_GIB)
        for launch in LAUNCHES:
            result = check(shlex.split(f"{MODEL} {launch}"), hw, rules, table, {}, release=release)
            pinned = "H3D418" in _failing(result)
            if result.corrected_argv is None:
                if pinned:
                    assert "H3D418" in result.unfixable and not any(s.rule.id == "H3D418" for s in result.fix_steps)
                    unfixed += 1
                continue
            again = check(result.corrected_argv, hw, rules, table, {}, release=release)
            assert not _failing(again), (profile, launch, result.corrected_command,
                                         [f.message for f in again.evaluation.findings])
            fixed += pinned
    if version == "0.5.19":
        assert fixed > 0
    else:
        assert fixed == 0 and unfixed > 0


def test_no_corrected_command_is_labelled_clean_while_it_would_still_fail(rules, table):
    """One RTX 4070: no placement clears the workspace measured on real runs. The report has no
    corrected command (the label 'passes every rule' is printed only with one) and says why."""
    hw = load_profile("1xRTX4070")
    result = check(shlex.split(MODEL), hw, rules, table, {})
    report = build_report(result)
    assert report["corrected_command"] is None and report["fix_status"] == "no-fix"
    assert report["fits_nowhere"] is True and report["shortfall_gib"] > 0
    assert any(line.startswith("H3D641: ") for line in report["still_fails"])


def _with_rule(rules, rule_id, **changes):
    return [replace(r, **changes) if r.id == rule_id else r for r in rules]


def test_a_failure_predicting_warning_without_a_fix_leaves_no_corrected_command(rules, table):
    """The class, not the one rule: a warning whose rule says `predicts_failure: true` blocks the
    loop's "clean" even when it has no fix (the loop sets it aside as unfixable)."""
    hw = load_profile("1xH100")
    argv = shlex.split(f"{MODEL} --performance-mode speed --layerwise-offload-components text_encoder")
    result = check(argv, hw, _with_rule(rules, "H3D641", fix=None), table, {})
    assert result.fix_status == "no-fix" and result.corrected_argv is None and "H3D641" in result.unfixable


def test_a_fix_that_sets_what_the_command_already_says_is_no_fix(rules, table):
    """A fix whose edit leaves the command as it is (it sets the value the command has) is "no fix
    here", never a step that repeats the flag or a loop that does not converge."""
    hw = load_profile("1xH100")
    argv = shlex.split(f"{MODEL} --performance-mode speed --layerwise-offload-components text_encoder")
    same = ({"set": {"flag": "--layerwise-offload-components", "value": "text_encoder"}},)
    result = check(argv, hw, _with_rule(rules, "H3D641", fix=same), table, {})
    assert result.fix_status == "no-fix" and "H3D641" in result.unfixable
    assert not result.fix_steps


# --- the same holds for explain's and lint --fix's corrected commands ---------------------------------

SPEED = f"{MODEL} --performance-mode speed"
# the corrected command h3doctor printed for it before: it loads, then H3D641 "torch.OutOfMemoryError
# is likely" (the loop must go past that warning, not stop at it)
OLD_FIX = f"{SPEED} --layerwise-offload-components text_encoder"


def _oom_log(phase_line: str, tried: str) -> str:
    """An out-of-memory crash as sglang's worker prints it on one H100 (the launch is given after `--`)."""
    return (f"[12-01 23:41:15] {phase_line}\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.11/site-packages/sglang/multimodal_gen/runtime/managers/gpu_worker.py", '
            "line 97, in init_device_and_model\n"
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU 0 has a total capacity of "
            "79.11 GiB of which 1.06 GiB is free.\n")


def _passes_its_own_check(argv, rules, table):
    again = check(argv, load_profile("1xH100"), rules, table, {})
    assert not _failing(again), [f.message for f in again.evaluation.findings]
    assert again.fix_status == "clean"


@pytest.mark.parametrize("launch,log,rule", [
    (SPEED, _oom_log("Loading required modules:  40%", "2.00 GiB"), "H3D540"),
    (OLD_FIX, _oom_log("Warmup requests: 0/1 t2va 1344x768", "8.00 GiB"), "H3D640"),
])
def test_explains_corrected_command_passes_its_own_check(launch, log, rule, cli, rules, table, tmp_path):
    path = tmp_path / "server.log"
    path.write_text(log)
    code, data, err = cli("explain", "--log", str(path), "--profile", "1xH100", "--format", "json",
                          "--", *shlex.split(launch))
    assert code == 0 and rule in {m["rule"] for m in data["matches"]}, err
    assert data["fix_status"] == "fixed" and data["corrected_argv"]
    _passes_its_own_check(data["corrected_argv"], rules, table)


@pytest.mark.parametrize("launch", [SPEED, OLD_FIX])
def test_lint_fixs_corrected_launch_passes_its_own_check(launch, rules, table, tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text(f"#!/bin/sh\n{launch}\n")
    # placing less on the GPU is an unsafe fix: lint writes it only when asked to
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--no-config", "--target", "1xH100", "--fix",
                           "--unsafe-fixes", "--format", "json", str(script)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    fixed = script.read_text().splitlines()[1]
    assert fixed != launch and fixed.startswith(SPEED), proc.stderr
    _passes_its_own_check(shlex.split(fixed), rules, table)
    assert json.loads(proc.stdout)["verdict"] == "pass"  # lint's own second look agrees
