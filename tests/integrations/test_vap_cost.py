"""`h3doctor export vap`'s policies as the Kubernetes API server judges them: every expression
compiles with the API server's own code (what `kubectl apply` is refused for), and the cost its
estimator gives (tools/vap_cost/, Go, k8s.io/apiserver v0.32.13). The Go test runs where Go and
its modules are at hand (CI installs no Go); the recorded figures are checked everywhere against
the generator, so they cannot go stale silently."""

from __future__ import annotations

import hashlib
import importlib.util
import json

import pytest
import yaml
from repo_paths import REPO, TESTS

from h3doctor.integrations import vap

FIGURES = TESTS / "integrations" / "data" / "vap-cost.json"
REMEASURE = "measure again with: python tools/vap_cost.py (Go, docs/kubernetes.md 'Cost and size')"


def _exported() -> str:
    return vap.render(vap.policies())


def _tool():
    spec = importlib.util.spec_from_file_location("vap_cost_tool", REPO / "tools" / "vap_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_release_without_a_minimax_h3_model_puts_nothing_in_the_policy():
    """Its variables would hold empty maps, typed dyn by the API server's checker, which then
    refuses the whole policy at create (0.5.16 did: 'expected type int but found dyn'). Every
    model map the policy holds names a model, so the launch's model slot is an int."""
    models = {v: vap._Release.models_of(v) for v in vap.release_files.known()}
    assert any(not m for m in models.values()), "no release without a model left to test"
    for doc in vap.policies():
        if doc["kind"] != "ValidatingAdmissionPolicy":
            continue
        names = [v["name"] for v in doc["spec"]["variables"]]
        for version, found in models.items():
            suffix = "_" + version.replace(".", "_")
            assert any(n.endswith(suffix) for n in names) == bool(found), version
        maps = [v for v in doc["spec"]["variables"] if v["name"].startswith(("modelindex_", "modelinline_"))]
        assert maps and all(v["expression"] != "{}" for v in maps)


def test_the_recorded_figures_are_the_current_generators():
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    assert figures["policies_sha256"] == hashlib.sha256(_exported().encode()).hexdigest(), REMEASURE
    assert figures["modules"]["k8s.io/apiserver"] == "v0.32.13"
    for name, policy in figures["policies"].items():
        assert policy["refused"] == [], f"the API server refuses {name} at create: {policy['refused']}"
        assert policy["largest_max_not_reading_the_object"] <= figures["per_call_limit"], name


def test_the_api_servers_code_accepts_every_expression_and_bounds_all_but_the_objects(tmp_path):
    """Compiled as the API server compiles a policy at create: nothing refused. Estimated as its
    estimator does: every expression that does not read the object is bounded, under the per-call
    limit; one that reads the object is not bounded (the object is dyn to a policy, its lists'
    sizes unknown), which the API server does not hold against a policy at create: its cost
    limits act at run time (docs/kubernetes.md). The recorded figures are the tool's."""
    tool = _tool()
    try:
        binary = tool.build(tmp_path)
    except RuntimeError as exc:
        pytest.skip(f"tools/vap_cost does not build here ({exc}); CI installs no Go")
    text = _exported()
    report = tool.measure(binary, text, tool.objects())
    assert not report["estimate_compared_at_create"]
    for policy in report["policies"]:
        for e in policy["expressions"]:
            assert not e["refused"], (policy["name"], e["field"], e["error"])
            if not e["reads_object"]:
                assert e["max_with_variables"] <= report["per_call_limit"], (policy["name"], e["field"])
            else:
                assert e["max"] > report["per_call_limit"], (policy["name"], e["field"])
    assert tool.summary(report, text) == json.loads(FIGURES.read_text(encoding="utf-8")), REMEASURE
    _the_harness_gives_the_api_servers_verdicts(tool, report)


def _the_harness_gives_the_api_servers_verdicts(tool, report) -> None:
    """cel-python (tests/integrations/cel_policy.py), on which every other VAP test rests, gives the
    messages the API server's validator gives on each fixture manifest."""
    pytest.importorskip("celpy", reason="cel-python (the test extra) is the harness compared")
    from cel_policy import compiled

    documents = vap.policies()
    names = [d["metadata"]["name"] for d in documents if d["kind"] == "ValidatingAdmissionPolicy"]
    harness = dict(zip(names, compiled(documents)))
    objects = {f"{o['kind']}/{o['metadata']['name']}": o for o in yaml.safe_load_all(tool.manifests())
               if isinstance(o, dict) and "kind" in o}
    compared = 0
    for run in report["runs"]:
        if run["object"] in objects and not tool.is_hostile(run):
            assert harness[run["policy"]].messages(objects[run["object"]]) == run["messages"], run["object"]
            compared += 1
    assert compared >= 16


def test_an_ordinary_launch_costs_the_api_server_a_small_part_of_its_budgets():
    """Measured with the API server's validator (the recorded runs): on every fixture manifest no
    expression is stopped and one evaluation of a policy costs under a hundredth of its runtime
    budget (RuntimeCELCostBudget), a fortieth of one expression's limit (PerCallLimit). At the
    bounds, hostile objects may be stopped: then failurePolicy Ignore admits them
    unjudged (lint and the webhook judge them), never a verdict of clean."""
    figures = json.loads(FIGURES.read_text(encoding="utf-8"))
    ordinary = figures["runtime_on_the_fixture_manifests"]
    assert set(ordinary) == set(figures["policies"])
    for name, runs in ordinary.items():
        assert runs["objects"] >= 8 and runs["stopped"] == [], name
        assert 0 < runs["largest_cost"] < figures["runtime_cel_cost_budget"] // 100, name
        assert runs["largest_cost"] < figures["per_call_limit"] // 40, name
    for doc in vap.policies():
        if doc["kind"] == "ValidatingAdmissionPolicy":
            assert doc["spec"]["failurePolicy"] == "Ignore"
