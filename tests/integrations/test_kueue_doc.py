"""docs/integrations/kueue.md: the worked example's `review` runs against h3doctor.api with sample
Workloads as Kueue holds them once quota is reserved (status.admission.podSetAssignments' flavours)."""

from __future__ import annotations

import copy
import re

import pytest

from repo_paths import REPO

PAGE = REPO / "docs/integrations/kueue.md"


@pytest.fixture(scope="module")
def review():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    namespace: dict = {}
    exec(compile(blocks[0], str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own example
    return namespace["review"]


def _workload(args, *, flavour="h100", gpus=4, image="lmsysorg/sglang:v0.5.23"):
    container = {"name": "server", "image": image, "command": ["sglang", "serve"], "args": args,
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "h3"},
        "spec": {"queueName": "gpu", "podSets": [{"name": "main", "count": 1,
                                                   "template": {"spec": {"containers": [container]}}}]},
        "status": {"admission": {"clusterQueue": "gpu", "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": flavour},
             "resourceUsage": {"nvidia.com/gpu": str(gpus)}}]}},
    }


H3 = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def test_a_launch_sglang_refuses_on_the_flavours_gpu_is_rejected_with_its_rule_and_fix(review):
    state, message = review(_workload([*H3, "--ulysses-degree", "3"]))
    assert state == "Rejected"
    assert message.startswith("h3doctor H3D") and "4xH100" in message and "corrected: sglang serve" in message


def test_a_launch_that_fits_the_flavour_is_ready(review):
    state, message = review(_workload(H3))
    assert state == "Ready" and "will start" in message


def test_the_flavour_decides_the_verdict(review):
    # eight GPUs asked of a flavour whose pods get four
    state, _ = review(_workload(["MiniMaxAI/MiniMax-H3", "--num-gpus", "8"]))
    assert state == "Rejected"


def test_what_the_example_cannot_judge_is_ready_and_says_so_never_passed(review):
    for workload in (_workload(H3, flavour="mystery"), _workload([*H3, "--config", "/etc/h3.yaml"]),
                     _workload([*H3, "--conf=/etc/h3.yaml"])):
        state, message = review(workload)
        assert state == "Ready" and "cannot verify" in message and "will start" not in message
    other = copy.deepcopy(_workload(["Qwen/Qwen3-8B"]))
    state, message = review(other)
    assert state == "Ready" and "cannot tell" in message
