"""A container's Kubernetes probes as the kubelet runs them (inputs/probes.py): Kubernetes' own
defaults where a field is not written, unknown (never the default) where a field is no value the
API server accepts, each probe located at its key, and the same facts through lint's Kubernetes
reader (the workload kinds and KServe's predictor included)."""

from __future__ import annotations

import textwrap

import pytest

from h3doctor.inputs.kubernetes import read_manifests
from h3doctor.inputs.probes import container_probes, deployment_facts
from h3doctor.located import load_yaml

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: h3}
spec:
  containers:
    - name: server
      image: lmsysorg/sglang:v0.5.23
      command: [sglang, serve, MiniMaxAI/MiniMax-H3, --num-gpus, "4"]
%s
"""


def _probes(block: str) -> dict:
    text = POD % textwrap.indent(textwrap.dedent(block), "      ")
    docs = load_yaml(text, "pod.yaml")
    launches, _notes = read_manifests(docs, text)
    assert len(launches) == 1
    return launches[0].probes


def test_defaults_are_kubernetes_own_and_each_probe_is_located_at_its_key():
    probes = _probes("""\
        livenessProbe:
          httpGet: {path: /health, port: 30000}
        readinessProbe:
          tcpSocket: {port: http}
          periodSeconds: 5
        startupProbe:
          exec: {command: [cat, ready]}
          initialDelaySeconds: 60
          failureThreshold: 30
        """)
    live, ready, start = probes["liveness"], probes["readiness"], probes["startup"]
    assert (live.handler, live.path, live.port, live.budget_s) == ("httpGet", "/health", "30000", 30)  # 0 + 3 x 10
    assert (ready.handler, ready.path, ready.port, ready.budget_s) == ("tcpSocket", None, "http", 15)
    assert (start.handler, start.budget_s) == ("exec", 60 + 30 * 10)
    assert (live.pos.line, ready.pos.line, start.pos.line) == (9, 11, 14)


def test_an_httpget_without_a_path_asks_the_root_as_the_kubelet_does():
    assert _probes("livenessProbe: {httpGet: {port: 30000}}")["liveness"].path == "/"


@pytest.mark.parametrize("value", ["10", True, -1, 0, 10 ** 9, 1.5, None, [3]])
def test_a_timing_field_kubernetes_would_not_run_is_unknown_never_the_default(value):
    probe = container_probes({"livenessProbe": {"httpGet": {"path": "/liveness"}, "periodSeconds": value}},
                             load_yaml("a: 1\n", "x.yaml")[0], ())["liveness"]
    assert probe.timing["periodSeconds"] is None and probe.budget_s is None


def test_a_probe_of_no_known_handler_and_a_probe_that_is_no_mapping():
    probes = _probes("""\
        livenessProbe: {periodSeconds: 5}
        readinessProbe: /health
        """)
    assert probes["liveness"].handler == "unknown" and "readiness" not in probes


def test_the_facts_the_rules_read():
    facts = deployment_facts(_probes("livenessProbe: {httpGet: {path: /liveness}}"))
    assert facts == {"probes_read": True, "startup.handler": None, "startup.path": None, "startup.budget_s": None,
                     "liveness.handler": "httpGet", "liveness.path": "/liveness", "liveness.budget_s": 30,
                     "readiness.handler": None, "readiness.path": None, "readiness.budget_s": None}
    assert deployment_facts({})["probes_read"] is True  # read, none declared


def test_kserve_predictor_containers_carry_their_probes():
    text = textwrap.dedent("""\
        apiVersion: serving.kserve.io/v1beta1
        kind: InferenceService
        metadata: {name: h3}
        spec:
          predictor:
            containers:
              - name: kserve-container
                image: lmsysorg/sglang:v0.5.23
                command: [sglang, serve, MiniMaxAI/MiniMax-H3]
                startupProbe:
                  httpGet: {path: /liveness, port: 30000}
                  failureThreshold: 120
        """)
    launches, _ = read_manifests(load_yaml(text, "isvc.yaml"), text)
    assert launches[0].probes["startup"].budget_s == 1200 and launches[0].probes["startup"].pos.line == 10
