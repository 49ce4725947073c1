"""Derived values read from local checkpoint files named on the command line (headers only)."""

from __future__ import annotations

from typing import Any

from h3doctor.sglang.safetensors_header import checkpoint_formats


def derive(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.a
    path = (a.get("component_weights_paths") or {}).get("transformer") or a.get("transformer_weights_path")
    formats, _how = (None, "") if not path else checkpoint_formats(str(path))
    return {"derived.transformer_weights_formats": sorted(formats) if formats is not None else None}
