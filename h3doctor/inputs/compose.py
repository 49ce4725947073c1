"""Launches in docker compose files: each service's `entrypoint` + `command` (lists of words or
strings of shell words), its `environment` (mapping or `KEY=value` list), and the GPUs its
device reservations grant (`deploy.resources.reservations.devices` with the `gpu` capability:
`count`, `device_ids`; `count: all` leaves the number to the target); its /dev/shm and memory
cap (`shm_size`, `ipc`, `deploy.resources.limits.memory`: inputs/container_specs.py).

Compose interpolates `$VAR` / `${VAR…}` from the shell and `.env` of the machine running it: such a
word is kept marked (h3doctor/unresolved.py), "any value" where it reaches sglang; `$$` is a
literal `$`, so a `sh -c` script's `$$TP` is the container's `$TP`, read from `environment:`.
"""

from __future__ import annotations

import re
from typing import Any

from h3doctor.inputs.argvparts import Context, launches_from_parts
from h3doctor.inputs.container_specs import compose_spec
from h3doctor.inputs.launch import Launch, Note
from h3doctor.located import Document
from h3doctor.unresolved import marked

# compose's interpolation: `$$`, `${…}` (defaults and errors inside), `$NAME`
_INTERPOLATION = re.compile(r"\$\$|\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*")


def is_compose(data: Any, filename: str) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        return False
    name = filename.rsplit("/", 1)[-1]
    return name.startswith(("compose", "docker-compose")) or all(isinstance(s, dict) for s in data["services"].values())


def read_compose(doc: Document) -> tuple[list[Launch], list[Note]]:
    launches: list[Launch] = []
    notes: list[Note] = []
    for name, service in (doc.data.get("services") or {}).items():
        if not isinstance(service, dict):
            continue
        label = f"service {name}"
        base = ("services", name)
        parts = [(base + (key,), _interpolated(service[key])) for key in ("entrypoint", "command")
                 if isinstance(service.get(key), (list, str))]
        image = service.get("image") if isinstance(service.get("image"), str) and service.get("image") else None
        ctx = Context(doc, "compose", label, _environment(service.get("environment")), _gpus(service), image, base + ("image",))
        found = launches_from_parts(parts, ctx, notes)
        if found:
            spec, at = compose_spec(service, doc, base, image)
            for launch in found:
                launch.container, launch.container_pos = spec, dict(at)
        launches.extend(found)
    return launches, notes


def _interpolated(value: list | str) -> list | str:
    """A list's words as compose hands them on; a string is read by the shell word reader, which
    keeps its expansions marked itself."""
    if isinstance(value, str):
        return value
    return [_interpolate(str(v)) for v in value]


def _interpolate(text: str) -> str:
    return _INTERPOLATION.sub(lambda m: "$" if m.group() == "$$" else marked(m.group()), text)


def _environment(value: Any) -> dict[str, str]:
    env: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            if v is not None:
                env[str(k)] = str(v).lower() if isinstance(v, bool) else _interpolate(str(v))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str) and "=" in item:
                k, _, v = item.partition("=")
                env[k] = _interpolate(v)
    return env


def _gpus(service: dict[str, Any]) -> int | None:
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    total, said = 0, False
    for device in devices if isinstance(devices, list) else []:
        if not isinstance(device, dict) or "gpu" not in (device.get("capabilities") or []):
            continue
        if isinstance(device.get("device_ids"), list):
            total, said = total + len(device["device_ids"]), True
        elif isinstance(device.get("count"), int) and not isinstance(device.get("count"), bool):
            total, said = total + device["count"], True
        else:
            return None  # `count: all` (or unset, which means all): as many as the host has
    return total if said else None
