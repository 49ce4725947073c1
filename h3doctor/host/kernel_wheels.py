"""The kernel wheels sglang loads for MiniMax-H3 on CUDA, read from their files without importing
them: which `sm_*` targets the library carries (host/fatbin.py) and which torch it was built for.

Which library, as sglang 0.5.23 loads it:
* sgl-kernel (distribution `sglang-kernel`, before it `sgl-kernel`; package `sgl_kernel`):
  imported by `runtime/layers/layernorm.py` at module level on CUDA, so on every H3 launch. Its
  `load_utils._load_architecture_specific_ops` loads `sm90/common_ops.*` on a cc 9.0 GPU and
  `sm100/common_ops.*` on any other, else the package's own `common_ops.*`.
* sageattention: imported by the `sage_attn` backend (`layers/attention/backends/sage_attn.py`).
* flash-attn (Dao's, package `flash_attn`, library `flash_attn_2_cuda*.so`): the `fa2` backend
  (`backends/flash_attn_2.py`).

The torch a wheel was built for: a `+...torchX.Y...` local version (flash-attn's wheel names,
in the installed version or the URL pip recorded in `direct_url.json`), else an exact
`Requires-Dist: torch==X.Y.Z` pin in its METADATA, else -- for sgl-kernel -- the torch the
installed sglang pins beside the very sgl-kernel version installed (a release's pins are built
together). Nothing found is unknown.

Every read is bounded (small text files through `system.read_small`, folder listings capped);
unknown is a value with its reason, never an exception.
"""

from __future__ import annotations

import json
import os
import re

from h3doctor.digits import is_digits
from h3doctor.host import fatbin
from h3doctor.host.system import read_small

_METADATA_BYTES = 1 << 20
_LISTING = 10_000  # entries looked at per folder
KERNELS = {
    # fact prefix: (distribution names, the package folder, what sglang loads from it)
    "sgl_kernel": (("sglang-kernel", "sgl-kernel"), "sgl_kernel"),
    "sage": (("sageattention",), "sageattention"),
    "flash_attn": (("flash-attn",), "flash_attn"),
}
_LOCAL_TORCH = re.compile(r"torch(\d+)\.(\d+)")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _listing(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as it:
            names = []
            for entry in it:
                names.append(entry.name)
                if len(names) >= _LISTING:
                    break
            return sorted(names)
    except (OSError, ValueError):
        return []


def dist_index(paths: list[str]) -> dict[str, tuple[str, str, str]]:
    """Each installed distribution's (site folder, `.dist-info` folder, version), the first on the
    path winning as for an import: every site folder listed once per probe."""
    index: dict[str, tuple[str, str, str]] = {}
    for site in paths:
        for entry in _listing(site):
            if entry.endswith(".dist-info"):
                name, _, version = entry[: -len(".dist-info")].partition("-")
                index.setdefault(_norm(name), (site, os.path.join(site, entry), version))
    return index


def find_dist(index: dict[str, tuple[str, str, str]], names: tuple[str, ...]) -> tuple[str, str, str] | None:
    """(the site folder, its `.dist-info` folder, the version) of the first of `names` installed."""
    return next((index[_norm(n)] for n in names if _norm(n) in index), None)


def _metadata(dist_info: str) -> tuple[str | None, list[str]]:
    """(Version:, Requires-Dist: lines) of a dist-info folder's METADATA, read bounded."""
    text = read_small(os.path.join(dist_info, "METADATA"), _METADATA_BYTES) or ""
    version, requires = None, []
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, _, value = line.partition(":")
        if key == "Version":
            version = value.strip()
        elif key == "Requires-Dist":
            requires.append(value.strip())
    return version, requires


def torch_pin(requires: list[str]) -> str | None:
    """"X.Y" of an exact `Requires-Dist: torch==X.Y.Z` pin."""
    pinned = exact_pin(requires, "torch")
    parts = (pinned or "").split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) >= 2 and is_digits(parts[0]) and is_digits(parts[1]) else None


def exact_pin(requires: list[str], dist: str) -> str | None:
    """The whole version of an exact `Requires-Dist: DIST==V` pin."""
    for line in requires:
        match = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*==\s*([0-9A-Za-z.+!]+)\s*(?:;.*)?$", line)
        if match and _norm(match.group(1)) == _norm(dist):
            return match.group(2)
    return None


