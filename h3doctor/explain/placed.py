"""The sglang release a log names itself: a version line (`sglang version: 0.5.21`, `sglang==0.5.21`),
a container image tag (`lmsysorg/sglang:v0.5.21-cu129`), or an install path in a traceback
(`site-packages/sglang-0.5.21.dist-info`, a wheel's `sglang-0.5.21-py3-none-any`). Only releases
h3doctor knows count; a log naming two different ones is placed by none of them."""

from __future__ import annotations

import re

# bounded: `sglang`, at most a word and three separators, an optional `v`, the version
_NAMED = re.compile(r"sglang(?: version)?(?:[-_/:=]{1,3}|: | )v?(?P<version>[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3})(?![0-9]|\.[0-9])",
                    re.IGNORECASE)
MAX_NAMES = 50  # distinct names read; a log naming more tells nothing


def named_release(lines: list[str], known: list[str]) -> tuple[str | None, str | None]:
    """(the release the log names, the line that names it), or (None, why not) when it names none
    or more than one."""
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if "sglang" not in line.lower():
            continue
        for m in _NAMED.finditer(line):
            if m.group("version") in known:
                seen.setdefault(m.group("version"), number)
        if len(seen) > 1 or len(seen) >= MAX_NAMES:
            return None, f"the log names several sglang releases ({', '.join(sorted(seen))})"
    if not seen:
        return None, None
    [(version, number)] = seen.items()
    return version, f"the log names sglang {version} (line {number})"
