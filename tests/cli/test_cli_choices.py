"""A choice one slip away names the choice meant (issue 31: did-you-mean for enum values), in every
command's options and arguments, through both front doors, exit 2 as before (h3doctor/cli_choices.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from h3doctor import cli
from h3doctor.cli_choices import NearChoice
from h3doctor.entry import parse_argv
from h3doctor.spelling import nearest


def _choices():
    """(command words, the option's spelling or None for an argument, its choices) for every choice
    parameter of every command, as the CLI builds them."""
    found = []

    def walk(command, words):
        for param in command.params:
            if isinstance(param.type, NearChoice):
                found.append((words, param.opts[0] if param.param_type_name == "option" else None,
                              [str(c) for c in param.type.choices]))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*words, name])

    walk(typer.main.get_command(cli.app), [])
    return found


CHOICES = _choices()


def test_every_choice_of_every_command_is_a_near_choice():
    """Fails when near_choices misses a command or a subcommand's choices, or cli_help.GroupedHelp
    no longer runs it when Typer builds the app's group."""
    words = {(tuple(w), opt) for w, opt, _ in CHOICES}
    assert {(("check",), "--format"), (("check",), "--fail-on"), (("lint",), "--format"), (("lint",), "--fail-on"),
            (("suggest",), "--prefer"), (("init",), None), (("doctor",), "--format"),
            (("explain",), "--format")} <= words


@pytest.mark.parametrize("words, option, choices", CHOICES, ids=lambda x: " ".join(x) if isinstance(x, list) else str(x))
def test_a_near_miss_of_each_choice_names_it_and_exits_2(words, option, choices, capsys, monkeypatch):
    """Through the CLI's own error boundary (cli.main), in process: the choice one letter longer is
    refused with exit 2 and the choice named. Fails when NearChoice's did-you-mean is removed."""
    meant = choices[-1]
    typo = meant + "x"
    assert nearest(typo, choices) == meant  # the near miss is unambiguous
    argv = [*words, *([option, typo] if option else [typo])]
    if words[0] == "check":
        argv += ["--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"]
    monkeypatch.setattr(sys, "argv", ["h3doctor", *argv])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"'{typo}' is not one of " in err and f"did you mean '{meant}'?" in err, err


def test_a_value_near_nothing_lists_the_choices_only():
    said = NearChoice(["text", "json"]).get_invalid_choice_message("zzzzzz", None)
    assert said == "'zzzzzz' is not one of 'text', 'json'."


def test_a_huge_value_is_said_short_and_compared_bounded():
    """A 1 MiB value is cut to 80 characters in the message (was the whole value)."""
    said = NearChoice(["text", "json"]).get_invalid_choice_message("j" + "x" * 1_000_000, None)
    assert len(said) < 200 and said.startswith("'jxxx") and "...'" in said


def test_through_the_console_entry_check_format_names_json():
    """The console entry (entry.py's fast path first): `check --format jsno` is left to the CLI by the
    fast path (it reads no value the table does not choose) and refused there with the choice named."""
    launch = ["--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"]
    assert parse_argv(["check", "--format", "jsno", *launch]) is None
    proc = subprocess.run([sys.executable, "-c", "from h3doctor.entry import main; main()", "check", "--format", "jsno",
                           "--profile", "4xH200", *launch], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "'jsno' is not one of 'text', 'json', 'sarif', 'github'; did you mean 'json'?" \
        in proc.stderr, proc.stderr
