"""Where h3doctor keeps its caches (validated rules, probe results), and how it writes files."""

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


def write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory and os.replace it into place, so a
    reader never sees half a file (a full disk, a crash, two runs at once). OSError propagates;
    the temporary file is removed."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
