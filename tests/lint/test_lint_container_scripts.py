"""A container's `bash -lc SCRIPT -- ARGS…` (issue 30 item 2), in the fixture repository
(tests/fixtures/repo): the script's own words, flags written in it included, and then its
positional parameters bound to the words after it, as the shell binds them — Kubernetes
`command` + `args`, compose `entrypoint` + `command`, a Dockerfile's exec-form ENTRYPOINT + CMD.
Each is judged (never "not judged"), its findings at the word in the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render



@pytest.fixture
def repo(fixture_repo) -> Path:
    return fixture_repo


def _report(*paths: str, **kw) -> tuple[int, dict]:
    code, report, _notes = lint(list(paths), LintOptions(**kw))
    return code, json.loads(render("lint", "json", report))


def _launches(report: dict, path: str) -> dict[str, list[str]]:
    return {launch["label"]: launch["argv"] for f in report["files"] if f["path"] == path for launch in f["launches"]}


def _word(repo: Path, finding: dict) -> str:
    line = (repo / finding["file"]).read_text().splitlines()[finding["line"] - 1]
    return line[finding["col"] - 1:].lstrip("\"'").split('"')[0].split()[0]


@pytest.mark.parametrize("path, label", [
    ("deploy/k8s/cookbook.yaml", "StatefulSet/h3-cookbook container server"),
    ("deploy/compose.cookbook.yaml", "service h3-cookbook"),
    ("docker/Dockerfile.cookbook", "line 3"),
])
def test_flags_in_the_script_then_its_arguments_are_the_launch(repo, path, label):
    code, report = _report(path)
    argv = _launches(report, path)[label]
    assert argv[:4] == ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3"]  # the script's own words
    assert argv[-2:] == ["--ulysses_degree", "4"]  # "$@": the words after `--` ($0)
    assert "$@" not in " ".join(argv) and "--" not in argv
    [typo] = [f for f in report["findings"] if f["file"] == path and f["rule"] == "H3D020"]
    assert _word(repo, typo) == "--ulysses_degree" and typo["severity"] == "error"  # the args' item
    assert not [f for f in report["findings"] if f["file"] == path and f["rule"] == "H3DL002"]
    assert code == 1


def test_positional_parameters_are_the_words_after_the_scripts_name(repo):
    code, report = _report("deploy/k8s/cookbook.yaml")
    argv = _launches(report, "deploy/k8s/cookbook.yaml")["StatefulSet/h3-cookbook container by-position"]
    assert argv == ["sglang", "serve", "--model-path", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--tp-size", "3"]
    tp = [f for f in report["findings"] if f["rule"] == "H3D227"]  # 4 GPUs, TP 3: "$3" is args' third item
    assert tp and tp[0]["severity"] == "error"


def test_a_word_the_script_reads_twice_is_not_rewritten_in_one_place(tmp_path, monkeypatch):
    """`--model-path "$1" "$@"`: the model is $1 and also the first word of "$@"; a fix dropping the
    second would move every other argument ($1 would become the next flag), so it is refused."""
    (tmp_path / "compose.yaml").write_text(
        'services:\n  h3:\n    image: lmsysorg/sglang:v0.5.23\n'
        '    entrypoint: ["/bin/bash", "-c", "exec sglang serve --model-path \\"$$1\\" \\"$$@\\"", "h3"]\n'
        '    command: ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]\n')
    monkeypatch.chdir(tmp_path)
    _code, report = _report("compose.yaml", targets=("4xH200",), no_config=True)
    argv = _launches(report, "compose.yaml")["service h3"]
    assert argv[3:5] == ["MiniMaxAI/MiniMax-H3", "MiniMaxAI/MiniMax-H3"]  # as bash passes them on
    assert any(f["rule"] == "H3D020" for f in report["findings"])  # sglang: unrecognized arguments
    _code, diff, notes = lint(["compose.yaml"], LintOptions(targets=("4xH200",), no_config=True, diff=True))
    assert render("lint", "text", diff) == "" and any("by position" in n for n in notes)
