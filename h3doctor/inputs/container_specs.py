"""What a compose service or a Kubernetes pod template says of its container's host facts, as a
`ContainerSpec` (sglang/container_facts.py, the same one a `docker run` line's reading gives):
its /dev/shm, its memory cap and its image; with where each is said, so a finding about it
points at that key.

* compose: `ipc: host` (the host's /dev/shm), `ipc: none` (none), another `ipc:` a namespace the
  file may not show (not known); a volume or `tmpfs:` on /dev/shm; else `shm_size` (a number is
  bytes, a string as docker parses it), else the runtime's 64 MiB. The memory cap is
  `deploy.resources.limits.memory`, else `mem_limit`.
* Kubernetes: the pod's `hostIPC: true` (the node's /dev/shm); a volume mounted at /dev/shm: an
  `emptyDir` with `medium: Memory` holds its `sizeLimit`, else the pod's memory limit (the sum of
  its containers' `limits.memory`, as the kubelet sizes a memory-backed emptyDir), else the node's
  memory; a `hostPath` of /dev/shm the node's; another volume not known; no volume there: the
  runtime's 64 MiB (containerd's and CRI-O's default). The memory cap is `resources.limits.memory`.

A value the runtime would refuse (a size that is not one) is not known here, never a guess: the
rules that read it cannot verify.
"""

from __future__ import annotations

import re
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.located import Document, Pos
from h3doctor.safeload import excerpt
from h3doctor.sglang.container_facts import DEFAULT_SHM_BYTES, ContainerSpec, gib, runtime_size_bytes

# where each fact of a spec is said: fact name (HardwareFacts) -> position of its key
Positions = dict[str, Pos]

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)(?:([eE][-+]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m))?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18, "m": -3}


def quantity_bytes(value: Any) -> int | None:
    """A Kubernetes resource quantity (`16Gi`, `512M`, `1e9`, a number) in bytes; None: not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value) if value >= 0 else None
    text = value.strip() if isinstance(value, str) and len(value) <= 40 else ""
    m = _QUANTITY.match(text)
    if m is None:
        return None
    number, exponent, suffix = float(m.group(1)), m.group(2), m.group(3)
    if exponent:
        return int(number * 10 ** int(exponent[1:]))
    if suffix in _BINARY:
        return int(number * 1024 ** _BINARY[suffix])
    return int(number * 10 ** _DECIMAL.get(suffix or "", 0))


_DEFAULT = (gib(DEFAULT_SHM_BYTES), "the runtime's default for a container without a /dev/shm of its own (64 MiB)")


# --- compose ---------------------------------------------------------------------------------------

def compose_spec(service: dict[str, Any], doc: Document, base: tuple, image: str | None) -> tuple[ContainerSpec, Positions]:
    at: Positions = {}
    shm, source, where = _compose_shm(service)
    at["shm_gib"] = doc.key_pos(base + (where or ()))  # the key that gives it, else the service's own
    memory, memory_source = None, None
    limits = _path(service, ("deploy", "resources", "limits"))
    said = [(path, value) for path, value in ((("deploy", "resources", "limits", "memory"), (limits or {}).get("memory")),
                                              (("mem_limit",), service.get("mem_limit"))) if value is not None]
    if said:  # the deploy limit first, as compose applies it over mem_limit
        path, value = said[0]
        n = _compose_bytes(value, path[-1])
        memory, memory_source = (gib(n), f"{'.'.join(path)}: {excerpt(str(value))}") if n else (None, None)
        at["host_memory_gib"] = doc.key_pos(base + path)
    return ContainerSpec(shm, source, memory, memory_source, image), at


def _path(data: Any, path: tuple) -> dict[str, Any] | None:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


def _compose_shm(service: dict[str, Any]) -> tuple[float | str | None, str, tuple | None]:
    ipc = service.get("ipc")
    if ipc == "host":
        return "host", "ipc: host (the host's /dev/shm)", ("ipc",)
    if ipc == "none":
        return 0.0, "ipc: none (no /dev/shm is mounted)", ("ipc",)
    if isinstance(ipc, str) and ipc not in ("", "private", "shareable"):
        return None, f"ipc: {excerpt(ipc)} (that namespace's /dev/shm, which the file does not show)", ("ipc",)
    mounted = _compose_mount(service)
    if mounted is not None:
        return mounted
    if "shm_size" in service:
        n = _compose_bytes(service["shm_size"], "shm_size")
        if n is None:
            return None, f"shm_size: {excerpt(str(service['shm_size']))} is not a size docker reads", ("shm_size",)
        if n:
            return gib(n), f"shm_size: {excerpt(str(service['shm_size']))}", ("shm_size",)
    return _DEFAULT[0], f"compose: {_DEFAULT[1]}", None


def _compose_mount(service: dict[str, Any]) -> tuple[float | str | None, str, tuple] | None:
    for i, volume in enumerate(service.get("volumes") or [] if isinstance(service.get("volumes"), list) else []):
        if isinstance(volume, str):
            parts = volume.split(":")
            if len(parts) >= 2 and parts[1].rstrip("/") == "/dev/shm":
                if parts[0].rstrip("/") == "/dev/shm":
                    return "host", "a bind of the host's /dev/shm", ("volumes", i)
                return None, f"volume {excerpt(volume)} on /dev/shm", ("volumes", i)
        elif isinstance(volume, dict) and str(volume.get("target", "")).rstrip("/") == "/dev/shm":
            if volume.get("type") == "bind" and str(volume.get("source", "")).rstrip("/") == "/dev/shm":
                return "host", "a bind of the host's /dev/shm", ("volumes", i)
            size = (volume.get("tmpfs") or {}).get("size") if volume.get("type") == "tmpfs" and isinstance(volume.get("tmpfs"), dict) else None
            n = _compose_bytes(size, "tmpfs.size") if size is not None else None
            if n:
                return gib(n), f"a tmpfs of {excerpt(str(size))} on /dev/shm", ("volumes", i)
            return None, "a volume on /dev/shm whose size the file does not give", ("volumes", i)
    tmpfs = service.get("tmpfs")
    for i, entry in enumerate([tmpfs] if isinstance(tmpfs, str) else tmpfs if isinstance(tmpfs, list) else []):
        path, _, options = str(entry).partition(":")
        if path.rstrip("/") == "/dev/shm":
            size = next((o[5:] for o in options.split(",") if o.startswith("size=")), None)
            n = _compose_bytes(size, "tmpfs size") if size is not None else None
            where = ("tmpfs", i) if isinstance(tmpfs, list) else ("tmpfs",)
            return (gib(n), f"tmpfs {excerpt(str(entry))}", where) if n else (
                None, f"tmpfs {excerpt(str(entry))} with no size the file gives", where)
    return None


def _compose_bytes(value: Any, key: str) -> int | None:
    """A compose size: a number is bytes, a string as docker's units read it; None: not a size."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    try:
        return runtime_size_bytes(str(value).strip(), key)
    except UsageError:
        return None


