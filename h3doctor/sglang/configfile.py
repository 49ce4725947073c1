"""`--config FILE` as ServerArgs.load_config_file reads it (catalog 1.2 step 4, A7, A8).

A flat mapping of dataclass field names; values are not type-converted or checked against
argparse choices; the CLI wins. We read it the same way and record what sglang would do with
each surprise (unsupported suffix, removed keys, strings where booleans belong, dashed keys).
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict

from h3doctor.errors import UsageError
from h3doctor.record import field, record
from h3doctor.safeload import (
    LimitExceeded,
    excerpt,
    load_json,
    mounted_file,
    load_toml,
    load_yaml,
    read_bounded,
    refuse_outside,
    resolve_named,
)

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

MAX_CONFIG_BYTES = 4 << 20


@record
class ConfigLoad:
    """An sglang `--config` file as sglang would load it, with what it would refuse or ignore."""
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
        shown = repr(excerpt(value, 120)) if isinstance(value, str) else excerpt(value, 120)  # a 3 MB value is not echoed
        return f"{key}: {shown} ({type(value).__name__}; sglang expects {self.type_mismatches[key]})"


_READS: OrderedDict[tuple[Any, ...], tuple[Any, BaseException | None]] = OrderedDict()
_READS_KEPT = 16


def read_json_or_yaml(path: str, what: str = "config file") -> Any:
    """read_json_or_yaml_once, once per file version and run: the fix loop re-evaluates the
    command up to 16 times, and a pipe (`--config <(...)`) can only be read once anyway. Under
    `lint` a relative path is the naming file's (safeload.named_from), and a path outside the
    repository is refused before anything looks at it (OutsideRepository)."""
    refuse_outside(path, what=what, from_file=True)
    path = resolve_named(path)
    try:
        info = os.stat(path)
        key: tuple[Any, ...] | None = (path, what, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    except (OSError, ValueError):
        key = None  # not there or not a path: read_json_or_yaml_once says why
    if key is not None and key in _READS:
        _READS.move_to_end(key)
        value, error = _READS[key]
    else:
        value, error = None, None
        try:
            value = read_json_or_yaml_once(path, what)
        except (ValueError, LimitExceeded) as exc:
            error = exc
        if key is not None:
            _READS[key] = (value, error)
            while len(_READS) > _READS_KEPT:
                _READS.popitem(last=False)
    if error is not None:
        raise error
    import copy

    return copy.deepcopy(value)  # callers may change what they get


def read_json_or_yaml_once(path: str, what: str = "config file") -> Any:
    """json.load for .json, yaml.safe_load otherwise, as sglang reads --config and
    --attention-backend-config files, within h3doctor's reading limits (h3doctor.safeload).

    What sglang's own reader would fail on (a missing file, a syntax error, a date that is not
    a date) is a ValueError naming the file and line; a file beyond h3doctor's limits (size,
    depth, values after alias expansion) is a LimitExceeded, a usage error: not judged."""
    return _parse(read_bounded(path, max_bytes=MAX_CONFIG_BYTES, what=what), path, json_file=path.endswith(".json"))


def _parse(text: str, origin: str, *, json_file: bool) -> Any:
    """The text as sglang's reader parses it (json.load for .json, yaml.safe_load otherwise), within
    h3doctor's limits; ValueError where sglang's reader fails."""
    try:
        if json_file:
            return load_json(text, origin=origin, finite=False)
        return load_yaml(text, origin=origin, string_keys=False, finite=False, invalid_dates="error")
    except LimitExceeded as exc:
        exc.path = exc.path or origin  # nested past the limit: the parser knew only its origin
        raise
    except UsageError as exc:
        raise ValueError(f"cannot parse {exc}") from None


def _read(path: str) -> Any:
    """The --config file's data: a file the deployment mounts from the repository (a ConfigMap's key,
    safeload.mounted) is that text; any other is the file, under lint never outside the repository.
    FileNotFoundError when there is none, ValueError when sglang's reader would fail on it."""
    mount = mounted_file(path)
    if mount is not None:
        text, origin = mount
        return _parse(text, origin, json_file=path.endswith(".json"))
    refuse_outside(path, what="--config file", from_file=True)  # under lint: not even whether it exists
    if not _is_file(resolve_named(path)):
        raise FileNotFoundError(path)
    return read_json_or_yaml(path)


def load_config(path: str, *, known_fields: set[str], boolean_fields: set[str], removed: tuple[str, ...],
                numeric_fields: dict[str, str] | None = None) -> ConfigLoad:
    load = ConfigLoad(path)
    if not path.endswith((".json", ".yaml", ".yml")):
        load.error, load.error_kind = f"Unsupported config file format: {path}", "unsupported"
        load.values = _read_toml(path)  # sglang refuses it; read anyway so a fix can pass its settings as flags
        return load
    try:
        data = _read(path)
    except FileNotFoundError:
        load.error, load.error_kind = f"[Errno 2] No such file or directory: {path!r}", "missing"
        return load
    except ValueError as exc:
        load.error, load.error_kind = str(exc), "malformed"
        return load
    if not isinstance(data, dict):
        # from_cli_args (server_args.py:3717-3719) first adds the file's keys to a set, then
        # merges {**config, **cli}: a value that is not iterable (an empty file is None) fails
        # the first, any other non-mapping the second; a TypeError either way.
        iterable = isinstance(data, (list, str))
        load.error = f"TypeError: '{type(data).__name__}' object is not {'a mapping' if iterable else 'iterable'}"
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


def _is_file(path: str) -> bool:
    """False only for a path that is not there; a path too long, with a NUL byte or naming a
    directory is read (and refused, with the reason) by read_bounded."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    return True


def _is_number(value: Any, expected: str) -> bool:
    if value is None or isinstance(value, bool):
        return value is None
    return isinstance(value, int) if expected == "int" else isinstance(value, (int, float))


def coerce(value: Any, expected: str) -> Any:
    """Best-effort conversion so the rest of the check can go on after reporting a mismatch."""
    try:
        return int(value) if expected == "int" else float(value)
    except (TypeError, ValueError, OverflowError):  # int(inf)
        return None


def _read_toml(path: str) -> dict[str, Any]:
    if not path.endswith(".toml"):
        return {}
    if sys.version_info < (3, 11):  # no tomllib
        return {}
    try:  # non-blocking, regular files only (a FIFO is refused at once)
        data = load_toml(read_bounded(resolve_named(path), max_bytes=MAX_CONFIG_BYTES, what="config file"), origin=path)
    except UsageError:
        return {}
    return data if isinstance(data, dict) else {}
