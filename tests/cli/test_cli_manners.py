"""The usual CLI manners: --version, completion of h3doctor's own options, `init`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from h3doctor import __version__
from h3doctor.launch.hook import SHELLS, init_script


def test_version_names_the_sglang_release_the_rules_target(cli):
    code, out, _ = cli("--version", json_output=False)
    assert code == 0 and out == f"h3doctor {__version__} (rules for sglang 0.5.23)\n"


@pytest.mark.parametrize("shell", SHELLS)
def test_init_prints_the_hook(cli, shell):
    code, out, _ = cli("init", shell, json_output=False)
    assert code == 0 and out == init_script(shell)
    assert "H3DOCTOR_HOOK" in out and "command sglang" in out and "h3doctor check --hook" in out


def test_init_refuses_an_unknown_shell(cli):
    code, _, err = cli("init", "tcsh", json_output=False)
    assert code == 2 and "tcsh" in err


# the shell's own marker in the script click/Typer writes for it
_SCRIPT_MARK = {"bash": "complete -o", "zsh": "#compdef h3doctor", "fish": "complete --command h3doctor"}


@pytest.mark.parametrize("shell", SHELLS)
def test_completion_script_for_each_shell(shell):
    # asked for by name (`_H3DOCTOR_COMPLETE=source_<shell>`): `--show-completion` detects the
    # calling shell instead, which depends on what runs the tests
    env = {**os.environ, "_H3DOCTOR_COMPLETE": f"source_{shell}"}
    script = Path(sys.executable).parent / "h3doctor"
    proc = subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert _SCRIPT_MARK[shell] in proc.stdout and "_H3DOCTOR_COMPLETE" in proc.stdout


def _complete(words: str) -> list[str]:
    env = {**os.environ, "_H3DOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split(" ")) - 1)}  # a trailing space: a new, empty word
    script = Path(sys.executable).parent / "h3doctor"  # the console script: completion is keyed by its name
    proc = subprocess.run([str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_completion_offers_h3doctor_options_and_commands():
    assert "--profile" in _complete("h3doctor check --pro")
    assert {"--exec", "--apply-fixes", "--fail-on"} <= set(_complete("h3doctor check --"))
    assert "--hook" not in _complete("h3doctor check --")  # the hook's own protocol is hidden
    assert "init" in _complete("h3doctor in")
    assert {"bash", "zsh", "fish"} <= set(_complete("h3doctor init "))


# -- -h, a reader that stops reading, h3doctor's own options misspelt ---------------------------

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]


def _h3doctor(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "h3doctor", *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=120)


@pytest.mark.parametrize("command", [[], ["check"], ["lint"], ["rules"], ["rule"], ["suggest"], ["probe"],
                                     ["profiles"], ["init"], ["schema"], ["coverage"], ["doctor"]])
def test_dash_h_is_help_everywhere(command):
    proc = _h3doctor(*command, "-h")
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: ") and "-h, --help" in proc.stdout, proc.stderr


def _closed_reader(*args: str) -> subprocess.CompletedProcess:
    """The command with stdout a pipe whose reader has gone (`| head -1` after its line)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _h3doctor(*args, stdout=write)
    finally:
        os.close(write)


@pytest.mark.parametrize("args, code", [(["rules"], 0), (["rule", "H3D305"], 0), (["lint", "examples/"], 1),
                                        (["profiles"], 0), (["check", "--profile", "1xH100", "--", *LAUNCH], 1)])
def test_a_reader_that_stops_reading_is_a_quiet_exit_with_the_commands_own_code(args, code):
    proc = _closed_reader(*args)
    assert (proc.returncode, proc.stderr) == (code, "")


def test_a_misspelt_h3doctor_option_is_a_usage_error_with_did_you_mean():
    proc = _h3doctor("check", "--profle", "4xH200", "--", *LAUNCH)
    assert proc.returncode == 2 and "no such option: --profle; did you mean --profile?" in proc.stderr
    assert proc.stdout == ""  # not a report of an sglang flag


def test_a_rule_given_by_its_number_is_that_rule_not_a_look_alike():
    # `h3doctor rule 305` suggested H3D805 (difflib on the bare number); the number alone is H3D305
    proc = _h3doctor("rule", "--format", "json", "305")
    assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == "H3D305"
    proc = _h3doctor("rule", "h3d35")
    assert proc.returncode == 2 and "no rule 'h3d35'; did you mean" in proc.stderr


