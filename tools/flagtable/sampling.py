#!/usr/bin/env python3
"""Extract the H3 sampling-parameter facts of one sglang release into
`h3doctor/sglang/releasedata/<release>/sampling.json` (one file per release).

Maintainer tool, like `extract.py` beside it; the package only reads the JSON. It reads the
release's **source** with `ast` (no import, so every release works without its venv):

    python3 tools/flagtable/sampling.py --source path/to/unpacked/sglang --sglang-version 0.5.23
    python3 tools/flagtable/sampling.py --wheel path/to/sglang-0.5.23-*.whl

What `sglang generate` does with its sampling flags (after the model is loaded,
`DiffGenerator.generate` -> `SamplingParams.from_user_sampling_params_args`): it builds the
family's sampling class with the flags as keyword arguments, so a field declared
`field(..., init=False)` there is a `TypeError`, and the class's `_validate` then checks the
values. Recorded per family: the class, its `init=False` fields (inherited ones included),
its `num_inference_steps` and `task` defaults, the tasks a distilled class accepts, and the exact step count its `_validate` demands
(`if self.num_inference_steps != N`), each with file:line; plus the generic checks'
lines and the quality levels and aliases.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
RELEASEDATA = REPO / "h3doctor" / "sglang" / "releasedata"
FORMAT_VERSION = 1

SAMPLE_DIR = "multimodal_gen/configs/sample"
# The sampling class each H3 family's pipeline config registers (configs/pipeline_configs/
# minimax_h3*.py, `sampling_param_cls=`); the family keys are h3doctor's (sglang/families.py).
FAMILY_CLASSES = {
    "h3": ("minimax_h3.py", "MiniMaxH3SamplingParams"),
    "fh3": ("minimax_h3.py", "FastH3SamplingParams"),
    "fh3o": ("minimax_h3.py", "FastH3OmniSamplingParams"),
    "vdn": ("minimax_h3_vdn.py", "VDNH3SamplingParams"),
}


def _is_init_false(value: ast.AST | None) -> bool:
    return (isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field"
            and any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in value.keywords))


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _fields(cls: ast.ClassDef) -> dict[str, tuple[ast.AST | None, int]]:
    out = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if "ClassVar" in ast.unparse(node.annotation):
                continue
            out[node.target.id] = (node.value, node.lineno)
    return out


def _exact_steps(cls: ast.ClassDef) -> tuple[int, int] | None:
    """(N, line of the raise's message) for `if self.num_inference_steps != N: raise ...` in _validate."""
    for fn in cls.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "_validate"):
            continue
        for node in ast.walk(fn):
            if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                    and ast.unparse(node.test.left) == "self.num_inference_steps"
                    and isinstance(node.test.ops[0], ast.NotEq)
                    and isinstance(node.test.comparators[0], ast.Constant)):
                raise_node = next(n for n in node.body if isinstance(n, ast.Raise))
                return node.test.comparators[0].value, raise_node.exc.args[0].lineno
    return None


def _allowed_tasks(cls: ast.ClassDef) -> tuple[list[str], int] | None:
    """(tasks, line of the raise's message) for `if self.task is not None and
    self.task.strip().lower() != "t2va"` (or `not in (...)`) in the class's own _validate."""
    for fn in cls.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name == "_validate"):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.If):
                continue
            for cmp in ast.walk(node.test):
                if (isinstance(cmp, ast.Compare) and ast.unparse(cmp.left) == "self.task.strip().lower()"
                        and isinstance(cmp.ops[0], (ast.NotEq, ast.NotIn))):
                    value = ast.literal_eval(cmp.comparators[0])
                    raise_node = next(n for n in node.body if isinstance(n, ast.Raise))
                    return ([value] if isinstance(value, str) else list(value)), raise_node.exc.args[0].lineno
    return None


def _family(sample: Path, file: str, name: str) -> dict[str, Any] | None:
    path = sample / file
    if not path.exists():
        return None
    trees = {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in sample.glob("minimax_h3*.py")}
    classes = {k: v for t in trees.values() for k, v in _classes(t).items()}
    if name not in _classes(trees[file]):
        return None
    chain, cls = [], classes[name]
    while cls is not None:  # own class first, then its H3 bases (inside these files)
        chain.append(cls)
        base = ast.unparse(cls.bases[0]) if cls.bases else None
        cls = classes.get(base)
    init_false: dict[str, int] = {}
    steps_default = None
    task_default = None
    for cls in reversed(chain):  # bases first: a subclass re-declaring a field wins
        for fname, (value, line) in _fields(cls).items():
            if _is_init_false(value):
                init_false[fname] = line
            else:
                init_false.pop(fname, None)
            if fname == "num_inference_steps" and isinstance(value, ast.Constant):
                steps_default = value.value
            if fname == "task" and isinstance(value, ast.Constant):
                task_default = value.value
    exact = _exact_steps(chain[0])
    tasks = _allowed_tasks(chain[0])
    rel = f"{SAMPLE_DIR}/{file}"
    return {
        "class": name,
        "where": f"{rel}:{chain[0].lineno}",
        "init_false": sorted(init_false),
        "init_false_where": {k: f"{rel}:{v}" for k, v in sorted(init_false.items())},
        "default_steps": steps_default,
        "default_task": task_default,
        "exact_steps": exact[0] if exact else None,
        "exact_steps_where": f"{rel}:{exact[1]}" if exact else None,
        # the tasks a distilled class accepts (None: every H3 task)
        "tasks": tasks[0] if tasks else None,
        "tasks_where": f"{rel}:{tasks[1]}" if tasks else None,
    }


