"""`h3doctor probe`'s text, from its JSON object (host/probe_facts.ProbeResult.as_dict plus the
shell hook's state): each fact in the doctor's words and glyphs (output/doctor_text.fact_line:
"cgroup memory limit: none", never "cgroup memory.max: yes"), folded to the terminal's width at
word boundaries, then the counts and the hook's line. Decides nothing."""

from __future__ import annotations

from typing import Any

from h3doctor.output.doctor_text import GLYPHS, fact_line
from h3doctor.output.lines import Lines, escape
from h3doctor.verified import NEWEST_VERIFIED

_STATUS_WORDS = (("ok", "ok"), ("problem", "problem(s)"), ("unknown", "unknown"), ("n/a", "not applicable"))


def probe_report(data: dict[str, Any], console: Any) -> None:
    lines = Lines(console)
    run = data.get("probe") or {}
    how = (f"cached {run['cache_age_s']:.0f} s ago" if run.get("cached")
           else f"probed in {run.get('child_elapsed_s') or 0:.2f} s")
    lines.markup(f"[bold]h3doctor probe[/]: this host as sglang {NEWEST_VERIFIED} would see it ({how})")
    if run.get("outcome") not in (None, "ok"):
        lines.say(str(run.get("detail", "")), mark=GLYPHS["unknown"])
    for check in data["checks"]:
        fact_line(lines, check)
    counts = {status: sum(1 for c in data["checks"] if c["status"] == status) for status, _ in _STATUS_WORDS}
    lines.markup()
    lines.markup(", ".join(f"{counts[status]} {words}" for status, words in _STATUS_WORDS))
    hook = data.get("hook")
    if hook:
        glyph = GLYPHS["ok"] if hook["active"] else GLYPHS["warning"] if hook["loaded"] else GLYPHS["n/a"]
        lines.markup(f"{glyph} shell hook: {'active' if hook['active'] else 'inactive'}: {escape(hook['reason'], 600)}")
