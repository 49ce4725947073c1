"""YAML launch recipes: command, environment, hardware and planned requests in one linted file."""

from __future__ import annotations

import textwrap


def write(tmp_path, text: str):
    path = tmp_path / "recipe.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_recipe_runs_the_check(tmp_path, cli):
    recipe = write(tmp_path, """
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn
        """)
    code, data, _ = cli("check", "--recipe", recipe)
    assert code == 1 and "M5" in [c for f in data["findings"] for c in f["catalog"].split(",")]
    assert data["corrected_argv"][-1] == "fa"


def test_recipe_environment_reaches_the_rules_and_the_report(tmp_path, cli):  # catalog C8
    recipe = write(tmp_path, """
        profile: 4xH200
        command: [sglang, serve, MiniMaxAI/MiniMax-H3, --num-gpus, "4", --use-fsdp-inference]
        env:
          SGLANG_CACHE_DIT_ENABLED: "true"
        """)
    code, data, _ = cli("check", "--recipe", recipe)
    assert code == 1 and any("C8" in f["catalog"].split(",") for f in data["findings"])
    assert data["effective_config"]["environment"]["SGLANG_CACHE_DIT_ENABLED"] == "true"


def test_recipe_request_quality_runs_the_audit(tmp_path, cli):  # catalog 2.H
    recipe = write(tmp_path, """
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        request: {quality: high}
        """)
    code, data, _ = cli("check", "--recipe", recipe)
    assert code == 1 and any(f["rule"].startswith("H3D7") for f in data["findings"])
    code, data, _ = cli("check", "--recipe", recipe, "--request-quality", "lossless")
    assert code == 0  # the command line wins over the recipe


def test_malformed_recipe_is_located(tmp_path, cli):
    recipe = write(tmp_path, """
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3
        request: {quality: high, steps: zero}
        """)
    code, _, err = cli("check", "--recipe", recipe)
    assert code == 2 and f"{recipe}:4" in err and "Traceback" not in err


def test_recipe_with_an_unknown_key(tmp_path, cli):
    recipe = write(tmp_path, """
        command: sglang serve MiniMaxAI/MiniMax-H3
        profle: 4xH200
        """)
    code, _, err = cli("check", "--recipe", recipe)
    assert code == 2 and "profle" in err


def test_profile_file_next_to_the_recipe(tmp_path, cli):
    (tmp_path / "lab.yaml").write_text("platform: mps\ndevice_name: Apple M3 Max\ngpu_memory_gib: 128\nffmpeg: true\n")
    recipe = write(tmp_path, """
        profile: ./lab.yaml
        command: sglang serve MiniMaxAI/MiniMax-H3
        """)
    code, data, _ = cli("check", "--recipe", recipe)
    assert code == 1 and data["hardware"]["platform"] == "mps"


def test_check_judges_a_recipe_with_targets_on_its_first(tmp_path, cli):
    recipe = write(tmp_path, """
        targets: [1xH100, 4xH200]
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        """)
    code, data, _ = cli("check", "--recipe", recipe)
    assert code == 1 and data["hardware"]["gpu_count"] == 1  # 1xH100: four GPUs asked of one
    code, data, _ = cli("check", "--recipe", recipe, "--profile", "4xH200")
    assert code == 0 and data["hardware"]["gpu_count"] == 4


ENVS = [
    {}, {"A": "x", "B_2": 3, "_C": 1.5, "D": True}, {"1BAD": "x"}, {"A": "x", "A-B": "y", "C": [1]},
    {"A\n": "x"}, {"": "x"}, {"ÉA": "x"}, {"A": None}, {"A": {"x": 1}}, {"B": [1], "A": [2]}, {"A": [], "1B": "x"},
    ["A"], "A=1", None, 7,
]


def test_the_env_check_says_what_the_schemas_env_says():
    """`env` is checked by hand (jsonschema's per-entry cost): the same verdict, path and words as
    the schema's own validation of the same recipe, for good and bad environments alike."""
    from jsonschema import Draft202012Validator

    from h3doctor.inputs import recipe as rc
    from h3doctor.yamlpos import schema_message

    validator = Draft202012Validator(rc.schema())
    for env in ENVS:
        errors = sorted(validator.iter_errors({"command": "sglang serve", "env": env}), key=lambda e: list(e.absolute_path))
        mine = rc._env_error(env)
        if not errors:
            assert mine is None, env
            continue
        assert mine is not None, env
        path, err = mine
        assert path == list(errors[0].absolute_path), env
        assert schema_message(err) == schema_message(errors[0]), env


def test_a_bad_env_entry_is_located_at_its_key_or_value(tmp_path, cli):
    recipe = write(tmp_path, """
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        env:
          GOOD: x
          1BAD: y
          LIST: [1]
        """)
    code, _data, err = cli("check", "--recipe", recipe)
    assert code == 2 and f"{recipe}:6:3: at env: '1BAD' does not match" in err, err
    recipe = write(tmp_path, """
        profile: 4xH200
        command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4
        env:
          GOOD: x
          LIST: [1]
        """)
    code, _data, err = cli("check", "--recipe", recipe)
    assert code == 2 and f"{recipe}:6:9: at env/LIST: [1] is not of type" in err, err
