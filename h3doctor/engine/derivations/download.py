"""Derived values of the download a launch starts and of sglang's host spill (issue 29 items 1-2):
what is already in the Hugging Face cache (sglang/hub_cache.py, read only on the machine probed),
how much the launch still fetches against the free disk, Hub offline mode, and how much of the
DiT's fused weights sglang's host spill cannot hold (falling back to anonymous host memory).
"""

from __future__ import annotations

import os

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang import hub_cache
from h3doctor.sglang.releases import host_spill, published_partition

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

GIB = 1 << 30
# huggingface_hub constants._is_true: HF_HUB_OFFLINE, else TRANSFORMERS_OFFLINE (an `or`: a set,
# non-empty HF_HUB_OFFLINE decides alone, even "0")
_TRUE = ("1", "ON", "YES", "TRUE")


def hub_offline(env: dict[str, str]) -> bool:
    value = env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in _TRUE


def _is_local(path: str, probed: bool) -> bool:
    """sglang's first test, `os.path.exists(model_name_or_path)` (hf_diffusers_utils.py:947): on
    the machine probed it is asked; for a profile's machine a path that cannot be a repo id is local."""
    if probed and os.path.exists(path):
        return True
    return path.startswith(("/", ".", "~")) or path.count("/") != 1


def _gib(n: int | None) -> float | None:
    return None if n is None else round(n / GIB, 2)


@derives("hub_repo", "host.hub_snapshot", "hub_fetches", "hub_offline", "download_need_gib", "host.download_short_gib",
         "download_source", "host_unknown", "hub_token_text", reads=("derived.model_variant_subfolder",))
def download(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    a, env = r.args, r.env
    path = a.get("model_path")
    offline = hub_offline(env)
    out = {"derived.hub_repo": None, "derived.host.hub_snapshot": "local", "derived.hub_fetches": False, "derived.hub_offline": offline,
           "derived.download_need_gib": 0.0, "derived.host.download_short_gib": None, "derived.download_source": "",
           "derived.host_unknown": {},
           "derived.hub_token_text": {True: "present", False: "absent", None: "unknown"}[hw.hf_token]}
    probed = hw.hf_cache_dir is not None
    if not isinstance(path, str) or not path or _is_local(path, probed):
        out["derived.host.download_short_gib"] = -1.0  # nothing downloads, whatever the disk
        out["derived.download_source"] = "a local folder: sglang downloads nothing (hf_diffusers_utils.py:947-949)"
        return out
    subfolder, full = published_partition(r.release.table_version, path,
                                          ctx.get("derived.model_variant_subfolder") or a.get("model_subfolder"))
    allow = (f"{subfolder}/**",) if subfolder else ()
    if probed and env.get("SGLANG_USE_MODELSCOPE", "").lower() not in ("1", "true"):
        snap = hub_cache.snapshot(hw.hf_cache_dir, path, allow, a.get("revision"))
    else:
        snap = hub_cache.Snapshot("unknown", where="the cache of the machine the profile describes is not read")
    need, source = _need(snap, full)
    # None: the cache is not known (a profile's machine, an unreadable cache) -- "cannot verify"
    state = None if snap.state == "unknown" else snap.state
    out.update({"derived.hub_repo": path, "derived.host.hub_snapshot": state, "derived.hub_fetches": state in ("absent", "incomplete"),
                "derived.download_need_gib": _gib(need),
                "derived.download_source": source})
    disk = hw.disk_free_gib
    if disk is not None and need is not None:
        out["derived.host.download_short_gib"] = round(need / GIB - disk, 2)
    elif disk is not None and full is not None and full / GIB <= disk:
        out["derived.host.download_short_gib"] = round(full / GIB - disk, 2)  # fits even if nothing is cached
    # what a "cannot verify" says of each unknown value (engine/check.py unknown_why)
    why = {"hub_snapshot": f"whether the Hugging Face cache holds {path} ({snap.where})"}
    if disk is None:
        why["download_short_gib"] = "the free disk under the Hugging Face cache (disk_free_gib)"
    else:
        why["download_short_gib"] = (f"how much of {path} the Hugging Face cache already holds ({snap.where}), with "
                                     f"{disk:g} GiB free against the partition's published "
                                     f"{_gib(full) if full is not None else 'unknown'} GiB")
    out["derived.host_unknown"] = why
    return out


def _need(snap: hub_cache.Snapshot, full: int | None) -> tuple[int | None, str]:
    """Bytes the launch downloads, and from what h3doctor knows it. A snapshot folder the cached
    listing does not contradict is returned as it is (sglang's cache-first path): nothing downloads."""
    if snap.state in ("complete", "present"):
        return 0, f"the cached snapshot {snap.where} ({snap.state})"
    if snap.missing_bytes is not None:  # the cached tree listing: exact sizes
        return snap.missing_bytes, f"{snap.missing_files} file(s) missing by the cached tree listing of {snap.where}"
    if full is not None and snap.state == "absent":
        return full, "the partition's published size, nothing cached"
    return None, snap.where


@derives("spill_fallback_gib", "spill_needed_gib")
def spill(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """The DiT's fused q/k/v that sglang's host spill cannot write (fsdp_load.py:348-359: only on a
    device that shares host memory, loading from the checkpoint): each tensor is written while
    `free >= nbytes + 2 GiB` (host_spill.py:113-114), and from the first that is not the spill is
    disabled and every later one stays in anonymous host memory. 0: all spilled (or no spill in
    this release, or SGLANG_DIFFUSION_DISABLE_HOST_SPILL); with the spill folder's free space
    unknown, all of it (the most it can be)."""
    data = host_spill(r.release.table_version)
    disabled = (r.env.get("SGLANG_DIFFUSION_DISABLE_HOST_SPILL") or "false").lower() in ("true", "1")
    if data is None or disabled or not hw.shares_host_memory:
        return {"derived.spill_fallback_gib": 0.0, "derived.spill_needed_gib": 0.0}
    per = data["fused_bytes"] / data["tensors"]
    needed = _gib(int(per + data["reserve_bytes"]))
    if hw.spill_free_gib is None:  # at most all of it; H3D417 reads hw.spill_free_gib too, so "cannot verify"
        return {"derived.spill_fallback_gib": _gib(data["fused_bytes"]), "derived.spill_needed_gib": needed}
    free = hw.spill_free_gib * GIB
    written = max(0, min(data["tensors"], int((free - data["reserve_bytes"]) // per)))
    return {"derived.spill_fallback_gib": _gib(int((data["tensors"] - written) * per)), "derived.spill_needed_gib": needed}
