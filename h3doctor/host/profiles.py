"""Hardware profiles: the built-in ones (JSON, shipped in `builtin_profiles/`), profile files, and
`<N>x<GPU>` names made from the GPU catalog (`gpus.py`, `gpus.json`).

A profile is a mapping of fact names to values, turned into `HardwareFacts` by
`facts.facts_from_mapping`.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts, facts_from_mapping

MAX_PROFILE_BYTES = 1 << 20
_BUILTIN = "h3doctor.host.builtin_profiles"


def builtin_profile_names() -> list[str]:
    return sorted(
        p.name.removesuffix(".json")
        for p in resources.files(_BUILTIN).iterdir()
        if p.name.endswith(".json")
    )


def _read_profile_text(name_or_path: str) -> tuple[str, str]:
    # built-in profiles are JSON so that a check on one never imports a YAML parser
    builtin = resources.files(_BUILTIN).joinpath(f"{name_or_path}.json")
    if "/" not in name_or_path and builtin.is_file():
        return builtin.read_text(encoding="utf-8"), f"builtin:{name_or_path}.json"
    path = Path(name_or_path)
    if not path.is_file():
        names = ", ".join(builtin_profile_names())
        raise UsageError(f"no such hardware profile {name_or_path!r}; built-in profiles: {names}; "
                         "or <N>x<GPU> for any GPU that `h3doctor profiles` lists (e.g. 4xH100)")
    if path.stat().st_size > MAX_PROFILE_BYTES:
        raise UsageError("profile file is larger than 1 MiB", location=str(path))
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read profile: {exc}", location=str(path)) from None


def profile_mapping(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The raw mapping of a built-in profile, a profile file or a `<N>x<GPU>` name, and where it came from."""
    catalog = _catalog_mapping(name_or_path)
    if catalog is not None:
        return catalog, f"catalog:{name_or_path}"
    text, origin = _read_profile_text(name_or_path)
    return _parse_profile(text, origin), origin


def load_profile(name_or_path: str) -> HardwareFacts:
    """A built-in profile name (e.g. `4xH200`) or a YAML/JSON profile file."""
    data, origin = profile_mapping(name_or_path)
    return facts_from_mapping(data, origin)


def _catalog_mapping(name: str) -> dict[str, Any] | None:
    """A `<N>x<GPU>` name that is neither a built-in profile nor an existing file."""
    from h3doctor.host.gpus import ProfileNameError, catalog_profile

    if "/" in name or resources.files(_BUILTIN).joinpath(f"{name}.json").is_file() or Path(name).is_file():
        return None
    try:
        return catalog_profile(name)
    except ProfileNameError as exc:
        names = ", ".join(builtin_profile_names())
        raise UsageError(f"no such hardware profile {name!r}: {exc}; built-in profiles: {names}") from None


def _parse_profile(text: str, origin: str) -> dict[str, Any]:
    if origin.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            line = getattr(exc, "lineno", None)
            raise UsageError(f"malformed profile: {exc}", location=f"{origin}:{line}" if line else origin) from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{origin}:{mark.line + 1}" if mark is not None else origin
            raise UsageError(f"malformed profile: {getattr(exc, 'problem', None) or exc}", location=where) from None
    if not isinstance(data, dict):
        raise UsageError("a profile must be a mapping of fact names to values", location=origin)
    return data
