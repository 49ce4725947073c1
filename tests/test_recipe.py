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
