"""A parallel-layout correction supplies what the degrees ask for when the host has it: a
--ulysses-degree or --tp-size that needs more GPUs than --num-gpus' default of one raises
--num-gpus to the layout asked for, instead of cutting the degree back to one GPU. Where the
host lacks the GPUs, or the user typed --num-gpus, the closest layout on those GPUs stays."""

from __future__ import annotations

import shlex

import pytest

from h3doctor.engine.check import check
from h3doctor.facts import facts_from_mapping
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table


@pytest.fixture(scope="module")
def env(rules):
    return rules, load_flag_table("0.5.23")


def _errors(result):
    return [f.rule.id for f in result.evaluation.findings if f.severity == "error"]


def _corrected(command, hw, env):
    rules, table = env
    result = check(shlex.split(command), hw, rules, table, {})
    assert _errors(result), "the launch must need a correction"
    assert result.fix_status == "fixed", result.fix_status
    again = check(result.corrected_argv, hw, rules, table, {})
    assert not _errors(again), [f.message for f in again.evaluation.findings]
    return result.corrected_argv


@pytest.mark.parametrize("command,kept,added", [
    ("sglang serve MiniMaxAI/MiniMax-H3 --ulysses-degree 4", ["--ulysses-degree", "4"], ["--num-gpus", "4"]),
    ("sglang serve MiniMaxAI/MiniMax-H3 --tp-size 2 --ulysses-degree 2", ["--tp-size", "2", "--ulysses-degree", "2"],
     ["--num-gpus", "4"]),
])
def test_the_degrees_asked_for_get_the_gpus_the_host_has(command, kept, added, env):
    argv = _corrected(command, load_profile("4xH200"), env)
    assert argv[:len(shlex.split(command))] == shlex.split(command)  # every token the user typed, in order
    assert argv[len(shlex.split(command)):] == added
    assert " ".join(kept) in " ".join(argv)


def test_launch_server_tp_four_keeps_four_way_tensor_parallelism(env):
    argv = _corrected("python -m sglang.launch_server --model-path MiniMaxAI/MiniMax-H3 --tp 4",
                      load_profile("4xH200"), env)
    text = " ".join(argv)
    assert "--tp-size 4" in text and "--num-gpus 4" in text and "--tp-size 1" not in text


def test_more_than_the_host_has_is_cut_to_what_it_has(env):
    two = facts_from_mapping({"platform": "cuda", "device_name": "NVIDIA H200", "compute_capability": "9.0",
                              "gpu_count": 2, "gpu_memory_gib": 139.8, "host_memory_gib": 2015}, "2xH200")
    argv = _corrected("sglang serve MiniMaxAI/MiniMax-H3 --ulysses-degree 4", two, env)
    assert argv[-4:] == ["--ulysses-degree", "2", "--num-gpus", "2"]
    one = _corrected("sglang serve MiniMaxAI/MiniMax-H3 --ulysses-degree 4", load_profile("1xH200"), env)
    assert one[-2:] == ["--ulysses-degree", "1"] and "--num-gpus" not in one


def test_a_typed_gpu_count_is_kept(env):
    argv = _corrected("sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 2 --ulysses-degree 4", load_profile("4xH200"), env)
    assert argv[3:5] == ["--num-gpus", "2"] and argv[-2:] == ["--ulysses-degree", "2"]
