"""What the probe reads of the CUDA stack in this process, without importing torch or a kernel:
the driver's CUDA from `/proc/driver/nvidia/version` (NVML's exact figure comes from the probe
child), torch's version and CUDA from its files, the kernel libraries' targets and the torch
they were built for, and ffprobe's version. `root` and `paths` are "/" and `sys.path` except in
tests, which hand faked trees."""

from __future__ import annotations

import os
import sys

from h3doctor.host import cuda_driver, ffmpeg, kernel_wheels


def site_dirs(paths: list[str] | None = None) -> list[str]:
    """The folders on the import path that exist (where the wheels sglang imports are installed)."""
    return [p for p in (sys.path if paths is None else paths) if p and os.path.isdir(p)]


def observe(env: dict[str, str], root: str = "/", paths: list[str] | None = None) -> dict[str, object]:
    index = kernel_wheels.dist_index(site_dirs(paths))
    driver, driver_cuda, driver_why = cuda_driver.from_proc(root)
    torch_version, torch_cuda, torch_where = kernel_wheels.installed_torch(index)
    # sgl_kernel loads sm90/ on a cc 9.0 GPU and sm100/ on any other: both are read, the probe's
    # builder picks by the capability the child reports
    kernels = {90: kernel_wheels.kernel_facts(index, 90), None: kernel_wheels.kernel_facts(index, None, ("sgl_kernel",))}
    probe_version, probe_exe, probe_why = ffmpeg.ffprobe_version(env)
    return {"driver_proc": driver, "driver_proc_cuda": driver_cuda, "driver_proc_why": driver_why,
            "torch_file_version": torch_version, "torch_file_cuda": torch_cuda, "torch_file_where": torch_where,
            "kernels_cc90": kernels[90], "kernels_other": kernels[None],
            "ffprobe_version": probe_version, "ffprobe_exe": probe_exe, "ffprobe_why": probe_why}
