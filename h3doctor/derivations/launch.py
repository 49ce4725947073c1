"""Derived values for the launch rules (see derivations/__init__.py)."""

from __future__ import annotations

from typing import Any


def derive(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {}
