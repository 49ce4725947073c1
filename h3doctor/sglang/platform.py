"""sglang's platform selection on top of the hardware facts: the override variable wins."""

from __future__ import annotations

from h3doctor.facts import PLATFORMS, HardwareFacts
from h3doctor.record import replace


def apply_platform_override(facts: HardwareFacts, env: dict[str, str]) -> HardwareFacts:
    """SGLANG_DIFFUSION_PLATFORM_OVERRIDE wins over detection (catalog 3.2 step 1)."""
    override = (env.get("SGLANG_DIFFUSION_PLATFORM_OVERRIDE") or "").strip().lower()
    if not override or override == facts.platform or override not in PLATFORMS:
        return facts
    return replace(facts, platform=override, source=f"{facts.source} + SGLANG_DIFFUSION_PLATFORM_OVERRIDE")
