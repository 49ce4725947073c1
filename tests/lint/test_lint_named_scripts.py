"""A Makefile, a GitHub workflow and an Ansible playbook hold launches too (issue 30 item 6), in the
fixture repository (tests/fixtures/repo): recipe lines, `run:` steps and `shell:`/`command:` tasks
are read as scripts, each launch's findings at its word in the file, and `--fix` edits it there."""

from __future__ import annotations

import json

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render


def _report(*paths: str, **kw) -> tuple[int, dict]:
    code, report, _notes = lint(list(paths), LintOptions(**kw))
    return code, json.loads(render("lint", "json", report))


def _word(repo, f: dict) -> str:
    return (repo / f["file"]).read_text().splitlines()[f["line"] - 1][f["col"] - 1:].split()[0]


@pytest.mark.parametrize("path, kind, rule, word", [
    ("Makefile", "makefile", "H3D020", "--ulysses_degree"),  # a recipe line
    (".github/workflows/smoke.yml", "workflow", "H3D020", "--ulysses_degree"),  # a `run: |` step
    ("ansible/serve.yml", "ansible", "H3D021", "--tp"),  # a folded `shell: >` task
])
def test_a_named_makefile_workflow_or_playbook_is_read_for_launches(fixture_repo, path, kind, rule, word):
    code, report = _report(path)
    assert [f["kind"] for f in report["files"]] == [kind]
    [finding] = [f for f in report["findings"] if f["rule"] == rule]
    assert _word(fixture_repo, finding) == word and code == (1 if rule == "H3D020" else 0)
    assert not [f for f in report["findings"] if f["rule"] == "H3DL002"]  # `pkill -f "sglang serve"` only names it


def test_the_fix_edits_the_recipe_line_and_the_run_step_where_they_stand(fixture_repo):
    code, _report_obj = _report("Makefile", ".github/workflows/smoke.yml", fix=True)
    assert "--ulysses-degree 4" in (fixture_repo / "Makefile").read_text()
    assert (fixture_repo / "Makefile").read_text().startswith("serve:\n\tsglang serve")  # the tab kept
    smoke = (fixture_repo / ".github/workflows/smoke.yml").read_text()
    assert "--ulysses-degree 4 &" in smoke and "\non:\n" in smoke and code == 0


def test_a_walk_passes_a_makefile_by_and_a_workflow_without_a_launch_is_no_finding(fixture_repo):
    _code, report = _report(".", ".github/workflows/ci.yml")
    paths = {f["path"]: f["kind"] for f in report["files"]}
    assert "Makefile" not in paths and paths[".github/workflows/ci.yml"] == "workflow"
    assert not [f for f in report["findings"] if f["file"] == ".github/workflows/ci.yml"]


def test_makes_own_recipe_prefixes_are_not_the_shells(tmp_path, monkeypatch):
    (tmp_path / "serve.mk").write_text("serve:\n\t@-sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --tp 1 \\\n"
                                      "\t  --ulysses-degree 4\n")
    monkeypatch.chdir(tmp_path)
    _code, report = _report("serve.mk", no_config=True, targets=("4xH200",))
    [finding] = [f for f in report["findings"] if f["rule"] == "H3D021"]
    assert _word(tmp_path, finding) == "--tp" and report["files"][0]["launches"][0]["argv"][-1] == "4"
