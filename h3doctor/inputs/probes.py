"""The sglang container's Kubernetes probes, as the kubelet runs them (issue 30 item 15).

A container's `startupProbe`, `livenessProbe` and `readinessProbe`: the handler (`httpGet` path and
port, `tcpSocket`, `exec`, `grpc`) and the timing fields, with Kubernetes' defaults where a field is
not written (initialDelaySeconds 0, periodSeconds 10, timeoutSeconds 1, failureThreshold 3). A
timing field that is not a whole number the API server would accept (a string, a bool, a negative
or absurd number: a pull request may write anything) is unknown, never the default: what reads it
cannot verify. Each probe is located at its key, so a `# h3doctor: ignore[...]` there holds.

The rules read them as `deployment.*` (lint's Kubernetes readers only: a bare command line has no
probes, and the rules reading them do not apply to it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from h3doctor.located import Document, Pos

ROLES = ("startup", "liveness", "readiness")
_HANDLERS = ("httpGet", "tcpSocket", "exec", "grpc")
# Kubernetes' defaults (core/v1 Probe); the API server refuses a value below each minimum
_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1, "failureThreshold": 3}
_MINIMUM = {"initialDelaySeconds": 0, "periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 1}
_MAX_SECONDS = 10 ** 7  # an int32 field; past ~4 months a probe's figure is no real setting


@dataclass(frozen=True)
class Probe:
    role: str  # startup | liveness | readiness
    handler: str  # httpGet | tcpSocket | exec | grpc | unknown
    path: str | None  # httpGet's path ("/" when it names none, as the kubelet asks)
    port: str | None
    timing: dict[str, int | None]  # _DEFAULTS' keys; None: written, but not a value the kubelet runs
    pos: Pos
    at: tuple = ()  # the probe's path in its document (`lint --fix` edits a scalar under it)

    @property
    def budget_s(self) -> int | None:
        """Seconds from the container's start until the kubelet acts on a probe that never
        succeeds: initialDelaySeconds + failureThreshold × periodSeconds."""
        delay, period, threshold = (self.timing[k] for k in ("initialDelaySeconds", "periodSeconds", "failureThreshold"))
        return None if None in (delay, period, threshold) else delay + threshold * period


def container_probes(container: dict[str, Any], doc: Document, path: tuple) -> dict[str, Probe]:
    """role -> the container's probe of that role (a role it does not declare is absent)."""
    found: dict[str, Probe] = {}
    for role in ROLES:
        spec = container.get(f"{role}Probe")
        if isinstance(spec, dict):
            found[role] = _probe(role, spec, doc.key_pos(path + (f"{role}Probe",)), path + (f"{role}Probe",))
    return found


def _probe(role: str, spec: dict[str, Any], pos: Pos, at: tuple) -> Probe:
    handler = next((h for h in _HANDLERS if isinstance(spec.get(h), dict)), "unknown")
    action = spec.get(handler) if handler != "unknown" else {}
    path = port = None
    if handler == "httpGet":
        raw = action.get("path", "/")
        path = raw if isinstance(raw, str) else None
    if handler in ("httpGet", "tcpSocket", "grpc") and isinstance(action.get("port"), (int, str)):
        port = str(action["port"])
    timing = {k: (_seconds(spec[k], _MINIMUM[k]) if k in spec else d) for k, d in _DEFAULTS.items()}
    return Probe(role, handler, path, port, timing, pos, at)


def _seconds(value: Any, minimum: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _MAX_SECONDS:
        return None
    return value


def deployment_facts(probes: dict[str, Probe]) -> dict[str, Any]:
    """The probes as the rules read them (`deployment.<role>.<fact>`); `deployment.probes_read`
    says the launch's deployment was read for probes at all (absent for a bare command line)."""
    facts: dict[str, Any] = {"probes_read": True}
    for role in ROLES:
        probe = probes.get(role)
        facts[f"{role}.handler"] = probe.handler if probe else None
        facts[f"{role}.path"] = probe.path if probe else None
        facts[f"{role}.budget_s"] = probe.budget_s if probe else None
    return facts
