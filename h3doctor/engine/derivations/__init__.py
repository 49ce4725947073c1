"""Extra `derived.*` context values that rule conditions read, each declared by the derivation that
computes it (registry.py), grouped in modules named for what they compute.

`core` comes first: the others read its values. They model sglang's state (what sglang computes
before it checks); the checks stay in rules/. Import order is run order.
"""

from __future__ import annotations

from h3doctor.engine.derivations import (  # noqa: F401 - importing a module registers its derivations
    core,
    config_values,
    validation,
    offload,
    gpus,
    process_groups,
    ports,
    component_maps,
    attention,
    model_load,
    adaln,
    sparse_attention,
    quality_high,
    checkpoint,
    memory,
    sampling,
    exec_safety,
)
from h3doctor.engine.derivations.registry import declared_paths, run  # noqa: F401 - declared_paths: for rule loading

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def derive_all(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """Every derivation's values and `derived.derivation_errors` (rule H3D991): the ones that failed.
    `r` None (no resolved launch): the values of the derivations that read only the launch's words."""
    return run(r, hw, ctx, launch_only=r is None)
