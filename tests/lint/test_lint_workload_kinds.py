"""Workload kinds (issue 30 item 6), in the fixture repository (tests/fixtures/repo/deploy/operators):
an object of any kind is read by finding its pod templates by their shape — an Argo Rollout, a
Knative Service, a RayService's worker group, a Dynamo graph's `mainContainer` — and a kind that
mentions an sglang launch where no template is found is a "not judged" note, never nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from tests.lint.test_lint_locations import _copy



@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    repo = _copy(tmp_path_factory.mktemp("kinds"))
    import os

    cwd = os.getcwd()
    os.chdir(repo)
    try:
        _code, rep, _notes = lint(["deploy/operators"], LintOptions())
        return json.loads(render("lint", "json", rep))
    finally:
        os.chdir(cwd)


def _launches(report: dict) -> dict[str, list[str]]:
    return {launch["label"]: launch["argv"] for f in report["files"] for launch in f["launches"]}


@pytest.mark.parametrize("label, flag", [
    ("Rollout/h3-video spec.template.spec container server", "--ulysses_degree"),
    ("Service/h3-preview spec.template.spec container 0", "--tp"),
    ("RayService/h3-ray spec.rayClusterConfig.workerGroupSpecs.0.template.spec container sglang", "--ulysses-degree"),
    ("DynamoGraphDeployment/h3-dynamo spec.services.VideoWorker.extraPodSpec container 0", "--attention-backend"),
])
def test_a_pod_template_is_found_by_its_shape_whatever_the_kind(report, label, flag):
    launches = _launches(report)
    assert label in launches, sorted(launches)
    assert flag in launches[label]


def test_the_rollouts_and_rays_mistakes_are_judged(report):
    found = {(f["file"], f["rule"]) for f in report["findings"]}
    assert ("deploy/operators/rollout.yaml", "H3D020") in found  # --ulysses_degree
    assert ("deploy/operators/rayservice.yaml", "H3D228") in found  # ulysses 3 of 8 GPUs
    assert not any("ray-head" in label for label in _launches(report))  # a container that runs no sglang


def test_a_kind_that_mentions_sglang_without_a_template_is_not_judged_and_said(report):
    steps, argv = [f for f in report["findings"] if f["file"] == "deploy/operators/pipeline.yaml"]
    assert steps["rule"] == "H3DL002" and "RenderPipeline/nightly-h3" in steps["message"] and steps["line"] == 3
    assert argv["rule"] == "H3DL002" and "GpuTask/h3-smoke" in argv["message"]  # a list of words: one command
