"""Derived values of what each worker does with the parallel layout when it builds its process
groups (distributed/parallel_state.py `initialize_model_parallel`, distributed/utils.py
`RankGenerator`, distributed/parallel_groups.py `set_seq_parallel_pg_by_sp_groups`,
distributed/group_coordinator.py). sglang's launch checks only test divisibility, so negative
degrees whose product divides --num-gpus pass them (`--tp-size -4`, `--ulysses-degree -2
--ring-degree -2`, `--cfg-parallel-size -2`); the workers start and stop here.

Re-implemented from how sglang lays ranks out: the axes in the order tp, sp, pp, cfg, dp (each
axis' stride the product of the sizes before it); a group of some axes takes every combination of
their indices, one group per combination of the other axes' indices (world // group size of
them). An index is split into per-axis indices with floor division and modulo, and sglang checks
that the indices give the index back, which fails for negative sizes.
"""

from __future__ import annotations

from h3doctor.engine.derivations.common import is_int
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

ORDER = ("tp", "sp", "pp", "cfg", "dp")  # RankGenerator(..., "tp-sp-pp-cfg-dp")
MAX_WORLD = 1024  # a bound on the work done for hostile input (a host has far fewer GPUs)


class _GroupError(Exception):
    """What a worker raises while it builds a group (its message, as sglang words it)."""


def _prefix_products(sizes: list[int]) -> list[int]:
    out, acc = [1], 1
    for s in sizes:
        acc *= s
        out.append(acc)
    return out


def _split(index: int, sizes: list[int]) -> list[int]:
    strides = _prefix_products(sizes)
    parts = [(index // d) % s for s, d in zip(sizes, strides)]
    if sum(p * d for p, d in zip(parts, strides[:-1])) != index:
        raise _GroupError(f"idx {index} with shape {sizes} mismatch the return idx {parts}")
    return parts


def _groups(sizes: dict[str, int], axes: tuple[str, ...]) -> list[list[int]]:
    """The rank groups over `axes` (RankGenerator.get_ranks)."""
    ordered = [sizes[a] for a in ORDER]
    strides = _prefix_products(ordered)
    world = strides[-1]
    inside = [a in axes for a in ORDER]
    in_sizes = [s for s, m in zip(ordered, inside) if m]
    out_sizes = [s for s, m in zip(ordered, inside) if not m]
    in_strides = [d for d, m in zip(strides, inside) if m]
    out_strides = [d for d, m in zip(strides, inside) if not m]
    group_size = _prefix_products(in_sizes)[-1]
    groups = []
    for g in range(world // group_size):
        outer = _split(g, out_sizes)
        base = sum(i * d for i, d in zip(outer, out_strides))
        groups.append([sum(i * d for i, d in zip(_split(r, in_sizes), in_strides)) + base
                       for r in range(group_size)])
    return groups


def _coordinator(groups: list[list[int]], world: int) -> None:
    """GroupCoordinator: every rank must find itself in one of the groups."""
    members = {r for g in groups for r in g}
    for rank in range(world):
        if rank not in members:
            raise _GroupError(f"group_ranks={groups!r}, local_rank={rank}")


def _sequence_groups(sp_groups: list[list[int]], ulysses: int, ring: int, world: int) -> None:
    """set_seq_parallel_pg_by_sp_groups, then SequenceParallelGroupCoordinator."""
    sp = ring * ulysses
    if not sp > 0:
        raise _GroupError("AssertionError")  # a bare `assert sp_degree > 0`
    sizes = [len(g) for g in sp_groups]
    if any(n != sp for n in sizes):
        raise _GroupError(f"Each SP group must have size {sp}, got sizes {sizes}")
    # Ulysses groups: `ring` runs of `ulysses` consecutive members; ring groups: `ulysses` strided
    # ones. A negative count makes none, and a rank in none has no group to pass on.
    in_ulysses = {r for g in sp_groups for i in range(ring) for r in g[i * ulysses:(i + 1) * ulysses]}
    in_ring = {r for g in sp_groups for i in range(ulysses) for r in g[i:sp:ulysses]}
    _coordinator(sp_groups, world)
    for rank in range(world):
        if rank not in in_ulysses:
            raise _GroupError("Please pass argument 'ulysses_group' when calling init func of "
                              "SequenceParallelGroupCoordinator")
        if rank not in in_ring:
            raise _GroupError("Please pass argument 'ring_group' when calling init func of "
                              "SequenceParallelGroupCoordinator")


def _process_group_error(a: dict[str, Any]) -> str | None:
    """The first error a worker of this single-node layout raises while building its dp, cfg, pp
    and sp groups, or None (also when the layout is not one sglang resolved to integers, or needs
    more ranks than it starts: rule H3D401)."""
    world, nnodes = a.get("num_gpus"), a.get("nnodes") or 1
    sizes = {"tp": a.get("tp_size"), "sp": a.get("sp_degree"), "pp": 1,
             "cfg": a.get("cfg_parallel_degree") or 1, "dp": a.get("dp_size")}
    ulysses, ring = a.get("ulysses_degree"), a.get("ring_degree")
    if nnodes != 1 or not all(is_int(v) for v in (world, ulysses, ring, *sizes.values())):
        return None
    if min(*sizes.values(), ulysses, ring) >= 1 or 0 in sizes.values():
        return None  # positive layouts build; a zero degree stops the launcher already
    product = sizes["tp"] * sizes["sp"] * sizes["cfg"] * sizes["dp"]
    if world < product or max(abs(product), world) > MAX_WORLD:
        return None  # H3D401's; or more ranks than are worth laying out here (hostile input)
    try:
        for axis in ("dp", "cfg", "pp"):
            _coordinator(_groups(sizes, (axis,)), world)
        _sequence_groups(_groups(sizes, ("sp",)), ulysses, ring, world)
    except _GroupError as exc:
        return str(exc)
    return None


@derives("process_group_error", fallback={"process_group_error": None})
def process_group_error(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.process_group_error": _process_group_error(r.args)}


@derives("hsdp_mesh_ranks", fallback={"hsdp_mesh_ranks": None})
def hsdp_mesh_ranks(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """The size of the FSDP device mesh, hsdp_replicate_dim x hsdp_shard_dim (loader/fsdp_load.py
    `maybe_load_fsdp_model`; the shard dim defaults to --num-gpus, server_args.py
    `_adjust_parallelism`); torch lays out that many ranks with torch.arange."""
    a = r.args
    replicate, shard = a.get("hsdp_replicate_dim"), a.get("hsdp_shard_dim")
    if shard is None:
        shard = a.get("num_gpus")
    ok = is_int(replicate) and is_int(shard)
    return {"derived.hsdp_mesh_ranks": replicate * shard if ok else None}
