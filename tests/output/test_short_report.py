"""The verdict line's data (output/verdict.summary), the idle-GPU offer (engine/idle_gpus.py) and
the folding of lines (output/wrap.py), tested through data."""

from __future__ import annotations

import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.engine.idle_gpus import all_gpus_argv
from h3doctor.engine.judge import Judge
from h3doctor.engine.target import Target
from h3doctor.host.profiles import load_profile
from h3doctor.output.formats import terminal_width
from h3doctor.output.json_report import build
from h3doctor.output.wrap import cells, fold
from h3doctor.sglang.flagtable import load_flag_table

MODEL = "sglang serve MiniMaxAI/MiniMax-H3"


@pytest.fixture(scope="module")
def table():
    return load_flag_table("0.5.23")


def _check(argv: str, profile: str, rules, table):
    return check(shlex.split(argv), load_profile(profile), rules, table, {})


def test_a_warning_that_predicts_failure_is_never_will_start(rules, table):
    """One RTX 4070: only a warning (H3D641, `predicts_failure`), exit 0 at the default --fail-on,
    and still the verdict says sglang will fail, at the first request."""
    result = _check(MODEL, "1xRTX4070", rules, table)
    report = build(result)
    assert report["verdict"] == "pass" and report["summary"]["counts"]["errors"] == 0
    summary = report["summary"]
    assert summary["verdict"] == "fail" and summary["stage"] == "first-request"
    assert "will start" not in summary["text"] and summary["text"].startswith("sglang will fail")


def test_a_predicted_failure_outranks_a_fact_not_known(rules, table):
    from h3doctor.facts import facts_from_mapping

    hw = facts_from_mapping({"platform": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "gpu_count": 2}, "lacking")
    result = check(shlex.split(f"{MODEL} --num-gpus 2 --ring-degree 2 --attention-backend torch_sdpa"), hw, rules,
                   table, {})
    summary = build(result)["summary"]
    assert summary["counts"]["cannot_verify"] > 0
    assert summary["verdict"] == "fail" and summary["stage"] == "launch"


def test_a_launch_that_is_not_h3_is_not_said_to_start(rules, table):
    summary = build(_check("sglang serve some/other-model", "4xH200", rules, table))["summary"]
    assert summary["verdict"] == "cannot-verify" and "not a MiniMax-H3 launch" in summary["text"]


def test_idle_gpus_are_offered_only_when_that_launch_checks_clean(rules, table):
    hw = load_profile("2xRTX4090")
    judge, target = Judge(rules), Target.of(hw, table)  # the profile's 2 GPUs
    clean = judge.check(shlex.split(MODEL), target)
    assert all_gpus_argv(clean, shlex.split(MODEL), judge, target) == [*shlex.split(MODEL), "--num-gpus", "2"]
    failing = judge.check(shlex.split(f"{MODEL} --num-gpus 2 --ring-degree 2 --attention-backend torch_sdpa"), target)

    class FailingJudge:  # its check of the launch using both GPUs fails
        def check(self, words, on):
            return failing

    assert all_gpus_argv(clean, shlex.split(MODEL), FailingJudge(), target) is None


def test_idle_gpus_are_not_offered_over_the_users_own_number(rules, table):
    hw = load_profile("2xRTX4090")
    given = shlex.split(f"{MODEL} --num-gpus=1")
    result = check(given, hw, rules, table, {})
    assert build(result)["summary"]["gpus_used"] == 1
    assert all_gpus_argv(result, given, Judge(rules), Target.of(hw, table)) is None


@pytest.mark.parametrize("columns,expected", [("100", 100), ("", None), ("²", None), ("-1", None), ("0", None),
                                              ("99999999999999999999", None)])
def test_columns_is_read_as_a_plain_number_only(columns, expected, monkeypatch):
    import io

    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_width(io.StringIO()) == expected  # not a terminal: only $COLUMNS gives a width


def test_fold_breaks_at_spaces_with_a_hanging_indent():
    lines = fold("alpha beta gamma delta epsilon zeta eta theta", 20, start=2, indent=4)
    assert lines == ["alpha beta gamma", "    delta epsilon", "    zeta eta theta"]
    assert all(cells(line) <= 20 - (2 if n == 0 else 0) for n, line in enumerate(lines))


def test_fold_counts_wide_characters_as_two_cells_and_cuts_a_word_longer_than_the_line():
    wide = "模型" * 15  # 60 cells, one word
    lines = fold(f"x {wide}", 24)
    assert all(len(line) <= 12 for line in lines[1:]), lines  # two cells a character: 12 to a line of 24
    assert "".join(lines).replace(" ", "") == "x" + wide
    assert fold("a" * 50, 20) == ["a" * 20, "a" * 20, "a" * 10]


def test_fold_without_a_width_keeps_the_line():
    assert fold("a b " * 100, None) == ["a b " * 100]
