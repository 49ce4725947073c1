"""`--config FILE` as ServerArgs.load_config_file reads it (catalog 1.2 step 4, A7, A8).

A flat mapping of dataclass field names; values are not type-converted or checked against
argparse choices; the CLI wins. We read it the same way and record what sglang would do with
each surprise (unsupported suffix, removed keys, strings where booleans belong, dashed keys).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

MAX_CONFIG_BYTES = 4 << 20


@dataclass
class ConfigLoad:
    path: str
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # what sglang raises while loading it, if anything
    error_kind: str | None = None
    string_booleans: list[str] = field(default_factory=list)
    ignored_keys: list[str] = field(default_factory=list)
    removed_keys: list[str] = field(default_factory=list)
    type_mismatches: dict[str, str] = field(default_factory=dict)  # key -> the type sglang expects (int/float)

    def describe_mismatch(self, key: str) -> str:
        value = self.values[key]
        return f"{key}: {value!r} ({type(value).__name__}; sglang expects {self.type_mismatches[key]})"


def read_json_or_yaml(path: str) -> Any:
    """json.load for .json, yaml.safe_load otherwise, as sglang reads --config and
    --attention-backend-config files. Any failure is a ValueError naming the file (and line)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh) if path.endswith(".json") else yaml.safe_load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"cannot parse {path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"cannot parse {path}{where}: {getattr(exc, 'problem', exc)}") from None


def load_config(path: str, *, known_fields: set[str], boolean_fields: set[str], removed: tuple[str, ...],
                numeric_fields: dict[str, str] | None = None) -> ConfigLoad:
    load = ConfigLoad(path)
    if not path.endswith((".json", ".yaml", ".yml")):
        load.error, load.error_kind = f"Unsupported config file format: {path}", "unsupported"
        load.values = _read_toml(path)  # sglang refuses it; read anyway so a fix can pass its settings as flags
        return load
    if not os.path.isfile(path):
        load.error, load.error_kind = f"[Errno 2] No such file or directory: {path!r}", "missing"
        return load
    if os.path.getsize(path) > MAX_CONFIG_BYTES:
        load.error, load.error_kind = "config file is larger than 4 MiB; h3doctor did not read it", "too_large"
        return load
    try:
        data = read_json_or_yaml(path)
    except ValueError as exc:
        load.error, load.error_kind = str(exc), "malformed"
        return load
    if not isinstance(data, dict):
        # from_cli_args merges {**config, **cli} (server_args.py:3717): anything but a mapping
        # (an empty YAML file is None) is a TypeError there.
        load.error = f"TypeError: '{type(data).__name__}' object is not a mapping"
        load.error_kind = "not_mapping"
        return load
    load.removed_keys = [k for k in removed if k in data]
    for key, value in data.items():
        key = str(key)
        if key in boolean_fields and isinstance(value, str):
            load.string_booleans.append(key)
        expected = (numeric_fields or {}).get(key)
        if expected and not _is_number(value, expected):
            load.type_mismatches[key] = expected
        if key not in known_fields:
            load.ignored_keys.append(key)
        load.values[key] = value
    return load


def _is_number(value: Any, expected: str) -> bool:
    if value is None or isinstance(value, bool):
        return value is None
    return isinstance(value, int) if expected == "int" else isinstance(value, (int, float))


def coerce(value: Any, expected: str) -> Any:
    """Best-effort conversion so the rest of the check can go on after reporting a mismatch."""
    try:
        return int(value) if expected == "int" else float(value)
    except (TypeError, ValueError):
        return None


def _read_toml(path: str) -> dict[str, Any]:
    if not path.endswith(".toml") or not os.path.isfile(path) or os.path.getsize(path) > MAX_CONFIG_BYTES:
        return {}
    try:
        import tomllib  # Python >= 3.11
    except ImportError:
        return {}
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
