"""Which MiniMax-H3 family a model path names, matched the way sglang's registry matches it.

Catalog section 1.5 (registry.py:358-510, 723-744; minimax_h3.py:441-487; minimax_h3_vdn.py:79-97).
"""

from __future__ import annotations

import functools
import os

from h3doctor.errors import UsageError
from h3doctor.record import record
from h3doctor.safeload import LimitExceeded, excerpt, load_json, outside_roots, read_bounded


@record(frozen=True)
class Family:
    """One MiniMax-H3 model family sglang registers (base, FastH3, FastH3 Omni, VDN)."""
    key: str  # h3 | fh3 | fh3o | vdn
    label: str
    config_class: str
    pipeline_class: str
    hub_id: str
    weights_note: str  # what a download of this variant costs, for "saved you" notes


FAMILIES = {
    "h3": Family("h3", "MiniMax-H3", "MiniMaxH3PipelineConfig", "MiniMaxH3Pipeline", "MiniMaxAI/MiniMax-H3",
                 "~144 GB of weights for one variant partition"),
    "fh3": Family("fh3", "FastH3 8-Step V2", "FastH3PipelineConfig", "FastH3Pipeline",
                  "FastVideo/FastVideo-FastH3-8-Step-V2", "the FastH3 overlay plus the base text encoder and VAEs"),
    "fh3o": Family("fh3o", "FastH3 Omni 8-Step V1", "FastH3OmniPipelineConfig", "FastH3Pipeline",
                   "FastVideo/FastVideo-FastH3-Omni-8-Step-V1", "the FastH3 Omni overlay plus the base components"),
    "vdn": Family("vdn", "VDN-H3", "VDNH3PipelineConfig", "VDNH3Pipeline", "OpenVDN/vdn-minimax-h3",
                  "the VDN-H3 overlay plus the base components"),
}

# Registered HF ids, longest first as the registry sorts them (registry.py:376).
_REGISTERED = sorted(
    {
        "MiniMaxAI/MiniMax-H3": "h3",
        "MiniMax/MiniMax-H3": "h3",
        "FastVideo/FastVideo-FastH3-8-Step-V2": "fh3",
        "FastVideo/FastVideo-FastH3-Omni-8-Step-V1": "fh3o",
        "OpenVDN/vdn-minimax-h3": "vdn",
    }.items(),
    key=lambda kv: len(kv[0]),
    reverse=True,
)
_PIPELINES = {"minimaxh3pipeline": "h3", "fasth3pipeline": "fh3", "vdnh3pipeline": "vdn"}


@record(frozen=True)
class FamilyMatch:
    """Which family a launch builds, and how sglang reaches it (or why it is not an H3 launch)."""
    family: Family | None
    how: str  # how sglang would reach it, or why it is not an H3 launch


def _short(path: str) -> str:
    return path.rstrip("/").split("/")[-1] if "/" in path else path


def _squash(text: str) -> str:
    return text.lower().replace("-", "").replace("_", "")


def _detect(probe: str) -> str | None:
    """The registry's detectors, in registration order (minimax_h3.py:456-487, vdn:91-96)."""
    squashed = _squash(probe)
    lower = probe.lower()
    if "minimaxh3" in squashed and "vdn" not in lower:
        return "h3"
    if "fasth3" in squashed and "omni" not in lower:
        return "fh3"
    if "fasth3omni" in squashed:
        return "fh3o"
    if "vdn" in lower and "minimaxh3" in squashed:
        return "vdn"
    return None


MAX_MODEL_INDEX_BYTES = 1 << 20


def _model_index_class(model_path: str) -> str:
    """`_class_name` of a local model_index.json; "" when there is none or it is malformed.
    One beyond h3doctor's reading limits is a usage error (LimitExceeded): not judged. Under
    `lint`, a model folder outside the repository is not looked at: the launch is judged by the
    model's name, as on a CI runner that does not hold the folder (docs/lint.md)."""
    path = os.path.join(model_path, "model_index.json")
    if outside_roots(path):
        return ""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ""
    return _class_name(path, info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=16)
def _class_name(path: str, _mtime_ns: int, _size: int) -> str:
    """Once per file version and run (the fix loop matches the family every round)."""
    try:
        data = load_json(read_bounded(path, max_bytes=MAX_MODEL_INDEX_BYTES, what="model_index.json"),
                         origin=path, finite=False)
    except LimitExceeded:
        raise
    except UsageError:
        return ""
    return str(data.get("_class_name", "")) if isinstance(data, dict) else ""


def match_family(model_path: str | None, model_id: str | None = None, pipeline_class_name: str | None = None) -> FamilyMatch:
    if not model_path:
        return FamilyMatch(None, "no model path")
    if not isinstance(model_path, str):  # e.g. `model_path: 5` in a --config file
        return FamilyMatch(None, f"model_path {excerpt(model_path, 40)} ({type(model_path).__name__}) is not a path: sglang cannot resolve it")
    model_id = str(model_id) if model_id is not None else None
    pipeline_class_name = str(pipeline_class_name) if pipeline_class_name is not None else None
    if model_id:
        for hub_id, key in _REGISTERED:
            if _short(hub_id).lower() == model_id.lower():
                return FamilyMatch(FAMILIES[key], f"--model-id {model_id} names {hub_id}")
    for hub_id, key in _REGISTERED:
        if model_path == hub_id:
            return FamilyMatch(FAMILIES[key], f"registered hub id {hub_id}")
    short = _short(model_path.lower())
    for hub_id, key in _REGISTERED:
        if _short(hub_id.lower()) in short:
            return FamilyMatch(FAMILIES[key], f"path name contains the registered name {_short(hub_id)}")
    normalized = os.path.normpath(model_path).lower().replace("\\", "/")
    for hub_id, key in _REGISTERED:
        if f"models--{hub_id.lower().replace('/', '--')}" in normalized:
            return FamilyMatch(FAMILIES[key], f"Hugging Face cache path of {hub_id}")
    if pipeline_class_name and pipeline_class_name.lower() in _PIPELINES:
        key = _PIPELINES[pipeline_class_name.lower()]
        return FamilyMatch(FAMILIES[key], f"--pipeline-class-name {pipeline_class_name}")
    for probe in (model_path, _model_index_class(model_path)):
        key = _detect(probe) if probe else None
        if key:
            return FamilyMatch(FAMILIES[key], f"registry detector matched {probe!r}")
    return FamilyMatch(
        None,
        f"{model_path!r} is not a MiniMax-H3 model sglang recognises: `sglang serve` would hand it to "
        "its own registry (another diffusion model) or fall back to the LLM server (catalog A3)",
    )
