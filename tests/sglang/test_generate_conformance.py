"""`sglang generate` conformance with the real sglang (0.5.23, and the older releases at the end), from
recorded goldens (no sglang here).

tests/conformance/sglang-0.5.23-generate.jsonl holds generated `sglang generate` commands with
sampling flags and what sglang's own generate path did with each one, up to the request
hand-off (argparse, ServerArgs, the family's sampling class and its `_validate`, the H3 request
validation; the model is never loaded), then h3doctor's corrected command for each case it
corrects, recorded the same way. Written by tools/conformance/record_generate.py (README there).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from repo_paths import REPO

ROOT = REPO
sys.path.insert(0, str(ROOT / "tools" / "conformance"))

import compare  # noqa: E402
import record_generate as rg  # noqa: E402

VERSION = "0.5.23"
MIN_CASES = 300
GENERATE_RULES = ("H3D800", "H3D801", "H3D802", "H3D803", "H3D804", "H3D805", "H3D806", "H3D807", "H3D808",
                  "H3D809", "H3D810", "H3D811", "H3D812", "H3D813", "H3D814", "H3D815", "H3D816", "H3D817", "H3D818",
                  "H3D819", "H3D820", "H3D821", "H3D822", "H3D823",
                  "H3D824", "H3D825", "H3D826", "H3D827", "H3D828", "H3D829", "H3D830", "H3D831")


@pytest.fixture(scope="module")
def goldens():
    return compare.read_jsonl(Path(str(rg.GOLDENS).format(version=VERSION)))


@pytest.fixture(scope="module")
def doctor():
    return rg.Doctor(VERSION)


@pytest.fixture(scope="module")
def outcomes(goldens, doctor):
    _, records = goldens
    by_id = {r["id"]: r for r in records if "of" not in r}
    return {r["id"]: doctor.run(r if "of" not in r else {**by_id[r["of"]], "argv": r["argv"]}) for r in records}


def _cases(records):
    return [r for r in records if "of" not in r]


def test_goldens_are_complete_and_match_the_generator(goldens):
    meta, records = goldens
    assert meta["sglang_version"] == VERSION
    gen = meta["generator"]
    assert gen["version"] == rg.GENERATOR_VERSION, "goldens come from another generator version: re-record"
    expected = rg.generate(gen["seed"], gen["count"])
    got = [{k: r[k] for k in ("id", "profile", "argv", "files") if k in r} for r in _cases(records)]
    assert got == expected, "the case generator no longer reproduces the goldens: re-record (tools/conformance)"
    assert len(got) >= MIN_CASES
    assert not [r["id"] for r in records if r.get("network")], "sglang tried to reach the network while recording"


def test_goldens_cover_every_family_and_both_verdicts(goldens):
    cases = _cases(goldens[1])
    models = {r["argv"][r["argv"].index("--model-path") + 1] for r in cases}
    assert {m for ids in rg.MODELS.values() for m in ids} <= models
    steps = {r.get("step") for r in cases if not r["ok"]}
    assert {2, 5, 6} <= steps and any(r["ok"] for r in cases)


def test_h3doctor_agrees_with_sglang_on_every_case(goldens, outcomes):
    disagreements = [f"{r['id']}: {why}" for r in _cases(goldens[1])
                     if (why := rg.judge(r, outcomes[r["id"]])) is not None]
    assert disagreements == [], "\n".join(disagreements[:20])


def test_each_generate_rule_is_met_by_sglang(goldens, outcomes):
    # every rule's class is in the goldens as the first generate finding of a case sglang rejects
    # with that very message (the agreement test above checks the message)
    met = {outcomes[r["id"]].sampling[0].rule.id for r in _cases(goldens[1])
           if not r["ok"] and outcomes[r["id"]].sampling}
    assert sorted(set(GENERATE_RULES) - met) == []


def test_every_correction_is_recorded_and_passes_sglangs_sampling_validation(goldens, outcomes):
    _, records = goldens
    fixes = {r["of"]: r for r in records if "of" in r}
    missing, failing = [], []
    for case in _cases(records):
        proposal = outcomes[case["id"]].proposal
        recorded = fixes.get(case["id"])
        if proposal is not None and (recorded is None or recorded["argv"] != proposal):
            missing.append(case["id"])
    for rec in fixes.values():
        why = rg.judge_corrected(rec, outcomes[rec["id"]])
        if why is not None:
            failing.append(f"{rec['id']}: {why}")
    assert missing == [], f"corrected commands not recorded through sglang (re-record): {missing[:10]}"
    assert failing == [], "\n".join(failing[:20])
    assert len(fixes) >= 100


def test_every_rejected_case_gets_a_correction_or_a_no_fix(goldens, outcomes):
    # a rejected case h3doctor does not correct is one it reports as no-fix (task, target,
    # conditions, files: what only the user's --config file can give)
    _, records = goldens
    corrected = {r["of"] for r in records if "of" in r}
    silent = [r["id"] for r in _cases(records) if not r["ok"] and r["id"] not in corrected
              and outcomes[r["id"]].fix_status != "no-fix"]
    assert silent == []


# Older releases: the same generator and seed through each release's own sglang generate
# (record_generate.py --sglang-version X). Cases whose verdict is the offline hub's (a model id the
# release does not register, marked `env`) are not judged.
OLDER_RELEASES = ("0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22")


@pytest.mark.parametrize("version", OLDER_RELEASES)
def test_older_releases_agree_on_every_case_and_every_correction(version):
    meta, records = compare.read_jsonl(Path(str(rg.GOLDENS).format(version=version)))
    assert meta["sglang_version"] == version
    gen = meta["generator"]
    assert gen["version"] == rg.GENERATOR_VERSION
    assert [{k: r[k] for k in ("id", "profile", "argv", "files") if k in r} for r in _cases(records)] == \
        rg.generate(gen["seed"], gen["count"]), "the case generator no longer reproduces the goldens: re-record"
    assert not [r["id"] for r in records if r.get("network")]
    doctor = rg.Doctor(version)
    rep = rg.compare_all(records, doctor)
    assert rep.judged >= 150, rep.summary()  # 0.5.17-0.5.19 register neither FastH3 id nor VDN-H3
    assert rep.disagreements == [], "\n".join(f"{r['id']}: {why}" for r, why in rep.disagreements[:20])
    assert rep.corrected_failures == [], "\n".join(f"{r['id']}: {why}" for r, why in rep.corrected_failures[:20])
    fixes = {r["of"]: r for r in records if "of" in r}
    missing = [c["id"] for c in _cases(records) if not c.get("env")
               and (p := doctor.run(c).proposal) is not None and (c["id"] not in fixes or fixes[c["id"]]["argv"] != p)]
    assert missing == [], f"corrected commands not recorded through sglang {version} (re-record): {missing[:10]}"
    assert rep.corrected + rep.nearest >= 50
