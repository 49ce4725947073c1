"""`h3doctor --help`: the commands grouped by what a user comes for, each with its whole first
sentence (click's listing cuts a description at 45 characters with `...`).

A command in no group is listed under "Other", so adding a command never hides it from help
(tests/cli/test_cli_manners.py holds every visible command to one line in one group)."""

from __future__ import annotations

import typer.core

GROUPS = (
    ("Everyday", ("check", "doctor", "explain", "suggest", "init", "probe", "profiles")),
    ("CI and fleets", ("lint", "export", "admission", "schema")),
    ("Reference", ("rules", "rule", "coverage")),
)


class GroupedHelp(typer.core.TyperGroup):
    """Typer's group with the command listing in GROUPS' sections."""

    def format_commands(self, ctx, formatter) -> None:
        visible = {name: cmd for name in self.list_commands(ctx)
                   if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden}
        limit = max(formatter.width or 80, 80) * 4  # the whole first sentence; the formatter folds it
        placed: set[str] = set()
        for title, names in GROUPS + (("Other", tuple(visible)),):
            rows = [(name, visible[name].get_short_help_str(limit)) for name in names
                    if name in visible and name not in placed]
            placed.update(name for name, _ in rows)
            if rows:
                with formatter.section(f"{title} commands"):
                    formatter.write_dl(rows)
