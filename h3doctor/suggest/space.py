"""The launch space `suggest` searches: parallel layouts and, per layout, a ladder of placements
from the most resident to the least.

Every candidate is an ordinary `sglang serve` command line; whether it is valid is decided by the
same rules and memory model `check` uses (search.py), never here. What is here is only which
commands are worth asking about:

* layouts: one replica (no data parallelism: replicas serve more requests at once, they do not
  make one request faster) of TP x Ulysses x ring on 1..N GPUs, the degrees sglang accepts for the
  H3 DiT (engine/layout.py: TP in {1,2,4,8}, Ulysses divides the 56/TP heads, Ulysses x ring
  divides the packing alignment 64);
* placements, most resident first: everything resident (`--performance-mode speed`), the DiT
  sharded by FSDP, the text encoder streamed layer by layer, the DiT streamed too with as many
  blocks held resident as fit, `--performance-mode memory` likewise, and sglang's own `auto`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from h3doctor.engine.layout import valid_layouts


@dataclass(frozen=True)
class Candidate:
    num_gpus: int
    tp: int = 1
    ulysses: int = 1
    ring: int = 1
    mode: str = "speed"  # speed | memory | auto (sglang's default: no flag)
    layerwise: tuple[str, ...] = ()  # --layerwise-offload-components, sglang's group names
    resident_layers: int | None = None  # --dit-layerwise-resident-layers, when the DiT streams
    fsdp: bool = False
    rung: str = "resident"  # the placement's name in the ladder (for the report)

    @property
    def parallel(self) -> int:
        return self.tp * self.ulysses * self.ring

    def argv(self, model: str, variant: str | None, quantization: str | None) -> list[str]:
        """The command, spelled the way the cookbook spells its recipes: every degree explicit."""
        out = ["sglang", "serve", model, "--num-gpus", str(self.num_gpus)]
        if self.tp > 1:
            out += ["--tp-size", str(self.tp)]
        if self.num_gpus > 1 or self.ulysses > 1:
            out += ["--ulysses-degree", str(self.ulysses)]
        if self.ring > 1:
            out += ["--ring-degree", str(self.ring)]
        if self.mode != "auto":
            out += ["--performance-mode", self.mode]
        if self.fsdp:
            out += ["--use-fsdp-inference", "true"]
        if self.layerwise:
            out += ["--layerwise-offload-components", ",".join(self.layerwise)]
        if self.resident_layers:
            out += ["--dit-layerwise-resident-layers", str(self.resident_layers)]
        if variant:
            out += ["--model-variant", variant]
        if quantization:
            out += ["--quantization", quantization]
        return out


def layouts(gpus: int, platform: str) -> list[Candidate]:
    """One replica on 1..gpus GPUs, most GPUs first. Ring only next to Ulysses where the heads
    run out (sglang's ring needs FlashAttention; the rules judge whether it runs here)."""
    if platform in ("mps", "cpu") or gpus <= 1:
        return [Candidate(1)]
    out = [Candidate(lay.num_gpus, lay.tp, lay.ulysses, lay.ring)
           for lay in valid_layouts(gpus, ring_allowed=True) if lay.dp == 1]
    return sorted(out, key=lambda c: (-c.num_gpus, c.ring, c.tp))


def ladder(layout: Candidate, platform: str) -> list[Candidate]:
    """The placements of one layout, most resident first. Where the resolved DiT streams layer by
    layer, the search chooses `resident_layers` (as many as its criterion allows)."""
    if platform not in ("cuda", "rocm"):
        # off CUDA sglang has no automatic layerwise offload; the rules say what each platform needs
        return [replace(layout, mode=m, rung=m) for m in ("auto", "memory", "speed")]
    rungs = [replace(layout, rung="resident")]
    if layout.num_gpus > 1:
        rungs.append(replace(layout, fsdp=True, rung="fsdp"))
    if platform == "cuda":  # layerwise offload is CUDA-only in sglang 0.5.23 (auto_tune.py:398-399)
        rungs += [
            replace(layout, layerwise=("text_encoder",), rung="text-encoder-streamed"),
            replace(layout, layerwise=("text_encoder", "dit"), rung="dit-streamed"),
            replace(layout, mode="memory", rung="memory-mode"),
        ]
    else:
        rungs.append(replace(layout, mode="memory", rung="memory-mode"))
    rungs.append(replace(layout, mode="auto", rung="auto"))
    return rungs
