"""Extra `derived.*` context values that rule conditions read, each declared by the derivation that
computes it (registry.py), grouped in modules named for what they compute.

They model sglang's state (what sglang computes before it checks); the checks stay in rules/.
Importing a module registers its derivations; the order they run in is computed from what each
reads and produces (`ORDER`, here, when the package is imported), and a check runs only the ones
its applicable rules and the reports need (`plan_for`).
"""

from __future__ import annotations

import functools

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
    memory_words,
    sampling,
    exec_safety,
    download,
    kernels,
    probes,
    shared_pool,
)
from h3doctor.engine.derivations.registry import REGISTRY, declared_paths, needed_for, ordered, producers, run  # noqa: F401
from h3doctor.sglang.resolve import EVENTS

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

    from h3doctor.engine.derivations.registry import Derivation

# a read nobody produces, an unrecorded event or a cycle stops the import, naming the derivations
ORDER = ordered(REGISTRY, EVENTS)
_PRODUCERS = producers(ORDER)

# the derived values code outside the rules reads on every check: the JSON report's effective
# config (output/json_report.py), suggest's score, shape and memory fit (suggest/), the no-fix
# shortfall and the "cannot verify" words (engine/judge.py, engine/evaluate.py). A fix strategy's reads are its own
# (engine/strategy_reads.py STRATEGY_READS), part of the reads of the rules that name it.
REPORTED = ("derived.residency", "derived.residency_transformer", "derived.transformer_backend", "derived.dit_backend",
            "derived.fa_really_runs", "derived.memory", "derived.host_unknown", "derived.probe_unknown", "derived.cuda_unknown")


@functools.lru_cache(maxsize=256)
def plan_for(paths: frozenset[str]) -> tuple[Derivation, ...]:
    """The derivations a check runs, in order: those the values `paths` names (an applicable
    rule's reads) and `REPORTED` come from, and every one they read from."""
    return needed_for((*paths, *REPORTED), ORDER, _PRODUCERS)


def derive_all(r: Any, hw: Any, ctx: dict[str, Any], reads: frozenset[str] | None = None) -> None:
    """The values of the derivations `reads` needs (None: every one) and `derived.derivation_errors`
    (rule H3D991): the ones that failed, written into `ctx`. `r` None (no resolved launch): the
    values of the derivations that read only the launch's words."""
    ctx.update(run(r, hw, ctx, launch_only=r is None, plan=ORDER if reads is None else plan_for(reads), in_place=True))
