"""`lint --fix` of a manifest's probes (issue 30 item 15; h3doctor/lint/probe_fixes.py): H3D420's
liveness path, H3D422's readiness path and H3D423's failureThreshold, each one scalar replaced where
the manifest writes it (quotes, comments and layout kept); `--diff` shows it, SARIF carries it, the
re-lint has no probe finding; only an exact edit is made, and a livenessProbe's threshold only
with --unsafe-fixes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from h3doctor.lint.run import LintOptions, lint
from h3doctor.output.formats import render
from tests.inputs.test_probes import POD  # a Pod of one sglang container, its probes and limits left to fill

PATH = "deploy/k8s/probes-from-llm-chart.yaml"
PROBE_RULES = {"H3D420", "H3D421", "H3D422", "H3D423", "H3D424"}


@pytest.fixture
def repo(fixture_repo) -> Path:
    return fixture_repo


def _lint(path: str, **kw) -> tuple[dict, list[str]]:
    _code, report, _notes = lint([path], LintOptions(**kw))
    text = render("lint", "text", report) if kw.get("fix") or kw.get("diff") else ""
    return (json.loads(render("lint", "json", report)) if not text else {}), text.splitlines()


def _probe_rules(path: str, **kw) -> list[str]:
    report, _ = _lint(path, **kw)
    return sorted(f["rule"] for f in report["findings"] if f["rule"] in PROBE_RULES and not f["suppressed"])


def test_fix_makes_the_exact_probe_edits_where_the_manifest_writes_them(repo):
    before = (repo / PATH).read_text()
    assert _probe_rules(PATH) == ["H3D420", "H3D422", "H3D423"]
    _, said = _lint(PATH, fix=True)
    after = (repo / PATH).read_text()
    assert after == before.replace('path: "/health"  # the LLM', 'path: "/liveness"  # the LLM').replace(
        "{path: /liveness, port: http}", "{path: /health, port: http}")  # quotes and comment kept
    # the livenessProbe's threshold is not made unasked, and why is said
    assert any("H3D423 fix: livenessProbe failureThreshold: 3 -> 389" in s and "--unsafe-fixes" in s for s in said)
    assert not any("no corrected command" in s for s in said)  # the probes' rules are the manifest's to fix
    assert _probe_rules(PATH) == ["H3D423"]


def test_unsafe_fixes_raises_the_threshold_and_the_relint_has_no_probe_finding(repo):
    before = (repo / PATH).read_text()
    _lint(PATH, fix=True, unsafe_fixes=True)
    assert (repo / PATH).read_text().count("\n") == before.count("\n")  # no line added or moved
    assert "            failureThreshold: 389\n" in (repo / PATH).read_text()
    assert _probe_rules(PATH) == []


def test_diff_shows_the_probe_edits_and_writes_nothing(repo):
    before = (repo / PATH).read_text()
    _, said = _lint(PATH, diff=True)
    assert '-              path: "/health"  # the LLM server\'s health check' in said
    assert '+              path: "/liveness"  # the LLM server\'s health check' in said
    assert "+            failureThreshold: 389" in said  # an unsafe one is shown by --diff, marked so
    assert (repo / PATH).read_text() == before


def test_sarif_carries_each_probe_fix_with_its_applicability(repo):
    _code, report, _notes = lint([PATH], LintOptions())
    results = json.loads(render("lint", "sarif", report))["runs"][0]["results"]
    fixes = {r["ruleId"]: r["fixes"][0] for r in results if r["ruleId"] in PROBE_RULES}
    region = fixes["H3D420"]["artifactChanges"][0]["replacements"][0]
    assert region["deletedRegion"] == {"startLine": 26, "startColumn": 21, "endLine": 26, "endColumn": 30}
    assert region["insertedContent"] == {"text": '"/liveness"'}
    assert {rule: fix["properties"]["applicability"] for rule, fix in fixes.items()} == {
        "H3D420": "safe", "H3D422": "safe", "H3D423": "unsafe"}


STARTUP = POD % textwrap.indent("""\
startupProbe:
  httpGet: {path: /liveness, port: 30000}
  periodSeconds: 5
  failureThreshold: 2   # raised by hand before
livenessProbe:
  httpGet: {path: /liveness, port: 30000}
readinessProbe:
  httpGet: {path: /health, port: 30000}
resources:
  limits: {nvidia.com/gpu: 4}""", "      ")


def test_a_startup_probes_threshold_is_a_safe_fix(tmp_path, monkeypatch):
    (tmp_path / "pod.yaml").write_text(STARTUP)
    monkeypatch.chdir(tmp_path)
    assert _probe_rules("pod.yaml") == ["H3D423"]
    _lint("pod.yaml", fix=True)  # safe: applied unasked
    after = (tmp_path / "pod.yaml").read_text()
    assert after.replace("failureThreshold: 116   #", "failureThreshold: 2   #") == STARTUP
    assert _probe_rules("pod.yaml") == []


@pytest.mark.parametrize("edit, rule", [
    (lambda t: t.replace("      readinessProbe:\n        httpGet: {path: /health, port: 30000}\n", "").replace(
        "failureThreshold: 2 ", "failureThreshold: 200 "), "H3D422"),  # no readinessProbe: one to add, no scalar
    (lambda t: t.replace("        failureThreshold: 2   # raised by hand before\n", "").replace(
        "periodSeconds: 5", "periodSeconds: 1"), "H3D423"),  # the default threshold: not written
    (lambda t: t.replace("      startupProbe:", "      startupProbe:  # h3doctor: ignore[H3D423] on purpose"), None),
    # 150 s: between the load's floor and its ceiling, "cannot verify": no exact figure to write
    (lambda t: t.replace("failureThreshold: 2 ", "failureThreshold: 30 "), "H3D423"),
    # the path written with an escape: its text is not the value, so no exact replacement
    (lambda t: t.replace("livenessProbe:\n        httpGet: {path: /liveness,", 'livenessProbe:\n        httpGet: {path: "/he\\x61lth",')
     .replace("failureThreshold: 2 ", "failureThreshold: 200 "), "H3D420"),
])
def test_no_edit_where_there_is_no_exact_scalar_or_the_finding_is_suppressed(tmp_path, monkeypatch, edit, rule):
    (tmp_path / "pod.yaml").write_text(edit(STARTUP))
    monkeypatch.chdir(tmp_path)
    assert _probe_rules("pod.yaml", targets=("4xH200",)) == ([rule] if rule else [])
    before = (tmp_path / "pod.yaml").read_text()
    _lint("pod.yaml", fix=True, unsafe_fixes=True, targets=("4xH200",))
    assert (tmp_path / "pod.yaml").read_text() == before


def test_a_probe_edit_and_a_command_edit_in_one_manifest_are_both_made(tmp_path, monkeypatch):
    """The probe's scalar is replaced first, within its line, so the command's words keep their
    lines and columns for their own edit."""
    text = STARTUP.replace('"4"]', '"4", --ulysses_degree, "4"]')
    (tmp_path / "pod.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    _lint("pod.yaml", fix=True)
    after = (tmp_path / "pod.yaml").read_text()
    assert after == text.replace("--ulysses_degree", "--ulysses-degree").replace(
        "failureThreshold: 2   #", "failureThreshold: 116   #")
