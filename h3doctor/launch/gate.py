"""Whether a checked launch starts, and as what: the contract of `check --exec` and the hook.

No finding at or above --fail-on: the command as given. Otherwise nothing starts (exit 1) unless
asked: --apply-fixes starts the corrected command (and refuses when there is none), --force the
command as given. Either way the user is told first what is run instead, or what is ignored.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from typing import Mapping

from h3doctor.launch.execute import replace_process
from h3doctor.shellwords import split_exec
from h3doctor.tokendiff import opcodes

FINDINGS = 1  # the exit status when nothing is launched because of findings


@dataclass(frozen=True)
class Verdict:
    """What the check said, in the launch room's terms (it does not read the engine's records)."""

    failing: list[str]  # labels of the findings at or above --fail-on, e.g. "H3D305 (error)"
    corrected_argv: list[str] | None
    fix_status: str  # clean | fixed | no-fix | not-converged


@dataclass(frozen=True)
class Decision:
    """What the launch gate does after a check: what to run (or nothing), what to say first, and the
    exit status."""
    argv: list[str] | None  # what to launch; None: launch nothing
    notice: str  # what to tell the user first (stderr); "" when the command starts as given and clean
    exit_code: int = 0  # when nothing is launched


def decide(verdict: Verdict, tokens: list[str], *, apply_fixes: bool = False, force: bool = False) -> Decision:
    if not verdict.failing:
        return Decision(list(tokens), "")
    listed = ", ".join(verdict.failing)
    if force:
        return Decision(list(tokens), f"h3doctor: --force: launching the command as given, ignoring {listed}")
    if apply_fixes:
        if verdict.corrected_argv is None:
            return Decision(None, f"h3doctor: --apply-fixes: there is no corrected command ({verdict.fix_status}); "
                                  f"not launching ({listed})", FINDINGS)
        changes = "\n".join(f"  {c}" for c in describe_changes(tokens, verdict.corrected_argv))
        return Decision(list(verdict.corrected_argv),
                        f"h3doctor: --apply-fixes: launching the corrected command (for {listed}):\n{changes}\n"
                        f"  -> {shlex.join(verdict.corrected_argv)}")
    return Decision(None, f"h3doctor: not launching: {listed}. Run the corrected command, or pass --apply-fixes "
                          "to launch it, or --force to launch the command as given.", FINDINGS)


def describe_changes(before: list[str], after: list[str]) -> list[str]:
    """The word-level differences between two commands, one line each, in command order."""
    lines = []
    for op, a0, a1, b0, b1 in opcodes(before, after):
        old, new = shlex.join(before[a0:a1]), shlex.join(after[b0:b1])
        if op == "replace":
            lines.append(f"changed {old} -> {new}")
        elif op == "delete":
            lines.append(f"removed {old}")
        elif op == "insert":
            lines.append(f"added {new}")
    return lines


def exec_launch(verdict: Verdict, tokens: list[str], env: Mapping[str, str], *, apply_fixes: bool = False,
                force: bool = False) -> int:
    """`check --exec`: launch what `decide` says in place of this process (leading `NAME=value`
    words go into the environment, as a shell would put them). Returns only when nothing is
    launched or the program cannot be started; its value is then the exit status."""
    decision = decide(verdict, tokens, apply_fixes=apply_fixes, force=force)
    if decision.notice:
        sys.stderr.write(decision.notice + "\n")
    if decision.argv is None:
        return decision.exit_code
    argv, assigned = split_exec(decision.argv)
    return replace_process(argv, {**env, **assigned})
