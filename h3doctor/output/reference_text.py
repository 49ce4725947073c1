"""The reference commands' text, each line folded to the terminal's width at word boundaries
(output/lines.py), a command kept one pasteable line: `h3doctor rules` (a line per rule, its title
continued under its column), `h3doctor rule ID` (one rule, its sglang lines, texts with
placeholders as `<name>` — no launch fills them — and examples) and `h3doctor profiles` (each
built-in profile and what it assumes, then the GPU catalog). Decides nothing."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from h3doctor.engine.conditions import render_generic as generic
from h3doctor.output.lines import Lines
from h3doctor.output.markup import escape as markup_escape
from h3doctor.output.wrap import MIN_WIDTH, cells, fold


def console(out: TextIO | None = None) -> Any:
    """A plain console on `out` (sys.stdout as it is when called: the CLI's guarded stream, a test's
    capture) at the terminal's width ($COLUMNS, else the terminal's; a pipe: none)."""
    from h3doctor.output.formats import terminal_width
    from h3doctor.output.markup import PlainConsole

    out = sys.stdout if out is None else out
    return PlainConsole(out, terminal_width(out))


def rules_list(rules: list[Any], console: Any) -> None:
    for r in sorted(rules, key=lambda r: r.id):
        _row(console, f"{r.id}  {','.join(r.catalog):<8} {r.severity:<8} {r.stage:<15} ", r.title)


def profiles_list(profiles: list[tuple[str, str, str]], console: Any) -> None:
    """(name, description, assumed line) per profile."""
    lines = Lines(console)
    for name, description, assumed in profiles:
        _row(console, f"{name:<10} ", description)
        lines.say(f"assumed: {assumed}", indent=11, hang=2)


def gpu_catalog(gpus: list[Any], console: Any) -> None:
    """The GPU catalog `<N>x<GPU>` profiles are made from: a GPU a line, its name and aliases under
    their column."""
    Lines(console).markup()
    Lines(console).say("GPU catalog: any <N>x<GPU> (4xH100, 2xRTX5090; Apple: 1xM4-Max-64GB sets the memory)")
    for g in gpus:
        cc = f"cc {g.compute_capability}" if g.compute_capability else "     "
        aliases = f"  aka {', '.join(g.aliases)}" if g.aliases else ""
        _row(console, f"{g.key:<11} {g.platform:<5} {g.memory_gib:>6.1f} GiB  {cc:<7} ", f"{g.device_name}{aliases}")


def _row(console: Any, head: str, text: str) -> None:
    """`head` (aligned columns, kept as written) then `text` folded under its own column; where the
    column leaves too little room, `text` goes under the row, indented."""
    width = getattr(console, "width", None)
    room = None if width is None else width - cells(head)
    if room is not None and room < MIN_WIDTH:
        rows = [head.rstrip()] + ["    " + row for row in fold(text, width - 4)]
    else:
        rows = fold(text, room)
        rows = [head + rows[0]] + [" " * len(head) + row for row in rows[1:]]
    for row in rows:
        console.print(markup_escape(row), soft_wrap=True)


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
