"""The hook's brief report of a launch that starts with findings below --fail-on
(output/hook_brief.py): at most five lines at any width, whatever the number of findings, what
predicts a failure named first, and the full report's command whole on the last line."""

from __future__ import annotations

import io
import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.host.profiles import load_profile
from h3doctor.output.hook_brief import MAX_LINES, brief
from h3doctor.output.json_report import build
from h3doctor.output.markup import PlainConsole
from h3doctor.output.wrap import cells
from h3doctor.sglang.flagtable import load_flag_table
from repo_paths import TESTS

AGAIN = "h3doctor check --profile X -- sglang serve MiniMaxAI/MiniMax-H3 " + "--flag value " * 20


@pytest.fixture(scope="module")
def results(rules):
    table = load_flag_table("0.5.23")
    cases = {"lacking": (str(TESTS / "golden" / "profile-lacking-facts.yaml"), "--num-gpus 2"),  # 7 checks not made
             "rtx4070": ("1xRTX4070", ""),  # a warning that predicts failure, and a note
             "one-warning": ("4xH200", "--num-gpus 4 --performance speed")}
    return {name: check(shlex.split(f"sglang serve MiniMaxAI/MiniMax-H3 {extra}"), load_profile(profile), rules,
                        table, {}) for name, (profile, extra) in cases.items()}


def _brief(result, width) -> list[str]:
    buf = io.StringIO()
    brief(result, PlainConsole(buf, width), buf, summary=build(result)["summary"], fail_on="error", again=AGAIN)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize("name", ["lacking", "rtx4070", "one-warning"])
@pytest.mark.parametrize("width", [40, 80, 200])
def test_at_most_five_lines_and_the_command_whole(results, name, width):
    lines = _brief(results[name], width)
    assert len(lines) <= MAX_LINES == 5, lines
    assert lines[-1] == "  full report: " + AGAIN
    assert all(cells(line) <= width for line in lines[:-1]), lines
    said = " ".join(" ".join(lines).split())
    # every finding is named, by its title or its ID (on a terminal of 40 columns, at least counted)
    ids = [f.rule.id for f in results[name].evaluation.findings]
    assert all(i in said for i in ids) or (width < 80 and f"{len(ids)} findings" in said), said


def test_what_predicts_a_failure_is_named_first(results):
    said = " ".join(_brief(results["rtx4070"], 200))
    assert said.index("H3D641") < said.index("H3D542")
