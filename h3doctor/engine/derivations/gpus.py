"""Derived values of how many GPUs a launch sees and needs: CUDA_VISIBLE_DEVICES, the
auto-tuner's device query, per-node workers, NUMA binding and the data-parallel and HSDP
divisibility checks.
"""

from __future__ import annotations

from h3doctor.digits import is_digits
from h3doctor.engine.derivations.common import PERFORMANCE_MODE_ERROR, is_int
from h3doctor.engine.derivations.registry import derives
from h3doctor.unresolved import UNRESOLVED

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

PERFORMANCE_MODES = ("manual", "auto", "speed", "memory")  # server_args/auto_tune.py:627-636


def _visible_gpus(hw: Any, env: dict[str, Any]) -> int:
    """Devices torch sees: the hardware's count, narrowed by CUDA_VISIBLE_DEVICES when given
    (the CUDA runtime stops at the first entry it cannot parse)."""
    count = hw.gpu_count or 0
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return count
    n = 0
    for item in str(visible).split(","):
        item = item.strip()
        if not (item.startswith(("GPU-", "MIG-")) or is_digits(item)):
            break
        n += 1
    return min(n, count)


def _auto_tuner_error(r: Any, hw: Any, mode_error: Any) -> tuple[str | None, str | None, bool]:
    """B8 (auto_tune.py:627-636) then B9 (auto_tune.py:918-932 -> platforms/cuda.py:699).

    `mode_error`: the performance mode the adjust phase refused (None: none). Returns (kind, message,
    unknown): unknown when B9 depends on a GPU count the hardware facts lack.
    """
    if mode_error is not None:
        return "B8", f"Invalid performance_mode={mode_error!r}. Expected one of {PERFORMANCE_MODES}.", False
    a = r.args
    if hw.platform != "cuda" or a.get("performance_mode") != "auto":
        return None, None, False
    try:
        start = int(a.get("base_gpu_id") or 0)
        end = start + max(1, int(a.get("num_gpus") or 1))
    except (TypeError, ValueError):
        return None, None, False
    if start < 0:  # torch refuses a negative index as it does one past the last GPU, whatever the count
        return "B9", "AssertionError: Invalid device id", False
    if hw.gpu_count is None:
        return None, None, True
    if end > _visible_gpus(hw, r.env):
        return "B9", "AssertionError: Invalid device id", False
    return None, None, False


def _hsdp_error(a: dict[str, Any]) -> str | None:
    g = a.get("num_gpus")
    for name in ("hsdp_replicate_dim", "hsdp_shard_dim"):
        h = a.get(name)
        if not (is_int(g) and is_int(h)):
            continue
        if h == 0:
            return "ZeroDivisionError: integer modulo by zero"
        if h > g or g % h != 0:
            return f"num_gpus ({g}) must be >= and divisible by {name} ({h})"
    return None


def _dp_size_error(a: dict[str, Any]) -> str | None:
    """C24/C25 (server_args.py:4147-4154). dp 0 divides by zero before the natural-number check."""
    dp, g = a.get("dp_size"), a.get("num_gpus")
    if not (is_int(dp) and is_int(g)) or dp >= 1:
        return None
    if dp == 0:
        return "ZeroDivisionError: integer modulo by zero"
    if g % dp != 0:
        return None  # C24 fires first with this dp_size
    return "--dp-size must be a natural number"


def _numa_node_count(a: dict[str, Any]) -> int | None:
    """C21 takes len(numa_node) (server_args.py:4121); a --config scalar raises TypeError there too."""
    numa = a.get("numa_node")
    return None if numa is None else len(numa)


@derives("visible_gpus", "fit_base_gpu_id", "fit_num_gpus", points_at={"visible_gpus": ("num_gpus",)})
def visible_gpus(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    base = r.args.get("base_gpu_id") if is_int(r.args.get("base_gpu_id")) else 0
    asked = r.args.get("num_gpus") if is_int(r.args.get("num_gpus")) else 1
    if hw.gpu_count is None:  # a count nobody gave (no target, no grant): unknown, not none
        return {"derived.visible_gpus": UNRESOLVED, "derived.fit_base_gpu_id": max(base, 0),
                "derived.fit_num_gpus": max(asked, 1)}
    visible = _visible_gpus(hw, r.env)
    # B9's fix: from base_gpu_id (or from GPU 0 when base_gpu_id is negative or past the GPUs), the
    # GPUs asked for when they fit there, else the most that do
    fit_base = 0 if base >= visible or base < 0 else base
    fit = asked if 1 <= asked and fit_base + asked <= visible else max(1, visible - fit_base)
    return {"derived.visible_gpus": visible, "derived.fit_base_gpu_id": fit_base, "derived.fit_num_gpus": fit}


@derives("auto_tuner_error_kind", "auto_tuner_error", "auto_tuner_needs_gpu_count", "auto_tuner_message",
         reads=(PERFORMANCE_MODE_ERROR,),
         fallback={"auto_tuner_error_kind": None, "auto_tuner_error": None, "auto_tuner_needs_gpu_count": False,
                   "auto_tuner_message": None})
def auto_tuner_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    kind, message, unknown = _auto_tuner_error(r, hw, ctx.get(PERFORMANCE_MODE_ERROR))
    return {
        "derived.auto_tuner_error_kind": kind,
        "derived.auto_tuner_error": message,
        "derived.auto_tuner_needs_gpu_count": unknown,
        "derived.auto_tuner_message": message or (
            "in auto mode sglang queries the free memory of every GPU in [base_gpu_id, base_gpu_id + num_gpus)"
            if unknown else None
        ),
    }


@derives("local_num_gpus", "local_gpus_needed", points_at={"local_gpus_needed": ("num_gpus", "nnodes")})
def local_gpus(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a = r.args
    nnodes = a.get("nnodes")
    local = a["num_gpus"] // nnodes if is_int(nnodes) and nnodes > 0 and is_int(a.get("num_gpus")) else None
    # Each of this node's num_gpus // nnodes workers binds GPU <its local rank> (launch_server.py:221-225,
    # gpu_worker.py:425); base_gpu_id offsets only the disaggregation roles' workers (launch_server.py:655),
    # which H3 refuses (every H3 config is monolithic-only). Past the visible devices a worker cannot start.
    nnodes = nnodes if is_int(nnodes) and nnodes > 0 else 1
    needed = a.get("num_gpus") // nnodes if is_int(a.get("num_gpus")) else None
    return {"derived.local_num_gpus": local, "derived.local_gpus_needed": needed}


@derives("numa_node_count", fallback={"numa_node_count": None})
def numa_node_count(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.numa_node_count": _numa_node_count(r.args)}


@derives("hsdp_error", fallback={"hsdp_error": None})
def hsdp_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.hsdp_error": _hsdp_error(r.args)}


@derives("dp_size_error")
def dp_size_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.dp_size_error": _dp_size_error(r.args)}
