"""Where h3doctor keeps its caches (validated rules, probe results)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def cache_dir(env: Mapping[str, str]) -> Path:
    """$H3DOCTOR_CACHE_DIR, else the platform's user cache dir (platformdirs), else ~/.cache/h3doctor."""
    override = env.get("H3DOCTOR_CACHE_DIR")
    if override:
        return Path(override)
    try:
        from platformdirs import user_cache_dir
    except ImportError:  # platformdirs is a dependency; this only guards odd installs
        return Path.home() / ".cache" / "h3doctor"
    return Path(user_cache_dir("h3doctor"))
