"""Whether a checked launch starts, and as what: the contract of `check --exec` and the hook.

A finding about what the command runs besides sglang (a rule with `refuses_exec`: H3D960-H3D963)
starts nothing (exit 1) unless --allow-unsafe-exec; --force and --apply-fixes do not lift it.
No finding at or above --fail-on: the command as given. Otherwise nothing starts (exit 1) unless
asked: --apply-fixes starts the corrected command (and refuses when there is none), --force the
command as given. Either way the user is told first what is run instead, or what is ignored, and
before any exec the program that will run (its absolute path, found on the PATH exec uses) and
the whole command, every word made inert (shellwords).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Mapping

from h3doctor.launch.execute import locate, replace_process
from h3doctor.shellwords import join, safe_text, split_exec
from h3doctor.tokendiff import opcodes

FINDINGS = 1  # the exit status when nothing is launched because of findings


@dataclass(frozen=True)
class Verdict:
    """What the check said, in the launch room's terms (it does not read the engine's records)."""

    failing: list[str]  # labels of the findings at or above --fail-on, e.g. "H3D305 (error)"
    corrected_argv: list[str] | None
    fix_status: str  # clean | fixed | no-fix | not-converged
    # labels of the findings whose rule refuses exec (what the command runs besides sglang), at any severity
    unsafe: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """What the launch gate does after a check: what to run (or nothing), what to say first, and the
    exit status."""
    argv: list[str] | None  # what to launch; None: launch nothing
    notice: str  # what to tell the user first (stderr); "" when the command starts as given and clean
    exit_code: int = 0  # when nothing is launched


def decide(verdict: Verdict, tokens: list[str], *, apply_fixes: bool = False, force: bool = False,
           allow_unsafe: bool = False) -> Decision:
    unsafe = ", ".join(verdict.unsafe)
    if unsafe and not allow_unsafe:
        return Decision(None, f"h3doctor: not launching: {unsafe}: the command runs more than sglang "
                              f"(docs/security.md):\n  {join(tokens)}\nRead it; pass --allow-unsafe-exec to run it "
                              "anyway.", FINDINGS)
    ignored = f"h3doctor: --allow-unsafe-exec: launching despite {unsafe}\n" if unsafe else ""
    decision = _decide(verdict, tokens, apply_fixes=apply_fixes, force=force)
    if ignored and decision.argv is not None:
        return Decision(decision.argv, ignored + decision.notice, decision.exit_code)
    return decision


def _decide(verdict: Verdict, tokens: list[str], *, apply_fixes: bool, force: bool) -> Decision:
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
                        f"  -> {join(verdict.corrected_argv)}")
    return Decision(None, f"h3doctor: not launching: {listed}. Run the corrected command, or pass --apply-fixes "
                          "to launch it, or --force to launch the command as given.", FINDINGS)


def describe_changes(before: list[str], after: list[str]) -> list[str]:
    """The word-level differences between two commands, one line each, in command order; each word
    quoted as bash reads it back, its control and format characters escaped (shellwords.join)."""
    lines = []
    for op, a0, a1, b0, b1 in opcodes(before, after):
        old, new = join(before[a0:a1]), join(after[b0:b1])
        if op == "replace":
            lines.append(f"changed {old} -> {new}")
        elif op == "delete":
            lines.append(f"removed {old}")
        elif op == "insert":
            lines.append(f"added {new}")
    return lines


# (the program word sglang is started by, the PATH it is looked up on) in a launch's words and its
# environment, or None when no word on this machine names it (a container's is in the image)
ProgramOf = Callable[[list[str], Mapping[str, str]], "tuple[str, str | None] | None"]


def what_runs(words: list[str], env: Mapping[str, str], program_of: ProgramOf | None = None) -> str:
    """The lines printed before exec: each program that will run — the one exec starts, and sglang
    when a wrapper (`env`, `nohup`) starts it — by its absolute path, found on the PATH it is
    looked up on; where h3doctor's own PATH finds another (or none), that too: a PATH the launch
    sets never chooses the program silently. Then the whole command. Every word is inert."""
    argv, assigned = split_exec(words)
    exec_env = {**env, **assigned}
    looked_up = [(argv[0], exec_env.get("PATH", os.defpath), "exec starts")] if argv else []
    found = program_of(words, env) if program_of is not None else None
    if found is not None and (not looked_up or (found[0], found[1] or os.defpath) != looked_up[0][:2]):
        looked_up.append((found[0], found[1] or os.defpath, "which starts"))
    own = os.environ.get("PATH", os.defpath)
    lines = []
    for word, search, role in looked_up:
        here = locate(word, search)
        line = f"h3doctor: {role} {safe_text(here) if here else safe_text(word) + ' (not found)'}"
        mine = locate(word, own)
        if mine != here and "/" not in word:
            line += (f"; h3doctor's own PATH finds {safe_text(mine) if mine else 'no ' + safe_text(word)}: "
                     "the launch's PATH chooses this one")
        lines.append(line)
    lines.append(f"h3doctor: command: {join(words)}")
    return "\n".join(lines)


def exec_launch(verdict: Verdict, tokens: list[str], env: Mapping[str, str], *, apply_fixes: bool = False,
                force: bool = False, allow_unsafe: bool = False, program_of: ProgramOf | None = None) -> int:
    """`check --exec`: launch what `decide` says in place of this process (leading `NAME=value`
    words go into the environment, as a shell would put them), after printing what runs
    (`what_runs`). Returns only when nothing is launched or the program cannot be started; its
    value is then the exit status."""
    decision = decide(verdict, tokens, apply_fixes=apply_fixes, force=force, allow_unsafe=allow_unsafe)
    if decision.notice:
        sys.stderr.write(decision.notice + "\n")
    if decision.argv is None:
        return decision.exit_code
    sys.stderr.write(what_runs(decision.argv, env, program_of) + "\n")
    argv, assigned = split_exec(decision.argv)
    return replace_process(argv, {**env, **assigned})
