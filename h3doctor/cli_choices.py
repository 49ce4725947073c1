"""A choice given one slip away names the choice that was meant: `--format jsno` says
"'jsno' is not one of 'text', 'json', 'sarif', 'github'; did you mean 'json'?" (exit 2 as before).

Typer turns every option or argument typed as an Enum (or Literal) into a `TyperChoice`, whose
refusal lists the choices only. `near_choices` swaps each such type in the built click command,
every subcommand included, for `NearChoice`, which says the same with the nearest choice
(`spelling.nearest`, bounded) — one pass over the command tree when the app's group is built
(cli_help.GroupedHelp), so a command or option added later needs no wiring of its own
(tests/cli/test_cli_choices.py walks every choice of every command).
The fast path (entry.py) reads no value it would refuse: a choice it does not know goes to the CLI,
which says this."""

from __future__ import annotations

try:  # Typer's own choice type since it vendors click (0.26); its module is private (Typer is pinned below 0.29)
    from typer._types import TyperChoice
except ImportError:  # an older Typer makes click's Choice (click 8.1 has no message hook: the list only)
    from click import Choice as TyperChoice

from h3doctor.cli_output import short
from h3doctor.spelling import nearest


class NearChoice(TyperChoice):
    """Typer's choice, refusing with the nearest choice named and a long value cut short."""

    def get_invalid_choice_message(self, value, ctx) -> str:
        choices = [str(c) for c in self._normalized_mapping(ctx=ctx).values()]
        close = nearest(str(value), choices)
        said = f"{short(str(value), 80)!r} is not one of {', '.join(map(repr, choices))}"
        return said + (f"; did you mean {close!r}?" if close else ".")


def near_choices(command):
    """`command` (a click command or group, as typer.main.get_command builds it) with every
    TyperChoice of it and of its subcommands a NearChoice, in place; returned for chaining."""
    for param in command.params:
        if type(param.type) is TyperChoice:
            param.type = NearChoice(param.type.choices, case_sensitive=param.type.case_sensitive)
    for sub in getattr(command, "commands", {}).values():
        near_choices(sub)
    return command
