"""Which files lint reads as launches: strict about what claims to be a launch input, quiet
about the rest of a real repository (mkdocs, CloudFormation, workflows, error tables)."""

from __future__ import annotations

import pytest

from tests.test_lint import active, lint_json, write

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
    assert report["files"][0]["kind"] is None


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
    assert "'envv' was unexpected" in f["message"]


def test_check_recipe_points_at_the_misspelt_key(tmp_path):
    from tests.test_lint import run

    recipe = write(tmp_path, "r.yaml", "profile: 4xH200\ncommand: sglang serve MiniMaxAI/MiniMax-H3\nenvv: {}\n")
    code, _out, err = run("check", "--recipe", str(recipe), cwd=tmp_path)
    assert code == 2 and f"{recipe}:3:1:" in err
