"""deploy/helm/h3doctor-admission and deploy/Dockerfile: the chart rendered (helm is not installable
here: tests/integrations/helm_subset.py renders the subset of Go templates it uses) with its
defaults and each option, every Kubernetes object validated against Kubernetes 1.34's schema, and
what the chart promises read from the rendered objects; the image installs no torch and runs as a
non-root user; the container's command line is one the real `h3doctor admission` accepts."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import pytest
import yaml

from h3doctor.integrations.kubernetes_admission.server import VALIDATE_PATH
from helm_subset import TemplateError, render
from k8s_schema_check import schema_errors
from repo_paths import REPO

CHART = REPO / "deploy/helm/h3doctor-admission"
DOCKERFILE = REPO / "deploy/Dockerfile"
VALUES = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))


def _objects(values: dict) -> dict[str, dict]:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    found = {}
    for template in sorted((CHART / "templates").glob("*.yaml")):
        text = render(template.read_text(encoding="utf-8"), values, release="h3doctor", namespace="h3doctor",
                      chart=chart)
        assert "<no value>" not in text, template.name
        for obj in yaml.safe_load_all(text):
            if obj:
                found[obj["kind"]] = obj
    return found


def _with(**changes) -> dict:
    values = copy.deepcopy(VALUES)
    for dotted, value in changes.items():
        node = values
        *path, last = dotted.split("__")
        for key in path:
            node = node[key]
        node[last] = value
    return values


VARIANTS = {
    "defaults": VALUES,
    "deny": _with(deny=True),
    "release": _with(sglangVersion="0.5.22"),
    "own-ca": _with(certManager__enabled=False, webhook__caBundle="LS0tLS1CRUdJTi0tLS0t"),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_rendered_object_is_a_valid_kubernetes_object(variant):
    objects = _objects(VARIANTS[variant])
    for kind in ("Deployment", "Service", "ValidatingWebhookConfiguration"):
        assert schema_errors(objects[kind]) == [], kind
    for kind in ("Issuer", "Certificate"):  # cert-manager's own kinds: not in Kubernetes' schema
        if kind in objects:
            assert objects[kind]["apiVersion"] == "cert-manager.io/v1" and objects[kind]["spec"]


def _container(objects) -> dict:
    return objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]


def test_the_defaults_warn_fail_open_and_take_their_certificate_from_cert_manager():
    objects = _objects(VALUES)
    hook = objects["ValidatingWebhookConfiguration"]["webhooks"][0]
    assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] <= 10 and hook["sideEffects"] == "None"
    assert hook["clientConfig"]["service"]["path"] == VALIDATE_PATH
    assert "--deny" not in _container(objects)["args"]
    certificate = objects["Certificate"]["metadata"]
    injected = objects["ValidatingWebhookConfiguration"]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert injected == f"{certificate['namespace']}/{certificate['name']}"
    assert objects["Certificate"]["spec"]["secretName"] == VALUES["tls"]["secretName"]
    service = objects["Service"]["metadata"]
    assert f"{service['name']}.{service['namespace']}.svc" in objects["Certificate"]["spec"]["dnsNames"]


def test_deny_and_an_own_ca_are_options():
    assert "--deny" in _container(_objects(VARIANTS["deny"]))["args"]
    own = _objects(VARIANTS["own-ca"])
    assert "Certificate" not in own and "Issuer" not in own
    config = own["ValidatingWebhookConfiguration"]
    assert "annotations" not in config["metadata"]
    assert config["webhooks"][0]["clientConfig"]["caBundle"] == VARIANTS["own-ca"]["webhook"]["caBundle"]


def test_the_pod_runs_as_non_root_with_probes_on_the_health_endpoint_and_resources():
    objects = _objects(VALUES)
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    container = _container(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert (get["path"], get["scheme"], get["port"]) == ("/healthz", "HTTPS", "https")
    assert container["ports"][0]["containerPort"] == VALUES["port"]
    assert set(container["resources"]) == {"requests", "limits"}
    # the rules cache is written to a volume: the root filesystem is read-only
    cache = next(e["value"] for e in container["env"] if e["name"] == "H3DOCTOR_CACHE_DIR")
    assert any(m["mountPath"] == cache for m in container["volumeMounts"])


def _admission(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "h3doctor", "admission", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("variant", ["defaults", "deny", "release"])
def test_the_charts_command_line_is_one_h3doctor_admission_accepts(variant):
    container = _container(_objects(VARIANTS[variant]))
    assert container["command"] == ["h3doctor", "admission"]
    # the options parse; the run stops only at the certificate this machine does not have
    done = _admission(container["args"])
    assert done.returncode == 2 and "--cert/--key" in done.stderr, done.stderr[-400:]


def test_the_renderer_keeps_to_the_subset_and_trims_as_go_does():
    assert render("a:\n{{- if .Values.x }}\n  b: {{ .Values.y }}\n{{- else }}\n  c\n{{- end }}\n",
                  {"x": True, "y": 1}) == "a:\n  b: 1\n"
    assert render("{{ if .Values.x }}yes{{ else }}no{{ end }}", {"x": ""}) == "no"
    for bad in ("{{ toYaml .Values.x }}", "{{ .Values.x | quote }}", "{{ if .Values.x }}", "{{ end }}"):
        with pytest.raises(TemplateError):
            render(bad, {"x": 1})


def _dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_image_installs_no_torch_and_runs_as_non_root():
    steps = _dockerfile_instructions()
    installs = [body for op, body in steps if op == "RUN" and re.search(r"\bpip\b.*\binstall\b", body)]
    assert installs
    for body in installs:
        assert "torch" not in body.lower() and "[" not in body, body  # no extras: `probe` brings torch
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    runtime = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    assert "torch" not in runtime  # what the wheel's own install pulls in
    final = steps[max(i for i, (op, _b) in enumerate(steps) if op == "FROM"):]
    users = [body for op, body in final if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    entry = next(body for op, body in final if op == "ENTRYPOINT")
    assert yaml.safe_load(entry) == ["h3doctor", "admission"]
    command = yaml.safe_load(next(body for op, body in final if op == "CMD"))
    done = _admission(command)
    assert done.returncode == 2 and "--cert/--key" in done.stderr, done.stderr[-400:]
