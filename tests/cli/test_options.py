"""The two front doors of `check` read the same options (h3doctor/options.py): every option and
every spelling of it in the table, given to the console entry's fast parser and to the Typer
command, yields the same values and the same request; an option added to the table is in both."""

from __future__ import annotations

import pytest
import typer

from h3doctor import cli
from h3doctor.check_args import check_request
from h3doctor.options import CHECK_OPTIONS, Option, parse

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
SAMPLE = {"text": "some-value", "int": "7", "float": "2.5", "size": "16g"}


def _written(opt: Option) -> list[list[str]]:
    """Each way of writing the option with a value other than its default: every spelling, with
    the value as the next word and (long spellings) after `=`; a repeatable one twice."""
    if opt.kind == "flag":
        return [[flag] for flag in opt.flags]
    value = next(c for c in opt.choices if c != opt.default) if opt.kind == "choice" else SAMPLE[opt.kind]
    ways = []
    for flag in opt.flags:
        ways.append([flag, value])
        if flag.startswith("--"):
            ways.append([f"{flag}={value}"])
    return [way * 2 for way in ways] if opt.repeatable else ways


def _through_typer(table, words: list[str], monkeypatch, environ=None) -> dict:
    """The values cli.check is handed for `check WORDS -- LAUNCH`, through a Typer app built from `table`."""
    seen = {}
    monkeypatch.setattr(cli, "check", lambda ctx, argv, values: seen.update(values=values, tokens=list(argv or [])))
    app = typer.Typer()
    app.callback()(lambda: None)
    app.command("check", context_settings=cli.CHECK_SETTINGS)(cli.check_command(table))
    typer.main.get_command(app).main(["check", *words, "--", *LAUNCH], standalone_mode=False, prog_name="h3doctor")
    assert seen["tokens"] == LAUNCH
    return seen["values"]


def _cases(table):
    return [(opt.name, words) for opt in table for words in _written(opt)]


@pytest.mark.parametrize("name, words", _cases(CHECK_OPTIONS), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_every_option_and_spelling_reads_the_same_through_both_doors(name, words, monkeypatch):
    fast = parse(words)
    assert fast is not None, f"the fast parser left {words} to the CLI"
    assert fast[name] != next(o.default for o in CHECK_OPTIONS if o.name == name)
    assert _through_typer(None, words, monkeypatch) == fast
    assert check_request(fast, LAUNCH) == check_request(_through_typer(None, words, monkeypatch), LAUNCH)


def test_every_option_together_reads_the_same_through_both_doors(monkeypatch):
    words = [w for opt in CHECK_OPTIONS for w in _written(opt)[0]]
    fast = parse(words)
    assert fast is not None and all(fast[o.name] != o.default for o in CHECK_OPTIONS)
    assert _through_typer(None, words, monkeypatch) == fast


def test_no_option_given_is_every_default_through_both_doors(monkeypatch):
    assert _through_typer(None, [], monkeypatch) == parse([]) == {o.name: o.default for o in CHECK_OPTIONS}


def test_the_cli_offers_exactly_the_tables_options():
    params = typer.main.get_command(cli.app).commands["check"].params
    options = {p.name: (tuple(p.opts), p.hidden) for p in params if isinstance(p, typer.core.TyperOption)}
    assert options == {o.name: (o.flags, o.hidden) for o in CHECK_OPTIONS}


EXTRA = (Option("extra", ("--extra", "-x"), "text", "An option added to the table.", repeatable=True,
                envvar="H3DOCTOR_TEST_EXTRA"),
         Option("level", ("--level",), "int", "Another, with a default.", default=3))


@pytest.mark.parametrize("words, environ", [
    (["--extra", "a", "-x", "b", "--level", "5"], {}),
    (["--extra=a"], {}),
    ([], {"H3DOCTOR_TEST_EXTRA": "a b"}),  # from its variable, split at blanks as click splits it
    (["--extra", "c"], {"H3DOCTOR_TEST_EXTRA": "a b"}),  # the command line wins
])
def test_an_option_added_to_the_table_is_read_by_both_doors(words, environ, monkeypatch):
    table = CHECK_OPTIONS + EXTRA
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    fast = parse(words, table)
    assert fast is not None and set(fast) == {o.name for o in table}
    assert _through_typer(table, words, monkeypatch) == fast
