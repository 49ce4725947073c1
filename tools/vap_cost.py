"""Measure `h3doctor export vap`'s policies with the Kubernetes API server's own code and write the
figures to tests/integrations/data/vap-cost.json (docs/kubernetes.md, "Cost and size").

tools/vap_cost/ (Go, k8s.io/apiserver v0.32.13) compiles every expression of the policies as the
API server does at create and estimates its cost with the API server's estimator; this script
builds it, runs it on the exported policies and records, per policy, what it found, with the
SHA-256 of the exported text, so tests/integrations/test_vap_cost.py fails when the generator
changes and the figures are not measured again.

Usage: python tools/vap_cost.py   (from the repository's root; needs Go >= 1.23 and the Go
modules tools/vap_cost/go.mod names, from the Go module proxy or a module cache: GOPROXY,
GOMODCACHE and GOFLAGS are honoured)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from h3doctor.integrations.vap import MAX_CONTAINERS, MAX_WORD, MAX_WORDS, policies, render

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "vap_cost"
FIGURES = REPO / "tests" / "integrations" / "data" / "vap-cost.json"
MANIFESTS = REPO / "tests" / "fixtures" / "repo" / "deploy" / "k8s"
H3 = "MiniMaxAI/MiniMax-H3"


def exported() -> str:
    """What `h3doctor export vap` prints (Warn + Audit; --deny changes only the bindings)."""
    return render(policies())


def build(directory: Path) -> Path:
    """tools/vap_cost built into `directory`; RuntimeError with Go's last words when it cannot be."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("Go is not installed")
    binary = directory / "vap_cost"
    run = subprocess.run([go, "build", "-o", str(binary), "."], cwd=TOOL, capture_output=True, text=True,
                         env={**os.environ, "GOTOOLCHAIN": "local"}, timeout=900, check=False)
    if run.returncode != 0:
        raise RuntimeError((run.stderr.strip().splitlines() or ["go build failed"])[-1])
    return binary


def manifests() -> str:
    """The fixture repository's manifests, one stream."""
    return "\n---\n".join(p.read_text(encoding="utf-8") for p in sorted(MANIFESTS.glob("*.yaml")))


def hostile() -> str:
    """Objects at the policy's bounds (MAX_CONTAINERS containers of MAX_WORDS words, words up to
    MAX_WORD characters), shaped for the costliest paths: abbreviations (each scans the flags),
    long unknown flags, long values of string, choice and int flags."""
    def pod(name: str, args: list[str]) -> dict[str, Any]:
        words = ["sglang", "serve", H3, *args][:MAX_WORDS]
        containers = [{"name": f"c{i}", "image": "lmsysorg/sglang:v0.5.23", "command": words[:2], "args": words[2:]}
                      for i in range(MAX_CONTAINERS)]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": containers}}

    long = MAX_WORD
    shapes = {
        "abbreviations": ["--t"] * MAX_WORDS,
        "abbreviations-with-values": ["--t", "1"] * MAX_WORDS,
        "long-unknown-flags": ["--x" + "a" * (long - 3)] * MAX_WORDS,
        "long-string-values": ["--served-model-name", "a" * long] * MAX_WORDS,
        "long-choice-values": ["--attention-backend", "b" * long] * MAX_WORDS,
        "long-int-values": ["--tp-size", "9" * long] * MAX_WORDS,
    }
    return yaml.safe_dump_all([pod(n, a) for n, a in shapes.items()], sort_keys=False)


def objects() -> str:
    """What the figures are measured on: the fixture manifests, then the hostile objects."""
    return manifests() + "\n---\n" + hostile()


def is_hostile(run: dict[str, Any]) -> bool:
    return run["object"].startswith("Pod/") and run["object"][4:] in {
        d["metadata"]["name"] for d in yaml.safe_load_all(hostile())}


def measure(binary: Path, text: str, objects: str | None = None) -> dict[str, Any]:
    """The tool's report on the policies in `text` (its JSON), run on `objects` if given."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [str(binary)]
        if objects is not None:
            (Path(tmp) / "objects.yaml").write_text(objects, encoding="utf-8")
            args += ["-objects", str(Path(tmp) / "objects.yaml")]
        run = subprocess.run(args, input=text, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(run.stdout)


def runs(report: dict[str, Any], hostile_: bool) -> dict[str, dict[str, Any]]:
    """Per policy, over the hostile objects or the others: the largest cost of one evaluation (-1:
    out of the budget) and the objects on which some expression was stopped."""
    out: dict[str, dict[str, Any]] = {}
    for r in report["runs"]:
        if is_hostile(r) != hostile_:
            continue
        policy = out.setdefault(r["policy"], {"largest_cost": 0, "objects": 0, "stopped": []})
        policy["objects"] += 1
        costs = (r["cost"], policy["largest_cost"])
        policy["largest_cost"] = -1 if -1 in costs else max(costs)
        if r["errors"]:
            policy["stopped"].append(r["object"])
    return out


def summary(report: dict[str, Any], text: str) -> dict[str, Any]:
    """What the figures file keeps of a report run on manifests() and hostile(): per policy, the
    expressions refused; of those that do not read the object, the largest estimate with the
    variables they read; of those that do, how many the estimate puts past the per-call limit (the
    object is dyn to a policy: the estimator knows no size of its lists or strings); and what the
    runs cost."""
    limit = report["per_call_limit"]
    out: dict[str, Any] = {
        "policies_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "modules": report["modules"],
        "per_call_limit": limit,
        "runtime_cel_cost_budget": report["runtime_cel_cost_budget"],
        "estimate_compared_at_create": report["estimate_compared_at_create"],
        "policies": {},
        "runtime_on_the_fixture_manifests": runs(report, hostile_=False),
        "runtime_on_hostile_objects_at_the_bounds": runs(report, hostile_=True),
    }
    for policy in report["policies"]:
        expressions = policy["expressions"]
        inert = [e for e in expressions if not e["reads_object"]]
        reading = [e for e in expressions if e["reads_object"]]
        out["policies"][policy["name"]] = {
            "expressions": len(expressions),
            "refused": [e["field"] for e in expressions if e["refused"]],
            "not_reading_the_object": len(inert),
            "largest_max_not_reading_the_object": max((e["max_with_variables"] for e in inert), default=0),
            "reading_the_object": len(reading),
            "reading_the_object_past_the_per_call_limit": sum(1 for e in reading if e["max"] > limit),
            "min_total": policy["total_min_estimate"],
        }
    return out


def main() -> int:
    text = exported()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            figures = summary(measure(build(Path(tmp)), text, objects()), text)
    except RuntimeError as exc:
        print(f"tools/vap_cost cannot run here: {exc}", file=sys.stderr)
        return 1
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {FIGURES.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
