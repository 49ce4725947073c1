"""The memory figures a rule's text says in words where a number alone would read wrong: the
headroom under the GPU's free memory is "leaving X GiB" only while it is one; a negative headroom
is a shortfall, said as one ("the 139.8 GiB free are 2.8 GiB short of it"), never "leaving -2.8 GiB"."""

from __future__ import annotations

from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def headroom_said(headroom_gib: float | None, capacity_gib: float | None) -> str | None:
    """What the peak leaves of the free memory, or how far short that memory falls, in words."""
    if headroom_gib is None or capacity_gib is None:
        return None
    if headroom_gib < 0:
        return f"and the {capacity_gib} GiB free are {-headroom_gib} GiB short of it"
    return f"leaving {headroom_gib + 0.0} GiB of the {capacity_gib} GiB free"  # + 0.0: never "-0.0"


@derives("memory.headroom_said", reads=("derived.memory.headroom_gib", "derived.memory.capacity_gib"))
def memory_words(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001 - the registry's signature
    return {"derived.memory.headroom_said": headroom_said(ctx.get("derived.memory.headroom_gib"),
                                                          ctx.get("derived.memory.capacity_gib"))}
