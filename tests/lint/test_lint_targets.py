"""Targets from the manifest (issue 30 item 7), on the fixture repository (tests/fixtures/repo)
with no `.h3doctor.yaml` at all: every launch is judged — on the GPU type its own file names
(a Kubernetes node label, SkyPilot's accelerators, Slurm's `--gres=gpu:TYPE:N`), else on no
target, where every hardware-independent mistake is still reported and the rules that need the
GPU are named "cannot verify" in H3DL004, never passed in silence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from tests.lint.test_lint_locations import _copy



def _run(repo: Path, **kw) -> dict:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        _code, report, _notes = lint(["."], LintOptions(**kw))
        return json.loads(render("lint", "json", report))
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[dict, dict]:
    """The fixture linted with its configuration (targets: [4xH200]) and without any."""
    repo = _copy(tmp_path_factory.mktemp("targets"))
    configured = _run(repo)
    (repo / ".h3doctor.yaml").unlink()
    return configured, _run(repo)


@pytest.mark.parametrize("path, target", [
    ("deploy/k8s/cookbook.yaml", "H200"),  # nodeSelector nvidia.com/gpu.product: NVIDIA-H200
    ("deploy/operators/rollout.yaml", "H200"),
    ("deploy/operators/knative.yaml", "H100"),  # cloud.google.com/gke-accelerator: nvidia-h100-80gb
    ("deploy/operators/rayservice.yaml", "H100"),  # required affinity on karpenter.k8s.aws/instance-gpu-name
    ("scripts/serve.sbatch", "4xh200"),  # --gres=gpu:h200:4
    ("sky/h3.yaml", "8xH100"),  # resources.accelerators: H100:8
])
def test_the_gpu_type_comes_from_the_file_that_names_one(runs, path, target):
    _configured, bare = runs
    launches = [launch for f in bare["files"] if f["path"] == path for launch in f["launches"]]
    assert launches and all([r["target"] for r in launch["results"]] == [target] for launch in launches)


def test_with_no_configuration_every_hardware_independent_mistake_is_reported(runs):
    """Each error the configuration's 4xH200 finds is found with no target at all, unless it
    needs the GPU: then the launch's H3DL004 names it as "cannot verify". Nothing is dropped."""
    configured, bare = runs
    found = {(f["file"], f["line"], f["col"], f["rule"]) for f in bare["findings"]}
    cannot = {(f["file"], f["launch"]): f["message"] for f in bare["findings"] if f["rule"] == "H3DL004"}
    errors = [f for f in configured["findings"] if f["severity"] == "error" and f["target"] == "4xH200"
              and not f["rule"].startswith("H3DL")]
    assert errors
    judged = 0
    for f in errors:
        key = (f["file"], f["line"], f["col"], f["rule"])
        if key in found:
            judged += 1
        else:
            assert f["rule"] in cannot.get((f["file"], f["launch"]), ""), f
    assert any("these cannot verify: H3D" in message for message in cannot.values())  # what needs the GPU
    assert judged >= 10  # the misspelt flags, abbreviations, layouts and grants: judged with no target
    no_target = [f for f in bare["findings"] if f["target"] == "no target" and f["severity"] == "error"]
    assert {"H3D020", "H3D021"} <= {f["rule"] for f in bare["findings"] if f["target"] == "no target"}
    assert all(not f["cannot_verify"] for f in no_target)
    # and none it invents: what no target finds, the 4xH200 finds too (a count nobody gave is unknown, not 0)
    configured_keys = {(f["file"], f["line"], f["rule"]) for f in configured["findings"]}
    assert {(f["file"], f["line"], f["rule"]) for f in no_target} <= configured_keys
    assert all(f["severity"] == "warning" for f in bare["findings"] if f["rule"] == "H3DL004")


def test_a_label_the_catalog_does_not_name_is_no_target_and_said(tmp_path, monkeypatch):
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: h3}\nspec:\n"
        "  nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3-MIG-3g.40gb}\n"
        "  containers:\n  - name: server\n    image: lmsysorg/sglang:v0.5.23\n"
        "    command: [sglang, serve, MiniMaxAI/MiniMax-H3, --num-gpus, '1', --ulysses_degree, '1']\n"
        "    resources: {limits: {nvidia.com/gpu: 1}}\n")
    report = _run(tmp_path, no_config=True)
    notice = [f for f in report["findings"] if f["rule"] == "H3DL004"]
    assert notice and "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb" in notice[0]["message"]
    assert any(f["rule"] == "H3D020" and f["target"] == "no target" for f in report["findings"])