# --- Kubernetes ------------------------------------------------------------------------------------

def pod_spec(spec: dict[str, Any], container: dict[str, Any], doc: Document, spec_path: tuple, container_path: tuple,
             image: str | None) -> tuple[ContainerSpec, Positions]:
    at: Positions = {}
    shm, source, where = _pod_shm(spec, container)
    at["shm_gib"] = doc.key_pos(spec_path + where if where is not None else container_path)
    limit = _limits(container).get("memory")
    memory, memory_source = None, None
    if limit is not None:
        n = quantity_bytes(limit)
        memory = gib(n) if n else None
        memory_source = f"resources.limits.memory: {excerpt(str(limit))}" if memory is not None else None
        at["host_memory_gib"] = doc.key_pos(container_path + ("resources", "limits", "memory"))
    return ContainerSpec(shm, source, memory, memory_source, image), at


def _limits(container: Any) -> dict[str, Any]:
    resources = container.get("resources") if isinstance(container, dict) else None
    limits = resources.get("limits") if isinstance(resources, dict) else None
    return limits if isinstance(limits, dict) else {}


def _pod_shm(spec: dict[str, Any], container: dict[str, Any]) -> tuple[float | str | None, str, tuple | None]:
    if spec.get("hostIPC") is True:
        return "host", "hostIPC: true (the node's /dev/shm)", ("hostIPC",)
    volumes = {v.get("name"): (i, v) for i, v in enumerate(spec.get("volumes") or []) if isinstance(v, dict)} \
        if isinstance(spec.get("volumes"), list) else {}
    mounts = container.get("volumeMounts") if isinstance(container.get("volumeMounts"), list) else []
    for mount in mounts:
        if not isinstance(mount, dict) or str(mount.get("mountPath", "")).rstrip("/") != "/dev/shm":
            continue
        i, volume = volumes.get(mount.get("name"), (None, None))
        if volume is None:
            return None, f"volumeMount {excerpt(str(mount.get('name')))} on /dev/shm names no volume of the pod", None
        where = ("volumes", i)
        empty = volume.get("emptyDir")
        if isinstance(empty, dict) and empty.get("medium") == "Memory":
            return _memory_empty_dir(spec, empty, where)
        host = volume.get("hostPath")
        if isinstance(host, dict) and str(host.get("path", "")).rstrip("/") == "/dev/shm":
            return "host", "a hostPath of the node's /dev/shm", where
        return None, f"volume {excerpt(str(volume.get('name')))} on /dev/shm is not a memory-backed emptyDir", where
    return _DEFAULT[0], f"Kubernetes: {_DEFAULT[1]}; no emptyDir with medium: Memory is mounted at /dev/shm", None


def _memory_empty_dir(spec: dict[str, Any], empty: dict[str, Any], where: tuple) -> tuple[float | str | None, str, tuple]:
    if "sizeLimit" in empty:
        n = quantity_bytes(empty["sizeLimit"])
        if n is None:
            return None, f"emptyDir sizeLimit {excerpt(str(empty['sizeLimit']))} is not a Kubernetes quantity", where
        return gib(n), f"emptyDir (medium: Memory, sizeLimit {excerpt(str(empty['sizeLimit']))}) at /dev/shm", where
    limits = [_limits(c).get("memory") for c in spec.get("containers") or [] if isinstance(c, dict)]
    if limits and all(v is not None for v in limits):
        sizes = [quantity_bytes(v) for v in limits]
        if all(s is not None for s in sizes):
            return gib(sum(sizes)), "emptyDir (medium: Memory, no sizeLimit) at /dev/shm: the pod's memory limit", where
        return None, "emptyDir (medium: Memory, no sizeLimit) at /dev/shm: the pod's memory limit is not a quantity", where
    return "memory", "emptyDir (medium: Memory, no sizeLimit, no pod memory limit) at /dev/shm: the node's memory", where
