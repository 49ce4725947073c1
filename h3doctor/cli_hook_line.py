"""`h3doctor hook-line -- LINE`: the command-line hook's judge (hook.bash's DEBUG trap, hook.zsh's
accept-line widget, hook.fish's Enter binding hand it the line the user submitted, as one word).

The hook's functions (`sglang`, `python…`, `env`, …) check every launch a function can stand in
for. Three forms no function can: `exec PROGRAM …` (a function named exec would change `exec
>file`), `command PROGRAM …` (command skips functions) and a program named by a path
(`.venv/bin/sglang`, `/opt/venv/bin/python -m sglang.launch_server`). Each simple command of the
line in one of those forms that the launch-form reader reads as an sglang launch is checked here
by `h3doctor check --hook` (the same check, messages and exit statuses as the functions'); the
other simple commands are left to the functions, so no launch is checked twice.

Exit 0: run the line; 1: a launch failed its check (the shell does not run it); 128 plus a stop
or interrupt signal: the check did not finish (nothing runs). A word the shell expands only when
it runs is judged as any value (the launch's other words still block it); when h3doctor cannot
judge (such a word decides which flags sglang gets, a usage error, h3doctor broken) it says so and
exits 0: the hook is never the only reason a launch cannot start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys


BLOCK = 1
# Words the shell reads in front of a command (bash/zsh reserved words, fish's and/or/not/begin):
# not the program.
_RESERVED = {"!", "{", "}", "if", "then", "elif", "else", "while", "until", "do", "time", "and", "or", "not",
             "begin", "coproc", "nocorrect", "noglob"}


def checked_launches(line: str) -> list[list[str]]:
    """The simple commands of `line` that the hook's functions cannot see and that are sglang launches,
    each as the words `check` reads (`command` and its `-p` left out: it only skips functions). The
    line is read by h3doctor's own shell reader (shellsplit.py, with bash's and zsh's `$'…'`), never evaluated; an expansion
    stays in its word as written, marked (h3doctor/unresolved.py). Unsupported when the line cannot be read."""
    from h3doctor.shellsplit import shell_commands

    launches = []
    for command in shell_commands(line, keep_expansions=True, ansi_c=True):  # typed in bash or zsh
        words = [text for text, _start, _end in command]
        while words and words[0] in _RESERVED:
            words = words[1:]
        words = _unseen_by_functions(words)
        if words is not None and _is_launch(words):
            launches.append(words)
    return launches


def _unseen_by_functions(words: list[str]) -> list[str] | None:
    from h3doctor.launch.hook import disabled
    from h3doctor.shellwords import is_assignment

    at = 0
    while at < len(words) and is_assignment(words[at]):
        at += 1
    if at == len(words) or disabled(dict(w.partition("=")[::2] for w in words[:at])):
        return None  # `H3DOCTOR_DISABLE=1 exec sglang …`: the documented switch for one launch
    program = words[at]
    if program == "command":
        rest = words[at + 1 :]
        while rest and rest[0] in ("-p", "--"):
            rest = rest[1:]
        if not rest or rest[0].startswith("-"):  # command -v/-V: a look-up, nothing runs
            return None
        return words[:at] + rest
    return words if program == "exec" or "/" in program else None


def _is_launch(words: list[str]) -> bool:
    """What the functions' __h3doctor_wants says, by the launch-form reader: a launch unless it asks
    for help; words that name sglang but do not read as a launch go to `check`, which says why."""
    from h3doctor.errors import UsageError
    from h3doctor.sglang.launch_forms import _names_sglang, read_launch_form

    if "-h" in words or "--help" in words:
        return False
    try:
        return read_launch_form(words).program_given
    except UsageError:  # `./configure --with sglang` is not one
        return _names_sglang(words) and any(w in ("serve", "generate") or w.startswith(("-msglang", "sglang.")) for w in words)


def _check(words: list[str]) -> int:
    """`h3doctor check --hook` on one launch, in the user's environment (the line's NAME=value
    words are launch words, never h3doctor's own environment): its exit status, 128+N for a signal.
    A launch holding a word the shell expands only when it runs goes as `--marked-launch` JSON (a
    NUL cannot be in argv): the check judges that value as "any value", so the launch's other words
    still block it."""
    import json

    from h3doctor.unresolved import has_mark

    options = os.environ.get("H3DOCTOR_HOOK_ARGS", "").split()
    launch = ["--marked-launch", json.dumps(words)] if any(map(has_mark, words)) else ["--", *words]
    argv = [sys.executable, "-m", "h3doctor", "check", "--hook", *options, *launch]
    status = subprocess.run(argv, stdin=None).returncode
    return 128 - status if status < 0 else status


def judge(line: str) -> int:
    from h3doctor.shellsplit import Unsupported
    from h3doctor.launch.hook import interrupted_statuses

    try:
        launches = checked_launches(line)
    except Unsupported as exc:  # a quote left open: the shell would not run the line either
        _say(f"h3doctor could not read this line ({_shown(str(exc))}); launching sglang anyway")
        return 0
    for words in launches:
        status = _check(words)
        if status == BLOCK:
            return BLOCK
        if status in interrupted_statuses():
            _say(f"h3doctor did not finish (exit {status}: stopped or interrupted); sglang was not started")
            return status
        if status == 2:
            _say("h3doctor could not verify this launch (said above)", "h3doctor failed (exit 2); launching sglang anyway")
        elif status != 0:
            _say(f"h3doctor failed (exit {status}); launching sglang anyway")
    return 0


def _shown(word: str) -> str:
    from h3doctor.shellwords import safe_text

    return safe_text(word, limit=80)


def _say(*lines: str) -> None:
    sys.stderr.write("".join(f"{line}\n" for line in lines))


def main(argv: list[str]) -> int:
    """`hook-line -- LINE`; any failure of h3doctor's own is said, and the line runs."""
    # Ctrl-C reaches the check too (the terminal's whole foreground group): its status decides
    signal.signal(signal.SIGINT, lambda *_: None)
    if argv[:1] != ["--"] or len(argv) != 2:
        _say("h3doctor failed (hook-line takes -- LINE); launching sglang anyway")
        return 0
    try:
        return judge(argv[1])
    except Exception as exc:  # noqa: BLE001 - the hook is never the only reason a launch cannot start
        _say(f"h3doctor failed ({type(exc).__name__}: {_shown(str(exc))}); launching sglang anyway")
        return 0
