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


def test_a_warning_that_predicts_failure_is_likely_never_will_fail_nor_will_start(rules, table):
    """One RTX 4070: only a warning (H3D641, `predicts_failure`), so exit 0 at the default
    --fail-on and 1 at --fail-on warning; the headline agrees with that exit: sglang is *likely* to
    fail at the first request (its own verdict and mark), never "will fail", never "will start"."""
    result = _check(MODEL, "1xRTX4070", rules, table)
    report = build(result)
    assert report["verdict"] == "pass" and report["summary"]["counts"]["errors"] == 0
    assert build(result, fail_on="warning")["verdict"] == "fail"
    summary = report["summary"]
    assert summary["verdict"] == "likely-fail" and summary["stage"] == "first-request"
    assert summary["text"] == ("likely to fail at the first request: torch.OutOfMemoryError is likely "
                               "(peak 16.6 of 11.6 GiB per GPU, 1 warning)")
    assert "will" not in summary["text"]


def _finding(severity: str, stage: str, *, predicts: bool = True, memory: bool = False, title: str = "A title"):
    from types import SimpleNamespace

    rule = SimpleNamespace(stage=stage, title=title, judges_gpu_memory=memory)
    return SimpleNamespace(rule=rule, severity=severity, cannot_verify=False, unknown_facts=(), unknown_why=None,
                           predicts_failure=predicts)


def _summary(findings):
    from h3doctor.output.verdict import summary

    return summary(findings, judged=True, memory={"peak_typical_gib": 81.0, "capacity_gib": 79.1}, gpus_used=1,
                   gpus_present=1)


def test_an_error_outranks_a_likely_failure_and_counts_alone():
    """An error that predicts a failure is "will fail", at the errors' stage, counted alone; a
    warning that predicts one at an earlier stage does not move it."""
    s = _summary([_finding("warning", "launch"), _finding("error", "after-download")])
    assert (s["verdict"], s["stage"]) == ("fail", "after-download")
    assert s["text"] == "sglang will fail after the weight download (1 error)"


def test_a_likely_failure_names_its_earliest_warning_and_counts_the_warnings():
    """Not a memory rule: the earliest warning's title is the reason; memory's numbers are not said."""
    s = _summary([_finding("warning", "first-request", title="Late"), _finding("warning", "worker", title="Early"),
                  _finding("warning", "launch", predicts=False)])
    assert (s["verdict"], s["stage"]) == ("likely-fail", "worker")
    assert s["text"] == "likely to fail to start, before the weight download: Early (2 warnings)"
    memory = _summary([_finding("warning", "first-request", memory=True)])
    assert memory["text"] == ("likely to fail at the first request: torch.OutOfMemoryError is likely "
                              "(peak 81.0 of 79.1 GiB per GPU, 1 warning)")


def test_cannot_tell_says_each_kind_of_unknown_once():
    """Reasons that share their words before a colon are said once, with what each names."""
    from types import SimpleNamespace

    from h3doctor.output.verdict import summary

    def unknown(why):
        return SimpleNamespace(rule=SimpleNamespace(stage="launch"), severity="error", cannot_verify=True,
                               predicts_failure=False, unknown_facts=("hw.x",), unknown_why=why)

    s = summary([unknown("not known for this hardware: ffmpeg"), unknown("not known for this hardware: shm_gib"),
                 unknown("not known for this hardware: ffmpeg"), unknown("the GPU's memory is not known")],
                judged=True, memory=None, gpus_used=1, gpus_present=1)
    assert s["verdict"] == "cannot-verify"
    assert s["text"].startswith("cannot tell: 4 checks could not be made (not known for this hardware: ffmpeg, "
                                "shm_gib; the GPU's memory is not known); a profile file")


def test_every_headline_verdict_has_its_own_mark_and_the_schema_knows_it():
    """The report's and the hook's first line take their mark from one table: likely-fail is `!`,
    never the ✗ of "will fail" nor the ✓ of "will start"; the JSON schema lists exactly these verdicts."""
    import json

    from h3doctor.output.verdict import VERDICT_MARK
    from repo_paths import REPO

    schema = json.loads((REPO / "h3doctor" / "schema" / "report.schema.json").read_text())
    assert set(schema["properties"]["summary"]["properties"]["verdict"]["enum"]) == set(VERDICT_MARK)
    marks = {v: m.split("]")[1].split("[")[0] for v, m in VERDICT_MARK.items()}
    assert marks == {"fail": "✗", "likely-fail": "!", "cannot-verify": "?", "pass": "✓"}


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
