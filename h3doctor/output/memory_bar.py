"""The per-GPU memory budget as a stacked bar against the card's capacity.

`segments` is the data (tested); `draw` renders it with Rich. People read a bar faster than a
table of GiB: weights per component, what the peak stage streams in, the workspace, the CUDA
context, and the headroom (or the overflow) against the GPU's free memory.
"""

from __future__ import annotations

from h3doctor.output.markup import escape
from h3doctor.output.wrap import fold

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from typing import Any
    from rich.console import Console

WIDTH = 48
_STYLE = {
    "text_encoder": "magenta", "transformer": "blue", "video_vae": "cyan", "audio_vae": "green",
    "adaln_slab": "bright_blue", "streamed": "bright_magenta", "workspace": "yellow", "context": "white",
    "headroom": "dim", "over": "bold red",
}
_LABEL = {"text_encoder": "text encoder", "transformer": "DiT", "video_vae": "video VAE", "audio_vae": "audio VAE",
          "adaln_slab": "AdaLN slab", "streamed": "streamed in at the peak stage", "workspace": "workspace",
          "context": "CUDA context", "headroom": "headroom", "over": "over capacity"}


def segments(memory: dict[str, Any]) -> list[tuple[str, float]]:
    """(part, GiB) of one GPU at its typical peak, in load order, then headroom or overflow."""
    parts = [(c, memory["load_by_component_gib"].get(c) or 0.0)
             for c in ("text_encoder", "transformer", "adaln_slab", "video_vae", "audio_vae")]
    parts.append(("streamed", max(memory.get("stage_active_gib", {}).values() or [0.0])))
    peak = memory.get("peak_typical_gib")
    weights = sum(v for _, v in parts)
    context = memory.get("context_gib") or 0.0
    if peak is not None:
        parts.append(("workspace", max(0.0, peak - weights - context)))
    parts.append(("context", context))
    total = sum(v for _, v in parts)
    capacity = memory.get("capacity_gib")
    if capacity is not None:
        parts.append(("headroom", capacity - total) if capacity >= total else ("over", total - capacity))
    return [(name, round(v, 2)) for name, v in parts if v > 0.005]


def draw(memory: dict[str, Any], console: Console) -> None:
    parts = segments(memory)
    capacity = memory.get("capacity_gib")
    scale = max(capacity or 0.0, sum(v for n, v in parts if n != "headroom")) or 1.0
    cells: list[tuple[str, str]] = []
    for name, gib in parts:
        if name == "over":
            continue  # the overflow is the part of the bar past the capacity mark
        n = max(1, round(WIDTH * gib / scale))
        cells += [("·" if name == "headroom" else "█", _STYLE[name])] * n
    if capacity and capacity < scale:  # mark where the card ends
        cells.insert(max(0, min(len(cells), round(WIDTH * capacity / scale))), ("┃", _STYLE["over"]))
    bar = "".join(f"[{style}]{char}[/]" for char, style in cells)
    title = f"per GPU, {memory.get('peak_stage', 'peak')} stage" + (f", {capacity:g} GiB free" if capacity else "")
    # the bar on a line of its own: with its title beside it, it would wrap at 80 columns
    console.print(f"  memory ({escape(title)}):", soft_wrap=True)
    console.print(f"  {bar}", soft_wrap=True)
    biggest = sorted((p for p in parts if p[0] not in ("headroom", "over")), key=lambda p: -p[1])[:3]
    legend = ", ".join(f"{_LABEL[n]} {v:g}" for n, v in biggest)
    tail = next((f"{_LABEL[n]} {v:g}" for n, v in parts if n in ("headroom", "over")), "")
    said = f"biggest: {legend} GiB" + (f"; {tail} GiB" if tail else "")
    for n, line in enumerate(fold(said, getattr(console, "width", None), start=2, indent=4)):
        console.print(("  " if n == 0 else "") + escape(line), soft_wrap=True)
