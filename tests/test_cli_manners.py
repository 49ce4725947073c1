"""The usual CLI manners: --version, completion of h3doctor's own options, `init`."""

from __future__ import annotations

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
