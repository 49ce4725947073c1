#!/usr/bin/env python3
"""One-off (kept for review): drop the per-release `where` lines from the rule files, now that
flagdata/where-X.json holds them (tools/flagtable/migrate_where.py wrote those first).

A `releases:` entry that held only `versions` and `where` goes; an entry that changes what the
rule says (message, why, stage, ...) stays, without its `where`; a `releases:` list left empty
goes. The edit is made on the text (ruamel.yaml only finds the entries), so every other line,
comment and quoting stays as written.

    python3 tools/flagtable/strip_release_where.py      # edits rules/H3D*.yaml in place
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ruamel.yaml import YAML

RULES = Path(__file__).resolve().parents[2] / "rules"
# `where: X, ` before another key, or `, where: X` closing the mapping
FLOW_WHERE = re.compile(r'where: ("[^"]*"|[^,{}]*?), (?=[\w<]+:)|, where: ("[^"]*"|[^,{}]*)(?=\})')


def strip(text: str) -> str:
    data = YAML().load(text)
    entries = data.get("releases") or []
    if not entries:
        return text
    lines = text.splitlines(keepends=True)
    start = data.lc.key("releases")[0]
    # the block ends at the next top-level key
    end = next(data.lc.key(k)[0] for k in list(data)[list(data).index("releases") + 1:])
    drop: set[int] = set()
    kept = 0
    for i, entry in enumerate(entries):
        first = entry.lc.line
        last = entries[i + 1].lc.line if i + 1 < len(entries) else end
        pure = set(entry) <= {"versions", "where"}  # merged keys (`<<: *anchor`) included
        if pure and entry.anchor.value:
            raise SystemExit(f"{data['id']}: an anchored entry would go")
        if "where" not in entry._ok:  # its own keys: a merged `where` goes with its anchor's
            kept += 1
            continue
        if pure:
            drop.update(range(first, last))
            continue
        kept += 1
        if entry.fa.flow_style():
            lines[first], n = FLOW_WHERE.subn("", lines[first])
            if n != 1:
                raise SystemExit(f"{data['id']}: cannot drop `where` from {lines[first]!r}")
            continue
        at = entry.lc.key("where")[0]
        keys = list(entry)
        following = [entry.lc.key(k)[0] for k in keys[keys.index("where") + 1:]]
        drop.update(range(at, following[0] if following else last))
    if not kept:
        drop.update(range(start, end))
    return "".join(line for n, line in enumerate(lines) if n not in drop)


def main() -> int:
    for path in sorted(RULES.glob("H3D*.yaml")):
        text = path.read_text(encoding="utf-8")
        new = strip(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
