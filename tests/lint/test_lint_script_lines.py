"""A `docker run … IMAGE bash -lc '…sglang serve …' -- ARGS` line inside a shell script, a
Makefile recipe or a workflow's `run:` step (issue 30, what was left of item 2): judged through
the reader `check` uses (inputs/script_line.py), each finding at its word in the file — inside
the quoted script or among the arguments — and `--fix` writing each change where its word is
written, launch by launch: a launch whose change is to a word the shell computes is refused
alone, with the reason, and the file's other launches are fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render

SCRIPT = "scripts/serve-container.sh"
WORKFLOW = ".github/workflows/nightly.yml"
RECIPE = "infra/serve.mk"


@pytest.fixture
def repo(fixture_repo) -> Path:
    return fixture_repo


def _report(*paths: str, **kw) -> tuple[int, dict, list[str]]:
    """lint without the fixture's configuration: judged on no target, the fixes are the safe ones."""
    code, report, notes = lint(list(paths), LintOptions(no_config=True, **kw))
    return code, json.loads(render("lint", "json", report)), notes


def _at(repo: Path, finding: dict) -> str:
    """The text the finding points at: its word as the file writes it."""
    line = (repo / finding["file"]).read_text().splitlines()[finding["line"] - 1]
    return line[finding["col"] - 1:].split()[0].rstrip("'")


def _rules(report: dict, path: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in report["findings"]:
        if f["file"] == path:
            out.setdefault(f["rule"], []).append(f)
    return out


def test_a_container_script_line_is_judged_at_its_words(repo):
    code, report, _notes = _report(SCRIPT)
    found = _rules(report, SCRIPT)
    assert "H3DL002" not in found  # judged, never "not judged"
    assert [_at(repo, f) for f in found["H3D021"]] == ["--num-gpu"]  # inside the quoted script
    assert [_at(repo, f) for f in found["H3D020"]] == ["--ulysses_degree"]  # among the line's arguments
    # the canary's degree is its "$1": the finding is at the flag the script writes it after
    assert {(f["line"], _at(repo, f)) for f in found["H3D228"]} == {(15, "--ulysses-degree")}
    assert code == 1


def test_the_reports_argv_and_corrected_command_are_the_line_as_written(repo):
    _code, report, _notes = _report(SCRIPT)
    first = next(f for f in report["files"] if f["path"] == SCRIPT)["launches"][0]
    assert first["argv"][-5:] == ["--", "--port", "30000", "--ulysses_degree", "8"]
    assert first["argv"][first["argv"].index("-lc") + 1].endswith('--num-gpu 8 "$@"')  # the script as written
    fixed = first["results"][0]["corrected_argv"]
    assert fixed[fixed.index("-lc") + 1].endswith('--num-gpus 8 "$@"') and fixed[-2:] == ["--ulysses-degree", "8"]


def test_fix_writes_each_launch_where_its_words_are_and_refuses_only_the_one_it_cannot(repo):
    before = (repo / SCRIPT).read_text()
    _code, report, _notes = lint([SCRIPT], LintOptions(no_config=True, fix=True))
    after = (repo / SCRIPT).read_text()
    assert after == before.replace("--num-gpu 8", "--num-gpus 8").replace("--ulysses_degree", "--ulysses-degree")
    # the canary's fix is to "$1": not made, and said, with the line it is on
    said = render("lint", "text", report).splitlines()
    assert [n for n in said if "not fixed" in n] == [
        f"{SCRIPT}:14: not fixed: the change is to '3', the script's positional parameter \"$1\"; "
        "change it where it is given"]
    _code, report, _notes = _report(SCRIPT)
    assert not {"H3D020", "H3D021"} & set(_rules(report, SCRIPT))  # the re-lint: those are gone


@pytest.mark.parametrize("path, rule, word, fixed", [
    (WORKFLOW, "H3D109", "--num-gpus", "--num-gpus 4 --ulysses-degree 4 \"$@\"' -- \\\n"),
    (RECIPE, "H3D021", "--num-gpu", "--num-gpus 4 --port 30000'\n"),
])
def test_a_recipe_line_and_a_workflow_step_are_read_as_shell_too(repo, path, rule, word, fixed):
    _code, report, _notes = _report(path, targets=("4xH200",))
    found = _rules(report, path)
    assert "H3DL002" not in found
    assert [_at(repo, f) for f in found[rule]] == [word]  # inside the quoted script
    _report(path, targets=("4xH200",), unsafe_fixes=True, fix=True)
    assert fixed in (repo / path).read_text()  # the script's text edited in place, its layout kept


def test_a_plain_bash_lc_line_in_a_script_is_judged(tmp_path, monkeypatch):
    (tmp_path / "run.sh").write_text(
        "#!/bin/sh\nbash -lc 'exec sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpu 4 \"$@\"' -- --port 1\n")
    monkeypatch.chdir(tmp_path)
    _code, report, _notes = _report("run.sh", targets=("4xH200",))
    [typo] = _rules(report, "run.sh")["H3D021"]
    assert _at(tmp_path, typo) == "--num-gpu" and typo["line"] == 2


def test_the_llm_launcher_in_a_container_script_is_fixed_in_the_script_and_converges(repo):
    """H3D040 inside a script (scripts/serve-legacy.sh): `--fix` writes `sglang serve` where the
    script writes the program, and the re-lint has no H3D040."""
    path = "scripts/serve-legacy.sh"
    _code, report, _notes = _report(path)
    assert [f["line"] for f in _rules(report, path)["H3D040"]] == [6, 11]
    before = (repo / path).read_text()
    _report(path, fix=True)
    assert (repo / path).read_text() == before.replace(
        "exec python3 -m sglang.launch_server --model ", "exec sglang serve --model-path ").replace(
        "exec python3 -m sglang.launch_server", "exec sglang serve")
    _code, report, _notes = _report(path)
    assert "H3D040" not in _rules(report, path)


def test_a_fix_that_would_renumber_the_scripts_arguments_is_refused(tmp_path, monkeypatch):
    """The script reads its first argument by number: respelling a flag among the arguments would
    move what $1 is, so the change is not written (as check refuses it), and said."""
    text = ("#!/bin/sh\ndocker run --gpus all lmsysorg/sglang:v0.5.23 bash -lc "
            "'echo \"node $1\"; exec sglang serve --model-path MiniMaxAI/MiniMax-H3 \"$@\"' -- --num-gpu 4\n")
    (tmp_path / "run.sh").write_text(text)
    monkeypatch.chdir(tmp_path)
    _code, report, _notes = lint(["run.sh"], LintOptions(no_config=True, targets=("4xH200",), fix=True))
    assert (tmp_path / "run.sh").read_text() == text
    assert any("by position" in line for line in render("lint", "text", report).splitlines())
