"""The probe's report lines for the host around the GPUs: /dev/shm, free disk under the Hugging
Face cache, the ffmpeg sglang encodes output with (observations from host/system.py and
host/ffmpeg.py, read in host/probe.py). Pure: the tests hand faked observations."""

from __future__ import annotations

from h3doctor.host.probe_child import GIB

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _gib(value: Any) -> float | None:
    return None if value is None else round(float(value) / GIB, 3)


def host_lines(b: Any) -> None:
    """Add the shm, disk and ffmpeg-encoder lines to the probe's builder `b` (probe_facts._Builder)."""
    h = b.host
    size, free = h.get("shm_size"), h.get("shm_free")
    b.details["shm_free_gib"] = _gib(free)
    b.add("shm_gib", "/dev/shm", _gib(size), "ok" if size is not None else "unknown",
          f"size, {_gib(free)} GiB free" if size is not None else (h.get("shm_reason") or "unread"),
          h.get("shm_source") or "statvfs /dev/shm")
    disk = h.get("disk_free")
    b.details["hf_cache"] = h.get("hf_cache")
    b.add("disk_free_gib", "free disk (HF cache)", _gib(disk), "ok" if disk is not None else "unknown",
          f"free under {h.get('hf_cache')} (measured at {h.get('disk_measured')})" if disk is not None
          else f"{h.get('hf_cache')}: {h.get('disk_reason') or 'unread'}", "statvfs")
    _hub_lines(b, h)
    _encoder_line(b, h)
    unlimited = h.get("cgroup_unlimited")
    b.add("cgroup_memory_unlimited", "cgroup memory.max", unlimited, "unknown" if unlimited is None else "ok",
          h.get("cgroup_unlimited_reason") or "unread", h.get("cgroup_unlimited_source") or "/sys/fs/cgroup/memory.max")
    _swap_lines(b, h)


def _swap_lines(b: Any, h: dict[str, Any]) -> None:
    """The swap sglang's auto-tuner counts on a device that shares host memory (host/swap.py, H3D419)."""
    total = h.get("swap_total")
    b.add("swap_gib", "swap", _gib(total), "unknown" if total is None else "ok",
          h.get("swap_total_reason") or "unread", h.get("swap_total_source") or "/proc/meminfo SwapTotal")
    off = h.get("cgroup_swap_off")
    b.add("cgroup_swap_off", "cgroup memory.swap.max", off, "unknown" if off is None else "ok",
          h.get("cgroup_swap_off_reason") or "unread", h.get("cgroup_swap_off_source") or "/sys/fs/cgroup/memory.swap.max")


def _hub_lines(b: Any, h: dict[str, Any]) -> None:
    """The Hub token (present or not: never its text), the cache a check reads for what the launch
    already holds, and the free space of sglang's host spill folder."""
    token = h.get("hf_token")
    b.add("hf_token", "Hub token", token, "unknown" if token is None else "ok",
          ("present" if token else "none: public repos only") if token is not None else "unreadable",
          h.get("hf_token_source") or "huggingface_hub's order")
    cache = h.get("hf_cache")
    b.add("hf_cache_dir", "Hugging Face cache", cache, "ok" if cache else "unknown",
          "read for the files a launch already holds (no network call)", "HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, ~")
    spill = h.get("spill_free")
    b.add("spill_free_gib", "free disk (host spill)", _gib(spill), "ok" if spill is not None else "unknown",
          f"free under {h.get('spill_dir')} (measured at {h.get('spill_measured')})" if spill is not None
          else f"{h.get('spill_dir')}: {h.get('spill_reason') or 'unread'}", "statvfs")


def _encoder_line(b: Any, h: dict[str, Any]) -> None:
    exe, how = h.get("ffmpeg_encoder_exe"), h.get("ffmpeg_encoder_how") or ""
    b.details["ffmpeg_encoder_exe"] = exe
    source = "ffmpeg -hide_banner -encoders (imageio_ffmpeg.get_ffmpeg_exe()'s order)"
    missing = h.get("ffmpeg_missing_encoders")
    if missing is None:
        b.add("ffmpeg_encoders", "ffmpeg encoders", None, "unknown",
              f"{exe} ({how}): {h.get('ffmpeg_encoders_error') or 'not read'}", source)
    elif not exe:
        b.add("ffmpeg_encoders", "ffmpeg encoders", False, "problem",
              "imageio-ffmpeg finds no ffmpeg (IMAGEIO_FFMPEG_EXE, its bundled binary, the environment's, PATH): "
              "sglang cannot encode video output", source)
    elif missing:
        where = f"{exe} ({how})"
        b.add("ffmpeg_encoders", "ffmpeg encoders", False, "problem",
              f"{where} lacks {', '.join(missing)}: sglang encodes output with -vcodec libx264 -acodec aac", source)
    else:
        b.add("ffmpeg_encoders", "ffmpeg encoders", True, "ok", f"{exe} ({how}) lists libx264 and aac", source)
