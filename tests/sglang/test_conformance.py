"""Conformance with the real sglang, per release, from recorded goldens (sglang is not needed here).

tests/conformance/sglang-<release>.jsonl holds generated `sglang serve` launches and what that
release's own launcher code did with each one on a simulated hardware profile (accept, or the
exception it raised, its message and stage). tests/conformance/sglang-<release>-corrected.jsonl
holds h3doctor's corrected command for every case where it proposes one for that release
(`corrected_argv`, or with `no-fix` its `nearest_argv`, and its alternatives), also run through
that release's sglang. Both are written by tools/conformance/record.py (see its README).

h3doctor's verdict here is launch-stage errors only: sglang's launcher cannot see worker,
after-download or first-request failures. Cases whose sglang verdict depends on the recording
environment (optional kernel packages, the offline hub; marked `env`) are not judged.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools" / "conformance"))

import cases as casegen  # noqa: E402
import compare  # noqa: E402
import record  # noqa: E402

VERSION = "0.5.23"  # the newest verified release: the full goldens, the FSDP suite, the configuration test

# The agreement each release must reach, in percent: verdicts of the judged cases, first errors of the
# cases both reject, corrected commands of the cases that need one, alternatives of those offered.
# Below 100: the figure measured when that release's corrected commands were recorded (rounded
# down), while its rules are widened; raise it (to 100) whenever `record.py --summary
# --sglang-version X` shows more. Required for every release whatever these figures: no false
# block, no crash, no false all-clear without h3doctor's "cannot verify" warning, and every
# proposed corrected command recorded through sglang.
REQUIRED = {
    # None: no golden case of that release is offered an alternative (its no-fix classes need
    # flags it does not have); the test requires that to stay so until a floor is set
    "0.5.17": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=None),
    "0.5.18": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=None),
    "0.5.19": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=None),
    "0.5.20": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=100.0),
    "0.5.21": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=100.0),
    "0.5.22": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=100.0),
    "0.5.23": dict(verdict=100.0, first_error=100.0, corrected=100.0, alternatives=100.0),
}
RELEASES = sorted(REQUIRED, key=lambda v: tuple(map(int, v.split("."))))
MIN_JUDGED = {"0.5.23": 1800}  # judged cases per release (the newest records the most); the others: 400


@functools.lru_cache(maxsize=None)
def goldens(version: str):
    return compare.read_jsonl(compare.goldens_path(version))


@functools.lru_cache(maxsize=None)
def corrected(version: str):
    return compare.read_jsonl(compare.corrected_path(version))[1]


@functools.lru_cache(maxsize=None)
def report(version: str) -> compare.Report:
    return compare.compare(goldens(version)[1], corrected(version), compare.Doctor(version))


def _require(version: str, figure: str, agree: int, total: int, what: str, listing: str) -> None:
    """Fail unless agree/total reaches REQUIRED[version][figure] percent (in integers: no float
    rounding at 100%), listing every disagreement. No cases to judge is a failure, not 100%: a
    recording that lost them (or a filter that drops them all) must not pass the floor."""
    floor = REQUIRED[version][figure]
    if floor is None:
        if total:
            pytest.fail(f"sglang {version} now has {total} {figure} cases: set REQUIRED[{version!r}][{figure!r}]",
                        pytrace=False)
        return
    if total <= 0:
        pytest.fail(f"no {figure} cases to judge for sglang {version} (0 {what}): the goldens or corrected "
                    "commands lost them; re-record (tools/conformance)", pytrace=False)
    if agree * 1000 < round(floor * 10) * total:
        pytest.fail(f"{total - agree} of {total} {what} sglang {version} ({100.0 * agree / total:.1f}% agree, "
                    f"required {floor}%; see tests/conformance/DISAGREEMENTS.md):\n{listing}", pytrace=False)


by_release = pytest.mark.parametrize("version", RELEASES)


def test_a_floor_fails_on_no_cases_and_on_one_disagreement():
    """0 of 0 is not 100%: an empty denominator fails, as does one case short of the floor; a
    release declared to have no cases of a figure (None) fails as soon as it has some."""
    with pytest.raises(pytest.fail.Exception, match="no verdict cases"):
        _require(VERSION, "verdict", 0, 0, "launches", "")
    with pytest.raises(pytest.fail.Exception, match="1 of 500"):
        _require(VERSION, "verdict", 499, 500, "launches", "")
    _require(VERSION, "verdict", 500, 500, "launches", "")
    undeclared = [v for v in RELEASES if REQUIRED[v]["alternatives"] is None]
    for version in undeclared:
        with pytest.raises(pytest.fail.Exception, match="set REQUIRED"):
            _require(version, "alternatives", 1, 1, "alternatives", "")


@by_release
def test_goldens_are_complete_and_match_the_generator(version):
    meta, records = goldens(version)
    assert meta.get("sglang_version") == version
    assert sum(1 for r in records if not r.get("env")) >= MIN_JUDGED.get(version, 400)
    gen = meta["generator"]
    assert gen["version"] == casegen.GENERATOR_VERSION, "goldens come from another generator version: re-record"
    expected = casegen.generate(gen["seed"], gen["count"])
    got = [{k: r[k] for k in ("id", "profile", "argv", "files") if k in r} for r in records]
    assert got == expected, "the case generator no longer reproduces the goldens: re-record (tools/conformance)"
    assert not [r["id"] for r in records if r.get("network")], "sglang tried to reach the network while recording"
    cmeta, _ = compare.read_jsonl(compare.corrected_path(version))
    assert cmeta.get("sglang_version") == version, "corrected commands recorded through another sglang"


@by_release
def test_no_false_block_and_no_crash(version):
    """Required for every release, whatever its floors: h3doctor never rejects a launch that
    release's sglang accepts, and never crashes on a recorded case."""
    rep = report(version)
    crashes = [f"{d['case']['id']}: {d['outcome'].crash}" for d in rep.crashes]
    assert crashes == [], "\n".join(crashes[:20])
    if rep.false_blocks:
        pytest.fail(f"{len(rep.false_blocks)} launches that sglang {version} accepts are rejected by h3doctor:\n"
                    + compare.format_verdicts(compare.Report(verdict_disagreements=rep.false_blocks)), pytrace=False)


