"""Validate a generated Kubernetes object against the vendored schema of its kind
(tests/fixtures/k8s-schema/, written by tools/k8s_schema.py from kubernetes-validate's
Kubernetes 1.34 schemas, strict: an unknown field is an error)."""

from __future__ import annotations

import functools
import json

import jsonschema

from repo_paths import TESTS

SCHEMA = TESTS / "fixtures" / "k8s-schema" / "v1.34.0-strict.json"


@functools.lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


def schema_errors(obj: dict) -> list[str]:
    """Every schema error of `obj` (empty: valid); a kind the vendored schema lacks is an error."""
    data = _schemas()
    key = f"{obj.get('apiVersion')}/{obj.get('kind')}"
    if key not in data["kinds"]:
        return [f"no vendored schema for {key}"]
    schema = {**data["kinds"][key], "$defs": data["$defs"]}
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator.iter_errors(obj)]
