"""Derived values of a manifest's probes against the launch's start-up (issue 30 item 15).

sglang starts its HTTP server only after every worker has loaded the model, so no probe endpoint
answers during the load; from 0.5.18 `/health` answers 503 until the warmup is done, and
`/liveness` answers as soon as the server is up (flagdata/runtime-facts.json `startup`). The probe
that kills a container which never answers is its startupProbe when it has one (liveness waits for
it), else its livenessProbe; a readinessProbe only holds traffic back.

The time the kill comes (`budget_s`, inputs/probes.py) is compared with a floor and a ceiling of
load + warmup: the partition's published bytes at a fast local disk's read (no start is shorter)
and at a network volume's (h3doctor calls that enough), with the warmup allowance on the ceiling
where the probe waits for the warmup. Below the floor the kill is certain; between the two it is
not known ("cannot verify", never a pass); at or over the ceiling it passes.
"""

from __future__ import annotations

import math

from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang.releases import in_range, published_partition, startup_facts

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

_ROLES = ("startup", "liveness")  # the probes that restart a container, in the order the kubelet runs them
_UP_AFTER_LOAD = ("/liveness",)  # answers as soon as the HTTP server is up (from 0.5.18)


@derives("probe.killer", "probe.budget_s", "probe.short_s", "probe.floor_s", "probe.ceiling_s", "probe.failure_threshold",
         "probe.readiness_on_health", "probe_unknown",
         reads=("deployment.probes_read", "deployment.startup.handler", "deployment.startup.path",
                "deployment.startup.budget_s", "deployment.liveness.handler", "deployment.liveness.path",
                "deployment.liveness.budget_s", "deployment.readiness.handler", "deployment.readiness.path",
                "derived.model_variant_subfolder", "release.version"))
def probe_budget(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    # nothing restarts the container (short_s -1): the values of a launch with no probe that kills
    out: dict[str, Any] = {"derived.probe.killer": None, "derived.probe.budget_s": None, "derived.probe.short_s": -1.0,
                           "derived.probe.floor_s": None, "derived.probe.ceiling_s": None,
                           "derived.probe.failure_threshold": None, "derived.probe.readiness_on_health": None,
                           "derived.probe_unknown": {}}
    if not ctx.get("deployment.probes_read"):
        return out
    out["derived.probe.readiness_on_health"] = _asks_health(ctx)
    if out["derived.probe.readiness_on_health"] is None:
        out["derived.probe_unknown"] = {"readiness_on_health": "what the readinessProbe's command (exec or grpc) asks"}
    role = next((k for k in _ROLES if ctx.get(f"deployment.{k}.handler")), None)
    if role is None:  # nothing restarts the container: a slow start is only not ready yet
        return out
    out["derived.probe.killer"] = role
    version = ctx.get("release.version") or r.release.version
    facts = startup_facts(version)
    size = _partition_bytes(r, ctx, version)
    handler, path = ctx.get(f"deployment.{role}.handler"), ctx.get(f"deployment.{role}.path")
    budget = out["derived.probe.budget_s"] = ctx.get(f"deployment.{role}.budget_s")
    waits_for_warmup = _waits_for_warmup(handler, path, version)
    if facts is None or size is None or waits_for_warmup is None or budget is None:
        out["derived.probe.short_s"] = None
        out["derived.probe_unknown"]["short_s"] = _unknown_why(facts, size, waits_for_warmup, budget, role)
        return out
    floor = size / facts["load_floor_bytes_per_s"] + (facts["warmup_floor_s"] if waits_for_warmup else 0)
    ceiling = size / facts["load_ceiling_bytes_per_s"] + (facts["warmup_allowance_s"] if waits_for_warmup else 0)
    out["derived.probe.floor_s"], out["derived.probe.ceiling_s"] = round(floor), math.ceil(ceiling)
    out["derived.probe.failure_threshold"] = math.ceil(ceiling / facts["probe_period_s"])
    if budget < floor:
        out["derived.probe.short_s"] = round(floor - budget)
    elif budget < ceiling:  # it may load in time, or not: the disk decides
        out["derived.probe.short_s"] = None
        out["derived.probe_unknown"]["short_s"] = (
            f"whether the load{' and warmup' if waits_for_warmup else ''} ends within the {role} probe's {budget} s: "
            f"at least {round(floor)} s, up to {math.ceil(ceiling)} s, as fast as the disk reads the weights")
    else:
        out["derived.probe.short_s"] = round(floor - budget)
    return out


def _asks_health(ctx: dict[str, Any]) -> bool | None:
    """Whether the readinessProbe asks /health (None: an exec or grpc probe, which may, or may not)."""
    handler = ctx.get("deployment.readiness.handler")
    if handler in ("exec", "grpc", "unknown"):
        return None
    return handler == "httpGet" and (ctx.get("deployment.readiness.path") or "").split("?")[0] == "/health"


def _partition_bytes(r: Any, ctx: dict[str, Any], version: str) -> int | None:
    """The published bytes of the partition the launch loads (runtime-facts.json `downloads`); None
    for a model h3doctor has no published size of (a local folder: its files are not read here)."""
    path = r.args.get("model_path") if r is not None else None
    if not isinstance(path, str):
        return None
    return published_partition(version, path, ctx.get("derived.model_variant_subfolder") or r.args.get("model_subfolder"))[1]


def _waits_for_warmup(handler: str | None, path: str | None, version: str) -> bool | None:
    """Whether the probe fails until the warmup is done too (None: h3doctor cannot tell what it checks)."""
    if handler == "tcpSocket":
        return False  # the port listens once the HTTP server is up, after the load
    if handler != "httpGet" or path is None:
        return None  # an exec or grpc probe checks what its command or service says
    if path.split("?")[0] in _UP_AFTER_LOAD:
        return False
    facts = startup_facts(version)
    gated = facts is not None and in_range(version, facts["health_gated_on_warmup"]["versions"])
    return gated or path.split("?")[0] != "/health"  # other paths wait in sglang's warmup middleware


def _unknown_why(facts, size, waits_for_warmup, budget, role) -> str:
    if facts is None:
        return "how long this release takes to answer a probe"
    if size is None:
        return "how many bytes the launch loads (no published size for its --model-path)"
    if waits_for_warmup is None:
        return f"what the {role} probe's command (exec or grpc) checks"
    return f"the {role} probe's timing (a field that is no whole number of seconds Kubernetes accepts)"
