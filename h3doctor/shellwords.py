"""How a POSIX shell reads the first words of a simple command: `NAME=value` assignments set the
program's environment, and the `exec` builtin runs the program in the shell's own process. The
launch-form reader (sglang/launch_forms.py) and the launcher (launch/) both need it."""

from __future__ import annotations

import re

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def is_assignment(word: str) -> bool:
    return ASSIGNMENT.match(word) is not None


def split_exec(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """(program argv, assignments) for `NAME=value… [exec] program args…`: what a shell hands to
    exec. Words after the program are never read as assignments (`env A=1 prog` is env's job)."""
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and is_assignment(words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    if i < len(words) and words[i] == "exec":
        i += 1
    return list(words[i:]), env
