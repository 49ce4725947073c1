"""Per-component residency, re-implemented from sglang 0.5.23's selector rules.

Sources: runtime/managers/memory_managers/layerwise_offload_components.py,
component_residency.py, and ServerArgs.residency_mode / explicit_residency_mode
(server_args.py:1847-1934, 1991-2015). The four H3 components are transformer,
text_encoder, video_vae and audio_vae.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Iterable


RESIDENT = "resident"
COMPONENT_OFFLOAD = "component-offload"
SNAPSHOT_OFFLOAD = "snapshot-offload"
LAYERWISE_OFFLOAD = "layerwise-offload"
MODES = (COMPONENT_OFFLOAD, LAYERWISE_OFFLOAD, RESIDENT, SNAPSHOT_OFFLOAD)

H3_COMPONENTS = ("transformer", "text_encoder", "video_vae", "audio_vae")
_DIT = {"transformer", "video_dit", "audio_dit"}
_VAE_CPU = {"vae", "video_vae", "audio_vae", "vocoder"}
_VAE_LAYERWISE = {"vae", "video_vae"}  # the layerwise `vae` group excludes audio_vae
_VAE_RESIDENCY = {"vae", "video_vae", "audio_vae"}  # the --component-residency `vae` group includes it
_DEFAULT_GROUP = ("text_encoder", "image_encoder", "vae")
_GROUP_PRECEDENCE = ("dit", "text_encoder", "image_encoder", "vae")


class ResidencyError(ValueError):
    """sglang's ComponentResidencyError / offload ValueErrors (catalog B4, B7)."""


def is_dit(c: str) -> bool:
    return c in _DIT


def is_text_encoder(c: str) -> bool:
    return c.startswith("text_encoder") or c.endswith("text_encoder")


def is_image_encoder(c: str) -> bool:
    return c == "image_encoder"


def legacy_flag(c: str) -> str | None:
    if is_dit(c):
        return "dit_cpu_offload"
    if is_text_encoder(c):
        return "text_encoder_cpu_offload"
    if is_image_encoder(c):
        return "image_encoder_cpu_offload"
    if c in _VAE_CPU:
        return "vae_cpu_offload"
    return None


def _split(values: Any) -> list[str]:
    raw = [values] if isinstance(values, str) else list(values or [])
    return [part for value in raw for part in str(value).split(",")]


def normalize_layerwise(values: Any) -> list[str] | None:
    if values is None:
        return None
    out: list[str] = []
    for part in _split(values):
        name = part.strip().replace("-", "_").lower()
        if not name:
            continue
        for expanded in _DEFAULT_GROUP if name == "default" else (name,):
            if expanded == "all":
                return ["all"]
            if expanded not in out:
                out.append(expanded)
    return out or None


def normalize_cpu_offload(values: Any) -> list[str] | None:
    if values is None:
        return None
    names = list(dict.fromkeys(p.strip().replace("-", "_").lower() for p in _split(values) if p.strip()))
    if "none" in names:
        if len(names) != 1:
            raise ResidencyError("'none' cannot be combined with other components.")
        return []
    return names or None


def normalize_component_residency(values: Any, modes: Iterable[str] = MODES) -> dict[str, str] | None:
    """component_residency.py's normalisation; `modes` are the release's modes (sorted, as sglang
    lists them in its error)."""
    if values is None:
        return None
    if isinstance(values, dict):
        entries = list(values.items())
    else:
        entries = []
        for part in _split(values):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise ResidencyError(f"Component residency must use COMPONENT=MODE, got {part!r}")
            entries.append(tuple(part.split("=", 1)))
    out: dict[str, str] = {}
    for raw_selector, raw_mode in entries:
        selector = str(raw_selector).strip().replace("-", "_").lower()
        mode = str(raw_mode).strip().replace("_", "-").lower()
        if not selector:
            raise ResidencyError("Component residency selector cannot be empty")
        if mode not in modes:
            raise ResidencyError(
                f"Invalid component residency mode {raw_mode!r} for {selector!r}; expected one of: {', '.join(sorted(modes))}"
            )
        out[selector] = mode
    return out or None