@by_release
def test_every_false_all_clear_says_cannot_verify(version):
    """Where h3doctor misses a rejection of an older release (its rules there are not all verified),
    its report must carry the "cannot verify" warning naming the rule groups it did not run."""
    rep = report(version)
    if rep.unmarked_misses:
        pytest.fail(f"{len(rep.unmarked_misses)} launches that sglang {version} rejects pass h3doctor without a "
                    f"{compare.CANNOT_VERIFY} \"cannot verify\" warning:\n"
                    + compare.format_verdicts(compare.Report(verdict_disagreements=rep.unmarked_misses)), pytrace=False)


@by_release
def test_verdicts_agree_with_sglang(version):
    rep = report(version)
    _require(version, "verdict", rep.verdict_agree, rep.judged,
             "launches get a different accept/reject verdict from h3doctor than from", compare.format_verdicts(rep))


@by_release
def test_first_error_agrees_with_sglang(version):
    """Where both reject, h3doctor's first launch-stage error carries the message sglang raised."""
    rep = report(version)
    _require(version, "first_error", rep.first_error_agree, rep.both_reject,
             "launches both reject get another first error from h3doctor than from", compare.format_first_errors(rep))


@by_release
def test_corrected_commands_are_accepted_by_sglang(version):
    rep = report(version)
    unrecorded = rep.corrected_unrecorded
    assert not unrecorded, (f"{len(unrecorded)} corrected commands for sglang {version} were never run through it: "
                            f"rerun tools/conformance/record.py --corrected-only --sglang-version {version}:\n"
                            + compare.format_corrected(compare.Report(corrected_failures=unrecorded), limit=20))
    _require(version, "corrected", rep.corrected_accepted, rep.corrected_needed,
             "cases lack a corrected command accepted by", compare.format_corrected(rep))


@by_release
def test_alternatives_are_accepted_by_sglang(version):
    """With no-fix, every alternative h3doctor offers passes sglang's own launcher (recorded as
    kind=alternative); the alternatives leave corrected_argv/nearest_argv alone (test above)."""
    rep = report(version)
    if version == VERSION:
        assert rep.alternatives_offered > 0, "no golden case is offered an alternative: the recording lost them"
    _require(version, "alternatives", rep.alternatives_accepted, rep.alternatives_offered,
             "alternatives are not accepted by", compare.format_alternatives(rep))


