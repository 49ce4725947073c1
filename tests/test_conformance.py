"""Conformance with the real sglang 0.5.23, from recorded goldens (sglang is not needed here).

tests/conformance/sglang-0.5.23.jsonl holds generated `sglang serve` launches and what sglang's
own launcher code did with each one on a simulated hardware profile (accept, or the exception
it raised, its message and stage). tests/conformance/sglang-0.5.23-corrected.jsonl holds
h3doctor's corrected command for every case where it proposes one (`corrected_argv`, or with
`no-fix` its `nearest_argv`), also run through sglang.
Both are written by tools/conformance/record.py (see its README).

h3doctor's verdict here is launch-stage errors only: sglang's launcher cannot see worker,
after-download or first-request failures. Cases whose sglang verdict depends on optional kernel
packages of the recording venv (marked `env`) are not judged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "conformance"))

import cases as casegen  # noqa: E402
import compare  # noqa: E402
import record  # noqa: E402

VERSION = "0.5.23"
MIN_CASES = 1500


@pytest.fixture(scope="module")
def goldens():
    meta, records = compare.read_jsonl(compare.goldens_path(VERSION))
    return meta, records


@pytest.fixture(scope="module")
def corrected():
    return compare.read_jsonl(compare.corrected_path(VERSION))[1]


@pytest.fixture(scope="module")
def report(goldens, corrected):
    return compare.compare(goldens[1], corrected)


def test_goldens_are_complete_and_match_the_generator(goldens):
    meta, records = goldens
    assert meta.get("sglang_version") == VERSION
    assert len(records) >= MIN_CASES
    gen = meta["generator"]
    assert gen["version"] == casegen.GENERATOR_VERSION, "goldens come from another generator version: re-record"
    expected = casegen.generate(gen["seed"], gen["count"])
    got = [{k: r[k] for k in ("id", "profile", "argv", "files") if k in r} for r in records]
    assert got == expected, "the case generator no longer reproduces the goldens: re-record (tools/conformance)"
    assert not [r["id"] for r in records if r.get("network")], "sglang tried to reach the network while recording"


def test_verdicts_agree_with_sglang(report):
    if report.verdict_disagreements:
        pytest.fail(
            f"{len(report.verdict_disagreements)} of {report.judged} launches get a different accept/reject "
            f"verdict from h3doctor than from sglang {VERSION} "
            f"({report.pct(report.verdict_agree, report.judged):.1f}% agree; "
            "see tests/conformance/DISAGREEMENTS.md):\n" + compare.format_verdicts(report),
            pytrace=False,
        )


def test_corrected_commands_are_accepted_by_sglang(report):
    if report.corrected_failures:
        pytest.fail(
            f"{len(report.corrected_failures)} of {report.corrected_needed} cases lack a corrected command that "
            f"sglang {VERSION} accepts ({report.pct(report.corrected_accepted, report.corrected_needed):.1f}% "
            "accepted):\n" + compare.format_corrected(report),
            pytrace=False,
        )


def test_alternatives_are_accepted_by_sglang(report):
    """With no-fix, every alternative h3doctor offers passes sglang's own launcher (recorded as
    kind=alternative); the alternatives leave corrected_argv/nearest_argv alone (test above)."""
    assert report.alternatives_offered > 0, "no golden case is offered an alternative: the recording lost them"
    if report.alternative_failures:
        pytest.fail(
            f"{len(report.alternative_failures)} of {report.alternatives_offered} alternatives are not accepted by "
            f"sglang {VERSION}:\n" + compare.format_alternatives(report), pytrace=False)


def test_the_rule_examples_alternatives_are_accepted_by_sglang(corrected):
    """The no-fix classes the rules answer with alternatives (hybrid without merged weights, cube
    sparse without its config, sage_fp8 on the wrong GPU, ...): every alternative check offers on
    their examples was recorded through sglang's launcher and accepted."""
    recorded = {(r["profile"], tuple(r["argv"])): r for r in corrected if r.get("kind") == "example-alternative"}
    offered = compare.example_alternatives(compare.Doctor(VERSION))
    answered = {case["id"].split("::")[0] for case in offered}
    assert {"H3D405", "H3D604", "H3D307"} <= answered
    missing = [c["id"] for c in offered if (c["profile"], tuple(c["argv"])) not in recorded]
    assert not missing, f"not recorded through sglang (rerun tools/conformance/record.py --corrected-only): {missing}"
    judged = [c for c in offered if not recorded[(c["profile"], tuple(c["argv"]))].get("env")]  # kernel-package dependent
    assert {c["id"].split("::")[0] for c in judged} >= {"H3D405", "H3D604", "H3D307"}
    rejected = [f"{c['id']}: {compare.sglang_says(recorded[(c['profile'], tuple(c['argv']))])}" for c in judged
                if not recorded[(c["profile"], tuple(c["argv"]))].get("ok")]
    assert not rejected, rejected


