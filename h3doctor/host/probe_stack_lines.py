"""The probe's report lines for the CUDA stack (issue 29, kernels and driver): the driver's CUDA
against torch's, each kernel library sglang loads with its `sm_*` targets and the torch it was
built for, and ffprobe's version. Pure: observations from the probe child (NVML's CUDA version,
torch.version.cuda) and from host/cuda_stack.py, faked in the tests."""

from __future__ import annotations

from h3doctor.digits import is_digits
from h3doctor.cuda_compat import covers, driver_older, major_minor
from h3doctor.host.cuda_driver import cuda_of_nvml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# fact prefix, label, when sglang 0.5.23 loads it (host/kernel_wheels.py)
KERNEL_LINES = (("sgl_kernel", "sgl-kernel", "imported on every CUDA launch (layernorm.py)"),
                ("sage", "sageattention", "loaded by --attention-backend sage_attn, which falls back to FlashAttention "
                                          "when it does not import (platforms/cuda.py:165-169)"),
                ("flash_attn", "flash-attn", "loaded by --attention-backend fa2"))


def stack_lines(b: Any) -> None:
    """Add the driver, torch CUDA, kernel and ffprobe lines to the probe's builder `b`."""
    cuda = b.platform == "cuda"
    _driver_lines(b, cuda)
    cc = (b.values.get("compute_capability") or "").replace(".", "")
    cc_int = int(cc) if is_digits(cc) else None
    kernels = dict(b.host.get("kernels_cc90") or {})
    if cc_int != 90:  # sgl_kernel loads sm100/ on every GPU but a cc 9.0 one
        kernels.update(b.host.get("kernels_other") or {})
    for prefix, label, when in KERNEL_LINES:
        _kernel_lines(b, cuda, cc_int, prefix, label, when, kernels)
    version, exe = b.host.get("ffprobe_version"), b.host.get("ffprobe_exe")
    b.add("ffprobe_version", "ffprobe version", version, "ok" if version else "unknown" if exe else "n/a",
          f"{exe}; sglang needs no minimum (it falls back for an ffprobe before 6.0, material_io.py:302)" if version
          else (b.host.get("ffprobe_why") or "not read") + ("" if exe else " (the ffmpeg + ffprobe line says what that stops)"),
          "ffprobe -version (PATH, no shell, bounded)")


def _driver_lines(b: Any, cuda: bool) -> None:
    nvml = b.obs.get("nvml") or {}
    torch = b.obs.get("torch") or {}
    from_nvml = cuda_of_nvml(nvml.get("cuda_driver"))
    driver = from_nvml or b.host.get("driver_proc_cuda")
    source = (b.child("NVML nvmlSystemGetCudaDriverVersion") if from_nvml
              else "/proc/driver/nvidia/version and NVIDIA's driver table (host/driver-cuda.json)")
    torch_cuda = torch.get("cuda") if torch.get("ok") else b.host.get("torch_file_cuda")
    torch_source = (b.child("torch.version.cuda in the probe child") if torch.get("ok")
                    else f"{b.host.get('torch_file_where') or 'torch/version.py'} (not imported)")
    older = driver_older(driver, torch_cuda)
    if not cuda:
        status, why = ("n/a", f"sglang does not use CUDA on {b.platform or 'an unknown platform'}")
    elif driver is None:
        status, why = "unknown", b.host.get("driver_proc_why") or "no NVML and no /proc/driver/nvidia/version"
    elif older:
        status, why = "problem", (f"older than torch's CUDA {torch_cuda}: torch's first CUDA call fails 'The NVIDIA "
                                  "driver on your system is too old' (rule H3D614)")
    elif older is None:
        status, why = "unknown", f"torch's CUDA {torch_cuda or 'unknown'} cannot be compared with it"
    else:
        same = major_minor(driver) >= (major_minor(torch_cuda) or (0, 0))
        status, why = "ok", ("runs torch's CUDA " + str(torch_cuda) + ("" if same else
                             " under CUDA's minor version compatibility (only PTX from the newer toolchain would not JIT)"))
    b.add("driver_cuda", "driver CUDA", driver, status, why, source)
    b.add("torch_cuda", "torch CUDA", torch_cuda, "ok" if torch_cuda else "unknown" if cuda else "n/a",
          "the CUDA runtime torch was built for" if torch_cuda else "a torch without CUDA, or unread", torch_source)


def _kernel_lines(b: Any, cuda: bool, cc_int: int | None, prefix: str, label: str, when: str,
                  kernels: dict[str, Any]) -> None:
    targets, built, why = kernels.get(f"{prefix}_sm"), kernels.get(f"{prefix}_torch"), kernels.get(f"{prefix}_why") or ""
    installed = why != "not installed"
    shown = tuple(targets) if targets is not None else None
    if not cuda or not installed:
        status = "n/a" if not cuda or prefix != "sgl_kernel" else "problem"
        reason = (f"not installed; {when}" if not installed else f"sglang loads it only on CUDA") + (
            ": sglang's import fails" if status == "problem" else "")
        b.add(f"{prefix}_sm", f"{label} targets", shown, status, reason, "the wheel's files (no import)")
        b.add(f"{prefix}_torch", f"{label} built for torch", built, "n/a" if status == "n/a" else status, reason,
              "the wheel's metadata (no import)")
        return
    fits = None if shown is None or cc_int is None else covers(shown, cc_int)
    bad = "n/a" if prefix == "sage" else "problem"  # a broken sage costs speed, not the server: sglang falls back
    status = {True: "ok", False: bad, None: "unknown"}[fits]
    reason = (f"{when}; " + ("carries code for this GPU" if fits else "no code for this GPU: 'no kernel image is "
              "available for execution on the device' (rule H3D615)" if fits is False else
              "whether it runs on this GPU cannot be told") + (f" [{why}]" if why else ""))
    b.add(f"{prefix}_sm", f"{label} targets", shown, status, reason, "the .so's .nv_fatbin headers (no import)")
    torch = major_minor(b.values.get("torch_version"))
    mm = major_minor(built)
    verdict = None if mm is None or torch is None else mm == torch
    b.add(f"{prefix}_torch", f"{label} built for torch", built, {True: "ok", False: bad, None: "unknown"}[verdict],
          f"installed torch {b.values.get('torch_version') or 'unknown'}" + (
              ": a build for another torch fails to load with 'undefined symbol' (rule H3D616)" if verdict is False else ""),
          "the wheel's version, METADATA or sglang's pins (no import)")
