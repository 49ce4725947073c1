"""Readings several derivations share: an int that is not a bool, and sglang's boolean words."""

from __future__ import annotations

from typing import Any

TRUE_WORDS = {"1", "true", "yes", "y", "t", "on"}  # runtime/utils/common.py:296-301 (get_bool_env_var)
FALSE_WORDS = {"false", "0", "no", "n", "f", "off"}


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