def _local_torch(text: str | None) -> str | None:
    local = (text or "").partition("+")[2]
    match = _LOCAL_TORCH.search(local)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def built_for_torch(dist_info: str, version: str) -> tuple[str | None, str]:
    """(the torch "X.Y" a wheel was built for, where that was read) or (None, why not)."""
    meta_version, requires = _metadata(dist_info)
    for text, where in ((meta_version, "its version"), (version, "its folder name")):
        found = _local_torch(text)
        if found:
            return found, f"{where} ({text})"
    direct = read_small(os.path.join(dist_info, "direct_url.json"), 64 * 1024)
    if direct:
        try:
            url = json.loads(direct).get("url")
        except (ValueError, AttributeError):
            url = None
        found = _local_torch(os.path.basename(url)) if isinstance(url, str) else None
        if found:
            return found, "the wheel's name in direct_url.json"
    pinned = torch_pin(requires)
    if pinned:
        return pinned, "its METADATA (Requires-Dist: torch==)"
    return None, "neither its version nor its METADATA names a torch"


def sgl_kernel_file(package: str, cc_int: int | None) -> str | None:
    """The `common_ops` library sgl_kernel's load_utils loads for this compute capability."""
    sub = "sm90" if cc_int == 90 else "sm100"
    for folder in (os.path.join(package, sub), package):
        for name in _listing(folder):
            if name.startswith("common_ops.") and ".so" in name:
                return os.path.join(folder, name)
    return None


def _libraries(site: str, prefix: str, cc_int: int | None) -> list[str]:
    if prefix == "sgl_kernel":
        found = sgl_kernel_file(os.path.join(site, "sgl_kernel"), cc_int)
        return [found] if found else []
    if prefix == "flash_attn":  # the extension sits beside the package: flash_attn_2_cuda.cpython-*.so
        return [os.path.join(site, n) for n in _listing(site) if n.startswith("flash_attn_2_cuda") and n.endswith(".so")]
    folder = os.path.join(site, KERNELS[prefix][1])
    return [os.path.join(folder, n) for n in _listing(folder) if n.endswith(".so")]


def kernel_facts(index: dict[str, tuple[str, str, str]], cc_int: int | None,
                 only: tuple[str, ...] = tuple(KERNELS)) -> dict[str, object]:
    """For each kernel: `<prefix>_sm` (its targets, or None), `<prefix>_torch` (the torch it was
    built for, or None), and `<prefix>_why` (where each was read, or why unknown)."""
    sglang = find_dist(index, ("sglang",))
    sglang_requires = _metadata(sglang[1])[1] if sglang else []
    out: dict[str, object] = {}
    for prefix, (dists, _package) in KERNELS.items():
        if prefix not in only:
            continue
        found = find_dist(index, dists)
        if found is None:
            out.update({f"{prefix}_sm": None, f"{prefix}_torch": None, f"{prefix}_why": "not installed"})
            continue
        site, dist_info, version = found
        libs = _libraries(site, prefix, cc_int)
        targets: set[str] = set()
        whys = []
        for lib in libs:
            read, why = fatbin.targets(lib)
            whys.append(why)
            if read is None:
                targets = None  # one unreadable library: what the loader meets is unknown
                break
            targets.update(read)
        if not libs:
            targets, whys = None, [f"{dist_info}: no CUDA library found where sglang loads it"]
        torch, torch_why = built_for_torch(dist_info, version)
        if torch is None and prefix == "sgl_kernel" and exact_pin(sglang_requires, os.path.basename(dist_info).split("-")[0]) == version:
            torch, torch_why = torch_pin(sglang_requires), f"the installed sglang pins it beside sgl-kernel {version}"
        out.update({f"{prefix}_sm": None if targets is None else tuple(sorted(targets, key=fatbin._order)),
                    f"{prefix}_torch": torch,
                    f"{prefix}_why": "; ".join(whys[:3]) + f"; torch: {torch_why}"})
    return out


def installed_torch(index: dict[str, tuple[str, str, str]]) -> tuple[str | None, str | None, str]:
    """(torch's version, the CUDA it was built for, where read) from its dist-info and the
    `torch/version.py` its build wrote (`cuda = '12.8'`, None for a CPU or ROCm build), without
    importing it."""
    found = find_dist(index, ("torch",))
    if found is None:
        return None, None, "torch is not installed"
    version = _metadata(found[1])[0] or found[2]
    text = read_small(os.path.join(found[0], "torch", "version.py"), 64 * 1024) or ""
    match = re.search(r"^cuda(?:\s*:\s*[^=]+)?\s*=\s*['\"](\d+\.\d+)[^'\"]*['\"]", text, re.M)
    return version, match.group(1) if match else None, os.path.join(found[0], "torch", "version.py")
