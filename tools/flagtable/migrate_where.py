#!/usr/bin/env python3
"""One-off (kept for review): move the rules' per-release `where` lines into flagdata/where-X.json.

Before: a rule's line for release X was its first `releases:` entry matching X that had a `where`,
else its `sglang.where` (the line in the newest release of its range). After: where-X.json holds
every rule's line for X. The lines are walked back from the newest release of each rule's range:
an entry a person wrote is kept as written; a release that only inherited `sglang.where` gets that
line carried back through the diff (the inherited line is usually wrong there: the code moved),
and keeps the inherited text only where the diff cannot carry it. Each release's lines are then
split as tools/release.py would write them: those it derives from the previous release under
`where`, the rest under `reviewed`.

    python3 tools/flagtable/migrate_where.py SOURCES   # SOURCES/<version>/sglang/ for every release
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import release  # noqa: E402  (tools/release.py)
import where as wherelib  # noqa: E402
import yaml  # noqa: E402

from h3doctor.sglang.releases import in_range  # noqa: E402


def old_lines(data: dict, version: str) -> tuple[str, bool]:
    """(the line the rule file gave for `version`, whether a person wrote it for that release)."""
    for entry in data.get("releases") or []:
        if in_range(version, entry["versions"]):
            return entry.get("where", data["sglang"]["where"]), "where" in entry
    return data["sglang"]["where"], False


def main(sources: Path) -> int:
    releases = release.history.table_releases()
    src = {v: wherelib.TreeSource(v, sources / v) for v in releases}
    value: dict[str, dict[str, str]] = {v: {} for v in releases}
    unverified = []
    for path in sorted(release.RULES.glob("H3D*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        inside = [v for v in releases if in_range(v, data["sglang"]["versions"])]
        for i in range(len(inside) - 1, -1, -1):
            v = inside[i]
            text, written = old_lines(data, v)
            if written or i == len(inside) - 1:
                value[v][data["id"]] = text
                continue
            nxt = inside[i + 1]
            back, _ = wherelib.map_where(value[nxt][data["id"]], src[v], src[nxt], reverse=True)
            if back is None:
                unverified.append(f"{data['id']} {v}: {text}")
            value[v][data["id"]] = back or text
    rules = release.rule_anchors()
    for i, v in enumerate(releases):
        prev = releases[i - 1] if i else None
        derived, _, _ = release.derive_where(v, prev, rules, prev_lines=value[prev] if prev else {}, reviewed={},
                                             old=src[prev] if prev else None, new=src[v], releases=releases)
        reviewed = {rid: text for rid, text in value[v].items() if derived.get(rid) != text}
        derived = {rid: text for rid, text in derived.items() if rid not in reviewed}
        (release.FLAGDATA / f"where-{v}.json").write_text(release.where_json(v, prev, derived, reviewed),
                                                            encoding="utf-8")
        print(f"{v}: {len(derived)} derived, {len(reviewed)} reviewed", file=sys.stderr)
    print(f"{len(unverified)} inherited lines the diff could not carry back:", *unverified, sep="\n  ",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
