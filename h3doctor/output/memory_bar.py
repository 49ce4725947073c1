"""The per-GPU memory budget as a stacked bar against the card's capacity, one bar per group of
identical GPUs.

`segments` and `bar_cells` are the data (tested); `draw` prints them. People read a bar faster
than a table of GiB: weights per component, what the peak stage streams in, the workspace, the
CUDA context, and the headroom (or the overflow) against the GPU's free memory. Each part has a
character of its own as well as a colour, so the bar reads the same on a light or dark background,
with NO_COLOR and in a log; the legend names each character with its GiB. sglang places the same
bytes on every GPU a launch uses (sglang/memory.py), so those are one group; the GPUs it leaves
idle are the other.
"""

from __future__ import annotations

from h3doctor.output.markup import escape
from h3doctor.output.wrap import cells, fold

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:  # Rich styles a terminal's report only (output/markup.py)
    from typing import Any
    from rich.console import Console

WIDTH = 48  # the bar's cells at most; fewer on a narrow terminal (never under MIN_BAR)
MIN_BAR = 16
LABEL = 8  # "4 GPUs" and its gap: the column the bar starts in, after the line's two spaces
# (character, style): the 16 standard colours only (no white or yellow, which vanish on a light
# background), and a character per part so that no part is told by its colour alone
_LOOK = {
    "text_encoder": ("▓", "magenta"), "transformer": ("█", "blue"), "adaln_slab": ("≡", "blue"),
    "video_vae": ("▒", "cyan"), "audio_vae": ("░", "green"), "streamed": ("≈", "magenta"),
    "workspace": ("▪", "green"), "context": ("▫", ""), "headroom": ("·", "dim"), "over": ("×", "bold red"),
}
CAPACITY_MARK = ("┃", "bold")
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


def bar_cells(parts: list[tuple[str, float]], capacity: float | None, width: int = WIDTH) -> list[str]:
    """The bar as one part name per cell, plus "capacity" for the mark where the card ends: the
    parts in order, each by its share and at least one cell (so every part of the legend is in the
    bar; the biggest gives up the cells that costs), and every cell past the capacity "over", so
    the overflow has its own character and style."""
    used = [(n, v) for n, v in parts if n != "over"]
    scale = max(capacity or 0.0, sum(v for n, v in used if n != "headroom")) or 1.0
    counts = [max(1, round(width * v / scale)) for _, v in used]
    target = max(len(counts), round(width * sum(v for _, v in used) / scale))
    while sum(counts) > target:
        counts[counts.index(max(counts))] -= 1
    bar = [name for (name, _), n in zip(used, counts) for _ in range(n)]
    if capacity is None:
        return bar
    edge = min(len(bar), round(width * capacity / scale))
    return bar[:edge] + ["capacity"] + ["over"] * (len(bar) - edge)


def legend(parts: list[tuple[str, float]], capacity: float | None, width: int | None) -> list[str]:
    """Each part's character, name and GiB, packed into lines of `width` after the bar's label
    column; an entry is never split between lines."""
    entries = [f"{_LOOK[n][0]} {_LABEL[n]} {v:g} GiB" for n, v in parts]
    if capacity is not None:
        entries.append(f"{CAPACITY_MARK[0]} capacity")
    room = None if width is None else max(width - 2 - LABEL, 1)
    lines = [""]
    for entry in entries:
        if lines[-1] and room is not None and cells(lines[-1]) + 2 + cells(entry) > room:
            lines.append("")
        lines[-1] += ("  " if lines[-1] else "") + entry
    return lines


def draw(memory: dict[str, Any], console: Console, *, gpus_used: int | None = None,
         gpus_present: int | None = None) -> None:
    width = getattr(console, "width", None)
    parts = segments(memory)
    capacity = memory.get("capacity_gib")
    size = WIDTH if width is None else max(MIN_BAR, min(WIDTH, width - 2 - LABEL - 22))
    stage = memory.get("peak_stage")
    where = f"at its peak, the {stage} stage" if stage else "at its peak"
    card = f"{capacity:g} GiB free on each" if capacity is not None else "free memory not known"
    for line in fold(f"memory per GPU {where} ({card}):", width, start=2, indent=4):
        console.print(("  " if not line.startswith(" ") else "") + escape(line), soft_wrap=True)
    used = gpus_used if gpus_used is not None else 1
    bar = "".join(_cell(name) for name in bar_cells(parts, capacity, size))
    total = sum(v for n, v in parts if n not in ("headroom", "over"))
    tail = f"{total:.1f} of {capacity:g} GiB" if capacity is not None else f"{total:.1f} GiB"
    console.print(f"  {_gpus(used):<{LABEL}}{bar}  {tail}", soft_wrap=True)
    for line in legend(parts, capacity, width):
        console.print(" " * (2 + LABEL) + escape(line), soft_wrap=True)
    idle = (gpus_present or 0) - used
    if idle > 0:
        console.print(f"  {_gpus(idle):<{LABEL}}idle: this launch does not use {'it' if idle == 1 else 'them'}",
                      soft_wrap=True)


def _cell(name: str) -> str:
    char, style = CAPACITY_MARK if name == "capacity" else _LOOK[name]
    return f"[{style}]{char}[/]" if style else char


def _gpus(n: int) -> str:
    return "1 GPU" if n == 1 else f"{n} GPUs"
