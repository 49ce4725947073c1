"""Derived values read from local checkpoint files named on the command line (headers only)."""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.safetensors_header import checkpoint_formats

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@derives("transformer_weights_formats", "transformer_weights_unread", "transformer_weights_unread_text")
def transformer_weights_formats(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    path = (a.get("component_weights_paths") or {}).get("transformer") or a.get("transformer_weights_path")
    if not path:
        return {"derived.transformer_weights_formats": None, "derived.transformer_weights_unread": [],
                "derived.transformer_weights_unread_text": ""}
    read = checkpoint_formats(str(path))
    # the formats of the files that could be read count; the unread ones are named (rule H3D935)
    return {
        "derived.transformer_weights_formats": sorted(read.formats) if read.formats is not None else None,
        "derived.transformer_weights_unread": list(read.unread),
        "derived.transformer_weights_unread_text": _first(read.unread, 3),
    }


def _first(items: tuple[str, ...], n: int) -> str:
    """The first n, and how many more: a folder of broken files gives a short message."""
    text = "; ".join(items[:n])
    return text + (f"; and {len(items) - n} more" if len(items) > n else "")
