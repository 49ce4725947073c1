"""`h3doctor --help`: the commands grouped by what a user comes for, each with its whole first
sentence (click's listing cuts a description at 45 characters with `...`); `check --help`: its
options in the panels of the option table (options.PANELS), each option's help whole.

A command in no group is listed under "Other", so adding a command never hides it from help
(tests/cli/test_cli_manners.py holds every visible command to one line in one group); an option
in no panel is listed under "Other options" (tests/cli/test_check_help.py: none is)."""

from __future__ import annotations

import typer.core

from h3doctor.cli_choices import near_choices

GROUPS = (
    ("Everyday", ("check", "doctor", "explain", "suggest", "init", "probe", "profiles")),
    ("CI and fleets", ("lint", "export", "admission", "schema")),
    ("Reference", ("rules", "rule", "coverage")),
)


class GroupedHelp(typer.core.TyperGroup):
    """Typer's group with the command listing in GROUPS' sections, and every choice of its commands
    naming the nearest on a near miss (cli_choices.py: Typer builds the subcommands first, so the
    whole tree is here)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        near_choices(self)

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


class PanelledHelp(typer.core.TyperCommand):
    """Typer's command with its options listed in sections, one per `rich_help_panel` (the option
    table's panels, options.PANELS, in that order), as Typer's Rich help would group them; the help
    here is plain (the app's rich_markup_mode is None), and Typer's plain help has one "Options:"."""

    def format_options(self, ctx, formatter) -> None:
        from h3doctor.options import PANELS

        arguments, panels = [], {heading: [] for heading in PANELS.values()}
        for param in self.get_params(ctx):
            row = param.get_help_record(ctx)
            if row is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(row)
            else:
                panels.setdefault(getattr(param, "rich_help_panel", None) or "Other options", []).append(row)
        for heading, rows in (("Arguments", arguments), *panels.items()):
            if rows:
                with formatter.section(heading):
                    formatter.write_dl(rows)
