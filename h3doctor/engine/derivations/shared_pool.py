"""What sglang's auto-tuner says of a device that shares one memory pool with the host (0.5.20 on,
`server_args/auto_tune.py`), beyond the facts the rules read directly: the swap it names in its
warning, as it prints it (rule H3D419). Hardware facts only, so it costs a format per check."""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@derives("swap_warned_gib")
def swap_warned(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    # sglang's "%.0f GiB" of psutil.swap_memory().total / 1024**3; "unknown" where the fact is
    swap = hw.swap_gib
    return {"derived.swap_warned_gib": "unknown" if swap is None else f"{swap:.0f}"}