@by_release
def test_the_rule_examples_alternatives_are_accepted_by_sglang(version):
    """The no-fix classes the rules answer with alternatives (hybrid without merged weights, cube
    sparse without its config, sage_fp8 on the wrong GPU, ...): every alternative check offers on
    their examples for this release was recorded through its sglang's launcher and accepted."""
    recorded = {(r["profile"], tuple(r["argv"])): r for r in corrected(version) if r.get("kind") == "example-alternative"}
    offered = compare.example_alternatives(compare.Doctor(version))
    missing = [c["id"] for c in offered if (c["profile"], tuple(c["argv"])) not in recorded]
    assert not missing, (f"not recorded through sglang (rerun tools/conformance/record.py --corrected-only "
                         f"--sglang-version {version}): {missing}")
    judged = [c for c in offered if not recorded[(c["profile"], tuple(c["argv"]))].get("env")]  # kernel-package dependent
    if version == VERSION:
        assert {c["id"].split("::")[0] for c in judged} >= {"H3D405", "H3D604", "H3D307"}
    rejected = [f"{c['id']}: {compare.sglang_says(recorded[(c['profile'], tuple(c['argv']))])}" for c in judged
                if not recorded[(c["profile"], tuple(c["argv"]))].get("ok")]
    assert not rejected, rejected


@by_release
def test_conformance_figures(version, capsys):
    """The figures (asserted above against REQUIRED), printed with `-s` and in the test log."""
    rep = report(version)
    with capsys.disabled():
        print(f"\n[conformance sglang {version}] " + rep.summary().replace("\n", f"\n[conformance {version}] "))
    assert rep.n_cases == len(goldens(version)[1]) and rep.both_reject <= rep.judged


def test_message_normalisation():
    assert compare.normalize_message("error: argument --x: invalid choice: 'a'") == "argument --x: invalid choice: 'a'"
    assert compare.normalize_message("KeyError: 'FA3'") == compare.normalize_message("'FA3'")
    assert compare.normalize_message("error: unrecognized arguments: --a_b 1") == "unrecognized arguments: --a_b 1"
    assert compare.normalize_message("sp_degree (4)  must\nequal") == "sp_degree (4) must equal"


def test_a_randomly_drawn_number_matches_only_inside_the_range_h3doctor_names():
    ours = "Failed to find available port after 100 attempts (started from port 5555-5655 or 65536)"
    for port, same in ((5555, True), (5565, True), (5655, True), (65536, True), (5656, False), (5554, False)):
        theirs = f"RuntimeError: Failed to find available port after 100 attempts (started from port {port})"
        assert compare.same_message(ours, theirs) is same, port
    assert not compare.same_message(ours, "Failed to find available port after 99 attempts (started from port 5565)")
    assert compare.same_message("port 80", "port 80") and not compare.same_message("port 80", "port 81")


def test_drift_report_lists_changed_verdicts(tmp_path, capsys):
    base = {"id": "g1", "profile": "1xH200", "argv": ["MiniMaxAI/MiniMax-H3"], "ok": True}
    same = {"id": "g2", "profile": "1xH200", "argv": ["MiniMaxAI/MiniMax-H3", "--num-gpus", "2"], "ok": False,
            "exc": "AssertionError", "msg": "Invalid device id", "stage": "adjust", "code": "A"}
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    record.write_jsonl(old, {"sglang_version": "0.5.23"}, [base, same])
    flipped = {**base, "ok": False, "exc": "ValueError", "msg": "new rule", "stage": "validate", "code": "V"}
    record.write_jsonl(new, {"sglang_version": "0.5.24"}, [flipped, same])
    assert record.drift(new, old, show_messages=True) == 1
    out = capsys.readouterr().out
    assert "1 changed verdict" in out and "g1 [1xH200]" in out and "g2" not in out
    assert record.drift(old, old, show_messages=True) == 0


FSDP_SUITE = compare.GOLDENS_DIR / f"sglang-{VERSION}-fsdp.jsonl"


# Releases whose recordings hold sglang's resolved configuration per component (0.5.17 has no
# residency in ServerArgs: its recording holds null there); the older ones' goldens are --count 400
CONFIGURATION_RELEASES = ("0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22")


@pytest.mark.parametrize("version,goldens,at_least",
                         [(VERSION, compare.goldens_path(VERSION), 400), (VERSION, FSDP_SUITE, 40)]
                         + [(v, compare.goldens_path(v), 100) for v in CONFIGURATION_RELEASES],
                         ids=["seeded-cases", "fsdp-suite", *CONFIGURATION_RELEASES])
