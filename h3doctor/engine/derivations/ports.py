"""Derived values of what sglang's port settling does with an HTTP port no socket can bind
(server_args.py `_adjust_network_ports` and `settle_port`; utils/common.py `is_port_available`)."""

from __future__ import annotations

from h3doctor.engine.derivations.common import is_int
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

PORT_STEP, ATTEMPTS = 42, 100  # settle_port's port_inc and max_attempts


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
