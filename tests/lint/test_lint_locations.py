"""lint on a repository shaped like real ones (tests/fixtures/repo: recipes as a string, a list, a
README paste with `\\` line ends (also saved with CRLF), a folded string, a double-quoted string
continued with `\\`, a CRLF list; an sglang --config file; Kubernetes; compose; a Docker entrypoint
script, an extensionless one and a CRLF one with continuations; and what is not a launch: a
workflow with `on:`, mkdocs with `!!python/name:`, CloudFormation with `!Sub`/`!Ref`, a Helm chart,
an integer-keyed table, a Makefile, a Python script without an extension): every finding at the
word it is about, the diff `git apply` takes, the file's layout and line ends kept, a CRLF file read
as its LF twin, no placeholder left unfilled, "cannot verify" said in every format.

The expected findings are tests/fixtures/repo-findings.json. After a deliberate change, regenerate
it with `python tests/lint/test_lint_locations.py --regenerate` and review the diff; the test only
compares.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from repo_paths import TESTS

HERE = TESTS
FIXTURE = HERE / "fixtures" / "repo"
GOLDEN = HERE / "fixtures" / "repo-findings.json"
PLACEHOLDER = re.compile(r"\{[A-Za-z_][\w]*(\.[\w]+)+(!r)?\}")  # `{args.dp_size}`, not a dict's repr


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def _findings(report: dict) -> list[dict]:
    keys = ("file", "line", "col", "rule", "severity", "target", "found_after_fix", "cannot_verify")
    return [{k: f.get(k) for k in keys} for f in report["findings"]]


def _lint(repo: Path, monkeypatch, *args: str, format: str = "text", **kw) -> tuple[int, str]:
    """lint in this process, from `repo`, rendered as the CLI renders `--format`."""
    monkeypatch.chdir(repo)
    return _render(list(args) or ["."], format, **kw)


def _render(paths: list[str], format: str = "text", **kw) -> tuple[int, str]:
    code, report, _notes = lint(paths, LintOptions(**kw))
    return code, render("lint", format, report)


@pytest.fixture(scope="module")
def golden() -> list[dict]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_every_finding_is_where_the_golden_file_says(tmp_path, monkeypatch, golden):
    repo = _copy(tmp_path)
    code, out = _lint(repo, monkeypatch, format="json")
    assert code == 1
    assert _findings(json.loads(out)) == golden


def test_findings_are_sorted_by_file_line_and_column_in_every_format(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, out = _lint(repo, monkeypatch, format="json")
    found = [(f["file"], f["line"], f["col"]) for f in json.loads(out)["findings"]]
    assert found == sorted(found) and len(found) > 10
    shown = [(f["file"], f["line"], f["col"]) for f in json.loads(out)["findings"] if not f.get("suppressed")]
    _code, text = _lint(repo, monkeypatch)
    rows = [ln.split(": ", 1)[0].rsplit(":", 2) for ln in text.splitlines() if re.match(r"^\S+:\d+:\d+: ", ln)]
    assert [(p, int(a), int(b)) for p, a, b in rows] == shown  # text and github leave suppressed findings out
    _code, gh = _lint(repo, monkeypatch, format="github")
    props = [re.search(r"file=([^,]+),line=(\d+),col=(\d+)", ln).groups() for ln in gh.splitlines()]
    assert [(p, int(a), int(b)) for p, a, b in props] == shown
    _code, sarif = _lint(repo, monkeypatch, format="sarif")
    regions = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"],
                r["locations"][0]["physicalLocation"]["region"]["startColumn"])
               for r in json.loads(sarif)["runs"][0]["results"]]
    assert regions == found


def _at(report: dict, file: str, rule: str) -> tuple[int, int]:
    # the finding that fails: a rule that cannot verify another launch's value left to the shell
    # (compose's h3-flags) is not the one located here
    [f] = [f for f in report["findings"] if f["file"] == file and f["rule"] == rule and not f["cannot_verify"]]
    return f["line"], f["col"]


def _word_at(repo: Path, file: str, line: int, col: int) -> str:
    text = (repo / file).read_text(encoding="utf-8").splitlines()[line - 1]
    return re.split(r"[\s\"',:\]]", text[col - 1:].lstrip("\"'"))[0]  # a quoted item: at its quote


@pytest.mark.parametrize("file, rule, word", [
    ("recipes/typo.yaml", "H3D020", "--ulysses_degree"),  # a recipe string
    ("recipes/typo.yaml", "H3D021", "--tp"),
    ("recipes/list.yaml", "H3D228", "--ulysses-degree"),  # a recipe list, a finding its strategy fixes
    ("recipes/readme-paste.yaml", "H3D021", "--tp"),  # a block scalar with `\` line ends
    ("recipes/folded.yaml", "H3D228", "--ulysses-degree"),  # a folded scalar
    ("recipes/crlf.yaml", "H3D228", "--ulysses-degree"),
    ("recipes/hybrid.yaml", "H3D405", "--model-variant"),  # no automatic fix
    ("deploy/k8s/deployment.yaml", "H3D020", "--ulysses_degree"),  # Kubernetes args
    ("deploy/k8s/deployment.yaml", "H3D021", "--tp"),
    ("deploy/compose.yaml", "H3D228", "--ulysses-degree"),  # a compose string
    ("scripts/entrypoint.sh", "H3D021", "--tp"),  # a script's continued line
    ("scripts/serve-crlf.sh", "H3D021", "--tp"),  # the same with CRLF line ends
    ("docker/entrypoint", "H3D020", "--ulysses_degree"),  # a script without an extension
    ("recipes/paste-crlf.yaml", "H3D021", "--tp"),  # a README paste saved with CRLF
    ("recipes/quoted.yaml", "H3D228", "--ulysses-degree"),  # a double-quoted string continued with `\`
    ("configs/server.yaml", "H3D032", "warmup"),  # an sglang --config file: the key
])
def test_a_finding_points_at_its_word_in_every_input_kind(tmp_path, monkeypatch, file, rule, word):
    repo = _copy(tmp_path)
    _code, out = _lint(repo, monkeypatch, format="json")
    line, col = _at(json.loads(out), file, rule)
    assert _word_at(repo, file, line, col) == word


# the commonest mistakes after `sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4`, and the word each is about
MISTAKES = {
    "H3D020": (["--ulysses_degree", "4"], "--ulysses_degree"),  # a typo: sglang's "unrecognized arguments"
    "H3D021": (["--ulysses-degree", "4", "--tp", "1"], "--tp"),  # an abbreviation
    "H3D228": (["--ulysses-degree", "2"], "--ulysses-degree"),  # a value its fix changes
    "H3D405": (["--ulysses-degree", "4", "--model-variant", "hybrid"], "--model-variant"),  # no automatic fix
}
HEAD = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def _item(word: str) -> str:
    return f'"{word}"' if word.isdigit() else word


def _continued(words: list[str], indent: str) -> str:
    """`words` as a README writes them: the command on one line, each flag on its own, `\\` line ends."""
    lines, line = [], words[:3]
    for w in words[3:]:
        if w.startswith("--"):
            lines.append(" ".join(line))
            line = []
        line.append(w)
    lines.append(" ".join(line))
    return (" \\\n" + indent + "  ").join(lines) + "\n"


K8S = ("apiVersion: v1\nkind: Pod\nmetadata: {name: h3}\nspec:\n  containers:\n  - name: server\n"
       "    image: lmsysorg/sglang:v0.5.23\n    resources: {limits: {nvidia.com/gpu: 4}}\n")
KINDS = {
    "recipe string": ("r.yaml", lambda w: "profile: 4xH200\ncommand: " + " ".join(w) + "\n"),
    "recipe list": ("r.yaml", lambda w: "profile: 4xH200\ncommand:\n" + "".join(f"  - {_item(x)}\n" for x in w)),
    "recipe block scalar": ("r.yaml", lambda w: "profile: 4xH200\ncommand: |\n  " + _continued(w, "  ")),
    "recipe quoted string": ("r.yaml", lambda w: 'profile: 4xH200\ncommand: "' + _continued(w, "").rstrip() + '"\n'),
    "recipe plain lines": ("r.yaml", lambda w: "profile: 4xH200\ncommand: " + _continued(w, "").replace(" \\\n", "\n")),
    "kubernetes args": ("pod.yaml", lambda w: K8S + '    command: ["sglang", "serve"]\n    args:\n'
                        + "".join(f"    - {_item(x)}\n" for x in w[2:])),
    "kubernetes sh -c": ("pod.yaml", lambda w: K8S + '    command: ["sh", "-c"]\n    args:\n    - |\n      '
                         + _continued(w, "      ")),
    "compose string": ("compose.yaml", lambda w: "services:\n  h3:\n    image: lmsysorg/sglang:v0.5.23\n"
                       "    command: " + " ".join(w) + "\n"),
    "compose list": ("compose.yaml", lambda w: "services:\n  h3:\n    image: lmsysorg/sglang:v0.5.23\n"
                     "    command: [" + ", ".join(f'"{x}"' for x in w) + "]\n"),
    "shell script": ("serve.sh", lambda w: "#!/bin/sh\nset -e\nexec " + _continued(w, "")),
}


@pytest.mark.parametrize("rule", sorted(MISTAKES))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_common_mistake_points_at_its_word_in_each_input_kind(tmp_path, monkeypatch, kind, rule):
    name, render = KINDS[kind]
    words, expected = MISTAKES[rule]
    (tmp_path / name).write_text(render(HEAD + words), encoding="utf-8")
    _code, out = _lint(tmp_path, monkeypatch, name, format="json", no_config=True, targets=("4xH200",))
    report = json.loads(out)
    assert report["files"][0]["kind"] == kind.split()[0]
    line, col = _at(report, name, rule)
    assert _word_at(tmp_path, name, line, col) == expected, (line, col)


def test_a_finding_met_only_while_fixing_points_at_the_word_it_came_from(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    (repo / "recipes" / "typo.yaml").write_text(
        "profile: 4xH200\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses_degree 2\n")
    _code, out = _lint(repo, monkeypatch, "recipes/typo.yaml", format="json")
    later = [f for f in json.loads(out)["findings"] if f["found_after_fix"]]
    assert [f["rule"] for f in later] == ["H3D228"]  # ulysses 2 of 4 GPUs, once the spelling is fixed
    assert _word_at(repo, "recipes/typo.yaml", later[0]["line"], later[0]["col"]) == "--ulysses_degree"
    _code, text = _lint(repo, monkeypatch, "recipes/typo.yaml")
    assert "H3D228 error [4xH200] once the first findings are fixed: sp_degree" in text


def test_a_readme_paste_is_one_command_and_is_fixed_in_its_layout(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, out = _lint(repo, monkeypatch, "recipes/readme-paste.yaml", format="json")
    report = json.loads(out)
    assert "H3D020" not in {f["rule"] for f in report["findings"]}  # no blank "unrecognized arguments"
    assert report["files"][0]["launches"][0]["argv"][-2:] == ["--tp", "1"]
    before = (repo / "recipes" / "readme-paste.yaml").read_text()
    _lint(repo, monkeypatch, "recipes/readme-paste.yaml", fix=True)
    after = (repo / "recipes" / "readme-paste.yaml").read_text()
    assert after == before.replace("    --tp 1\n", "    --tp-size 1\n")


@pytest.mark.parametrize("name, text, expected", [
    ("folded.yaml", "profile: 4xH200\ncommand: >-\n  sglang serve MiniMaxAI/MiniMax-H3\n  --num-gpus 4\n  --ulysses-degree 2\n",
     "profile: 4xH200\ncommand: >-\n  sglang serve MiniMaxAI/MiniMax-H3\n  --num-gpus 4\n  --ulysses-degree 4\n"),
    ("quoted.yaml", 'profile: 4xH200\ncommand: "sglang serve MiniMaxAI/MiniMax-H3\n  --num-gpus 4\n  --ulysses-degree 2"\n',
     'profile: 4xH200\ncommand: "sglang serve MiniMaxAI/MiniMax-H3\n  --num-gpus 4\n  --ulysses-degree 4"\n'),
    ("quoted-continued.yaml", 'profile: 4xH200\ncommand: "sglang serve MiniMaxAI/MiniMax-H3 \\\n  --num-gpus 4 \\\n'
     '  --ulysses-degree 2"\n',  # YAML's escaped line breaks: kept, not collapsed onto one line
     'profile: 4xH200\ncommand: "sglang serve MiniMaxAI/MiniMax-H3 \\\n  --num-gpus 4 \\\n  --ulysses-degree 4"\n'),
    ("continued.yaml", "profile: 4xH200\ncommand: |\n  sglang serve MiniMaxAI/MiniMax-H3 \\\n    --num-gpus 4 \\\n"
     "    --ulysses-degree 4 \\\n    --zzzz-no-such-flag\n",  # dropped from the last line: its `\` goes too
     "profile: 4xH200\ncommand: |\n  sglang serve MiniMaxAI/MiniMax-H3 \\\n    --num-gpus 4 \\\n    --ulysses-degree 4\n"),
])
def test_fix_keeps_a_continued_string_on_its_lines(tmp_path, monkeypatch, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    code, _out = _lint(tmp_path, monkeypatch, name, fix=True, no_config=True)
    assert code == 0 and path.read_text() == expected
    assert _render([name], diff=True, no_config=True)[1] == ""  # a second fix changes nothing


def test_exec_sglang_serve_with_the_containers_arguments_is_read(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    _code, out = _lint(repo, monkeypatch, "scripts/entrypoint.sh", format="json")
    report = json.loads(out)
    [launch] = report["files"][0]["launches"]
    assert launch["argv"][:3] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3"] and "$@" not in " ".join(launch["argv"])
    notes = [f for f in report["findings"] if f["rule"] == "H3DL002"]
    assert notes and '"$@"' in notes[0]["message"] and (notes[0]["line"], notes[0]["col"]) == (4, 6)


def test_a_launch_after_a_command_with_an_expansion_is_read(tmp_path, monkeypatch):
    script = tmp_path / "start.sh"
    script.write_text('#!/bin/sh\ncd "$APP_HOME" && exec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --tp 1 \\\n'
                      '  --ulysses-degree 4\necho "$X"; sglang serve MiniMaxAI/MiniMax-H3 --num-gpus "$N"\n')
    _code, out = _lint(tmp_path, monkeypatch, "start.sh", format="json", targets=("4xH200",), no_config=True)
    report = json.loads(out)
    assert [launch["argv"][-1] for launch in report["files"][0]["launches"]] == ["4", "$N"]  # both read
    assert (_at(report, "start.sh", "H3D021")) == (2, 71)  # its `--tp`
    second = [f for f in report["findings"] if f["line"] == 4]  # --num-gpus "$N": any value, never guessed
    assert second and all(f["cannot_verify"] and f["severity"] == "warning" for f in second)
    assert any("--num-gpus '$N'" in json.dumps(f) for f in second)


def test_the_diff_applies_with_git_and_the_fix_keeps_line_ends(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    code, diff = _lint(repo, monkeypatch, diff=True)
    assert code == 1 and "a/./" not in diff
    changed = set(re.findall(r"^--- a/(\S+)", diff, re.M))
    assert {"recipes/crlf.yaml", "recipes/paste-crlf.yaml", "recipes/quoted.yaml", "recipes/readme-paste.yaml",
            "scripts/serve-crlf.sh", "docker/entrypoint", "deploy/k8s/deployment.yaml"} <= changed
    patch = tmp_path / "fix.diff"
    patch.write_bytes(_only_diff(diff).encode())
    proc = subprocess.run(["git", "apply", "--check", "-v", str(patch)], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # the diff, applied by git, is what --fix --unsafe-fixes writes (--diff shows safe and unsafe fixes)
    applied = tmp_path / "applied"
    shutil.copytree(repo, applied)
    subprocess.run(["git", "apply", str(patch)], cwd=applied, check=True, capture_output=True)
    _lint(repo, monkeypatch, fix=True, unsafe_fixes=True)
    for name in changed:
        assert (applied / name).read_bytes() == (repo / name).read_bytes() != (FIXTURE / name).read_bytes(), name
    for name in ("recipes/crlf.yaml", "recipes/paste-crlf.yaml", "scripts/serve-crlf.sh"):
        crlf = (repo / name).read_bytes()
        assert crlf.count(b"\r\n") == crlf.count(b"\n") > 3, name  # still CRLF throughout
    assert b'- "4"\r\n' in (repo / "recipes" / "crlf.yaml").read_bytes().split(b"--ulysses-degree")[1]
    assert _render(["."], diff=True)[1].count("--- a/") == 0  # fixed: nothing left to change


def test_the_fixture_repository_holds_every_file_kind(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    hidden = ".github/workflows/ci.yml"
    _code, out = _lint(repo, monkeypatch, ".", hidden, format="json")
    kinds = {f["path"]: f["kind"] for f in json.loads(out)["files"]}
    assert {k for k in kinds.values() if k} == {"recipe", "sglang-config", "kubernetes", "compose", "shell", "markdown",
                                             "notebook", "dockerfile", "slurm", "skypilot", "workflow", "ansible"}
    assert kinds[hidden] == "workflow"  # named: its `on:` read, its one `run:` step an echo (no launch)
    # what is not a launch is there, read and skipped: each with what used to fail lint
    for name, mark in (("mkdocs.yml", "!!python/name:"), ("infra/stack.yaml", "!Sub "),
                       ("infra/stack.yaml", "!Ref "), ("docs/errors.yaml", "404: "), ("deploy/chart/Chart.yaml", "apiVersion: v2"),
                       ("Makefile", "sglang serve"), ("scripts/warmup", "#!/usr/bin/env python3")):
        assert mark in (repo / name).read_text(encoding="utf-8"), name
        if "." in Path(name).name:  # YAML: read to its first document, skipped
            assert name in kinds and kinds[name] is None, name
        else:  # no extension and no shell's #! line: not even an input file
            assert name not in kinds, name
    assert kinds["deploy/chart/templates/deployment.yaml"] == "kubernetes"  # a template: the H3DL002 note
    assert kinds["docker/entrypoint"] == "shell" and "." not in Path("docker/entrypoint").name
    assert (FIXTURE / "docker" / "entrypoint").stat().st_mode & 0o111  # executable: pre-commit's identify reads its #!
    for name in ("recipes/crlf.yaml", "recipes/paste-crlf.yaml", "scripts/serve-crlf.sh"):
        assert b"\r\n" in (FIXTURE / name).read_bytes(), name


# --- a CRLF file reads as its LF twin ----------------------------------------------------------

CRLF_TWINS = {
    "serve.sh": "#!/bin/sh\nexport SGLANG_CACHE=/cache\nexec sglang serve MiniMaxAI/MiniMax-H3 \\\n  --num-gpus 4 \\\n"
                "  --ulysses_degree 4 \\\n  --tp 1 \\\n  \"$@\"\n",
    "entrypoint": "#!/usr/bin/env bash\nexec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 \\\n  --tp 1 \\\n"
                  "  --ulysses_degree 4\n",
    "block.yaml": "profile: 4xH200\ncommand: |\n  sglang serve MiniMaxAI/MiniMax-H3 \\\n    --num-gpus 4 \\\n"
                  "    --ulysses_degree 4 \\\n    --tp 1\n",
    "quoted.yaml": 'profile: 4xH200\ncommand: "sglang serve MiniMaxAI/MiniMax-H3 \\\n  --num-gpus 4 \\\n  --tp 1 \\\n'
                   '  --ulysses-degree 2"\n',
    "pod.yaml": K8S + '    command: ["sh", "-c"]\n    args:\n    - |\n      exec sglang serve MiniMaxAI/MiniMax-H3 \\\n'
                "        --num-gpus 4 \\\n        --ulysses_degree 4 \\\n        --tp 1\n",
    "compose.yaml": "services:\n  h3:\n    image: lmsysorg/sglang:v0.5.23\n    command: >-\n"
                    "      sglang serve MiniMaxAI/MiniMax-H3\n      --num-gpus 4\n      --ulysses-degree 2 --tp 1\n",
}


@pytest.mark.parametrize("name", sorted(CRLF_TWINS))
def test_a_crlf_file_reads_and_fixes_as_its_lf_twin(tmp_path, monkeypatch, name):
    texts = {"lf": CRLF_TWINS[name], "crlf": CRLF_TWINS[name].replace("\n", "\r\n")}
    found = {}
    for twin, text in texts.items():
        (tmp_path / twin).mkdir()
        (tmp_path / twin / name).write_bytes(text.encode())
        _code, out = _lint(tmp_path / twin, monkeypatch, name, format="json", no_config=True, targets=("4xH200",))
        found[twin] = [(f["rule"], f["line"], f["col"], f["message"]) for f in json.loads(out)["findings"]]
    assert found["crlf"] == found["lf"] and any(r in ("H3D020", "H3D021", "H3D228") for r, *_ in found["lf"])
    assert not any("\\r" in message or "\r" in message for *_, message in found["crlf"])
    for twin in texts:
        _lint(tmp_path / twin, monkeypatch, name, fix=True, unsafe_fixes=True, no_config=True, targets=("4xH200",))
    fixed = {twin: (tmp_path / twin / name).read_bytes() for twin in texts}
    assert fixed["lf"] != texts["lf"].encode()  # something was fixed
    assert fixed["crlf"] == fixed["lf"].replace(b"\n", b"\r\n")  # the same edit, CRLF kept on every line
    assert _render([name], diff=True, no_config=True, targets=("4xH200",))[1] == ""  # a second fix changes nothing


def test_a_script_with_mixed_line_ends_keeps_each_lines_end(tmp_path, monkeypatch):
    text = ("#!/bin/sh\r\nsglang serve MiniMaxAI/MiniMax-H3 \\\n  --num-gpus 4 \\\r\n  --ulysses_degree 4 \\\n"
            "  --tp 1\r\n")
    (tmp_path / "serve.sh").write_bytes(text.encode())
    _lint(tmp_path, monkeypatch, "serve.sh", fix=True, no_config=True, targets=("4xH200",))
    after = (tmp_path / "serve.sh").read_bytes().decode()
    assert after == text.replace("--ulysses_degree", "--ulysses-degree").replace("--tp 1", "--tp-size 1")


def _only_diff(text: str) -> str:
    """The diff part of `lint --diff` output (notes about files not fixed follow it)."""
    return "".join(ln for ln in text.splitlines(True) if not re.match(r"^\S+: not fixed: ", ln))


def test_files_that_are_not_launches_are_skipped(tmp_path, monkeypatch):
    repo = _copy(tmp_path)
    names = [".github/workflows/ci.yml", "mkdocs.yml", "infra/stack.yaml", "deploy/chart/Chart.yaml", "docs/errors.yaml"]
    code, out = _lint(repo, monkeypatch, *names, format="json")
    report = json.loads(out)
    # the workflow is read for its `run:` steps (issue 30 item 6): its one step is an echo, no launch
    assert code == 0 and report["findings"] == [] and all(f["kind"] is None or not f["launches"] for f in report["files"])


# --- placeholders, cannot verify, SARIF without a file ----------------------------------------

def _placeholders(text: str) -> list[str]:
    return [m.group(0) for m in PLACEHOLDER.finditer(text)]


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_no_placeholder_is_left_in_any_lint_format(tmp_path, monkeypatch, fmt):
    write = tmp_path.joinpath
    write("old.yaml").write_text('profile: 4xH200\nsglang_version: "0.5.16"\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n')
    write("omni.yaml").write_text('profile: 4xH200\nsglang_version: "0.5.22"\n'
                                  "command: sglang serve FastVideo/FastVideo-FastH3-Omni-8-Step-V1 --num-gpus 4\n")
    write("steps.yaml").write_text("profile: 4xH200\ncommand: sglang generate --model-path FastVideo/FastVideo-FastH3-Omni-8-Step-V1"
                                   " --num-gpus 4 --num-inference-steps 30 --prompt cat\n")
    write("zero.yaml").write_text("profile: 4xH200\ncommand: sglang generate --model-path MiniMaxAI/MiniMax-H3"
                                  " --num-gpus 4 --num-inference-steps 0 --prompt cat\n")
    names = ["old.yaml", "omni.yaml", "steps.yaml", "zero.yaml"]
    code, out = _lint(tmp_path, monkeypatch, *names, format=fmt, no_config=True)
    assert code == 1
    # the findings whose texts held {release.needs_at_least}, {release.model_since},
    # {derived.sampling_exact_steps} and {derived.sampling_default_steps} are there, filled
    assert all(rule in out for rule in ("H3D003", "H3D004", "H3D805", "H3D803"))
    assert _placeholders(out) == []  # SARIF: the rule help texts too
    if fmt == "text":
        assert "needs at least 0.5.17" in out and "the first release that does is 0.5.23" in out


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_no_placeholder_is_left_in_check_output(cli, fmt):
    for args in (["--sglang-version", "0.5.16", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"],
                 ["--sglang-version", "0.5.22", "--", "sglang", "serve", "FastVideo/FastVideo-FastH3-Omni-8-Step-V1"],
                 ["--", "sglang", "generate", "--model-path", "FastVideo/FastVideo-FastH3-Omni-8-Step-V1",
                  "--num-inference-steps", "30", "--prompt", "cat"],
                 ["--", "sglang", "generate", "--model-path", "MiniMaxAI/MiniMax-H3", "--task", "t2va",
                  "--num-inference-steps", "0", "--prompt", "cat"]):
        code, data, err = cli("check", "--profile", "4xH200", *(["--format", fmt] if fmt != "json" else []), *args,
                              json_output=fmt == "json")
        assert code == 1, err
        assert _placeholders(data if isinstance(data, str) else json.dumps(data)) == []
        if fmt == "json":  # the texts that held the placeholders, filled
            texts = {f["rule"]: f["message"] + " " + (f.get("fix_note") or "") for f in data["findings"]}
            expected = {"0.5.16": ("H3D003", "needs at least 0.5.17"), "0.5.22": ("H3D004", "first release that does is 0.5.23"),
                        "30": ("H3D805", "--num-inference-steps 8"), "0": ("H3D803", "default step count (50)")}
            rule, words = next(v for k, v in expected.items() if k in args)
            assert words in texts[rule], texts


def test_every_rule_help_is_rendered_generically(rules):
    from h3doctor.lint.report import rule_meta

    metas = rule_meta(rules)
    assert not [m["id"] for m in metas if _placeholders(m["help"] + m["why"] + m["title"])]
    h3d003 = next(m for m in metas if m["id"] == "H3D003")
    assert "sglang>=<needs_at_least>" in h3d003["help"]


UNCERTAIN = ("profile: 1xRTX5090\ncommand: sglang serve MiniMaxAI/MiniMax-H3 --performance-mode speed "
             "--component-weights-paths.transformer /models/mine.safetensors\n")


@pytest.mark.parametrize("fmt", ["text", "sarif", "github"])
def test_an_uncertain_memory_estimate_says_cannot_verify(tmp_path, monkeypatch, fmt):
    tmp_path.joinpath("r.yaml").write_text(UNCERTAIN)
    _code, out = _lint(tmp_path, monkeypatch, "r.yaml", format=fmt, no_config=True)
    lines = [ln for ln in out.splitlines() if "H3D540" in ln and "OutOfMemoryError" in ln]
    if fmt == "sarif":
        [result] = [r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "H3D540"]
        lines = [result["message"]["text"]]
        assert result["properties"]["cannotVerify"] is True
    assert lines and all("cannot verify (the memory estimate is not certain here: the transformer weights are replaced"
                         in ln for ln in lines)


def test_json_says_why_it_cannot_verify_in_words(tmp_path, monkeypatch, cli):
    tmp_path.joinpath("r.yaml").write_text(UNCERTAIN)
    _code, out = _lint(tmp_path, monkeypatch, "r.yaml", format="json", no_config=True)
    [f] = [f for f in json.loads(out)["findings"] if f["rule"] == "H3D540"]
    assert f["cannot_verify"] and "replaced" in f["cannot_verify_why"]
    code, data, _err = cli("check", "--recipe", str(tmp_path / "r.yaml"))
    [c] = [f for f in data["findings"] if f["rule"] == "H3D540"]
    assert c["cannot_verify"] and "replaced" in c["cannot_verify_why"]
    assert "derived.memory" not in json.dumps(c["unknown_facts"]) and "derived.memory.load_over" not in out


def test_check_sarif_without_a_file_has_a_logical_location(cli):
    from tests.lint.test_lint import _sarif_validator

    code, out, err = cli("check", "--profile", "4xH200", "--format", "sarif", "--", "sglang", "serve",
                         "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "2", json_output=False)
    doc = json.loads(out)
    results = doc["runs"][0]["results"]
    assert code == 1 and results and all(r.get("locations") for r in results)
    assert results[0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "command line"
    assert not list(_sarif_validator().iter_errors(doc))


def _regenerate() -> None:
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(FIXTURE, repo)
        os.chdir(repo)
        _code, out = _render(["."], "json")
    GOLDEN.write_text(json.dumps(_findings(json.loads(out)), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(HERE.parent)}")


if __name__ == "__main__" and sys.argv[1:] == ["--regenerate"]:
    _regenerate()


def test_a_launch_of_another_model_is_not_judged_nor_rewritten(tmp_path, monkeypatch):
    """An LLM beside the video server (scripts/llm-sidecar.sh: Qwen with sglang's documented `--tp 2`)
    is not a MiniMax-H3 launch: like `check`, lint does not judge it (no rule, no "no target"
    error, on any target) and --fix leaves it as written; it is named as not judged (H3DL020)."""
    repo = _copy(tmp_path)
    script = repo / "scripts" / "llm-sidecar.sh"
    before = script.read_bytes()
    for extra in ((), ("--target", "4xH200")):
        targets = tuple(extra[1:])
        code, out = _lint(repo, monkeypatch, "scripts/llm-sidecar.sh", format="json", no_config=True, targets=targets)
        report = json.loads(out)
        assert code == 0 and report["verdict"] == "pass"
        assert [(f["rule"], f["severity"], f["line"]) for f in report["findings"]] == [
            ("H3DL020", "info", 4), ("H3DL020", "info", 6)]
        assert all(launch["results"] == [] for launch in report["files"][0]["launches"])
    code, _out = _lint(repo, monkeypatch, "scripts/llm-sidecar.sh", fix=True, unsafe_fixes=True, targets=("4xH200",))
    assert code == 0 and script.read_bytes() == before


def test_sglang_version_source_says_where_the_release_came_from(tmp_path, monkeypatch):
    """`sglang_version_source` is `default` when no release was given (it read `option`), `config`
    from .h3doctor.yaml, `option` from --sglang-version."""
    repo = _copy(tmp_path)
    script = "scripts/entrypoint.sh"

    def sources(*, config: str | None = None, **kw) -> set:
        (repo / ".h3doctor.yaml").write_text("targets: [4xH200]\n" + (f"sglang_version: '{config}'\n" if config else ""))
        _code, out = _lint(repo, monkeypatch, script, format="json", **kw)
        report = json.loads(out)
        results = [r for launch in report["files"][0]["launches"] for r in launch["results"]]
        assert results
        return {r["sglang_version_source"] for r in results} | {f["sglang_version_source"] for f in report["findings"]
                                                                 if f["rule"].startswith("H3D0")}
    assert sources() == {"default"}
    assert sources(config="0.5.23") == {"config"}
    assert sources(sglang_version="0.5.23") == {"option"}


def test_the_image_tag_finding_is_on_the_image_line_where_a_suppression_holds(tmp_path, monkeypatch):
    """deploy/k8s/canary.yaml: H3D922 at the `image:` value's word (it pointed at the command); the
    same finding of the second container is suppressed by the comment on its `image:` line."""
    repo = _copy(tmp_path)
    _code, out = _lint(repo, monkeypatch, format="json")
    found = [f for f in json.loads(out)["findings"] if f["file"] == "deploy/k8s/canary.yaml"]
    shown = [(f["rule"], f["line"], f["col"]) for f in found if not f.get("suppressed")]
    assert ("H3D922", 11, 18) in shown and _word_at(repo, "deploy/k8s/canary.yaml", 11, 18) == "lmsysorg/sglang"
    held = [f for f in found if f.get("suppressed")]
    assert [(f["rule"], f["line"]) for f in held] == [("H3D922", 18)]
    assert not any(f["rule"] == "H3DL001" for f in found)  # the suppression is used


def test_a_relative_config_and_env_file_are_the_naming_files_own(tmp_path, monkeypatch):
    """`--config h3-server.yaml` in deploy/k8s/canary.yaml and `--env-file h3.env` in
    scripts/docker-serve.sh name files beside them: read (the config's removed key found), not
    looked up in the working directory ('not judged', exit 0 before); from another directory too."""
    repo = _copy(tmp_path)
    for where, args in ((repo, ["."]), (repo / "deploy", ["k8s/canary.yaml", "../scripts/docker-serve.sh"])):
        monkeypatch.chdir(where)
        code, out = _render(args, "json")
        found = {(f["file"].rsplit("/", 1)[-1], f["rule"]) for f in json.loads(out)["findings"]}
        assert ("canary.yaml", "H3D032") in found and ("docker-serve.sh", "H3D020") in found
        assert not {r for _f, r in found} & {"H3DL006", "H3D031"} and code == 1


def test_a_relative_config_leaving_the_repository_from_its_file_is_not_opened(tmp_path, monkeypatch):
    """Resolved against the naming file, then confined: `../../../x.yaml` from deploy/k8s leaves
    the repository (though from the working directory it would not) and is not opened (H3DL006)."""
    repo = _copy(tmp_path)
    (tmp_path / "x.yaml").write_text("model_path: MiniMaxAI/MiniMax-H3\nwarmup: true\n", encoding="utf-8")
    manifest = repo / "deploy/k8s/canary.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace("h3-server.yaml", "../../../x.yaml"), encoding="utf-8")
    code, out = _lint(repo / "deploy" / "k8s" / ".." / "..", monkeypatch, "deploy/k8s/canary.yaml", format="json")
    rules = [f["rule"] for f in json.loads(out)["findings"]]
    assert "H3DL006" in rules and "H3D032" not in rules
