"""The score `suggest` ranks by (docs/suggest.md: the formula, each term and its source).

Read from a resolved launch (the context the rules read: `args.*`, `derived.*`), never from the
candidate's own flags, so what is scored is what sglang would run.

speed    S = 30·log2(P) + 40·d + 10·e + 5·u − 10·f − 2·m − 5·b + 3·c
memory   M = headroom GiB + S/100 (ties go to the faster launch)
balanced the speed score among launches whose headroom is at least max(4 GiB, 10 % of the GPU);
         below that margin, the most headroom
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from h3doctor.sglang.memory import constants
from h3doctor.verified import NEWEST_VERIFIED

WEIGHTS = {"parallel": 30.0, "dit_resident": 40.0, "others_resident": 10.0, "ulysses": 5.0, "fsdp": -10.0,
           "memory_mode": -2.0, "slower_attention": -5.0, "cookbook": 3.0}
MARGIN_GIB, MARGIN_SHARE = 4.0, 0.10


def dit_blocks(release: str) -> int:
    """The DiT's layer count, from the release's memory data (configs/models/dits/minimax_h3.py)."""
    return int(constants(release)["weights_gib"]["dit_blocks"]["value"])


@dataclass(frozen=True)
class Score:
    terms: dict[str, float]  # each term's value before its weight
    speed: float
    headroom_gib: float | None  # capacity - typical peak (None: the platform's memory is not modelled)
    capacity_gib: float | None
    why: list[str] = field(default_factory=list)

    @property
    def margin_ok(self) -> bool | None:
        if self.headroom_gib is None or self.capacity_gib is None:
            return None
        return self.headroom_gib >= max(MARGIN_GIB, MARGIN_SHARE * self.capacity_gib)

    def memory(self) -> float:
        """Headroom first; off CUDA/ROCm (no memory model) the share of weights kept off the GPU."""
        if self.headroom_gib is None:
            return 100.0 - 40 * self.terms["dit_resident"] - 10 * self.terms["others_resident"] + self.speed / 100
        return self.headroom_gib + self.speed / 100

    def key(self, prefer: str) -> tuple:
        """Larger is better."""
        if prefer == "speed":
            return (self.speed,)
        if prefer == "memory":
            return (self.memory(),)
        ok = self.margin_ok
        return (1, self.speed) if ok or ok is None else (0, self.headroom_gib)


def score(ctx: dict[str, Any], cookbook: dict[str, Any] | None) -> Score:
    """The score of one resolved launch; `cookbook` is the published recipe it matches, if any."""
    a = {k.removeprefix("args."): v for k, v in ctx.items() if k.startswith("args.")}
    tp, ulysses, ring = (int(a.get(k) or 1) for k in ("tp_size", "ulysses_degree", "ring_degree"))
    parallel = tp * ulysses * ring
    residency = ctx.get("derived.residency") or {}
    release = str(ctx.get("release.table") or NEWEST_VERIFIED)
    d, dit_why = _dit_resident_share(residency.get("transformer"), a.get("dit_layerwise_resident_layers"), dit_blocks(release))
    w = constants(release)["weights_gib"]
    te = w["te_layer"]["value"] * w["te_layers"]["value"] + w["te_embed"]["value"] + w["te_vision"]["value"]
    vae = w["vae_total"]["value"]
    e = (te * (residency.get("text_encoder") == "resident") + vae * (residency.get("video_vae") == "resident")) / (te + vae)
    u = math.log2(ulysses) / math.log2(parallel) if parallel > 1 else 0.0
    fsdp = float(bool(a.get("use_fsdp_inference")) and residency.get("transformer") == "resident")
    memory_mode = float(a.get("performance_mode") == "memory")
    slower = float(ctx.get("derived.dit_backend") == "torch_sdpa" and ctx.get("derived.fa_really_runs") is True)
    terms = {"parallel": math.log2(parallel), "dit_resident": d, "others_resident": round(e, 3), "ulysses": round(u, 3),
             "fsdp": fsdp, "memory_mode": memory_mode, "slower_attention": slower, "cookbook": float(cookbook is not None)}
    speed = round(sum(WEIGHTS[k] * v for k, v in terms.items()), 2)
    memory = ctx.get("derived.memory") or {}
    why = [_layout_text(parallel, tp, ulysses, ring, ctx.get("hw.platform")), dit_why]
    if e < 1:
        streamed = [n for n, c in (("the text encoder", "text_encoder"), ("the video VAE", "video_vae")) if residency.get(c) != "resident"]
        why.append(f"{' and '.join(streamed)} {'is' if len(streamed) == 1 else 'are'} loaded per request, not kept on the GPU")
    if fsdp:
        why.append("FSDP shards the DiT and gathers each block every step")
    if memory_mode:
        why.append("--performance-mode memory decodes one VAE tile per forward")
    if slower:
        why.append("PyTorch SDPA attention where FlashAttention could run (slower)")
    if cookbook is not None:
        peak = f", measured peak {cookbook['peak_gib']} GiB per GPU" if cookbook.get("peak_gib") else ""
        why.append(f"the layout and mode of the sglang cookbook's published {cookbook['label']} launch{peak}")
    return Score(terms, speed, memory.get("headroom_gib"), memory.get("capacity_gib"), [x for x in why if x])


def _dit_resident_share(mode: str | None, resident_layers: Any, blocks: int) -> tuple[float, str]:
    if mode == "resident":
        return 1.0, "DiT weights resident: nothing streamed per denoising step"
    if mode == "layerwise-offload":
        try:
            r = float(resident_layers or 0)
        except (TypeError, ValueError):
            r = 0.0
        held = min(blocks, round(r * blocks) if r < 1 else int(r))  # a value below 1 is a fraction (memory.py)
        return held / blocks, f"{held} of {blocks} DiT blocks held on the GPU, the rest streamed every step"
    return 0.0, "the DiT is moved to the GPU per request (component offload)"


def _layout_text(parallel: int, tp: int, ulysses: int, ring: int, platform: str | None = None) -> str:
    if platform == "cpu":  # no accelerator: sglang runs the pipeline on the CPU, in host memory
        return ("on the CPU, no GPU (h3doctor's memory model does not cover the CPU platform: "
                "whether it fits in host memory is not verified)")
    if parallel == 1:
        return "one GPU per request"
    parts = [f"{name} {n}" for name, n in (("TP", tp), ("Ulysses", ulysses), ("ring", ring)) if n > 1]
    return f"{parallel} GPUs on one request ({' x '.join(parts)})"
