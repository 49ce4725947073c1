"""The CUDA version the NVIDIA driver supports, and torch's, read without a CUDA init.

The driver's: NVML's `nvmlSystemGetCudaDriverVersion` (asked in the probe child, where nvidia-ml-py
is installed: an int such as 12040, the number torch prints in "found version 12040"), else the
driver version in `/proc/driver/nvidia/version` mapped through NVIDIA's published table
(`driver-cuda.json`, each row with its source). A driver newer than the table's last row is written
with a "+" ("13.2+"): at least that, nothing newer judged from it.

The comparison with torch's CUDA is the engine's (engine/derivations/kernels.py).
"""

from __future__ import annotations

import json
import os
from importlib import resources

from h3doctor.digits import is_digits
from h3doctor.host.system import read_small

PROC_VERSION = "proc/driver/nvidia/version"


def _numbers(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if parts and all(is_digits(p) and len(p) <= 6 for p in parts) else None


def rows() -> list[dict[str, str]]:
    """NVIDIA's table as shipped: each row's CUDA, minimum Linux driver and the table row it was read from."""
    return json.loads(resources.files("h3doctor.host").joinpath("driver-cuda.json").read_text(encoding="utf-8"))["rows"]


def table() -> dict[str, str]:
    """{CUDA: minimum driver}."""
    return {row["cuda"]: row["minimum_driver"] for row in rows()}


def cuda_of_nvml(value: object) -> str | None:
    """NVML's (and cudaDriverGetVersion's) int, 12040 -> "12.4"; anything else is unknown."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1000 <= value < 100000:
        return None
    return f"{value // 1000}.{value % 1000 // 10}"


def driver_in(text: str) -> str | None:
    """The driver version on the `NVRM version:` line ("... Kernel Module  550.54.14  Thu Feb ...",
    the open module's "... Kernel Module for x86_64  570.86.15  Release Build ...")."""
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            for word in line.split():
                numbers = _numbers(word)
                if numbers and len(numbers) >= 2 and numbers[0] >= 100:
                    return word
    return None


def cuda_for_driver(driver: str) -> str | None:
    """The newest CUDA whose minimum driver `driver` meets ("+" past the table's last row); None
    for a driver older than every row or not a version."""
    have = _numbers(driver)
    if have is None:
        return None
    ordered = sorted(table().items(), key=lambda kv: _numbers(kv[0]) or ())
    met = [cuda for cuda, minimum in ordered if (_numbers(minimum) or ()) <= have]
    if not met:
        return None
    return met[-1] + ("+" if met[-1] == ordered[-1][0] else "")


def from_proc(root: str = "/") -> tuple[str | None, str | None, str]:
    """(driver version, its CUDA, why) from `/proc/driver/nvidia/version`, read bounded."""
    text = read_small(os.path.join(root, PROC_VERSION))
    if text is None:
        return None, None, "no readable /proc/driver/nvidia/version (no NVIDIA kernel driver loaded)"
    driver = driver_in(text)
    if driver is None:
        return None, None, "/proc/driver/nvidia/version names no driver version h3doctor reads"
    cuda = cuda_for_driver(driver)
    why = (f"driver {driver}, CUDA {cuda} by NVIDIA's driver table" if cuda
           else f"driver {driver} is older than every CUDA in NVIDIA's driver table h3doctor holds")
    return driver, cuda, why
