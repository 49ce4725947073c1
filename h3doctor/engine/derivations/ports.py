"""Derived values of what sglang's port settling does with an HTTP port no socket can bind
(server_args.py `_adjust_network_ports` and `settle_port`; utils/common.py `is_port_available`)."""

from __future__ import annotations

from h3doctor.engine.derivations.common import is_int
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

PORT_STEP, ATTEMPTS = 42, 100  # settle_port's port_inc and max_attempts
PORTS = 65536  # 0-65535: bind() refuses anything else
WRAP_LOW, WRAP_HIGH = 5000, 6000  # settle_port's random restart from 60000 on
DEFAULT_SCHEDULER_PORT, SCHEDULER_JITTER = 5555, 100  # the default scheduler port moves up by randint(0, 100)


def _http_port_fate(a: dict[str, Any]) -> tuple[str | None, str | None]:
    """(kind, where the server ends up) for a --port outside 0-65535 that the launch binds.

    bind() overflows on it, so is_port_available says no and settle_port moves on: from 60000 up to
    a random port in 5000-6000, below it 42 ports higher each time, for at most 100 tries."""
    port = a.get("port")
    needs_http = bool(a.get("enable_metrics")) or str(a.get("disagg_role") or "monolithic").lower() in ("monolithic", "server")
    if not needs_http or not is_int(port) or 0 <= port <= 65535:
        return None, None
    if a.get("strict_ports"):
        return "strict", None
    if port >= 60000:
        return "moved", "5000-6000 (one at random)"
    last = port + PORT_STEP * (ATTEMPTS - 1)
    if last < 0:
        return "exhausted", None
    first = port % PORT_STEP  # the first of port + 42k that is not negative: bindable as root
    unprivileged = first + PORT_STEP * -(-(1024 - first) // PORT_STEP)  # the first from 1024 on
    if unprivileged > last:
        return "moved", f"{first} (as root; without root no try is bindable and the launch fails)"
    return "moved", f"{first} as root, {unprivileged} otherwise"


@derives("http_port_fallback", "http_port_error", fallback={"http_port_fallback": None, "http_port_error": None})
def http_port(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    fate, fallback = _http_port_fate(r.args)
    port = r.args.get("port")
    error = {
        "strict": f"HTTP port {port} is unavailable and --strict-ports is enabled. "
        "Either use a different port or disable --strict-ports.",
        "exhausted": f"Failed to find available port after {ATTEMPTS} attempts (started from port {port})",
    }.get(fate or "")
    return {"derived.http_port_fallback": fallback, "derived.http_port_error": error}


def _scheduler_ports_start(a: dict[str, Any]) -> str | None:
    """Where settle_port starts the try that fails when --dp-size needs more scheduler ports than
    there are (server_args.py `_adjust_network_ports`, one scheduler port per data-parallel
    replica, 0.5.18+), or None when the ports may suffice.

    The replicas take consecutive ports from the scheduler port S up to 65535. 65536 does not bind,
    so settle_port restarts at a random port in 5000-6000: below S it fills up to S - 1, then the
    try from S finds only taken ports (42 apart, 100 tries); from S on it is taken, and the try from
    65536 fails. At most 65536 - min(S, 5000) ports are handed out, so a larger --dp-size always
    fails. The start is then S or 65536; with the default scheduler port S itself is a random draw
    (5555 plus 0-100), which the message names as a range."""
    dp, port = a.get("dp_size"), a.get("scheduler_port")
    if a.get("strict_ports") or not is_int(dp) or not is_int(port) or not 0 <= port < PORTS:
        return None
    if dp <= PORTS - min(port, WRAP_LOW):
        return None
    if port == DEFAULT_SCHEDULER_PORT:
        return f"{port}-{port + SCHEDULER_JITTER} or {PORTS}"
    if port < WRAP_LOW:
        return str(PORTS)  # every restart lands on a port already taken
    if port > WRAP_HIGH:
        return str(port)  # every restart lands below S
    return f"{port} or {PORTS}"


@derives("scheduler_ports_error", fallback={"scheduler_ports_error": None})
def scheduler_ports(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    start = _scheduler_ports_start(r.args)
    error = None if start is None else f"Failed to find available port after {ATTEMPTS} attempts (started from port {start})"
    return {"derived.scheduler_ports_error": error}
