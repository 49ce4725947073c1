"""sglang's diffusion argument parser as data: one generated JSON table per sglang release.

The tables under ``h3doctor/sglang/flagdata/`` are generated from sglang's own parser by
``tools/flagtable/extract.py``; this module only reads them.
"""

from __future__ import annotations

import functools
import json

from h3doctor.errors import UsageError
from h3doctor.record import from_fields, record
from h3doctor.safeload import excerpt
from h3doctor.sglang import release_files
from h3doctor.verified import NEWEST_VERIFIED as DEFAULT_SGLANG_VERSION

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["DEFAULT_SGLANG_VERSION", "ENTRY_POINTS", "FlagAction", "FlagTable", "load_flag_table"]
ENTRY_POINTS = ("serve", "generate", "launch_server")


@record(frozen=True)
class FlagAction:
    """One argparse action of sglang's parser."""

    option_strings: tuple[str, ...]
    dest: str
    action: str
    nargs: str | int | None
    type: str | None
    choices: tuple[str, ...] | None
    default: Any
    source: str | None

    @property
    def takes_value(self) -> bool:
        return self.action not in ("store_true", "store_false", "store_const", "count", "help")

    @property
    def display_name(self) -> str:
        """How argparse names the argument in its error messages."""
        return "/".join(self.option_strings)


class FlagTable:
    """All actions of one release's parser, indexed the ways the argv emulation needs."""

    def __init__(
        self,
        *,
        sglang_version: str,
        allow_abbrev: bool,
        actions: tuple[FlagAction, ...],
        entry_extras: dict[str, tuple[str, ...]],
        dataclass_defaults: dict[str, Any],
        removed_config_keys: tuple[str, ...],
        component_maps: frozenset[str] | None = None,
    ) -> None:
        self.sglang_version = sglang_version
        self.allow_abbrev = allow_abbrev
        self.actions = actions
        self.entry_extras = entry_extras
        self.dataclass_defaults = dataclass_defaults
        self.removed_config_keys = removed_config_keys
        # the dests of this release's `--component-*.<c>` maps (None: not recorded, every map)
        self.component_maps = component_maps
        self.by_dest: dict[str, FlagAction] = {}
        for action in actions:
            self.by_dest.setdefault(action.dest, action)
        all_extras = {opt for extras in entry_extras.values() for opt in extras}
        self._options: dict[str, dict[str, FlagAction]] = {}
        for entry in ENTRY_POINTS:
            own = set(entry_extras.get(entry, ()))
            self._options[entry] = {
                opt: action
                for action in actions
                for opt in action.option_strings
                if opt not in all_extras or opt in own
            }

    def options_for(self, entry: str) -> dict[str, FlagAction]:
        """Option string -> action, for the parser that `entry` builds."""
        return self._options[entry]

    def primary_option(self, dest: str) -> str | None:
        action = self.by_dest.get(dest)
        if action is None:
            return None
        longs = [o for o in action.option_strings if o.startswith("--")]
        return longs[0] if longs else None

    def default_of(self, dest: str) -> Any:
        """The value sglang uses when the flag is not typed: the dataclass default."""
        if dest in self.dataclass_defaults:
            value = self.dataclass_defaults[dest]
            if isinstance(value, dict) and "value" in value:  # enums and default factories
                return value["value"]
            if isinstance(value, dict) and "factory" in value:
                return {"dict": {}, "list": [], "set": []}.get(value["factory"])
            if isinstance(value, dict) and "repr" in value:
                return None
            return value
        action = self.by_dest.get(dest)
        return action.default if action is not None else None


def _action_from_json(raw: dict[str, Any]) -> FlagAction:
    choices = raw.get("choices")
    return from_fields(FlagAction, {  # every field: FlagAction(...) made ~2x quicker, 302 times a launch
        "option_strings": tuple(raw["option_strings"]),
        "dest": raw["dest"],
        "action": raw.get("action", "store"),
        "nargs": raw.get("nargs"),
        "type": raw.get("type"),
        "choices": tuple(str(c) for c in choices) if choices is not None else None,
        "default": raw.get("default"),
        "source": raw.get("source"),
    })


@functools.lru_cache(maxsize=None)
def load_flag_table(sglang_version: str = DEFAULT_SGLANG_VERSION) -> FlagTable:
    # only the shipped releases: the version is user input and must not pick another file
    known = release_files.known()
    if sglang_version not in known:
        raise UsageError(
            f"no flag table for sglang {excerpt(sglang_version)!r}; known releases: {', '.join(known)}"
        )
    text = release_files.shipped_text(sglang_version, "flags")
    raw = json.loads(text)
    parsers = raw.get("parsers", {})
    return FlagTable(
        sglang_version=raw["sglang_version"],
        allow_abbrev=bool(raw.get("allow_abbrev", True)),
        actions=tuple(_action_from_json(a) for a in raw["actions"] if a.get("option_strings")),
        entry_extras={k: tuple(v.get("extra", ())) for k, v in parsers.items()},
        dataclass_defaults=raw.get("dataclass_defaults", {}),
        removed_config_keys=tuple(raw.get("removed_config_keys", ())),
        component_maps=frozenset(m["dest"] for m in raw["component_map_flags"]) if "component_map_flags" in raw else None,
    )
