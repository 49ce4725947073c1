"""Readings several derivations share: the events they read, an int that is not a bool, a name as
sglang compares it, sglang's words for false, and the target release."""

from __future__ import annotations

from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

# The adjust phase's events the derivations read (sglang/resolve.py EVENTS records them), each as
# the context path it has: a derivation declares the ones it reads in `reads` (checked against
# EVENTS when the package is imported) and reads them from `ctx` by these names, never by a string
ATTENTION_BACKEND_CONFIG_ERROR = "events.attention_backend_config_error"
COMPONENT_BACKEND_MAP_ERROR = "events.component_backend_map_error"
PERFORMANCE_MODE_ERROR = "events.performance_mode_error"
VDN_AUTO_MXFP8 = "events.vdn_auto_mxfp8"

FALSE_WORDS = {"false", "0", "no", "n", "f", "off"}  # runtime/utils/common.py:296-301 (get_bool_env_var)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def lower_text(value: Any) -> str | None:
    """A string stripped and lowercased (how sglang compares names); None for anything else."""
    return value.strip().lower() if isinstance(value, str) else None


def release_version(ctx: dict[str, Any]) -> str:
    """The target release of this check."""
    return ctx.get("release.version") or DEFAULT_SGLANG_VERSION