def test_effective_configuration_matches_sglang_on_accepted_launches(version, goldens, at_least):
    """For every launch sglang accepted, h3doctor resolves the same configuration: parallel
    layout, attention backends (after the model hook's own defaults), per-component residency
    (auto-tuner, 120 GiB rule, MPS defaults, FSDP), quantization, compile, warmup and config class.
    The FSDP suite (record.py --suite fsdp) covers --use-fsdp-inference x performance mode x GPU
    count on both sides of the 120 GiB rule. Every release at 100%: 0.5.18's own placement (no
    layerwise DiT offload, every component resident on MPS) comes from its release data."""
    from h3doctor.engine.check import evaluate_launch

    doctor = compare.Doctor(version)
    _, records = compare.read_jsonl(goldens)
    mismatches, judged = [], 0
    for rec in records:
        if not rec.get("ok") or rec.get("env") or "resolved" not in rec:
            continue
        judged += 1
        with compare.case_files(rec.get("files")):
            ev = evaluate_launch(["sglang", "serve", *rec["argv"]], doctor.profile(rec["profile"]), doctor.rules,
                                 doctor.table, {}, release=doctor.release)
        a, ctx = ev.effective, ev.context
        ours = {
            "attention_backend": a.get("attention_backend"), "component_attention_backends": a.get("component_attention_backends"),
            "performance_mode": a.get("performance_mode"), "num_gpus": a.get("num_gpus"), "tp": a.get("tp_size"),
            "sp": a.get("sp_degree"), "ulysses": a.get("ulysses_degree"), "ring": a.get("ring_degree"), "dp": a.get("dp_size"),
            "cfg_parallel": bool(a.get("enable_cfg_parallel")), "residency": ctx.get("derived.residency"),
            "quantization": a.get("quantization"), "torch_compile": a.get("enable_torch_compile"),
            "warmup_mode": a.get("warmup_mode"),
            "pipeline_config": ev.family.family.config_class if ev.family.family else None,
        }
        for key, theirs in rec["resolved"].items():
            if key in ours and ours[key] != theirs:
                mismatches.append(f"{rec['id']} [{rec['profile']}] {key}: sglang {theirs!r}, h3doctor {ours[key]!r}")
    assert judged >= at_least
    assert mismatches == [], "\n".join(mismatches[:50])


# The boundary suite (record.py --suite boundary): the default 4xH200 launch with one int/float
# flag of that release at -1, 0, 1, 3, 100000 (floats also nan, inf), through each release's sglang.
BOUNDARY_RELEASES = ("0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")


def boundary_path(version: str) -> Path:
    return compare.GOLDENS_DIR / f"sglang-{version}-boundary.jsonl"


def test_the_boundary_suite_covers_every_int_and_float_flag():
    """The suite is derived from the release's flag table: every int/float flag of `sglang serve`
    at every edge value (a flag added to the table joins the suite), nothing of `sglang generate`."""
    flags = casegen.boundary_flags(VERSION)
    options = {opt for opt, _ in flags}
    assert {"--base-gpu-id", "--sp-degree", "--tp-size", "--port", "--dit-layerwise-resident-layers",
            "--kv-cache-quant-sink", "--log-requests-level"} <= options
    assert "--num-inference-steps" not in options  # a sampling flag of `sglang generate` only
    suite = casegen.boundary_suite(VERSION)
    tried = {(c["argv"][-2], c["argv"][-1]) for c in suite}
    for opt, kind in flags:
        values = casegen.BOUNDARY_FLOAT_VALUES if kind == "float" else casegen.BOUNDARY_INT_VALUES
        assert {(opt, v) for v in values} <= tried, opt
    assert len({c["id"] for c in suite}) == len(suite)
    assert len(casegen.boundary_suite("0.5.17")) < len(suite)  # 0.5.17's table has fewer flags


