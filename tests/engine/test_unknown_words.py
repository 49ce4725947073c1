"""A fact h3doctor does not know is said as "unknown" in a finding's text, never as `None`
("None GiB free", issue 31 item 6), while a None sglang itself prints stays sglang's words
(engine/conditions.said)."""

from __future__ import annotations

import re
import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.conditions import said
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table
from repo_paths import TESTS

LACKING = str(TESTS / "golden" / "profile-lacking-facts.yaml")  # an H100 with no memory, shm or ffmpeg facts


@pytest.fixture(scope="module")
def table():
    return load_flag_table("0.5.23")


def test_no_finding_says_none_for_a_fact_not_known(rules, table):
    result = check(shlex.split("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 2"), load_profile(LACKING), rules,
                   table, {})
    by_rule = {f.rule.id: f for f in result.evaluation.findings}
    assert {"H3D540", "H3D542", "H3D641"} <= set(by_rule)
    for f in result.evaluation.findings:
        for text in (f.message, f.why, f.fix_note):
            assert not re.search(r"\bNone\b", text or ""), (f.rule.id, text)
    assert "on a GPU with unknown GiB free" in by_rule["H3D540"].message


def test_a_none_of_sglangs_own_args_stays_as_sglang_prints_it():
    ctx = {"args.tp_size": None, "hw.gpu_memory_gib": None, "derived.memory.capacity_gib": None,
           "derived.other": None}
    assert said("{args.tp_size} {hw.gpu_memory_gib} {derived.memory.capacity_gib} {derived.other}", ctx) == (
        "None unknown unknown None")
    # a path the rule's condition found unknown is unknown wherever it is
    assert said("{derived.other}", ctx, unknown={"derived.other"}) == "unknown"
