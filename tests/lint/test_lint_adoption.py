"""The adoption tools ruff users expect, on the fixture repository (tests/fixtures/repo): a
baseline (only new findings fail, lines may move, stale entries said), per-rule severity in
.h3doctor.yaml (an unknown rule ID a located error with did-you-mean), --exit-zero (findings
exit 0, usage and input errors keep exit 2) and --output-format (an alias of --format)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from h3doctor.errors import UsageError
from h3doctor.lint.run import LintOptions, lint
from tests.lint.test_lint_locations import _copy


def _lint(repo, monkeypatch, *paths, **kw) -> tuple[int, dict, list[str]]:
    monkeypatch.chdir(repo)
    code, report, notes = lint(list(paths) or ["."], LintOptions(**kw))
    return code, report.data, notes


def _cli(repo, *args) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", *args], cwd=repo, capture_output=True,
                          text=True, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _failing(report) -> list[tuple[str, str]]:
    return [(f["file"], f["rule"]) for f in report["findings"] if f["suppressed"] is None and f["severity"] == "error"]


# --- baseline ------------------------------------------------------------------------------------

def test_a_baseline_accepts_todays_findings_and_fails_only_new_ones(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    code, report, _notes = _lint(repo, monkeypatch)
    assert code == 1 and _failing(report)  # the fixture fails today
    code, report, _notes = _lint(repo, monkeypatch, write_baseline="lint-baseline.json")
    assert code == 0 and not _failing(report)
    assert {f["suppressed"]["reason"] for f in report["findings"] if f["suppressed"] and
            f["suppressed"]["kind"] == "external"} >= {"baseline"}
    # lines move above the launches: nothing new
    for name in ("docs/quickstart.md", "scripts/entrypoint.sh"):
        text = (repo / name).read_text()
        first, rest = text.split("\n", 1)
        (repo / name).write_text(first + "\n\n\n" + rest)
    code, report, notes = _lint(repo, monkeypatch, baseline="lint-baseline.json")
    assert code == 0 and notes == [], notes
    # a new broken launch in a doc, and a copy of an accepted one: both are new
    with open(repo / "docs/quickstart.md", "a") as doc:
        doc.write("\n```bash\nsglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --enable-foo\n```\n"
                  "\n```bash\nsglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 \\\n  --ulysses_degree 4\n```\n")
    code, report, _notes = _lint(repo, monkeypatch, baseline="lint-baseline.json")
    assert code == 1 and _failing(report) == [("docs/quickstart.md", "H3D020"), ("docs/quickstart.md", "H3D020")]


def test_stale_baseline_entries_are_said_not_fatal(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _lint(repo, monkeypatch, "docs", write_baseline="b.json")
    (repo / "docs/cookbook.mdx").write_text("Fixed.\n")
    code, _report, notes = _lint(repo, monkeypatch, "docs", baseline="b.json")
    assert code == 0 and len(notes) == 1 and "3 entries matched no finding" in notes[0]


@pytest.mark.parametrize("text, why", [
    ("{", "malformed JSON"),
    ('{"findings": []}', "not an h3doctor baseline"),
    ('{"format": "h3doctor-baseline/1", "findings": [{"rule": "H3D020"}]}', "findings[0]"),
    ('{"format": "h3doctor-baseline/1", "findings": ' + "[" * 5000, "nested deeper"),
], ids=["malformed", "not-a-baseline", "no-fingerprint", "too-deep"])
def test_a_bad_baseline_is_a_located_error_not_an_empty_baseline(tmp_path, monkeypatch, text, why):
    repo = _copy(tmp_path)
    (repo / "b.json").write_text(text)
    with pytest.raises(UsageError) as err:
        _lint(repo, monkeypatch, "docs", baseline="b.json")
    assert why in err.value.message and "b.json" in err.value.location


def test_write_baseline_never_writes_through_a_planted_link(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    (repo / "b.json").symlink_to(outside)
    with pytest.raises(UsageError, match="cannot write the baseline"):
        _lint(repo, monkeypatch, "docs", write_baseline="b.json")
    assert outside.read_text() == "theirs\n"


# --- severity overrides --------------------------------------------------------------------------

def test_the_configuration_sets_a_rules_severity_for_the_report_and_fail_on(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    config = repo / ".h3doctor.yaml"
    config.write_text(config.read_text() + "severity:\n  H3D020: warning\n  H3D228: info\n")
    code, report, _notes = _lint(repo, monkeypatch, "docs", "notebooks")
    rules = {(f["rule"], f["severity"]) for f in report["findings"]}
    assert ("H3D020", "warning") in rules and ("H3D228", "info") in rules
    assert not any(r in ("H3D020", "H3D228") and s == "error" for r, s in rules)
    assert code == 0  # nothing else in the docs is an error
    code, _report, _notes = _lint(repo, monkeypatch, "docs", "notebooks", fail_on="warning")
    assert code == 1


def test_an_unknown_rule_in_severity_is_a_located_error_with_did_you_mean(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    config = repo / ".h3doctor.yaml"
    config.write_text(config.read_text() + "severity:\n  H3D020: warning\n  H3D0200: info\n")
    with pytest.raises(UsageError) as err:
        _lint(repo, monkeypatch, "docs")
    assert err.value.location.endswith(".h3doctor.yaml:4:3") and "did you mean H3D020?" in err.value.message
    config.write_text("targets: [4xH200]\nseverity:\n  H3D020: fatal\n")  # the schema's enum
    with pytest.raises(UsageError, match="severity/H3D020"):
        _lint(repo, monkeypatch, "docs")
    config.write_text("targets: [4xH200]\nseverity:\n  H3DL003: info\n")  # lint's notices keep theirs
    with pytest.raises(UsageError, match="no rule 'H3DL003'"):
        _lint(repo, monkeypatch, "docs")


# --- exit codes and the format alias, through the command line ---------------------------------

def test_exit_zero_and_output_format_on_the_command_line(tmp_path):
    repo = _copy(tmp_path)
    code, out, _err = _cli(repo, "docs", "--output-format", "json")
    assert code == 1 and json.loads(out)["summary"]["findings"]["error"] > 0
    code, out_zero, _err = _cli(repo, "docs", "--format", "json", "--exit-zero")
    assert code == 0 and json.loads(out_zero)["findings"] == json.loads(out)["findings"]
    code, _out, err = _cli(repo, "docs", "--exit-zero", "--baseline", "missing.json")
    assert code == 2 and "missing.json" in err  # an input error is not a finding: --exit-zero keeps it
    code, _out, err = _cli(repo, "docs", "--baseline", "a.json", "--write-baseline", "b.json")
    assert code == 2 and "give one of them" in err


# --- --add-noqa ----------------------------------------------------------------------------------

SCRIPT = """#!/bin/sh
sglang serve MiniMaxAI/MiniMax-H3 \\
  --attention-backnd fa
