"""The shell hook: `h3doctor init bash|zsh|fish [--wrap docker]` prints shell functions that check a
launch before it starts — `sglang`, `python…` (`-m sglang…`), the wrappers of a launch form (`env`,
`nohup`, `setsid`, `uv run`, `pipx run`: `hooked_programs`, from the list the launch-form reader reads)
and, opted into, `docker`/`podman`/`nerdctl` (`run … IMAGE sglang …`); every other use runs untouched.
The NAME=value words typed in front are given to h3doctor as launch words and kept out of its own
environment (docs/security.md, "The shell hook: what reaches h3doctor"). The
scripts are the package data files hook.bash, hook.zsh, hook.fish; bash and zsh share the end of
the check (hook_decide.sh) and the front functions (hook_front.sh); hook_wrap.sh/.fish is a runtime's;
hook_line.bash/.zsh/.fish, the command-line hook of interactive shells, checks the launches no
function can stand in for (`exec sglang`, `command sglang`, a program named by a path: h3doctor/cli_hook_line.py).

The protocol between the function and `h3doctor check --hook`: exit 0, launch the command as
typed; exit 1, findings were printed, launch nothing; exit ACCEPTED, the user accepted the
corrected command, whose words h3doctor wrote NUL-terminated to the `--argv-out` file; 128 plus
a terminal's stop or interrupt signal (Ctrl-Z, Ctrl-C, Ctrl-\\, and the other stop signals), h3doctor
did not finish: launch nothing. Any other status (h3doctor broken or missing) makes the function
say so and launch sglang anyway.
"""

from __future__ import annotations

import os
import signal
from typing import Mapping

from h3doctor.errors import UsageError
from h3doctor.launch.gate import FINDINGS, Verdict
from h3doctor.paths import package_dir
from h3doctor.shellwords import SGLANG_PROGRAM, SHELL_KEYWORDS, WRAPPER_PROGRAMS

SHELLS = ("bash", "zsh", "fish")
ACCEPTED = 4  # the user accepted the corrected command (see hook.bash, hook.zsh, hook.fish)
DISABLE_VAR = "H3DOCTOR_DISABLE"
SHELL_VAR = "H3DOCTOR_HOOK"  # set by the hook: which shell loaded it
SHLVL_VAR = "H3DOCTOR_HOOK_SHLVL"  # ... and at which shell level, to tell this shell from a child
# The exit statuses a shell gives a command stopped or killed by a signal from the terminal (or a
# stop signal from anywhere): the check never finished, so nothing may start. Signal numbers differ
# between systems (SIGTSTP is 20 on Linux, 18 on macOS): `init` writes this machine's into the hook.
INTERRUPT_SIGNALS = ("SIGINT", "SIGQUIT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGSTOP")


def interrupted_statuses() -> list[int]:
    return sorted(128 + int(getattr(signal, name)) for name in INTERRUPT_SIGNALS if hasattr(signal, name))


_LOAD_LINES = {
    "bash": 'eval "$(h3doctor init bash)"   # in ~/.bashrc',
    "zsh": 'eval "$(h3doctor init zsh)"    # in ~/.zshrc',
    "fish": "h3doctor init fish | source   # in ~/.config/fish/config.fish",
}


WRAPPABLE = ("docker", "podman", "nerdctl")  # `init SHELL --wrap RUNTIME`: its `run … sglang …` lines are checked


# The python names the hook stands in for (the launch-form reader reads any `python[N[.M]]`, a
# function needs a name): the usual ones and the 3.x releases sglang's wheels are built for.
PYTHON_NAMES = ("python", "python3", *(f"python3.{minor}" for minor in range(9, 15)))


def hooked_programs() -> tuple[str, ...]:
    """Every program of a launch form (shellwords: the wrappers and the programs that start sglang)
    that a shell function can stand in for; the shell's own words (`exec`, `time`) cannot be
    (`time sglang …` calls the sglang function; `exec sglang …` is the command-line hook's, cli_hook_line.py)."""
    wrappers = tuple(w for w in WRAPPER_PROGRAMS if w not in SHELL_KEYWORDS)
    return (SGLANG_PROGRAM, *PYTHON_NAMES, *wrappers)


_PROGRAM_FUNCTION = {  # one per hooked program: check what __h3doctor_wants calls a launch, else run it untouched
    "sh": 'function {p} {{ if __h3doctor_wants {p} "$@"; then eval "$__h3doctor_typed_here"; '
          '__h3doctor_check {p} "$@"; else command {p} "$@"; fi; }}\n',
    "fish": "function {p} --description '{p}; its sglang launches are checked by h3doctor first'\n"
            "    if __h3doctor_wants {p} $argv\n        __h3doctor_check {p} $argv\n"
            "    else\n        command {p} $argv\n    end\nend\n",
}


