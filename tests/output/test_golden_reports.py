"""The short report (docs/security.md "The short report"): the verdict first, a few lines per
finding, every line within the width; the golden files and docs/screenshots/ are what
tools/golden_reports.py writes today."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from repo_paths import REPO
sys.path.insert(0, str(REPO / "tools"))

import golden_reports as golden  # noqa: E402

REGENERATE = "regenerate with `python tools/golden_reports.py` and read the diff as a user would"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
IN_PROCESS = [name for name, (_, _, hook) in golden.CASES.items() if not hook]


@pytest.fixture(scope="module")
def files():
    return golden.goldens()


@pytest.fixture(scope="module")
def data():
    """Each case's JSON report."""
    return {name: golden.render(name, 80, colour=False)[1] for name in IN_PROCESS}


def test_the_golden_files_and_screenshots_are_todays_reports(files):
    for path, text in files.items():
        assert path.exists(), f"{path.relative_to(REPO)} is missing: {REGENERATE}"
        assert path.read_text(encoding="utf-8") == text, f"{path.relative_to(REPO)} differs: {REGENERATE}"


def _commands(report: dict) -> set[str]:
    """The lines that are a command to paste: kept whole, whatever the width."""
    commands = {report["corrected_command"], report["summary"]["all_gpus_command"]}
    commands |= {"    " + alt["command"] for alt in report["alternatives"]}
    return {c for c in commands if c}


def _too_wide(text: str, width: int, exempt: set[str]) -> list[str]:
    from h3doctor.output.wrap import cells

    return [line for line in text.splitlines() if cells(line) > width and line not in exempt]


@pytest.mark.parametrize("name", IN_PROCESS)
@pytest.mark.parametrize("width", [80, 120, 200])
def test_no_line_of_the_report_exceeds_the_width(name, width, data):
    for verbose in (False, True):
        text, report = golden.render(name, width, colour=False, verbose=verbose)
        assert not _too_wide(text, width, _commands(report)), (name, width, verbose)


def test_no_line_of_the_hooks_report_exceeds_the_width(files):
    for width in golden.WIDTHS:
        text = files[golden.GOLDEN / f"hook-blocked-{width}.txt"]
        # the corrected command, and the hook's own last line (launch/hook.py: not this report's)
        exempt = {line for line in text.splitlines() if line.startswith(("sglang serve ", "h3doctor: sglang was not"))}
        assert not _too_wide(text, width, exempt), width


def test_a_blocked_launch_through_the_hook_fits_on_one_screen(files):
    text = files[golden.GOLDEN / "hook-blocked-80.txt"]
    assert "1 error" in text.splitlines()[0]
    assert len(text.splitlines()) <= 15, text  # the limit for one error (the "assumed:" line in two lines)


@pytest.mark.parametrize("name", IN_PROCESS)
def test_the_colour_report_is_the_plain_text_with_colours(name):
    plain = golden.render(name, 80, colour=False)[0]
    coloured = golden.render(name, 80, colour=True)[0]
    assert ANSI.search(coloured), "the colour variant has no colour"
    assert ANSI.sub("", coloured) == plain


def test_the_kept_colour_file_is_the_hooks_plain_text_with_colours(files):
    coloured = files[golden.GOLDEN / f"{golden.COLOUR_KEPT}-80.ansi.txt"]
    assert ANSI.search(coloured) and ANSI.sub("", coloured) == files[golden.GOLDEN / f"{golden.COLOUR_KEPT}-80.txt"]


def test_the_default_report_keeps_why_and_catalog_references_for_verbose():
    short = golden.render("readme-ring", 120, colour=False)[0]
    verbose = golden.render("readme-ring", 120, colour=False, verbose=True)[0]
    assert "why:" not in short and "(M5,M9)" not in short and "h3doctor rule H3D305" in short
    assert "why:" in verbose and "(M5,M9)" in verbose


def test_a_note_is_one_line_in_the_short_report():
    """An info finding (sglang goes on) is its headline only; its text and advice are --verbose's."""
    short = golden.render("two-errors", 120, colour=False)[0]
    verbose = golden.render("two-errors", 120, colour=False, verbose=True)[0]
    assert "Host RAM is too small to pin" in short and "Host pin budget" not in short
    assert "Host pin budget" in verbose


# -- the verdict, as data ------------------------------------------------------------------------