def _layerwise_matches(c: str, selected: Iterable[str]) -> bool:
    selected = list(selected)
    if "all" in selected or ("dit" in selected and is_dit(c)):
        return True
    for sel in selected:
        if sel == "text_encoder" and is_text_encoder(c):
            return True
        if sel == "image_encoder" and is_image_encoder(c):
            return True
        if sel == "vae" and c in _VAE_LAYERWISE:
            return True
        if sel == c:
            return True
    return False


def _cpu_offload_matches(c: str, selected: list[str] | None) -> bool:
    if selected is None:
        return False
    if "all" in selected or c in selected:
        return True
    if "dit" in selected:
        return is_dit(c)
    if "text_encoder" in selected:
        return is_text_encoder(c)
    if "image_encoder" in selected:
        return is_image_encoder(c)
    if "vae" in selected:
        return c in _VAE_CPU
    return False


def _residency_selector_matches(c: str, selector: str) -> bool:
    if selector == "all":
        return True
    if selector == "dit":
        return is_dit(c)
    if selector == "text_encoder":
        return is_text_encoder(c)
    if selector == "image_encoder":
        return is_image_encoder(c)
    if selector == "vae":
        return c in _VAE_RESIDENCY
    return c == selector


def canonical_mode(c: str, assignments: dict[str, str] | None) -> str | None:
    if not assignments:
        return None
    if c in assignments:
        return assignments[c]
    for selector in _GROUP_PRECEDENCE:
        if selector in assignments and _residency_selector_matches(c, selector):
            return assignments[selector]
    return assignments.get("all")


class Residency:
    """The residency questions sglang asks of a ServerArgs, over a plain dict of its fields."""

    def __init__(self, args: dict[str, Any], explicit: set[str], platform: str) -> None:
        self.args = args
        self.explicit = explicit
        self.platform = platform

    def is_explicit_layerwise(self, c: str) -> bool:
        if canonical_mode(c, self.args.get("component_residency")) == LAYERWISE_OFFLOAD:
            return True
        if "layerwise_offload_components" in self.explicit:
            selected = normalize_layerwise(self.args.get("layerwise_offload_components"))
            if selected and _layerwise_matches(c, selected):
                return True
        return bool("dit_layerwise_offload" in self.explicit and self.args.get("dit_layerwise_offload") and is_dit(c))

    def explicit_mode(self, c: str) -> str | None:
        mode = canonical_mode(c, self.args.get("component_residency"))
        if mode is not None:
            return mode
        if self.is_explicit_layerwise(c):
            return LAYERWISE_OFFLOAD
        if "cpu_offload_components" in self.explicit:
            selected = self.args.get("cpu_offload_components")
            if not selected:
                return RESIDENT
            if _cpu_offload_matches(c, selected):
                return COMPONENT_OFFLOAD
        flag = legacy_flag(c)
        if flag is not None and flag in self.explicit:
            return COMPONENT_OFFLOAD if self.args.get(flag) else RESIDENT
        if is_dit(c) and "dit_layerwise_offload" in self.explicit:
            return RESIDENT
        return None

    def mode(self, c: str) -> str:
        if self.platform == "cpu":
            return RESIDENT
        explicit = self.explicit_mode(c)
        if explicit is not None:
            return explicit
        selected = normalize_layerwise(self.args.get("layerwise_offload_components"))
        if selected and _layerwise_matches(c, selected):
            return LAYERWISE_OFFLOAD
        if self.args.get("cpu_offload_components") is not None and _cpu_offload_matches(c, self.args["cpu_offload_components"]):
            return COMPONENT_OFFLOAD
        flag = legacy_flag(c)
        if flag is not None:
            return COMPONENT_OFFLOAD if self.args.get(flag) else RESIDENT
        return RESIDENT