@pytest.mark.parametrize("version", BOUNDARY_RELEASES)
def test_boundary_values_agree_with_sglang(version):
    """Verdicts and first errors at 100% on the boundary suite, no crash, no network."""
    meta, records = compare.read_jsonl(boundary_path(version))
    assert meta.get("sglang_version") == version
    assert meta["generator"] == {"version": casegen.GENERATOR_VERSION, "suite": "boundary"}
    expected = casegen.boundary_suite(version)
    assert [{k: r[k] for k in ("id", "profile", "argv") if k in r} for r in records] == expected, \
        "the boundary suite no longer matches its recording: re-record (record.py --suite boundary)"
    assert not [r["id"] for r in records if r.get("network")]
    rep = compare.compare(records, [], compare.Doctor(version))
    assert rep.crashes == []
    assert rep.judged == len(records) and rep.judged > 250
    assert rep.verdict_disagreements == [], compare.format_verdicts(rep, limit=20)
    assert rep.both_reject > 0
    assert rep.first_error_agree == rep.both_reject, compare.format_first_errors(rep, limit=20)


def process_groups_path(version: str) -> Path:
    return compare.GOLDENS_DIR / f"sglang-{version}-process-groups.jsonl"


# every release with a process-group recording (record_process_groups.py --sglang-version X)
PROCESS_GROUP_RELEASES = tuple(v for v in BOUNDARY_RELEASES if process_groups_path(v).exists())


def test_every_release_has_a_process_group_recording():
    assert PROCESS_GROUP_RELEASES == BOUNDARY_RELEASES


def test_h3d402s_range_is_the_releases_whose_workers_fail_on_a_negative_degree():
    """H3D402's `versions` is read off the recordings: the releases in which sglang's own
    process-group code fails on a layout its launcher accepted."""
    from h3doctor.engine.ruleset import load_rules

    failing = [v for v in PROCESS_GROUP_RELEASES
               if any(not rec["ranks"][0]["ok"] for rec in compare.read_jsonl(process_groups_path(v))[1])]
    rule = next(r for r in load_rules() if r.id == "H3D402")
    assert [v for v in BOUNDARY_RELEASES if rule.in_release(v)] == failing
    assert rule.verified_versions == f">={failing[0]},<={failing[-1]}"  # the upper end: its where lines


@pytest.mark.parametrize("version", PROCESS_GROUP_RELEASES)
def test_negative_degrees_fail_in_the_workers_as_sglangs_own_process_group_code_does(version):
    """tools/conformance/record_process_groups.py ran sglang's own worker process-group set-up
    (4 gloo ranks on CPU) on the layouts sglang's launcher resolved for launches it accepts with a
    negative degree, release by release: h3doctor's worker-stage H3D402 carries rank 0's message,
    and the positive layout builds (no finding)."""
    from h3doctor.engine.check import evaluate_launch

    meta, records = compare.read_jsonl(process_groups_path(version))
    assert meta["sglang_version"] == version and meta["world_size"] == 4
    launches = {tuple(r["argv"]): r for r in compare.read_jsonl(boundary_path(version))[1]}
    doctor = compare.Doctor(version)
    failing = 0
    for rec in records:
        launch = launches.get(tuple(rec["argv"]))
        assert launch is not None and launch["ok"], f"{rec['id']}: not a launch sglang accepts in the boundary suite"
        resolved, layout = launch["resolved"], rec["layout"]
        assert {k: resolved[k] for k in ("tp", "sp", "ulysses", "ring", "dp")} == \
            {k: layout[k] for k in ("tp", "sp", "ulysses", "ring", "dp")}, rec["id"]
        result = doctor.check(["sglang", "serve", *rec["argv"]], doctor.profile(rec["profile"]))
        ours = [f for f in result.evaluation.findings if f.rule.id == "H3D402"]
        rank0 = rec["ranks"][0]
        if rank0["ok"]:
            assert all(r["ok"] for r in rec["ranks"]) and ours == [], rec["id"]
            continue
        failing += 1
        ev = evaluate_launch(["sglang", "serve", *rec["argv"]], doctor.profile(rec["profile"]), doctor.rules, doctor.table, {},
                             release=doctor.release)
        assert ev.effective.get("cfg_parallel_degree") == layout["cfg"], rec["id"]
        assert ours, f"{rec['id']}: sglang's workers fail ({rank0['exc']}: {rank0['msg']}); h3doctor has no H3D402"
        theirs = rank0["msg"] or rank0["exc"]  # a bare assert: the exception type is all it prints
        assert ours[0].message == theirs, (rec["id"], ours[0].message, theirs)
        assert ours[0].rule.stage == "worker" and ours[0].severity == "error"
    assert failing >= 5
