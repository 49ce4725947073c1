"""CUDA's compatibility rules as h3doctor judges them, pure: whether a driver runs torch's CUDA
runtime, and whether a library's GPU code runs on a GPU. Ground floor: the probe's lines
(host/) and the rules' derived values (engine/derivations/kernels.py) read the same answers.
"""

from __future__ import annotations

from h3doctor.digits import is_digits


def major_minor(version: str | None) -> tuple[int, int] | None:
    """ "12.4" -> (12, 4); "13.0+" -> (13, 0); "2.14.1" -> (2, 14); None or other text -> None."""
    parts = (version or "").rstrip("+").split(".")
    if len(parts) < 2 or not all(is_digits(p) and len(p) <= 6 for p in parts[:2]):
        return None
    return int(parts[0]), int(parts[1])


def driver_older(driver_cuda: str | None, torch_cuda: str | None) -> bool | None:
    """Whether the driver cannot run torch's CUDA runtime: its CUDA major is older. Within one
    major an older driver runs a newer runtime (CUDA's minor version compatibility, 11.1 on); only
    PTX the newer toolchain wrote then fails to JIT, which no launch as such is blocked for. None:
    a side unknown, or a driver known only as "at least X" ("13.0+") below torch's major."""
    driver, runtime = major_minor(driver_cuda), major_minor(torch_cuda)
    if driver is None or runtime is None:
        return None
    if driver[0] >= runtime[0]:
        return False
    return None if (driver_cuda or "").endswith("+") else True


def covers(targets: tuple[str, ...], cc_int: int) -> bool | None:
    """Whether a library with these targets runs on a GPU of capability `cc_int` (90 for 9.0):
    its own cubin, or PTX of this or a lower architecture (the driver JIT-compiles it). A cubin of
    a lower minor of the same major would run unless it is arch-specific (`sm_120a` does not run
    on 12.1), which the fatbin headers read do not tell: cannot verify."""
    arches = {t: int(t.rsplit("_", 1)[1]) for t in targets if is_digits(t.rsplit("_", 1)[-1])}
    if f"sm_{cc_int}" in arches or any(t.startswith("compute_") and a <= cc_int for t, a in arches.items()):
        return True
    if any(t.startswith("sm_") and a // 10 == cc_int // 10 and a < cc_int for t, a in arches.items()):
        return None
    return False