def _line_of(path: Path, needle: str) -> int | None:
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if needle in line:
            return n
    return None


def _constant(tree: ast.Module, name: str) -> Any:
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name and node.value is not None:
            return ast.literal_eval(node.value)
    return None


def extract(root: Path) -> dict[str, Any]:
    """root: the unpacked `sglang` package directory."""
    sample = root / SAMPLE_DIR
    sp = sample / "sampling_params.py"
    tree = ast.parse(sp.read_text(encoding="utf-8"))
    rel = f"{SAMPLE_DIR}/sampling_params.py"
    levels = _constant(tree, "QUALITY_LEVELS")
    aliases = _constant(tree, "QUALITY_ALIASES") or {}
    families = {key: fam for key, (file, name) in FAMILY_CLASSES.items()
                if (fam := _family(sample, file, name)) is not None}
    return {
        "families": families,
        # where the flags become keyword arguments of the class (the TypeError point) and the
        # generic step check (SamplingParams._validate)
        "construct_where": f"{rel}:{_line_of(sp, 'user_sampling_params = type(sampling_params)(')}",
        "positive_steps_where": f"{rel}:{_line_of(sp, 'num_inference_steps must be a positive int, got')}",
        "quality_levels": list(levels) if levels else None,
        "quality_aliases": dict(aliases),
        "request": _request(root),
    }


STAGES_DIR = "multimodal_gen/runtime/pipelines_core/stages/model_specific_stages/minimax_h3"


def _request(root: Path) -> dict[str, Any]:
    """The H3 request target's limits (`_validate_target` in request_validation.py): the finite
    aspect ratios, the duration bounds, and the one short edge 0.5.17-0.5.18 demand
    (`short_edge != 768`: "must be 768 for minimax_h3"; later releases only need it positive)."""
    stages = root / STAGES_DIR
    profiles = ast.parse((stages / "task_profiles.py").read_text(encoding="utf-8"))
    constants = ast.parse((stages / "constants.py").read_text(encoding="utf-8"))
    validation = ast.parse((stages / "request_validation.py").read_text(encoding="utf-8"))
    exact = None
    for fn in validation.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "_validate_target":
            for node in ast.walk(fn):
                if (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                        and ast.unparse(node.test.left) == "short_edge" and isinstance(node.test.ops[0], ast.NotEq)
                        and isinstance(node.test.comparators[0], ast.Constant)
                        and any(isinstance(n, ast.Raise) for n in node.body)):
                    exact = node.test.comparators[0].value
    return {
        "finite_aspect_ratios": list(_constant(profiles, "MINIMAX_H3_FINITE_ASPECT_RATIOS")),
        "min_duration_seconds": _constant(constants, "MINIMAX_H3_MIN_DURATION_SECONDS"),
        "max_duration_seconds": _constant(constants, "MINIMAX_H3_MAX_DURATION_SECONDS"),
        "short_edge_exact": exact,
    }


def _version_of(root: Path) -> str | None:
    version = root / "_version.py"  # written by the build (vcs-versioning)
    if version.exists():
        return _constant(ast.parse(version.read_text(encoding="utf-8")), "__version__")
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="the unpacked `sglang` package directory of the release")
    ap.add_argument("--wheel", help="the release's wheel (unpacked into a temporary directory)")
    ap.add_argument("--sglang-version", help="default: the source's sglang/version.py")
    ap.add_argument("--output", help="the JSON file to write (default: releasedata/<release>/sampling.json)")
    args = ap.parse_args(argv)
    if bool(args.source) == bool(args.wheel):
        ap.error("give exactly one of --source and --wheel")
    with tempfile.TemporaryDirectory() as tmp:
        if args.wheel:
            with zipfile.ZipFile(args.wheel) as zf:
                zf.extractall(tmp, [n for n in zf.namelist() if n.startswith("sglang/")])
            root = Path(tmp) / "sglang"
        else:
            root = Path(args.source)
        version = args.sglang_version or _version_of(root)
        if not version:
            ap.error("cannot tell the release: give --sglang-version")
        data = extract(root)
    out = Path(args.output) if args.output else RELEASEDATA / version / "sampling.json"
    whole = {"format_version": FORMAT_VERSION, "generator": "tools/flagtable/sampling.py", "sglang_version": version, **data}
    out.write_text(json.dumps(whole, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"[sampling] {version}: {', '.join(sorted(data['families']))} -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
