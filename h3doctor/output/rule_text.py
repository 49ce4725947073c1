"""`h3doctor rule ID`'s text: one rule, its sglang lines, texts (placeholders as `<name>`, no launch
to fill them) and examples, each line folded to the terminal's width at word boundaries
(output/lines.py); an example's command stays one pasteable line. Decides nothing."""

from __future__ import annotations

from typing import Any, TextIO

from h3doctor.engine.conditions import render_generic as generic
from h3doctor.output.lines import Lines


def rule_report(rule: Any, console: Any, out: TextIO) -> None:
    lines = Lines(console)
    lines.say(f"{rule.id} {rule.name}: {rule.title}")
    lines.say(f"catalog {', '.join(rule.catalog)}; sglang {rule.where} ({rule.verified_versions}); "
              f"severity {rule.severity}; fails at: {rule.stage}")
    for span, text in rule.where_spans():
        lines.say(f"sglang {span}: {text}", indent=2)
    lines.markup()
    lines.say(f"{rule.says}: {generic(rule.message)}")
    lines.markup()
    lines.say(f"why: {' '.join(generic(rule.why).split())}")
    if rule.fix_note:
        lines.say(f"fix: {generic(rule.fix_note)}")
    for alt in rule.alternatives:
        lines.say(f"alternative: {alt['gives_up']}")
    lines.markup()
    lines.markup("examples:")
    for ex in rule.examples:  # a command is never folded: one line to paste, whatever the width
        out.write(f"  [{ex['expect']}] on {ex['profile']}: {ex['argv']}\n")
        if ex.get("fixed"):
            out.write(f"         corrected: {ex['fixed']}\n")
    out.flush()
