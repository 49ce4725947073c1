"""Extra `derived.*` context values that rule conditions read, grouped by the stage they serve.

Each module exposes `derive(r: Resolver, hw: HardwareFacts, ctx: dict) -> dict[str, Any]`,
returning keys under `derived.`; they run after the core derivations in check.py, in this order.
They model sglang's state (what sglang computes before it checks); the checks stay in rules/.
"""

from __future__ import annotations

from typing import Any

from h3doctor.derivations import checkpoint, launch, runtime

MODULES = (launch, runtime, checkpoint)


def derive_all(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for module in MODULES:
        out.update(module.derive(r, hw, {**ctx, **out}))
    return out
