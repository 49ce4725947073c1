"""Extra `derived.*` context values that rule conditions read, grouped by the stage they serve.

`core` comes first: the others read its values. Each module exposes `derive(r: Resolver, hw: HardwareFacts, ctx: dict) -> dict[str, Any]`,
returning keys under `derived.`; they run after the core derivations in check.py, in this order.
They model sglang's state (what sglang computes before it checks); the checks stay in rules/.
"""

from __future__ import annotations

from typing import Any

from h3doctor.engine.derivations import checkpoint, core, launch, memory, runtime, sampling

MODULES = (core, launch, runtime, checkpoint, memory, sampling)


def derive_all(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """Every module's values; a module that fails is reported (rule H3D991), never silent."""
    out: dict[str, Any] = {}
    errors: list[str] = []
    seen = dict(ctx)  # what the next module reads: the context and every earlier module's values (one copy per check)
    for module in MODULES:
        try:
            values = module.derive(r, hw, seen)
        except Exception as exc:  # noqa: BLE001 - one module's surprise must not hide the others
            errors.append(f"{module.__name__.rsplit('.', 1)[-1]}: {type(exc).__name__}: {exc}")
            continue
        errors += values.pop("derived.derivation_errors", [])
        out.update(values)
        seen.update(values)
    out["derived.derivation_errors"] = errors
    return out