def init_script(shell: str, wrap: tuple[str, ...] = ()) -> str:
    if shell not in SHELLS:
        raise UsageError(f"no hook for shell {shell!r}; choose one of {', '.join(SHELLS)}")
    for runtime in wrap:
        if runtime not in WRAPPABLE:
            raise UsageError(f"--wrap {runtime!r}: h3doctor wraps {', '.join(WRAPPABLE)}", location="--wrap")
    here = package_dir("h3doctor.launch")
    script = (here / f"hook.{shell}").read_text(encoding="utf-8")
    if shell in ("bash", "zsh"):  # one text for what both do with h3doctor's answer, and for which commands are launches
        script += (here / "hook_decide.sh").read_text(encoding="utf-8")
        script += (here / "hook_front.sh").read_text(encoding="utf-8")
    kind = "fish" if shell == "fish" else "sh"
    script += "".join(_PROGRAM_FUNCTION[kind].format(p=program) for program in hooked_programs())
    wrapper = (here / ("hook_wrap.fish" if shell == "fish" else "hook_wrap.sh")).read_text(encoding="utf-8")
    for runtime in dict.fromkeys(wrap):
        script += wrapper.replace("@RUNTIME@", runtime)
    # the command-line hook: the launches no function can stand in for (cli_hook_line.py)
    script += (here / f"hook_line.{shell}").read_text(encoding="utf-8")
    own = ("__h3doctor_*", *hooked_programs(), *dict.fromkeys(wrap))
    statuses = [str(s) for s in interrupted_statuses()]
    stopped = str(128 + int(getattr(signal, "SIGTSTP", 20)))
    return (script.replace("@INTERRUPTED_CASE@", "|".join(statuses))
            .replace("@INTERRUPTED_FISH@", " ".join(statuses)).replace("@STOPPED@", stopped)
            .replace("@OWN_FUNCTIONS@", "|".join(own)))


def disabled(env: Mapping[str, str]) -> bool:
    return env.get(DISABLE_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def status(env: Mapping[str, str]) -> dict[str, object]:
    """Whether the hook is loaded in the shell that started this process."""
    shell = env.get(SHELL_VAR) or None
    here = shell is not None and _same_shell(env.get(SHLVL_VAR), env.get("SHLVL"))
    if shell is None:
        reason = "not loaded in this shell; add one line to your shell's startup file: " + "; ".join(_LOAD_LINES.values())
    elif not here:
        reason = (f"loaded by a parent {shell} (shell level {env.get(SHLVL_VAR)}), not by this shell "
                  f"(level {env.get('SHLVL', 'unknown')}): {_LOAD_LINES.get(shell, '')}")
    elif disabled(env):
        reason = f"loaded by this {shell}, switched off by {DISABLE_VAR}={env.get(DISABLE_VAR)}"
    else:
        reason = (f"loaded by this {shell}: `sglang serve|generate`, `python -m sglang…` and `uv run … sglang …` "
                  "are checked before they start")
    return {"active": here and not disabled(env), "loaded": here, "shell": shell, "disabled": disabled(env),
            "hook_args": env.get("H3DOCTOR_HOOK_ARGS", ""), "reason": reason}


def _same_shell(hook_level: str | None, level: str | None) -> bool:
    """The variables are exported, so every process below the shell that loaded the hook sees
    them; a shell started below it counts one level more (SHLVL). A command the shell execs in
    its own place (`exec h3doctor probe`, or the last command of `bash -c`) counts one less."""
    try:
        return int(level or "") <= int(hook_level or "")
    except ValueError:
        return hook_level == level


def interactive() -> bool:
    """A person at a terminal: h3doctor's stdin and stderr are the terminal."""
    try:
        return os.isatty(0) and os.isatty(2)
    except OSError:
        return False


def ask(question: str) -> bool:
    """Ask on the terminal (not stdin or stdout, which may be redirected); default no."""
    try:
        with open("/dev/tty", "r+b", buffering=0) as tty:  # a terminal is not seekable: no text-mode r+
            tty.write(f"{question} [y/N] ".encode())
            answer = tty.readline(64).decode(errors="replace")
    except OSError:
        return False
    return answer.strip().lower() in ("y", "yes")


def write_argv(path: str, argv: list[str]) -> None:
    """The words for the hook to run, each followed by a NUL (no word of a command can hold one)."""
    try:
        with open(path, "wb") as fh:
            fh.write(b"".join(os.fsencode(word) + b"\0" for word in argv))
    except OSError as exc:
        raise UsageError(f"cannot write the corrected command: {exc}", location=path) from None


def hook_exit(verdict: Verdict, argv_out: str | None) -> int:
    """`check --hook`: the exit status that tells the shell function what to launch."""
    if not verdict.failing:
        return 0
    import sys

    if argv_out and verdict.corrected_argv is not None and interactive() and ask("Run the corrected command instead?"):
        write_argv(argv_out, verdict.corrected_argv)
        return ACCEPTED
    sys.stderr.write(f"h3doctor: sglang was not started ({', '.join(verdict.failing)}); "
                     f"{DISABLE_VAR}=1 launches without the check\n")
    return FINDINGS
