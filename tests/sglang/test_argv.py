"""The launch command is read as sglang 0.5.23 reads it (catalog section 1)."""

from __future__ import annotations

import shlex

import pytest

from h3doctor.sglang.argv import parse_command


def parse(table, command: str):
    return parse_command(shlex.split(command), table)


def test_positional_model_is_model_path(table):  # 1.1: first non-dash token -> --model-path
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4")
    assert cmd.entry == "serve" and cmd.provided["model_path"] == "MiniMaxAI/MiniMax-H3"
    assert cmd.provided["num_gpus"] == 4 and cmd.problems == []


def test_missing_model_path_is_a1(table):  # A1, cli/utils.py:165
    cmd = parse(table, "sglang serve --num-gpus 4")
    assert cmd.problems[0].message == "Error: --model-path is required. Please provide the path to the model."


@pytest.mark.parametrize("value,expected", [("", True), (" true", True), (" FALSE", False), ("=false", False)])
def test_store_boolean_forms(table, value, expected):  # 1.3 --enable-torch-compile
    sep = "" if value.startswith("=") else ""
    cmd = parse(table, f"sglang serve MiniMaxAI/MiniMax-H3 --enable-torch-compile{sep}{value}")
    assert cmd.provided["enable_torch_compile"] is expected and cmd.problems == []


def test_store_boolean_rejects_zero(table):  # A5
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --enable-torch-compile 0")
    assert [p.message for p in cmd.problems] == ["Invalid boolean value: 0. Expected 'true' or 'false'."]


def test_multi_value_flag(table):  # 1.3 --layerwise-offload-components nargs+
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --layerwise-offload-components transformer text_encoder video_vae audio_vae")
    assert cmd.provided["layerwise_offload_components"] == ["transformer", "text_encoder", "video_vae", "audio_vae"]


def test_alias_shares_dest(table):  # 1.3 --mode is --performance-mode
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --mode speed")
    assert cmd.provided["performance_mode"] == "speed"


def test_invalid_choice_is_a4(table):
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --performance-mode fast")
    assert "invalid choice: 'fast'" in cmd.problems[0].message


def test_underscore_spelling_is_unrecognized_with_suggestion(table):  # A6, 1.2 step 3
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --attention_backend fa")
    [problem] = cmd.problems
    assert problem.message == "error: unrecognized arguments: --attention_backend fa"
    assert problem.suggestion == "--attention-backend"


def test_typo_gets_did_you_mean(table):
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --num-gpu 4")
    # --num-gpu is an unambiguous prefix of --num-gpus: argparse accepts it, sglang drops it (1.2 step 3)
    assert cmd.problems[0].kind == "abbreviation" and "num_gpus" not in cmd.provided


def test_ambiguous_abbreviation(table):  # 1.1: --model is ambiguous
    cmd = parse(table, "sglang serve --model MiniMaxAI/MiniMax-H3")
    assert any(p.kind == "ambiguous" for p in cmd.problems)


def test_dynamic_component_flags_and_aliases(table):  # 1.2 step 2
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --component-paths.text_encoder /m/te --conditioning-projection-path /m/p "
                       "--component-attention-backends.transformer fa")
    assert cmd.dynamic["component_paths"] == {"text_encoder": "/m/te", "conditioning_projection": "/m/p"}
    assert cmd.dynamic["component_attention_backends"] == {"transformer": "fa"}
    assert cmd.problems == []


def test_config_not_accepted_by_launch_server(table):  # 1.1: launch_server has no --config
    cmd = parse(table, "python -m sglang.multimodal_gen.runtime.launch_server --model-path MiniMaxAI/MiniMax-H3 --config c.yaml")
    assert cmd.entry == "launch_server"
    assert any(p.kind == "unrecognized" for p in cmd.problems)


def test_model_type_is_removed_by_dispatcher(table):  # 1.1
    cmd = parse(table, "sglang serve MiniMaxAI/MiniMax-H3 --model-type diffusion --num-gpus 2")
    assert cmd.problems == [] and cmd.provided["num_gpus"] == 2


def test_env_assignments_before_the_command(table):
    cmd = parse(table, "SGLANG_CACHE_DIT_ENABLED=true sglang serve MiniMaxAI/MiniMax-H3")
    assert cmd.env == {"SGLANG_CACHE_DIT_ENABLED": "true"} and cmd.prefix_len == 3