def test_first_error_agreement_figure(report, capsys):
    """Whether h3doctor's first launch-stage error is the one sglang raised (same message).
    Reported, not asserted: h3doctor reports every error, sglang only its first."""
    with capsys.disabled():
        print(f"\n[conformance sglang {VERSION}] " + report.summary().replace("\n", "\n[conformance] "))
    assert report.both_reject <= report.judged


def test_message_normalisation():
    assert compare.normalize_message("error: argument --x: invalid choice: 'a'") == "argument --x: invalid choice: 'a'"
    assert compare.normalize_message("KeyError: 'FA3'") == compare.normalize_message("'FA3'")
    assert compare.normalize_message("error: unrecognized arguments: --a_b 1") == "unrecognized arguments: --a_b 1"
    assert compare.normalize_message("sp_degree (4)  must\nequal") == "sp_degree (4) must equal"


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


@pytest.mark.parametrize("goldens,at_least", [(compare.goldens_path(VERSION), 400), (FSDP_SUITE, 40)],
                         ids=["seeded-cases", "fsdp-suite"])
def test_effective_configuration_matches_sglang_on_accepted_launches(goldens, at_least):
    """For every launch sglang accepted, h3doctor resolves the same configuration: parallel
    layout, attention backends (after the model hook's own defaults), per-component residency
    (auto-tuner, 120 GiB rule, MPS defaults, FSDP), quantization, compile, warmup and config class.
    The FSDP suite (record.py --suite fsdp) covers --use-fsdp-inference x performance mode x GPU
    count on both sides of the 120 GiB rule."""
    from h3doctor.engine.check import evaluate_launch

    doctor = compare.Doctor(VERSION)
    _, records = compare.read_jsonl(goldens)
    mismatches, judged = [], 0
    for rec in records:
        if not rec.get("ok") or rec.get("env") or "resolved" not in rec:
            continue
        judged += 1
        with compare.case_files(rec.get("files")):
            ev = evaluate_launch(["sglang", "serve", *rec["argv"]], doctor.profile(rec["profile"]), doctor.rules,
                                 doctor.table, {})
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


@pytest.mark.parametrize("version", ["0.5.19", "0.5.21"])
def test_older_release_goldens_no_false_block_and_every_miss_is_marked_cannot_verify(version):
    """Only the parse rules are verified for these releases (the rest are ==0.5.23): h3doctor must
    never reject what that release accepts, and where it misses a rejection its report must carry
    the H3D921 "cannot verify" warning naming the unverified rule families. The figures (verdict
    agreement 278/405 on 0.5.19, 319/485 on 0.5.21 when recorded) are in DISAGREEMENTS.md."""
    from h3doctor.host.profiles import load_profile  # noqa: F401  (profiles cached by Doctor)

    _meta, records = compare.read_jsonl(compare.goldens_path(version))
    doctor = compare.Doctor(version)
    rep = compare.compare(records, [], doctor)
    false_blocks = [d for d in rep.verdict_disagreements if d["case"]["ok"]]
    assert false_blocks == [], compare.format_verdicts(rep, limit=10)
    unmarked = []
    for d in rep.verdict_disagreements:
        o = d["outcome"]
        if o.crash is not None:
            unmarked.append(o.crash)
    assert unmarked == []
    assert rep.judged > 300 and rep.verdict_agree / rep.judged > 0.6
