"""The output registry: every command's formats in one table, one strict JSON writer, the same
bytes on stdout and in --output-file, and a text report that needs Rich only on a terminal."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.output import formats
from h3doctor.output.json_report import build
from h3doctor.output.json_text import json_text
from h3doctor.output.markup import PlainConsole, escape, plain
from h3doctor.output.text import text_report
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table
from repo_paths import REPO

ROOT = REPO
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FAILING = [*LAUNCH, "--ulysses-degree", "2", "--ring-degree", "2", "--attention-backend", "sage_attn"]
JSON_FORMATS = {"json", "sarif"}


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def _command_args(command: str, tmp_path: Path) -> list[str]:
    if command == "check":  # a failing launch with a non-finite --config value echoed in the report
        config = tmp_path / "c.yaml"
        config.write_text("attention_backend_config: {sparsity: .nan, cap: .inf}\n")
        return ["check", "--profile", "4xH200", "--", *FAILING, "--config", str(config)]
    if command == "lint":
        return ["lint", str(ROOT / "examples"), "--no-config"]
    if command == "explain":  # a matched message, and the launch's check with its corrected command
        return ["explain", "--profile", "4xH200", "ValueError: num_gpus (1) must be divisible by (dp_size * tp_size) = 2",
                "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--tp-size", "2"]
    return ["suggest", "--profile", "4xH200", "--runner-ups", "1"]


def _run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    # no $COLUMNS: a pipe, like a file, gets each line whole (folding is for a terminal's width)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "FORCE_COLOR", "COLUMNS"))}
    env.update({"H3DOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=tmp_path)


def _timeless(text: str) -> str:
    """suggest reports how long its search took: the one part that differs from run to run."""
    text = re.sub(r'"elapsed_s": [0-9.e-]+', '"elapsed_s": 0', text)
    return re.sub(r"[0-9]+\.[0-9]+ s; score", "0 s; score", text)


CASES = [(command, name) for command in ("check", "lint", "suggest", "explain") for name in formats.FORMATS[command]]


@pytest.mark.parametrize("command,name", CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_stdout_and_output_file_are_the_same_and_strict(command, name, tmp_path):
    args = _command_args(command, tmp_path)
    split = args.index("--") if "--" in args else len(args)
    args = [*args[:split], "--format", name, *args[split:]]
    to_file = tmp_path / "report.out"
    on_stdout = _run(args, tmp_path)
    in_file = _run([*args[:split], "--output-file", str(to_file), *args[split:]], tmp_path)
    assert on_stdout.returncode == in_file.returncode and on_stdout.returncode in (0, 1), on_stdout.stderr
    assert in_file.stdout == "" and _timeless(to_file.read_text(encoding="utf-8")) == _timeless(on_stdout.stdout)
    assert on_stdout.stdout.strip()
    if name in JSON_FORMATS:
        data = _strict(on_stdout.stdout)
        if command == "check" and name == "json":
            assert data["effective_config"]["attention_backend_config"] == {"sparsity": "nan", "cap": "inf"}
    if command == "explain" and name == "text":
        assert "H3D227" in on_stdout.stdout and "[bold" not in on_stdout.stdout
        # the host has the two GPUs --tp-size 2 asks for: they are supplied, the degree kept
        assert on_stdout.stdout.splitlines()[-1] == "sglang serve MiniMaxAI/MiniMax-H3 --tp-size 2 --num-gpus 2"
    if command == "check" and name == "text":  # the whole report, without Rich's markup left in it
        assert "H3D305" in on_stdout.stdout and "[bold" not in on_stdout.stdout and "[/]" not in on_stdout.stdout


@pytest.mark.parametrize("command", ["check", "lint", "suggest", "explain"])
def test_each_command_offers_exactly_the_registered_formats(command):
    import typer

    from h3doctor import cli

    params = typer.main.get_command(cli.app).commands[command].params
    [format_option] = [p for p in params if "--format" in getattr(p, "opts", ())]
    assert list(format_option.type.choices) == list(formats.FORMATS[command])


def test_an_unknown_format_is_a_usage_error():
    from h3doctor.errors import UsageError

    with pytest.raises(UsageError, match="formats: text, json"):
        formats.render("suggest", "sarif", formats.Report({}))


def test_registering_a_command_is_one_entry(monkeypatch):
    monkeypatch.setitem(formats.FORMATS, "explain", {"text": formats.write_text, "json": formats.write_json})
    report = formats.Report({"rule": "H3D305", "x": float("nan")},
                            text=lambda console, out: console.print(f"[bold]{escape('[H3D305]')}[/] explained"))
    assert formats.render("explain", "text", report) == "[H3D305] explained\n"
    assert _strict(formats.render("explain", "json", report)) == {"rule": "H3D305", "x": "nan"}


def test_the_json_writer_never_writes_a_bare_non_finite_number():
    data = {"a": float("nan"), "b": [float("inf"), (float("-inf"), 1.5)], "c": {"d": {"e": float("nan")}}, "f": 2}
    assert _strict(json_text(data)) == {"a": "nan", "b": ["inf", ["-inf", 1.5]], "c": {"d": {"e": "nan"}}, "f": 2}
    assert json_text(data).endswith("}\n")


# -- the plain console reads markup as Rich does -----------------------------------------------

def _rich(markup: str) -> str:
    buf = io.StringIO()
    Console(file=buf, no_color=True, highlight=False, soft_wrap=True, emoji=False).print(markup, soft_wrap=True)
    return buf.getvalue()


_HOSTILE = st.lists(st.sampled_from(list("ab[]/\\#@=: \t\r\x07") + ["[bold]", "[/]", "\\[", "[red]"]),
                    max_size=30).map("".join)


@given(_HOSTILE)
def test_escaped_text_shows_as_itself_on_both_consoles(text):
    markup = f"[bold]{escape(text)}[/] [dim]({escape(text)})[/]"
    assert plain(markup) + "\n" == _rich(markup)


@given(_HOSTILE)
def test_unescaped_markup_reads_the_same_on_both_consoles(text):
    try:
        expected = _rich(text)
    except Exception:  # noqa: BLE001 - markup Rich refuses (an unmatched [/]) is never produced by the renderers
        return
    assert plain(text) + "\n" == expected


RULES = load_rules()
EXAMPLES = [(r, ex) for r in RULES for ex in r.examples
            if "config" not in ex and "checkpoint" not in ex and ex["expect"] != "pass"]


def test_the_text_report_is_the_same_plain_and_through_rich():
    """Every failing rule example's report, with --show-config (the memory bar too)."""
    compared = 0
    for rule, ex in EXAMPLES:
        release = releases.target(ex.get("sglang_version"), None)
        profile = load_profile(ex["profile"])
        if ex.get("hw"):
            from dataclasses import replace

            profile = replace(profile, **ex["hw"])
        result = check(shlex.split(ex["argv"]), profile, RULES, load_flag_table(release.table_version),
                       ex.get("env", {}), ex.get("intent", {}), release=release)
        data = build(result)
        for verbose in (False, True):  # the short report and --verbose, folded to 80 columns
            texts = []
            for console_for in (lambda buf: PlainConsole(buf, 80),
                                lambda buf: Console(file=buf, no_color=True, highlight=False, soft_wrap=True,
                                                    emoji=False, width=80)):
                buf = io.StringIO()
                text_report(result, console_for(buf), buf, show_config=True, effective=data["effective_config"],
                            summary=data["summary"], verbose=verbose)
                texts.append(buf.getvalue())
            assert texts[0] == texts[1], f"{rule.id} {ex['name']}"
        compared += 1
    assert compared > 100