echo done
sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 2 --ring-degree 2 --attention-backend torch_sdpa # h3doctor: ignore[H3D116] known
sglang serve "MiniMaxAI/MiniMax-H3" --tp-size 3 --num-gpus "3
"
"""


def test_add_noqa_accepts_todays_findings_where_a_comment_is_a_comment(tmp_path, monkeypatch):
    """Each launch with findings gets `# h3doctor: ignore[IDs] added by --add-noqa` at the end of
    its last line (a continued command's too), or its IDs merged into the comment there; a launch
    whose last line ends inside a string is left alone and named (the comment would become part of
    a word); a Dockerfile takes no comment after an instruction and is named, not written."""
    (tmp_path / ".h3doctor.yaml").write_text("targets: [4xH200]\n")
    (tmp_path / "run.sh").write_text(SCRIPT)
    dockerfile = 'FROM lmsysorg/sglang:v0.5.23\nCMD ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--tp-size", "3"]\n'
    (tmp_path / "Dockerfile").write_text(dockerfile)
    _code, _report, notes = _lint(tmp_path, monkeypatch, add_noqa=True, diff=True)
    assert (tmp_path / "run.sh").read_text() == SCRIPT  # --diff writes nothing
    code, report, _notes = _lint(tmp_path, monkeypatch, add_noqa=True)
    lines = (tmp_path / "run.sh").read_text().splitlines()
    assert lines[2] == "  --attention-backnd fa  # h3doctor: ignore[H3D020] added by --add-noqa"
    assert lines[4].endswith("--attention-backend torch_sdpa # h3doctor: ignore[H3D116,H3D305] known")
    assert lines[5:7] == ['sglang serve "MiniMaxAI/MiniMax-H3" --tp-size 3 --num-gpus "3', '"']
    assert any(n.startswith("run.sh:6: no suppression added") and "inside a string" in n for n in notes), notes
    assert any(n.startswith("Dockerfile: no suppression added") for n in notes), notes
    assert (tmp_path / "Dockerfile").read_text() == dockerfile
    # what is left failing is exactly what could not be accepted in place
    assert code == 1 and sorted(set(_failing(report))) == [("Dockerfile", "H3D227"), ("Dockerfile", "H3D401"),
                                                           ("Dockerfile", "H3D515"), ("run.sh", "H3D515")]


def test_add_noqa_on_the_fixture_repository_leaves_only_what_it_names(tmp_path, monkeypatch):
    """On a repository as platform teams write it (manifests, compose, scripts, docs), after
    --add-noqa a lint fails only on the files the notes name, and every launch reads the same words."""
    repo = _copy(tmp_path)
    _code, before, _notes = _lint(repo, monkeypatch)
    _code, _report, notes = _lint(repo, monkeypatch, add_noqa=True, diff=True)
    code, report, _notes = _lint(repo, monkeypatch, add_noqa=True)
    named = {n.split(":", 1)[0] for n in notes}
    assert {file for file, _rule in _failing(report)} <= named, (notes, _failing(report))
    def words(data):
        return [(f["path"], launch["argv"]) for f in data["files"] for launch in f["launches"]]

    assert words(report) == words(before)
    assert report["summary"]["suppressed"] > before["summary"]["suppressed"]


def test_add_noqa_and_fix_are_one_or_the_other(tmp_path):
    code, _out, err = _cli(tmp_path, "--add-noqa", "--fix", ".")
    assert code == 2 and "--add-noqa accepts the findings --fix would correct" in err
