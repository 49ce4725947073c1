#!/usr/bin/env python3
"""Build `h3doctor/sglang/flagdata/flag-history.json` from the generated flag tables.

Maintainer tool (the package only reads the JSON): for each option string in any release's
flag table, the releases that have it, per entry point (the option is on an entry point's
parser unless another entry point registers it as its own extra), and for a flag with choices
in some release, its choices per release (null where that release's action has none).

    python3 tools/flagtable/history.py            # rewrites flag-history.json from releasedata/*/flags.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SGLANG = Path(__file__).resolve().parents[2] / "h3doctor" / "sglang"
FLAGDATA = SGLANG / "flagdata"
RELEASEDATA = SGLANG / "releasedata"  # one folder per release, its flag table in flags.json
ENTRY_POINTS = ("serve", "generate", "launch_server")
NOTE = ("For each option string seen in any release: the releases whose flag table has it (any entry "
        "point), per entry point, and for choice flags the choices per release (null where that "
        "release's action has no choices).")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def table_releases(releasedata: Path = RELEASEDATA) -> list[str]:
    return sorted((p.parent.name for p in releasedata.glob("*/flags.json")), key=_key)


def _entry_options(table: dict[str, Any]) -> dict[str, dict[str, list[Any] | None]]:
    """entry point -> {option string: its choices}, as that entry point's parser has them."""
    parsers = table["parsers"]
    all_extras = {o for p in parsers.values() for o in p.get("extra", ())}
    out = {}
    for entry in ENTRY_POINTS:
        own = set(parsers.get(entry, {}).get("extra", ()))
        out[entry] = {opt: a["choices"] for a in table["actions"] for opt in a["option_strings"]
                      if opt not in all_extras or opt in own}
    return out


def build(releasedata: Path = RELEASEDATA) -> dict[str, Any]:
    releases = table_releases(releasedata)
    options: dict[str, dict[str, Any]] = {}
    for release in releases:
        table = json.loads((releasedata / release / "flags.json").read_text(encoding="utf-8"))
        for entry, opts in _entry_options(table).items():
            for opt, choices in opts.items():
                info = options.setdefault(opt, {"releases": [], "entry_points": {e: [] for e in ENTRY_POINTS},
                                                "choices": {}})
                if release not in info["releases"]:
                    info["releases"].append(release)
                    info["choices"][release] = choices
                info["entry_points"][entry].append(release)
    for info in options.values():
        # the releases with choices first, then (null) the releases whose action has none
        found = {r: c for r, c in info.pop("choices").items() if c is not None}
        if found:
            info["choices"] = {**found, **{r: None for r in info["releases"] if r not in found}}
    return {"releases": releases, "note": NOTE, "options": dict(sorted(options.items()))}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    (FLAGDATA / "flag-history.json").write_text(render(build()), encoding="utf-8")
    print("[history] wrote flag-history.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