# -- what a launch imports ---------------------------------------------------------------------

def _imported(code: str, tmp_path: Path) -> dict:
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)}
    probe = code + "\nimport json; print(json.dumps({m: m in sys.modules for m in ('typer', 'rich', 'jsonschema', 'yaml', 'h3doctor.cli')}))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_clean_hook_launch_imports_no_cli_no_rich_no_schema_validator(tmp_path):
    subprocess.run([sys.executable, "-m", "h3doctor", "rules"], capture_output=True, timeout=120,
                   env={**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)})  # the rules cache, as after install
    code = ("import sys; from h3doctor.entry import hook_fast_path; "
            f"assert hook_fast_path(['check', '--hook', '--profile', '4xH200', '--', *{LAUNCH!r}]) == 0")
    assert _imported(code, tmp_path) == {"typer": False, "rich": False, "jsonschema": False, "yaml": False,
                                         "h3doctor.cli": False}


def test_the_text_report_off_a_terminal_needs_no_rich(tmp_path):
    subprocess.run([sys.executable, "-m", "h3doctor", "rules"], capture_output=True, timeout=120,
                   env={**os.environ, "H3DOCTOR_CACHE_DIR": str(tmp_path)})
    code = ("import sys, io, contextlib\nfrom h3doctor import cli\nsys.argv = ['h3doctor', 'check', '--profile', "
            f"'4xH200', '--', *{FAILING!r}]\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    try:\n        cli.main()\n    except SystemExit:\n        pass\n"
            "assert 'Corrected command' in buf.getvalue(), buf.getvalue()")
    imported = _imported(code, tmp_path)
    assert imported["rich"] is False and imported["jsonschema"] is False
