"""Hardware profiles: the built-in ones (JSON, shipped in `builtin_profiles/`), profile files, and
`<N>x<GPU>` names made from the GPU catalog (`gpus.py`, `gpus.json`).

A profile is a mapping of fact names to values, turned into `HardwareFacts` by
`facts.facts_from_mapping`.
"""

from __future__ import annotations

import errno
import functools
import os

from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts, facts_from_mapping
from h3doctor.paths import package_names, read_package_text
from h3doctor.safeload import excerpt, load_json, load_yaml, read_bounded

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

MAX_PROFILE_BYTES = 1 << 20
_BUILTIN = "h3doctor.host.builtin_profiles"


def builtin_profile_names() -> list[str]:
    return list(_builtin_names())


# The built-in profiles ship with the package, so a process reads their names and text once: a
# caller checking launch after launch (h3doctor.api, lint, the webhook) listed the folder twice and
# opened the file once per check. A profile *file* is read on every call (it may change).
@functools.lru_cache(maxsize=1)
def _builtin_names() -> tuple[str, ...]:
    return tuple(sorted(n.removesuffix(".json") for n in package_names(_BUILTIN) if n.endswith(".json")))


@functools.lru_cache(maxsize=64)
def _builtin_text(name: str) -> str:
    return read_package_text(_BUILTIN, f"{name}.json")


def _read_profile_text(name_or_path: str) -> tuple[str, str]:
    # built-in profiles are JSON so that a check on one never imports a YAML parser
    if name_or_path in _builtin_names():
        return _builtin_text(name_or_path), f"builtin:{name_or_path}.json"
    if not _exists(name_or_path):
        from h3doctor.spelling import nearest

        builtin = list(builtin_profile_names())
        close = nearest(name_or_path, builtin)
        mean = f"; did you mean {close!r}?" if close else ""
        raise UsageError(f"no such hardware profile {excerpt(name_or_path, 120)!r}{mean}; built-in profiles: "
                         f"{', '.join(builtin)}; or <N>x<GPU> for any GPU that `h3doctor profiles` lists (e.g. 4xH100)")
    return read_bounded(name_or_path, max_bytes=MAX_PROFILE_BYTES, what="profile"), name_or_path


def _exists(path: str) -> bool:
    """Whether the path names something (a too-long path is read, and refused, there; one with a NUL names nothing)."""
    try:  # Path(path).exists(), without pathlib: a missing part or a link loop is "no", a NUL is "no"
        os.stat(path)
    except OSError as exc:
        return exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)
    except ValueError:
        return False
    return True


def profile_mapping(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The raw mapping of a built-in profile, a profile file or a `<N>x<GPU>` name, and where it came from."""
    catalog = _catalog_mapping(name_or_path)
    if catalog is not None:
        return catalog, f"catalog:{name_or_path}"
    text, origin = _read_profile_text(name_or_path)
    return _parse_profile(text, origin), origin


def is_named_profile(name: str) -> bool:
    """A built-in profile or a `<N>x<GPU>` name (not a file)."""
    return name in _builtin_names() or _catalog_mapping(name) is not None


def load_profile(name_or_path: str) -> HardwareFacts:
    """A built-in profile name (e.g. `4xH200`) or a YAML/JSON profile file."""
    if name_or_path in _builtin_names() or ("/" not in name_or_path and not _exists(name_or_path)):
        return _named_facts(name_or_path)  # a built-in or `<N>x<GPU>` profile: package data
    data, origin = profile_mapping(name_or_path)
    return facts_from_mapping(data, origin)


@functools.lru_cache(maxsize=256)
def _named_facts(name: str) -> HardwareFacts:
    """A built-in or catalog profile's facts, made once per process (a frozen record: every check
    shares it; parsing and validating it cost a third of an API check). A name that is no profile
    raises, and is not cached."""
    data, origin = profile_mapping(name)
    return facts_from_mapping(data, origin)


def _catalog_mapping(name: str) -> dict[str, Any] | None:
    """A `<N>x<GPU>` name that is neither a built-in profile nor an existing file."""
    if "/" in name or name in _builtin_names() or _exists(name):
        return None
    # imported only for catalog names: a built-in profile or a file does not pay for it
    from h3doctor.host.gpus import ProfileNameError, catalog_profile

    try:
        return catalog_profile(name)
    except ProfileNameError as exc:
        names = ", ".join(builtin_profile_names())
        raise UsageError(f"no such hardware profile {name!r}: {exc}; built-in profiles: {names}") from None


def _parse_profile(text: str, origin: str) -> dict[str, Any]:
    try:
        data = load_json(text, origin=origin) if origin.endswith(".json") else load_yaml(text, origin=origin)
    except UsageError as exc:
        raise UsageError(f"malformed profile: {exc.message}", location=exc.location) from None
    if not isinstance(data, dict) or "platform" not in data:
        # say what a profile is, never what this file holds: it may be anything (a recipe's
        # `profile:` is data from someone else's pull request)
        raise UsageError("not a profile: a profile is a YAML or JSON mapping with a 'platform' key "
                         "(see README, Hardware profiles)", location=origin)
    return data
