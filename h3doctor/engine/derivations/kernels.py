"""Derived values of the CUDA stack a launch runs on (issue 29, kernels and driver; rules
H3D614-H3D616): whether the driver can run torch's CUDA runtime, which kernel library sglang loads
for this launch has no code for the GPU, and which was built for another torch.

The facts are read by the probe (host/cuda_driver.py, host/kernel_wheels.py, host/fatbin.py) or
stated by a profile; these are pure comparisons (h3doctor/cuda_compat.py). A value of None is
"cannot verify": the rules read them as `derived.cuda.*`, facts, never as a pass.
"""

from __future__ import annotations

from h3doctor.cuda_compat import covers, driver_older, major_minor
from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.releases import kernels_loaded

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

# The kernel libraries each release loads on CUDA whose failure kills the worker, and the DiT attention
# backend that loads each, are data keyed by release (flagdata/runtime-facts.json `kernels`,
# sglang/releases.py kernels_loaded): sgl_kernel on every launch (runtime/layers/layernorm.py at
# module level, 0.5.17 on); Dao's flash-attn with the fa2 backend from 0.5.21 (before it, fa2 runs
# sglang's own kernels). sageattention is in none: sglang's sage_attn resolver falls back to
# FlashAttention when `from sageattention import sageattn` raises ImportError (platforms/cuda.py).


def _no_image(targets: Any, cc_int: int | None) -> bool | None:
    if targets is None or cc_int is None:
        return None
    verdict = covers(tuple(targets), cc_int)
    return None if verdict is None else not verdict


def _judged(verdicts: list[tuple[str, bool | None]]) -> list[str] | None:
    """The names found wrong; None (cannot verify) when none is and one cannot be told."""
    wrong = [name for name, bad in verdicts if bad]
    return wrong if wrong or all(bad is not None for _n, bad in verdicts) else None


def _loaded(version: str, backend: Any) -> list[tuple[str, str]]:
    return [(label, prefix) for label, prefix, by in kernels_loaded(version) if by is None or by == backend]


@derives("cuda.driver_too_old", "driver_found_version", "cuda.kernels_without_image", "kernel_image_text",
         "cuda.kernels_other_torch", "kernel_torch_text", "cuda_unknown",
         reads=("derived.dit_backend", "release.table"), per_hardware=True)
def cuda_stack(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    too_old = driver_older(hw.driver_cuda, hw.torch_cuda)
    mm = major_minor(hw.driver_cuda)
    # cudaDriverGetVersion's int, as torch prints it; words where the message is a "cannot verify"
    found = "unknown" if mm is None or too_old is None else mm[0] * 1000 + mm[1] * 10
    # the release is one of its reads (the libraries loaded differ per release): a per-hardware
    # derivation is called without the launch (`r` is None) and keyed on its reads
    loaded = _loaded(ctx["release.table"], ctx.get("derived.dit_backend"))
    cc = hw.cc_int
    image = [(label, getattr(hw, f"{prefix}_sm")) for label, prefix in loaded]
    missing = _judged([(f"{label} ({', '.join(t or ()) or 'no GPU code'})", _no_image(t, cc)) for label, t in image])
    torch = major_minor(hw.torch_version)
    built = [(label, major_minor(getattr(hw, f"{prefix}_torch"))) for label, prefix in loaded]
    other = _judged([(f"{label} (built for torch {b[0]}.{b[1]})" if b else label,
                      None if b is None or torch is None else b != torch) for label, b in built])
    return {"derived.cuda.driver_too_old": too_old, "derived.driver_found_version": found,
            "derived.cuda.kernels_without_image": missing,
            # the libraries found wrong, else (a "cannot verify") the ones judged
            "derived.kernel_image_text": "; ".join(missing or [label for label, _p in loaded]),
            "derived.cuda.kernels_other_torch": other,
            "derived.kernel_torch_text": "; ".join(other or [label for label, _p in loaded]),
            # what a "cannot verify" says of each unknown value (engine/evaluate.py)
            "derived.cuda_unknown": {
                "driver_too_old": "the CUDA of the driver and of torch (driver_cuda, torch_cuda)",
                "kernels_without_image": "the sm_* targets of " + ", ".join(f"{label} ({prefix}_sm)" for label, prefix in loaded)
                                         + " for this GPU (compute_capability)",
                "kernels_other_torch": "the torch " + ", ".join(f"{label} ({prefix}_torch)" for label, prefix in loaded)
                                       + " was built for and the torch installed (torch_version)"}}
