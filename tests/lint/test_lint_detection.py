"""Which files lint reads as launches: strict about what claims to be a launch input, quiet
about the rest of a real repository (mkdocs, CloudFormation, workflows, error tables)."""

from __future__ import annotations

import pytest

from tests.lint.test_lint import active, lint_json, write

NOT_LAUNCHES = {
    "mkdocs.yml": """\
        site_name: x
        markdown_extensions:
          - pymdownx.emoji:
              emoji_index: !!python/name:material.extensions.emoji.twemoji
        """,
    "stack.yaml": """\
        Resources:
          B:
            Type: AWS::S3::Bucket
            Properties:
              BucketName: !Sub "${AWS::StackName}-x"
              Arn: !Ref Other
        """,
    "errors.yaml": "404: not found\n500: server error\n",
    ".github/workflows/ci.yml": """\
        on: [push]
        jobs:
          test:
            runs-on: ubuntu-latest
            steps:
              - run: echo "sglang serve is started elsewhere"
        """,
    "tsconfig.json": '{\n\t"compilerOptions": {"strict": true} // a comment\n}\n',
    "chart/templates/web.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ .Release.Name }}-web
        """,
    "k8s/redis.yaml": """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: redis}
        spec:
          template:
            spec:
              containers: [{name: redis, image: redis:7}]
        """,
    "docker-compose.yml": "services:\n  db:\n    image: postgres:16\n",
}


@pytest.mark.parametrize("name", sorted(NOT_LAUNCHES))
def test_a_file_that_is_not_a_launch_is_skipped_when_named(tmp_path, name):
    path = write(tmp_path, name, NOT_LAUNCHES[name])
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 0, active(report)
    assert active(report) == []
    # not an input; a workflow is one now (its `run:` steps, issue 30 item 6), here with no launch
    assert report["files"][0]["kind"] is None or not report["files"][0]["launches"]


def test_a_repository_of_unrelated_yaml_beside_a_launch_fails_only_for_the_launch(tmp_path):
    for name, text in NOT_LAUNCHES.items():
        write(tmp_path, name, text)
    write(tmp_path, "recipes/prod.yaml", """\
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ring-degree 2 --attention-backend sage_attn
        """)
    code, report = lint_json("--no-config", ".", ".github/workflows/ci.yml", cwd=tmp_path)
    assert code == 1
    assert {f["file"].removeprefix("./") for f in active(report)} == {"recipes/prod.yaml"}
    assert len(report["files"]) == len(NOT_LAUNCHES) + 1


def test_a_file_is_judged_by_its_first_document_and_not_read_past_it(tmp_path):
    # what follows the first document — a YAML error, a Python tag, a command naming sglang — is
    # never read when that document is not a launch's (a workflow, a Helm values file)
    path = write(tmp_path, "values.yaml", """\
        replicas: 2
        ---
        command: !!python/object/apply:os.system ["sglang serve MiniMaxAI/MiniMax-H3 --bogus"]
        ---
        bad: [unclosed, {
        """)
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 0 and report["findings"] == [] and report["files"][0]["kind"] is None
    # a first document that is a launch input makes the whole file one, read strictly
    path.write_text(path.read_text().replace("replicas: 2", "command: sglang serve MiniMaxAI/MiniMax-H3"))
    code, report = lint_json("--no-config", "--target", "4xH200", str(path), cwd=tmp_path)
    assert code == 1 and [f["rule"] for f in active(report)] == ["H3DL003"]


def test_a_launch_input_with_a_yaml_error_is_still_an_error(tmp_path):
    bad = write(tmp_path, "recipe.yaml", "command: !Sub sglang serve MiniMaxAI/MiniMax-H3\n")
    code, report = lint_json("--no-config", "--target", "4xH200", str(bad), cwd=tmp_path)
    [f] = active(report)
    assert code == 1 and f["rule"] == "H3DL003" and f["severity"] == "error"


def test_a_misspelt_recipe_key_is_an_error_at_its_line(tmp_path):
    recipe = write(tmp_path, "r.yaml", """\
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        envv: {CUDA_VISIBLE_DEVICES: "0,1,2,3"}
        """)
    code, report = lint_json("--no-config", str(recipe), cwd=tmp_path)
    [f] = active(report)
    assert code == 1 and f["rule"] == "H3DL003" and (f["line"], f["col"]) == (3, 1)
    assert "unknown key 'envv' (did you mean 'env'?)" in f["message"]


def test_check_recipe_points_at_the_misspelt_key(tmp_path):
    from tests.lint.test_lint import run

    recipe = write(tmp_path, "r.yaml", "profile: 4xH200\ncommand: sglang serve MiniMaxAI/MiniMax-H3\nenvv: {}\n")
    code, _out, err = run("check", "--recipe", str(recipe), cwd=tmp_path)
    assert code == 2 and f"{recipe}:3:1:" in err


# --- scripts without an extension: read by their #! line, the rest skipped quietly -------------

ENTRYPOINT = 'exec sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 \\\n  --ulysses_degree 4 \\\n  "$@"\n'


@pytest.mark.parametrize("shebang", ["#!/bin/bash", "#!/usr/bin/env bash", "#!/bin/sh -e", "#!/usr/bin/env -S zsh -e",
                                     "#!/bin/dash", "#! /bin/ksh", "#!/bin/busybox sh"])
def test_an_extensionless_script_is_read_by_its_shebang_when_walked(tmp_path, shebang):
    write(tmp_path, "docker/entrypoint", f"{shebang}\nset -e\n{ENTRYPOINT}")
    code, report = lint_json("--no-config", "--target", "4xH200", ".", cwd=tmp_path)
    assert [(f["path"], f["kind"]) for f in report["files"]] == [("docker/entrypoint", "shell")]
    [typo] = [f for f in active(report) if f["rule"] == "H3D020"]
    assert code == 1 and (typo["line"], typo["col"]) == (4, 3)  # at `--ulysses_degree`


def _not_scripts(tmp_path):
    """Extensionless files a repository holds that are not shell scripts, whatever they mention."""
    import os

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_bytes(b"\x7fELF\x02\x01\x01\0\0\0sglang serve\0" * 64)  # a binary
    (tmp_path / "bin" / "installer").write_bytes(b"#!/bin/sh\ntail -n +3 \"$0\" | tar x\n\x1f\x8b\x08\0\xff\xfe\0")
    write(tmp_path, "bin/warmup", "#!/usr/bin/env python3\nimport subprocess\nsubprocess.run(['sglang', 'serve'])\n")
    write(tmp_path, "bin/serve.fish", "")  # (a suffix: never opened)
    write(tmp_path, "bin/fishy", "#!/usr/bin/fish\nsglang serve MiniMaxAI/MiniMax-H3 --bogus\n")
    write(tmp_path, "Makefile", "serve:\n\tsglang serve MiniMaxAI/MiniMax-H3 --ulysses_degree 4\n")
    write(tmp_path, "LICENSE", "sglang " * 400_000)  # 2.8 MB without a #!: not read past its first bytes
    os.mkfifo(tmp_path / "bin" / "pipe")  # walked past, never waited on
    # a Makefile named is read for its recipe lines (issue 30 item 6: tests/lint/test_lint_named_scripts.py)
    return ["bin/tool", "bin/installer", "bin/warmup", "bin/fishy", "LICENSE"]


def test_extensionless_files_that_are_not_shell_scripts_are_skipped_quietly_when_walked(tmp_path):
    _not_scripts(tmp_path)
    write(tmp_path, "docker/entrypoint", f"#!/bin/sh\n{ENTRYPOINT}")
    code, report = lint_json("--no-config", "--target", "4xH200", ".", cwd=tmp_path)
    assert [(f["path"], f["kind"]) for f in report["files"] if f["kind"]] == [("docker/entrypoint", "shell")]
    assert {f["file"] for f in report["findings"]} == {"docker/entrypoint"} and code == 1
    # only a shell's #! line makes an extensionless file worth opening past its first bytes
    assert {f["path"] for f in report["files"]} <= {"docker/entrypoint", "bin/installer"}


def test_extensionless_files_named_are_read_by_their_first_line(tmp_path):
    names = _not_scripts(tmp_path)
    code, report = lint_json("--no-config", "--target", "4xH200", *names, cwd=tmp_path)
    assert code == 0 and report["findings"] == [] and all(f["kind"] is None for f in report["files"])
    # unreadable is never clean: a FIFO named, a script whose payload is not text but speaks of sglang
    (tmp_path / "bin" / "sfx").write_bytes(b"#!/bin/sh\nexec sglang serve MiniMaxAI/MiniMax-H3\nexit\n\xff\xfe\0")
    code, report = lint_json("--no-config", "--target", "4xH200", "bin/pipe", "bin/sfx", cwd=tmp_path)
    assert code == 1 and [(f["rule"], f["file"]) for f in report["findings"]] == [("H3DL003", "bin/pipe"),
                                                                                   ("H3DL003", "bin/sfx")]
    # a shell script too large to read is said so, not skipped
    write(tmp_path, "bin/big", "#!/bin/sh\n" + "# pad\n" * 300_000)
    code, report = lint_json("--no-config", "--target", "4xH200", "bin/big", cwd=tmp_path)
    assert code == 1 and [f["rule"] for f in report["findings"]] == ["H3DL003"]
    assert "larger than 1 MiB" in report["findings"][0]["message"]