def test_an_sglang_flag_close_to_an_h3doctor_option_is_still_sglangs():
    # `--config` is close to check's --show-config, and is an sglang flag: given directly, it is sglang's
    proc = _h3doctor("check", "--format", "json", "--profile", "4xH200", "MiniMaxAI/MiniMax-H3", "--config", "none.yaml")
    assert "no such option" not in proc.stderr and proc.returncode in (0, 1)


def test_through_the_hook_a_misspelt_option_exits_2_so_the_hook_launches(tmp_path):
    # exit 2 is an h3doctor failure: the shell hook (hook_decide.sh) launches sglang anyway, with a notice
    for argv in (["check", "--hook", "--profle", "4xH200", "--", *LAUNCH],
                 ["check", "--hook", "--argv-out", str(tmp_path / "argv"), "--profle", "4xH200", "--", *LAUNCH]):
        proc = _h3doctor(*argv)
        assert proc.returncode == 2 and "did you mean --profile?" in proc.stderr


def test_an_unknown_option_in_front_of_the_launch_is_a_usage_error_not_an_empty_nearest_launch():
    proc = _h3doctor("check", "--bogus-opt", "--profile", "4xH200", "--", *LAUNCH)
    assert proc.returncode == 2 and "no such option: --bogus-opt" in proc.stderr
    assert "Nearest launch" not in proc.stdout


def test_through_the_real_bash_hook_a_misspelt_option_launches_anyway(tmp_path):
    # end to end: H3DOCTOR_HOOK_ARGS with a typo must not block every launch (it did: the typo was
    # read as an sglang flag), it is an h3doctor failure, said, and sglang starts as typed
    from launch_helpers import StubSglang

    stub = StubSglang(tmp_path)
    script = 'eval "$(h3doctor init bash)" || exit 99; sglang "$@"'
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", *LAUNCH[1:]], capture_output=True,
                          text=True, env=stub.env(H3DOCTOR_HOOK_ARGS="--profle 4xH200", STUB_EXIT="7"), timeout=120,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.returncode == 7 and [c["argv"] for c in stub.calls()] == [LAUNCH[1:]]
    assert "did you mean --profile?" in proc.stderr and "h3doctor failed (exit 2); launching sglang anyway" in proc.stderr


@pytest.mark.parametrize("args, said", [
    (["--profile", "m3max"], "no such hardware profile 'm3max'; did you mean 'm3-max'?"),
    (["--profile", "2xRTX409"], "no GPU 'RTX409' in the catalog; did you mean 'RTX4090'?"),
    (["--recipe", "{recipe}"], "{recipe}:2:1: at (top level): unknown key 'comand' (did you mean 'command'?)"),
])
def test_a_near_miss_is_named_with_what_was_meant(tmp_path, args, said):
    """A profile name, a GPU name or a recipe key one slip away says which one was meant (and a
    recipe's key where it is written), never only the list or the schema's raw words."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text("profile: 4xH200\ncomand: sglang serve MiniMaxAI/MiniMax-H3\n")
    argv = [a.replace("{recipe}", str(recipe)) for a in args]
    launch = [] if "--recipe" in args else ["--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"]
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", *argv, *launch], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and said.replace("{recipe}", str(recipe)) in proc.stderr, proc.stderr


def test_help_lists_every_command_once_whole_and_grouped():
    """`h3doctor --help` at 80 columns: the commands in the groups of cli_help.GROUPS, in that
    order, every visible command on exactly one line of its own, none cut with `...`. Fails when a
    command is dropped from the listing or the grouping is removed."""
    import typer

    from h3doctor.cli import app
    from h3doctor.cli_help import GROUPS

    proc = subprocess.run([sys.executable, "-m", "h3doctor", "--help"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    headings = [line for line in lines if line.endswith(" commands:")]
    assert headings[:3] == [f"{title} commands:" for title, _ in GROUPS]
    group = typer.main.get_command(app)
    visible = [name for name, cmd in group.commands.items() if not cmd.hidden]
    rows = [line for line in lines[lines.index(headings[0]):] if line.startswith("  ") and line.split()]
    assert sorted(row.split()[0] for row in rows) == sorted(visible)
    assert not any(row.rstrip().endswith("...") for row in rows), proc.stdout