def test_the_verdict_of_each_case(data):
    by = {name: report["summary"] for name, report in data.items()}
    assert by["readme-ring"]["verdict"] == "fail" and by["readme-ring"]["stage"] == "launch"
    assert by["two-errors"]["counts"]["predicted_failures"] == 2
    assert by["memory-failure"]["verdict"] == "fail" and by["memory-failure"]["stage"] == "after-download"
    assert by["warnings-only"]["verdict"] == "pass" and by["warnings-only"]["counts"]["warnings"] == 1
    # one RTX 4070: the same warning and no launch that fits: likely, exit 0, no corrected command
    assert by["no-fit"]["verdict"] == "likely-fail" and data["no-fit"]["verdict"] == "pass"
    assert data["no-fit"]["corrected_command"] is None and data["no-fit"]["fits_nowhere"] is True
    # the README's long request on one H200: a warning that predicts an OOM, exit 0: likely, not "will"
    assert by["readme-request"]["verdict"] == "likely-fail" and by["readme-request"]["stage"] == "first-request"
    assert data["readme-request"]["verdict"] == "pass" and "will" not in by["readme-request"]["text"]
    # 5 GPU and memory facts, and /dev/shm, ffmpeg's encoders and the free disk (H3D415, H3D613, H3D416) the
    # profile does not give
    assert by["cannot-verify"]["verdict"] == "cannot-verify" and by["cannot-verify"]["counts"]["cannot_verify"] == 9
    # what is missing and how to give it
    assert all(words in by["cannot-verify"]["text"] for words in ("ffmpeg", "the GPU's memory", "--profile FILE"))
    idle = by["idle-gpus"]
    assert (idle["verdict"], idle["gpus_used"], idle["gpus_present"]) == ("pass", 1, 2)
    assert idle["all_gpus_command"] == "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 2"
    # "uses all 2 GPUs", not "uses them all" after "1 GPU idle"
    assert "1 GPU idle; this launch uses all 2 GPUs (it checks clean):" in golden.render("idle-gpus", 10000, False)[0]
    assert idle["peak_gib"] <= idle["capacity_gib"]
    for name, summary in by.items():  # the report's first line is the verdict's text
        assert golden.render(name, 10000, colour=False)[0].splitlines()[0][2:] == summary["text"], name


@pytest.mark.parametrize("name", IN_PROCESS)
def test_no_finding_is_said_twice_in_the_short_report(name, data):
    """A finding's message and its advice are printed once: the fix loop's "gives up" and "still
    fails" lines point at a finding above ("H3D641, as above") instead of repeating it (the no-fit
    case said H3D641's message twice and its advice twice)."""
    text = golden.render(name, 10000, colour=False)[0]  # unfolded: each text whole on its line
    report = data[name]
    for f in report["findings"]:
        assert text.count(f["message"]) <= 1, (name, f["rule"])
        if f["fix_note"]:
            assert text.count(f["fix_note"]) <= 1, (name, f["rule"])
    if name == "no-fit":
        assert "H3D641, as above" in text and "H3D641 has no automatic fix here (its fix above)" in text


def test_the_summary_is_in_the_json_schema(data):
    import json

    import jsonschema

    from h3doctor.paths import package_dir

    schema = json.loads(package_dir("h3doctor.schema").joinpath("report.schema.json").read_text(encoding="utf-8"))
    for report in data.values():
        jsonschema.validate(json.loads(json.dumps(report)), schema)
    broken = {**data["idle-gpus"], "summary": {**data["idle-gpus"]["summary"], "verdict": "will-start"}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(broken)), schema)


# -- the doctor (issue 31 item 3): its golden, folded to the width, colour the same text ----------

@pytest.mark.parametrize("width", [80, 120, 200])
def test_no_line_of_the_doctors_report_exceeds_the_width(width):
    """Every line of `h3doctor doctor` on the made-up machine within the width (folded by
    output/lines.py; was printed whole, 100-200 columns a line). Fails when doctor_text prints
    without Lines."""
    text, _ = golden.render_doctor(width, colour=False)
    assert not _too_wide(text, width, set()), width
    assert text.splitlines()[0] == "h3doctor doctor: this machine for sglang MiniMax-H3"


def test_the_doctors_colour_report_is_its_plain_text_with_colours():
    plain = golden.render_doctor(80, colour=False)[0]
    coloured = golden.render_doctor(80, colour=True)[0]
    assert ANSI.search(coloured) and ANSI.sub("", coloured) == plain


def test_the_doctors_made_up_machine_warns_of_the_cgroup_and_nothing_else():
    """The golden's machine as data: a GB10 sharing host memory, no cgroup limit: one '!' line, the
    summary a warning, exit 0."""
    _, data = golden.render_doctor(80, colour=False)
    assert [c["fact"] for c in data["checks"] if c["status"] not in ("ok", "n/a")] == ["cgroup_memory_unlimited"]
    assert (data["summary"]["status"], data["summary"]["exit_code"]) == ("warning", 0)


# -- NO_COLOR on a terminal (issue 31's "colour and NO_COLOR"): the same text, no colour ---------

_COLOUR_SGR = {*range(30, 50), *range(90, 98), *range(100, 108)}  # foreground, background, bright


def _colours(text: str) -> list[str]:
    return [code for code in ANSI.findall(text)
            if any(p.isdigit() and int(p) in _COLOUR_SGR for p in code[2:-1].split(";"))]


@pytest.mark.parametrize("name", [*IN_PROCESS, "doctor"])
def test_no_color_on_a_terminal_is_the_plain_text_without_a_colour(name, monkeypatch):
    """A terminal (Rich styling on) with NO_COLOR set: not one colour code, only the styles NO_COLOR
    leaves (bold, dim), and the text is the golden's. Fails when the styled console ignores NO_COLOR."""
    monkeypatch.setattr(golden, "_environment", lambda env=golden._environment: {**env(), "NO_COLOR": "1"})
    styled = golden.render_doctor(80, colour=True)[0] if name == "doctor" else golden.render(name, 80, colour=True)[0]
    plain = golden.render_doctor(80, colour=False)[0] if name == "doctor" else golden.render(name, 80, colour=False)[0]
    assert not _colours(styled), _colours(styled)[:5]
    assert ANSI.sub("", styled) == plain
