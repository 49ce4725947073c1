"""A manifest's probes judged against sglang's start-up (issue 30 item 15), on the fixture
repository's manifests as teams write them: each finding at its probe's key (so a suppression
there holds), nothing said of a probe set that fits, and the admission webhook's review of the
same object gives the same finding (one reader)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from repo_paths import TESTS

REPO = TESTS / "fixtures" / "repo"
PROBE_RULES = ("H3D420", "H3D421", "H3D422", "H3D423", "H3D424")


def _lint(paths: list[str], cwd: Path) -> dict:
    if not (cwd / ".h3doctor.yaml").exists():  # the fixture repository's target
        shutil.copy(REPO / ".h3doctor.yaml", cwd / ".h3doctor.yaml")
    here = os.getcwd()
    os.chdir(cwd)
    try:
        _code, report, _notes = lint(paths, LintOptions())
        return json.loads(render("lint", "json", report))
    finally:
        os.chdir(here)


def _probe_findings(report: dict) -> list[tuple]:
    return [(f["file"], f["line"], f["rule"], f["severity"], f["cannot_verify"], bool(f["suppressed"]))
            for f in report["findings"] if f["rule"] in PROBE_RULES]


@pytest.fixture(scope="module")
def report() -> dict:
    return _lint(["deploy/k8s/deployment.yaml", "deploy/k8s/liveness-health.yaml", "deploy/k8s/statefulset.yaml",
                  "deploy/kserve/inferenceservice.yaml"], REPO)


def test_each_probe_finding_is_at_its_probe_and_good_probes_say_nothing(report):
    assert _probe_findings(report) == [
        ("deploy/k8s/liveness-health.yaml", 29, "H3D420", "error", False, False),  # livenessProbe: on /health
        ("deploy/k8s/statefulset.yaml", 18, "H3D423", "error", False, False),  # 5 + 2 x 5 s for a 144 GB load
    ]
    budget = next(f for f in report["findings"] if f["rule"] == "H3D423")
    assert "after 15 s" in budget["message"] and "at least 21 s" in budget["message"]


def test_a_suppression_at_the_probe_holds(tmp_path):
    shutil.copy(REPO / "deploy/k8s/liveness-health.yaml", tmp_path / "m.yaml")
    path = tmp_path / "m.yaml"
    lines = path.read_text().splitlines()
    assert lines[28].strip() == "livenessProbe:"
    lines[28] += "  # h3doctor: ignore[H3D420] restarts are what we want"
    path.write_text("\n".join(lines) + "\n")
    assert [f[-1] for f in _probe_findings(_lint(["m.yaml"], tmp_path))] == [True]


def _edited(tmp_path: Path, fixture: str, edit) -> tuple[str, dict]:
    """A fixture manifest with its container edited (`edit(container)`), written and linted."""
    obj = yaml.safe_load((REPO / fixture).read_text())
    edit(obj["spec"]["template"]["spec"]["containers"][0])
    text = yaml.safe_dump(obj, sort_keys=False)
    (tmp_path / "m.yaml").write_text(text)
    return text, _lint(["m.yaml"], tmp_path)


def test_no_readiness_probe_on_health_is_a_warning_at_the_launch(tmp_path):
    _text, report = _edited(tmp_path, "deploy/k8s/liveness-health.yaml", lambda c: c.pop("readinessProbe"))
    found = _probe_findings(report)
    assert sorted((rule, severity) for _f, _l, rule, severity, *_ in found) == [("H3D420", "error"), ("H3D422", "warning")]
    (launch,) = [launch for f in report["files"] for launch in f["launches"]]
    assert [line for _f, line, rule, *_ in found if rule == "H3D422"] == [launch["line"]]  # no probe of its own: the launch


def test_a_readiness_probe_elsewhere_is_a_warning_at_that_probe(tmp_path):
    text, report = _edited(tmp_path, "deploy/k8s/liveness-health.yaml",
                           lambda c: c.update(readinessProbe={"tcpSocket": {"port": "http"}}))
    found = [f for f in _probe_findings(report) if f[2] == "H3D422"]
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip() == "readinessProbe:")
    assert [at for _f, at, *_ in found] == [line]


def test_a_budget_between_floor_and_ceiling_cannot_verify_never_passes(tmp_path):
    _text, report = _edited(tmp_path, "deploy/k8s/statefulset.yaml",
                            lambda c: c["livenessProbe"].update(failureThreshold=20))  # 5 + 20 x 5 = 105 s
    found = _probe_findings(report)
    assert [(rule, severity, unknown) for _f, _l, rule, severity, unknown, _s in found] == [("H3D423", "warning", True)]


def test_the_admission_webhook_reviews_the_same_probes():
    obj = yaml.safe_load((REPO / "deploy/k8s/liveness-health.yaml").read_text())
    verdict = Judge().judge(obj)
    assert any(w.startswith("h3doctor H3D420 ") for w in verdict.warnings), verdict.warnings
    obj["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["path"] = "/liveness"
    assert not any(" H3D42" in w for w in Judge().judge(obj).warnings)


LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: h3}
spec:
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      spec:
        containers:
          - name: leader
            image: lmsysorg/sglang:v0.5.23
            command: [sglang, serve, --model-path, MiniMaxAI/MiniMax-H3, --num-gpus, "16", --ulysses-degree, "16",
                      --nnodes, "2", --node-rank, "0", --dist-init-addr, "h3-0.h3:5000"]
            startupProbe: {httpGet: {path: /liveness, port: 30000}, failureThreshold: 120}
            readinessProbe: {httpGet: {path: /health, port: 30000}}
            resources: {limits: {nvidia.com/gpu: 8}}
    workerTemplate:
      spec:
        containers:
          - name: worker
            image: lmsysorg/sglang:v0.5.23
            command: [sglang, serve, --model-path, MiniMaxAI/MiniMax-H3, --num-gpus, "16", --ulysses-degree, "16",
                      --nnodes, "2", --node-rank, $(LWS_WORKER_INDEX), --dist-init-addr, "h3-0.h3:5000"]
            startupProbe: {httpGet: {path: /liveness, port: 30000}, failureThreshold: 120}
            readinessProbe: {httpGet: {path: /health, port: 30000}}
            resources: {limits: {nvidia.com/gpu: 8}}
"""


def test_a_worker_node_runs_no_http_server_so_its_probes_are_an_error(tmp_path):
    (tmp_path / "lws.yaml").write_text(LWS)
    found = _probe_findings(_lint(["lws.yaml"], tmp_path))
    assert [(line, rule, severity) for _f, line, rule, severity, *_ in found] == [(24, "H3D424", "error")]  # the worker's startupProbe
