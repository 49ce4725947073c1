"""Launches in docker compose files: each service's `entrypoint` + `command` (lists of words or
strings of shell words), its `environment` (mapping or `KEY=value` list), and the GPUs its
device reservations grant (`deploy.resources.reservations.devices` with the `gpu` capability:
`count`, `device_ids`; `count: all` leaves the number to the target).

Variable interpolation (`${VAR}`) needs the `.env` file and the shell: such a command is
reported as not understood, not guessed at.
"""

from __future__ import annotations

from typing import Any

from h3doctor.inputs.argvparts import Context, launches_from_parts
from h3doctor.inputs.launch import Launch, Note
from h3doctor.located import Document


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
        parts = [(base + (key,), service[key]) for key in ("entrypoint", "command") if isinstance(service.get(key), (list, str))]
        image = service.get("image") if isinstance(service.get("image"), str) and service.get("image") else None
        ctx = Context(doc, "compose", label, _environment(service.get("environment")), _gpus(service), image, base + ("image",))
        launches.extend(launches_from_parts(parts, ctx, notes))
    return launches, notes


def _environment(value: Any) -> dict[str, str]:
    env: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            if v is not None:
                env[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, str) and "=" in item:
                k, _, v = item.partition("=")
                env[k] = v
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
