"""lint runs on other people's pull requests (issue 27, items 3, 6 and 10): it reads only the
repository, shows a value read from a file only as a glimpse, passes nothing silently, uses no
configuration from above the repository, and never overwrites an edit made while it ran.

Through lint's own entry (`h3doctor.lint.run.lint`, the CLI's) and the format registry: data,
not Rich's rendering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render

TOKEN = "ghp_" + "Zq7" * 12  # 40 characters, a GitHub token's shape
H3 = "sglang serve --model-path MiniMaxAI/MiniMax-H3 --num-gpus 4"


def run_lint(root: Path, *paths: str, monkeypatch, **options) -> tuple[int, dict, object]:
    monkeypatch.chdir(root)
    code, report, _notes = lint(list(paths) or ["."], LintOptions(targets=("4xH200",), **options))
    return code, report.data, report


def found(data: dict) -> list[tuple[str, str, int, int]]:
    return [(f["rule"], f["file"], f["line"], f["col"]) for f in data["findings"]]


# -- item 3: files outside the linted tree are never read ------------------------------------------

def _outside_config(tmp_path: Path) -> Path:
    """A config file outside the repository that, if read, makes a distinct finding (H3D951)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.yaml").write_text("port: not-a-port\n")
    return outside / "c.yaml"


@pytest.mark.parametrize("form", ["absolute", "absolute-inside", "dotdot", "link"])
def test_a_config_outside_the_repository_is_not_opened_and_is_h3dl006_at_its_word(tmp_path, monkeypatch, form):
    config = _outside_config(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    if form == "absolute":  # a FIFO: opened, it would be refused as one (a different finding)
        os.mkfifo(tmp_path / "outside" / "pipe.yaml")
        named = str(tmp_path / "outside" / "pipe.yaml")
    elif form == "absolute-inside":  # names a file of the machine the launch runs on, wherever it is here
        (repo / "c.yaml").write_text("port: not-a-port\n")
        named = str(repo / "c.yaml")
    elif form == "dotdot":
        named = "../outside/c.yaml"
    else:
        (repo / "in.yaml").symlink_to(config)
        named = "./in.yaml"
    (repo / "run.sh").write_text(f"#!/bin/sh\n{H3} --config {named}\n")
    code, data, _ = run_lint(repo, "run.sh", monkeypatch=monkeypatch)
    column = len(f"{H3} --config ") + 1
    assert found(data) == [("H3DL006", "run.sh", 2, column)], found(data)
    message = data["findings"][0]["message"]
    assert "outside the repository" in message and "FIFO" not in message
    assert code == 0 and data["findings"][0]["severity"] == "warning"  # fails under --fail-on warning
    code, data, _ = run_lint(repo, "run.sh", monkeypatch=monkeypatch, fail_on="warning")
    assert code == 1


def test_an_env_file_outside_the_repository_is_not_opened(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    os.mkfifo(tmp_path / "env")
    line = f"docker run --gpus all --env-file {tmp_path / 'env'} lmsysorg/sglang:v0.5.23 {H3}"
    (repo / "run.sh").write_text(f"#!/bin/sh\n{line}\n")
    _code, data, _ = run_lint(repo, monkeypatch=monkeypatch)
    assert found(data) == [("H3DL006", "run.sh", 2, line.index(str(tmp_path / 'env')) + 1)], data["findings"]


def test_a_walked_input_linked_out_of_the_repository_is_not_read(tmp_path, monkeypatch):
    config = tmp_path / "secret.yaml"
    config.write_text(f"model_path: MiniMaxAI/MiniMax-H3\nport: {TOKEN}\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "server.yaml").symlink_to(config)
    _code, data, report = run_lint(repo, monkeypatch=monkeypatch)
    assert [f[0] for f in found(data)] == ["H3DL006"]
    assert all(TOKEN[:8] not in render("lint", name, report) for name in ("text", "json", "sarif", "github"))


def test_check_on_the_users_own_machine_still_reads_the_file_named(tmp_path, cli):
    config = _outside_config(tmp_path)
    code, out, _err = cli("check", "--profile", "4xH200", "--", *H3.split(), "--config", str(config))
    assert "H3D951" in {f["rule"] for f in out["findings"]}


def test_a_value_read_from_a_file_is_never_quoted_whole_in_any_format(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "conf.yaml").write_text(f"num_gpus: 4\nport: {TOKEN}\n")
    (repo / "run.sh").write_text(f"#!/bin/sh\n{H3} --config conf.yaml\n{H3} --attention-backend {TOKEN}\n"
                                 f"{H3} --port={TOKEN}\n")
    _code, data, report = run_lint(repo, monkeypatch=monkeypatch)
    rules = [f[0] for f in found(data)]
    assert {"H3D951", "H3D304", "H3D010"} <= set(rules), rules  # each value was judged
    for name in ("text", "sarif", "github"):  # not even upper-cased (sglang's KeyError for a backend)
        assert TOKEN.upper() not in render("lint", name, report).upper(), name
    messages = json.dumps([f["message"] for f in data["findings"]])
    assert TOKEN.upper() not in messages.upper() and messages.count("(40 characters)") == 3


# -- item 6: no silent pass ---------------------------------------------------------------------------

SILENT_FORMS = {
    "python-options": (f"python3 -u -m sglang.launch_server {H3.split(' ', 2)[2]} --bogus-flag", {"H3D020", "H3D040"}),
    "computed-program": (f"$SGLANG_BIN serve {H3.split(' ', 2)[2]}", {"H3DL002"}),  # S=sglang first is read
    "eval": (f'eval "{H3}"', {"H3DL002"}),
    "torchrun": (f"torchrun -m sglang.launch_server {H3.split(' ', 2)[2]}", {"H3DL002"}),
    "torchrun-options": (f"torchrun --nproc-per-node 4 -m sglang.launch_server {H3.split(' ', 2)[2]}", {"H3DL002"}),
}


@pytest.mark.parametrize("form", sorted(SILENT_FORMS))
def test_a_launch_lint_cannot_read_is_judged_or_noted_never_passed(tmp_path, monkeypatch, form):
    script, expected = SILENT_FORMS[form]
    (tmp_path / "run.sh").write_text(f"#!/bin/sh\n{script}\n")
    _code, data, report = run_lint(tmp_path, monkeypatch=monkeypatch)
    rules = {f[0] for f in found(data)}
    assert expected <= rules, rules
    line = script.count("\n") + 2
    assert all(f[2] == line for f in found(data)), found(data)
    shown = next(iter(expected))
    for name in ("text", "github"):  # visible in every format
        assert shown in render("lint", name, report), name
    sarif = json.loads(render("lint", "sarif", report))
    assert shown in {r["ruleId"] for r in sarif["runs"][0]["results"]}
    code, _data, _ = run_lint(tmp_path, monkeypatch=monkeypatch, fail_on="warning")
    assert code == 1


def test_a_script_that_only_names_sglang_is_not_noted(tmp_path, monkeypatch):
    (tmp_path / "run.sh").write_text(f'#!/bin/sh\necho "start it with: {H3}"\npip install sglang\n')
    code, data, _ = run_lint(tmp_path, monkeypatch=monkeypatch, fail_on="warning")
    assert code == 0 and data["findings"] == []


# -- item 6: configuration from outside the repository is not used -------------------------------------

STRICT = "targets: [4xH200]\nfail_on: info\nselect: [H3DL999]\n"  # used, it would leave nothing to fail on


def _repo_with_a_launch(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "run.sh").write_text(f"#!/bin/sh\n{H3} --port=bad\n")
    return repo


def _lint_from(repo: Path, monkeypatch) -> tuple[int, dict, list[str]]:
    monkeypatch.chdir(repo)
    code, report, notes = lint(["."], LintOptions())
    return code, report.data, notes


def test_a_configuration_above_the_repository_root_is_not_used_and_said(tmp_path, monkeypatch):
    repo = _repo_with_a_launch(tmp_path)
    (tmp_path / ".h3doctor.yaml").write_text(STRICT)
    code, data, notes = _lint_from(repo, monkeypatch)
    # no target (H3DL004) and the port judged all the same: the parent's select and targets were not used
    assert [f["rule"] for f in data["findings"]] == ["H3DL004", "H3D010"]
    assert any("above the repository root" in n and str(tmp_path / ".h3doctor.yaml") in n for n in notes), notes
    (repo / ".h3doctor.yaml").write_text(STRICT)  # the repository's own is used
    code, data, notes = _lint_from(repo, monkeypatch)
    assert data["findings"] == [] and code == 0


@pytest.mark.parametrize("how", ["world-writable", "another-user", "link-out"])
def test_a_configuration_others_control_is_not_used_and_said(tmp_path, monkeypatch, how):
    repo = _repo_with_a_launch(tmp_path)
    config = repo / ".h3doctor.yaml"
    if how == "link-out":
        (tmp_path / "elsewhere.yaml").write_text(STRICT)
        config.symlink_to(tmp_path / "elsewhere.yaml")
    else:
        config.write_text(STRICT)
    if how == "world-writable":
        config.chmod(0o666)
    elif how == "another-user":
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(config, 12345, 12345)
    code, data, notes = _lint_from(repo, monkeypatch)
    assert [f["rule"] for f in data["findings"]] == ["H3DL004", "H3D010"], data["findings"]
    assert any(str(config) in n and "not used" in n for n in notes), notes


# -- item 10: --fix never overwrites an edit made while it ran -------------------------------------------

BROKEN_RECIPE = ("targets: [4xH200]\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 "
                 "--ring-degree 2 --attention-backend sage_attn\n")


@pytest.mark.parametrize("edit", ["rewritten-in-place", "replaced-by-another-file"])
def test_lint_fix_refuses_a_file_that_changed_while_it_ran(tmp_path, monkeypatch, edit):
    import h3doctor.lint.fix as fix

    recipe = tmp_path / "r.yaml"
    recipe.write_text(BROKEN_RECIPE)
    users_edit = BROKEN_RECIPE.replace("sage_attn", "fa")  # what the user saved meanwhile
    real = fix.replace_file

    def edited_meanwhile(*args, **kwargs):  # between lint's read and its rename
        if edit == "rewritten-in-place":
            recipe.write_text(users_edit)
        else:  # an editor's save: a new file renamed over the name (same text as read, another inode)
            (tmp_path / "new").write_text(BROKEN_RECIPE)
            os.replace(tmp_path / "new", recipe)
        return real(*args, **kwargs)

    monkeypatch.setattr(fix, "replace_file", edited_meanwhile)
    monkeypatch.chdir(tmp_path)
    code, report, _notes = lint(["r.yaml"], LintOptions(fix=True, unsafe_fixes=True))
    text = render("lint", "text", report)
    assert "r.yaml: not fixed: the file changed while lint ran" in text
    assert recipe.read_text() == (users_edit if edit == "rewritten-in-place" else BROKEN_RECIPE)
    assert code == 1


def test_lint_fix_still_writes_a_file_nobody_touched(tmp_path, monkeypatch):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(BROKEN_RECIPE)
    monkeypatch.chdir(tmp_path)
    lint(["r.yaml"], LintOptions(fix=True, unsafe_fixes=True))
    assert recipe.read_text() != BROKEN_RECIPE


def test_a_helm_source_line_outside_the_repository_is_not_opened(tmp_path, monkeypatch):
    chart = tmp_path / "repo" / "h3"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: h3\nversion: 0.1.0\n")
    os.mkfifo(tmp_path / "deploy.yaml")  # where the chart's output points: opened, it would be refused as a FIFO
    (chart / ".rendered").write_text(
        "---\n# Source: ../deploy.yaml\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: s\n      image: lmsysorg/sglang:v0.5.23\n"
        f"      command: [{', '.join(H3.split())}]\n")
    helm = tmp_path / "bin" / "helm"  # stands in for helm: prints the chart's .rendered
    helm.parent.mkdir()
    helm.write_text('#!/bin/sh\ncat "$3/.rendered"\n')
    helm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{helm.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    _code, data, _ = run_lint(tmp_path / "repo", "h3/Chart.yaml", monkeypatch=monkeypatch)
    notes = [f for f in found(data) if f[0] == "H3DL006"]
    assert notes == [("H3DL006", "h3/Chart.yaml", 1, 1)], found(data)
    assert "FIFO" not in json.dumps(data["findings"]) and data["summary"]["checks"] >= 1  # the launch is still judged
