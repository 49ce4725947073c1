"""The judge and its target (engine/judge.py, engine/target.py): the launch's words are read and
parsed once per evaluation — not once for the container, again for the hardware and again for
the flags — and every caller's check goes through one Judge on one frozen Target.

Counted, not timed: the calls to sglang's launch-form reader and flag parser per check.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter

import pytest

from h3doctor import request
from h3doctor.engine import evaluate as evaluate_module
from h3doctor.engine.judge import Judge
from h3doctor.engine.target import Target
from h3doctor.host.profiles import load_profile
from h3doctor.record import FrozenInstanceError
from h3doctor.sglang import argv, launch_forms
from h3doctor.sglang.flagtable import load_flag_table

H3 = "sglang serve MiniMaxAI/MiniMax-H3"


@pytest.fixture
def calls(monkeypatch):
    """Counts top-level calls (a container's inner launch is read inside the outer read) of the
    launch-form reader and the flag parser, and the evaluations, wherever a module holds them."""
    counted: Counter[str] = Counter()
    depth = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            if not depth[name]:
                counted[name] += 1
            depth[name] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[name] -= 1
        return wrapper

    for name, function in (("read_launch_form", launch_forms.read_launch_form), ("parse_command", argv.parse_command),
                           ("evaluate", evaluate_module.evaluate)):
        wrapped = counting(name, function)
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("h3doctor") and getattr(module, name, None) is function:
                monkeypatch.setattr(module, name, wrapped)
    return counted


@pytest.mark.parametrize("words, hardware", [
    (f"{H3} --num-gpus 4", "profile"),
    (f"{H3} --num-gpus 4", "function of the launch's environment"),  # the API's hardware: read from the form too
    (f"CUDA_VISIBLE_DEVICES=0,1,2,3 nohup {H3} --num-gpus 4", "profile"),
    (f"docker run --gpus all --ipc=host lmsysorg/sglang:v0.5.22 {H3} --num-gpus 4", "profile"),  # the container's release
])
def test_a_clean_check_reads_and_parses_the_launch_once(calls, words, hardware):
    hw = load_profile("4xH200")
    given = {"profile": "4xH200"} if hardware == "profile" else {"hardware": lambda env: hw}
    outcome = request.run(request.CheckRequest(tokens=shlex.split(words), env={}, **given))
    assert outcome.result.fix_status == "clean"
    assert dict(calls) == {"read_launch_form": 1, "parse_command": 1, "evaluate": 1}


def test_each_evaluation_of_the_fix_loop_parses_its_launch_once(calls):
    outcome = request.run(request.CheckRequest(tokens=shlex.split(f"{H3} --num-gpus 4 --tp-size 3"), env={},
                                               profile="4xH200"))
    assert outcome.result.fix_status == "fixed"
    assert calls["evaluate"] >= 2
    assert calls["parse_command"] == calls["read_launch_form"] == calls["evaluate"]


def test_an_unreadable_launch_is_reported_where_it_always_was():
    from h3doctor.errors import UsageError

    with pytest.raises(UsageError, match="ssh"):
        request.run(request.CheckRequest(tokens=["ssh", "host", "sglang", "serve", "M"], env={}, profile="4xH200"))


def test_the_target_is_frozen_and_the_judge_keeps_its_rules(rules):
    target = Target.of(load_profile("4xH200"), load_flag_table("0.5.23"), {"A": "1"})
    with pytest.raises(FrozenInstanceError):
        target.hw = None
    judge = Judge(rules)
    assert Judge(judge.rules).rules is judge.rules  # a RuleSet is taken as it is: what it worked out kept
    assert judge.check(shlex.split(f"{H3} --num-gpus 4"), target).fix_status == "clean"


def test_a_memo_gives_the_same_evaluation_for_the_same_words_and_target(rules):
    target = Target.of(load_profile("4xH200"), load_flag_table("0.5.23"))
    judge = Judge(rules, memo={})
    first = judge.evaluate(shlex.split(f"{H3} --num-gpus 4"), target)
    assert judge.evaluate(shlex.split(f"{H3} --num-gpus 4"), target) is first
    other = Target.of(load_profile("8xH200"), load_flag_table("0.5.23"))
    assert judge.evaluate(shlex.split(f"{H3} --num-gpus 4"), other) is not first
