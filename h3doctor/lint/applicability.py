"""Whether a lint fix is safe to apply unasked (ruff's fix applicability).

A fix is *unsafe* when it takes away something the launch asked for: fewer GPUs or a lower
parallel degree, weights moved off the GPU (offload: lower residency), a different quantization,
precision or requested quality, or when the targets need different corrections (one command for
all of them is then none of theirs). Unsafe fixes are shown by `--diff` and written by `--fix`
only with `--unsafe-fixes`. Compared on the configuration sglang resolves (`effective`), so a
degree sglang derives from `--num-gpus` counts as lowered too.

Each change is judged on its own (`unsafe_steps`): the fix loop's steps, each the command before
it against the one after it, so a change is unsafe or safe whatever else the launch got wrong. A
launch sglang's parse stops on (a misspelt model flag: no family, so no configuration) has nothing
resolved to compare the whole correction against; compared whole, every value the fix then lowers
went unseen and the correction passed as safe.
"""

from __future__ import annotations

from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from h3doctor.engine.results import FixStep

# resolved server arguments that count GPUs or split the work over them: lowering any cuts the deployment
# (sp_degree is left out: sglang derives it from the Ulysses and ring degrees, which are compared)
PARALLEL = ("num_gpus", "tp_size", "dp_size", "pp_size", "ep_size", "ulysses_degree", "ring_degree",
            "cfg_parallel_degree", "kv_gather_degree")
# resolved arguments that set what the model computes in: any change changes the output asked for
QUALITY = ("quantization", "component_quantizations", "component_precisions", "dit_precision", "quality",
           "num_inference_steps")
# resident layers on the GPU: lowering any moves weights off it
RESIDENT = ("dit_layerwise_resident_layers", "layerwise_resident_layers")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


def _offloaded(value: Any) -> set[str]:
    """What an offload setting moves off the GPU: a flag's truth, or its list of components."""
    if value is True:
        return {"*"}
    if isinstance(value, (list, tuple, set)):
        return {str(v) for v in value}
    if isinstance(value, str) and value.strip() and value.lower() not in ("false", "none", "0"):
        return {value}
    return set()


def _lowered(before: dict[str, Any], after: dict[str, Any], dests: tuple[str, ...], note: str = "") -> list[str]:
    """The numeric arguments of `dests` that `after` sets lower than `before`."""
    out = []
    for dest in dests:
        b, a = _number(before.get(dest)), _number(after.get(dest))
        if b is not None and a is not None and a < b:
            out.append(f"lowers {_flag(dest)} from {before[dest]} to {after[dest]}{note}")
    return out


def unsafe_reasons(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What the corrected launch (`after`, its resolved configuration) takes away from `before`."""
    out = _lowered(before, after, PARALLEL)
    if before.get("enable_cfg_parallel") is True and after.get("enable_cfg_parallel") is not True:
        out.append("turns CFG parallelism off")
    for dest in QUALITY:
        if dest in before and dest in after and before[dest] != after[dest]:
            out.append(f"changes {_flag(dest)} from {before[dest]} to {after[dest]}")
    out += _lowered(before, after, RESIDENT, " (fewer layers resident)")
    for dest in sorted(set(before) | set(after)):
        if "offload" in dest and "prefetch" not in dest and dest != "offload_during_compile":
            added = _offloaded(after.get(dest)) - _offloaded(before.get(dest))
            if added:
                what = "" if added == {"*"} else f" ({', '.join(sorted(added))})"
                out.append(f"offloads with {_flag(dest)}{what}: less resident on the GPU")
    return out


def unsafe_steps(steps: list[FixStep], last: dict[str, Any]) -> list[str]:
    """Each fix step's unsafe reasons, named by its rule and change: the configuration the step
    started from against the next step's (`last`: the corrected command's, after the last step).
    A step from a launch with no resolved configuration (sglang stops at its parse) takes nothing
    resolved away; the steps after it are compared from the first configuration there is."""
    out = []
    for n, step in enumerate(steps):
        before = step.evaluation.effective if step.evaluation is not None else {}
        after = steps[n + 1].evaluation.effective if n + 1 < len(steps) and steps[n + 1].evaluation else last
        if not before or not after:
            continue
        reasons = unsafe_reasons(before, after)
        if reasons:
            out.append(f"{step.rule.id} ({'; '.join(c.text for c in step.changes)}): {', '.join(reasons)}")
    return out
