"""Out-of-memory failures in a log, and the phase they happened in (load, warmup, request).

What counts: torch's `torch.OutOfMemoryError` (also `torch.cuda.OutOfMemoryError`), its
`CUDA out of memory. Tried to allocate …` text, sglang's `OOM detected. Possible solutions:`
block (gpu_worker.py's OOM_MSG, logged after the exception), MPS's `MPS backend out of memory`,
and any exception message saying `out of memory`. The phase is read from the log: within the
traceback that raised it first (a loader frame, a warmup frame), else from the last marker
logged before it (loading modules, warmup requests, serving requests). sglang's own OOM block
names every phase, so its lines never count as a marker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OOM = re.compile(r"OutOfMemoryError|CUDA out of memory|MPS backend out of memory|^OOM detected\. Possible solutions:"
                  r"|\bout of memory\b", re.IGNORECASE)
_BLOCK_START = "OOM detected. Possible solutions:"
_BLOCK_END = "Or, open an issue on GitHub"
_ALLOC = re.compile(r"Tried to allocate (?P<tried_to_allocate>[\d.]+ ?[KMGT]i?B)")
_GPU = re.compile(r"GPU (?P<gpu>\d+) has a total capacity of (?P<capacity>[\d.]+ ?[KMGT]i?B) of which "
                  r"(?P<free>[\d.]+ ?[KMGT]i?B) is free")
_MPS = re.compile(r"MPS allocated: (?P<mps_allocated>[\d.]+ ?[KMGT]i?B).*?max allowed: (?P<max_allowed>[\d.]+ ?[KMGT]i?B)")
# the markers; a line with several is read in this order (a warmup runs as a request)
_PHASES = (
    ("warmup", re.compile(r"[Ww]armup|[Ww]arm-up|warming up")),
    ("load", re.compile(r"Loading pipeline modules|Loading required modules|Loading safetensors|[Ll]oading (?:checkpoint|weights)"
                        r"|/loader/|component_loader|load_model\b|from_pretrained")),
    ("request", re.compile(r"The server is fired up and ready to roll|Error executing (?:grouped )?request|POST /v1/"
                           r"|/generate\b.*HTTP|Processing request")),
)
# what each phase means for the memory rules (h3doctor's memory model: docs/memory.md)
PHASE_RULES = {"load": ("H3D540",), "warmup": ("H3D640", "H3D642"), "request": ("H3D640", "H3D641"),
               None: ("H3D540", "H3D640")}


@dataclass(frozen=True)
class OutOfMemory:
    line: int
    text: str
    platform: str  # cuda | mps
    phase: str | None  # load | warmup | request | None (the log does not tell)
    phase_line: int | None  # the line that told
    phase_text: str | None
    captured: dict[str, str] = field(default_factory=dict)
    count: int = 1  # lines reporting it (every rank, the block, the re-raise)


# the kernel's OOM killer ("Out of memory: Killed process 4123 (python3)"): host memory, which the
# crash signatures name (rule H3D418's `crash:`), never the GPU memory rules this module maps to
_HOST_OOM_KILLER = ("killed process", "oom-kill", "oom_kill")


def _may_say_oom(line: str) -> bool:
    """Every wording of _OOM holds `memory` or `oom detected` (no letter of them has a case-insensitive
    twin outside ASCII): one C-level scan per line, where _OOM's search took ~13 µs on every line."""
    lowered = line.lower()
    return ("memory" in lowered or "oom detected" in lowered) and not any(k in lowered for k in _HOST_OOM_KILLER)


def find(lines: list[str]) -> OutOfMemory | None:
    in_block = False
    block: set[int] = set()
    hits: list[int] = []
    for i, line in enumerate(lines):
        if line.strip().startswith(_BLOCK_START):
            in_block = True
            hits.append(i)
        if in_block:
            block.add(i)
            if _BLOCK_END in line or not line.strip() and i > 0 and lines[i - 1].strip().startswith("Or,"):
                in_block = False
            continue
        if _may_say_oom(line) and _OOM.search(line) and not line.startswith(" "):
            hits.append(i)
    if not hits:
        return None
    first = min(hits)
    text = next((lines[i] for i in sorted(hits) if i not in block), lines[first])
    captured: dict[str, str] = {}
    for i in sorted(hits):
        for rx in (_ALLOC, _GPU, _MPS):
            m = rx.search(lines[i])
            if m:
                captured.update({k: v for k, v in m.groupdict().items() if k not in captured})
    platform = "mps" if any("MPS" in lines[i] for i in hits) else "cuda"
    phase, at = _phase(lines, first, block)
    return OutOfMemory(first + 1, text.strip(), platform, phase, at + 1 if at is not None else None,
                       lines[at].strip() if at is not None else None, captured, len(hits))


def _phase(lines: list[str], oom: int, block: set[int]) -> tuple[str | None, int | None]:
    start = next((i for i in range(oom, -1, -1) if lines[i].startswith("Traceback (most recent call last)")), None)
    if start is not None:  # the traceback's frames, innermost first: nearer evidence than the log
        for i in range(oom - 1, start, -1):
            for phase, rx in _PHASES:
                if lines[i].startswith(" ") and rx.search(lines[i]):
                    return phase, i
    for i in range(oom, -1, -1):
        if i in block:
            continue
        for phase, rx in _PHASES:
            if rx.search(lines[i]):
                return phase, i
    return None, None
