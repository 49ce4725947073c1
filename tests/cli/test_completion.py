"""Manners of the command line (issue 31 item 6): `--profile <Tab>` completes profile names in
bash, zsh and fish (through Typer's completion protocol, as the scripts of `--show-completion`
call it), and `--show-completion SHELL` gives the named shell's script, whatever $SHELL is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MARKS = {"bash": "_h3doctor_completion() {", "zsh": "#compdef h3doctor", "fish": "complete --command h3doctor"}
# what each shell's script sets before calling h3doctor for the words typed so far
PROTOCOL = {
    "bash": lambda words: {"_H3DOCTOR_COMPLETE": "complete_bash", "COMP_WORDS": words,
                           "COMP_CWORD": str(len(words.split()) - 1)},
    "zsh": lambda words: {"_H3DOCTOR_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": words},
    "fish": lambda words: {"_H3DOCTOR_COMPLETE": "complete_fish", "_TYPER_COMPLETE_ARGS": words,
                           "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
}


def _h3doctor(args: list[str], env: dict[str, str], cwd=None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("_H3DOCTOR", "COMP_", "_TYPER"))}
    full.update(env)
    # the console script: Typer names the completion variable after the program (_H3DOCTOR_COMPLETE)
    return subprocess.run([str(Path(sys.executable).parent / "h3doctor"), *args], capture_output=True, text=True,
                          env=full, timeout=60, cwd=cwd)


@pytest.mark.parametrize("shell", sorted(PROTOCOL))
@pytest.mark.parametrize("command", ["check", "suggest", "explain"])
def test_profile_names_complete(shell, command, tmp_path):
    (tmp_path / "4x-mine.yaml").write_text("platform: cuda\n")
    (tmp_path / "4x-notes.txt").write_text("")
    done = _h3doctor([], PROTOCOL[shell](f"h3doctor {command} --profile 4x"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4xH200" in done.stdout and "4xB200" in done.stdout and "1xH100" not in done.stdout
    assert "4x-mine.yaml" in done.stdout and "4x-notes.txt" not in done.stdout  # a profile file, not any file


@pytest.mark.parametrize("shell", sorted(MARKS))
@pytest.mark.parametrize("form", ["separate", "equals"])
def test_show_completion_gives_the_named_shells_script(shell, form):
    other = "/usr/bin/fish" if shell != "fish" else "/bin/bash"  # the shell this runs in is another
    args = ["--show-completion", shell] if form == "separate" else [f"--show-completion={shell}"]
    done = _h3doctor(args, {"SHELL": other})
    assert done.returncode == 0 and done.stdout.startswith(MARKS[shell]), done.stdout[:200]


def test_show_completion_of_an_unknown_shell_is_a_usage_error():
    done = _h3doctor(["--show-completion", "tcsh"], {})
    assert done.returncode == 2 and "choose one of bash, zsh, fish" in done.stderr and "Traceback" not in done.stderr
