"""What one check produces: findings, the evaluation of one launch, and the check's result.

Frozen records: renderers (h3doctor/output/) only read them. The fix loop's changing state lives in
`check.check`, never in these.
"""

from __future__ import annotations

from h3doctor.engine.ruleset import Rule
from h3doctor.facts import HardwareFacts
from h3doctor.record import field, record
from h3doctor.shellwords import join, join_excerpt
from h3doctor.sglang.argv import ParsedCommand
from h3doctor.sglang.configfile import ConfigLoad
from h3doctor.sglang.families import FamilyMatch

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class Finding:
    """One failing rule on one launch: sglang's message (rendered), how severe, when sglang would
    stop."""
    rule: Rule
    message: str
    severity: str
    order: int
    unknown_facts: tuple[str, ...] = ()
    why: str = ""  # the rule's `why`, rendered (empty: the rule's text as written)
    detail: str | None = None  # what sglang would report next, once this message's cause is fixed
    fix_note: str = ""  # the rule's `fix_note`, rendered (empty: the rule has none)
    unknown_why: str = ""  # with unknown facts: what is not known, in words

    @property
    def cannot_verify(self) -> bool:
        return bool(self.unknown_facts)

    @property
    def predicts_failure(self) -> bool:
        """This finding says the launch will fail: every error, and a warning of a rule that says so
        (`predicts_failure: true`); a "cannot verify" finding says only that it cannot tell."""
        return not self.unknown_facts and (self.severity == "error" or self.rule.predicts_failure)

    @property
    def says(self) -> str:
        """The words in front of the message. A "cannot verify" finding has not happened: sglang's
        text is what it prints if the launch fails there, not what it says of this one."""
        return "if it fails, sglang says" if self.cannot_verify and self.rule.message_by == "sglang" else self.rule.says


@record(frozen=True)
class Evaluation:
    """One pass of every applicable rule over one command: the parse, the family, the context the
    conditions read, the findings."""
    cmd: ParsedCommand
    family: FamilyMatch
    hardware: HardwareFacts
    context: dict[str, Any]
    findings: list[Finding]
    config: ConfigLoad | None
    effective: dict[str, Any]


@record(frozen=True)
class Alternative:
    """A corrected command that gives something up: what a rule file's `alternatives:` offer when
    the fix loop finds no change of flags alone (engine/alternatives.py). Never applied on its own."""

    argv: list[str]
    gives_up: list[str]  # what it gives up, first the alternative's own words, then its fixes'
    answers: list[str]  # the unfixable rule IDs it answers
    checks_clean: bool  # re-checked: nothing left that blocks the launch
    still_failing: list[str] = field(default_factory=list)  # with checks_clean false: what still blocks it
    fix_notes: list[str] = field(default_factory=list)  # the notes of the fixes it needed on top

    @property
    def command(self) -> str:
        return join(self.argv)


@record(frozen=True)
class Change:
    """One run of tokens a fix replaced: `removed` (as the user wrote them) by `added`."""

    removed: tuple[str, ...]
    added: tuple[str, ...]
    context: str | None = None  # the flag in front of a changed value, to say which one it is
    same_flag: bool = False  # an abbreviation argparse resolves to the flag it is replaced by
    at: int = -1  # index of the first removed token (or of the insertion point) in the command it changed

    @property
    def text(self) -> str:
        lead = (self.context,) if self.context else ()
        old, new = join_excerpt(lead + self.removed), join_excerpt(lead + self.added)
        if not self.added:
            return f"drops `{old}`" if not self.context else f"drops `{join_excerpt(self.removed)}` after `{join_excerpt(lead)}`"
        if not self.removed:
            return f"adds `{new}`"
        text = f"replaces `{old}` with `{new}`"
        old_flag, new_flag = (t.split("=", 1)[0] for t in (self.removed[0], self.added[0]))
        if self.same_flag:
            text += f" (the flag argparse already resolves {join_excerpt((old_flag,))} to, spelled in full)"
        elif old_flag.startswith("--") and new_flag.startswith("--") and old_flag != new_flag:
            text += (f" (a different flag: {join_excerpt((new_flag,))} is the closest one sglang knows; check it is "
                     "the one you meant)")
        return text


@record(frozen=True)
class FixStep:
    """One round of the fix loop: the finding it fixed and every token change it made."""

    rule: Rule
    message: str
    changes: tuple[Change, ...]
    found_after_fix: bool  # not among the first findings: sglang reports it only once they are fixed
    argv: tuple[str, ...] = ()  # the command the round started from (its changes' `at` index into it)
    evaluation: Evaluation | None = field(default=None, repr=False, compare=False)  # that command's evaluation


@record(frozen=True)
class CheckResult:
    """A whole check: the first evaluation, and what the fix loop made of it (the corrected command,
    or why there is none)."""
    evaluation: Evaluation
    corrected_argv: list[str] | None
    fix_status: str  # clean | fixed | no-fix | not-converged
    fix_notes: list[str]
    gives_up: list[str]
    nearest_argv: list[str] | None = None  # with no-fix: every fixable finding fixed
    unfixable: list[str] = field(default_factory=list)  # rule IDs no change of flags fixes
    alternatives: list[Alternative] = field(default_factory=list)  # with no-fix: what to choose instead
    fix_steps: list[FixStep] = field(default_factory=list)  # what each fix changed, in order
    # with no-fix: the failure-predicting findings the nearest launch (else the launch) still has,
    # "RULE: message", and the GPU memory it lacks by the memory model (None: not a memory shortfall)
    still_fails: list[str] = field(default_factory=list)
    shortfall_gib: float | None = None
    # a launch that leaves GPUs idle: the same launch with `--num-gpus` the GPUs present, when that
    # checks clean (engine/idle_gpus.py); None otherwise
    all_gpus_argv: list[str] | None = None
    # with a corrected command: the rules it could not be checked against ("cannot verify": a fact
    # or a value the shell gives only when it runs is not known), so it is not said to pass them
    corrected_unverified: list[str] = field(default_factory=list)

    @property
    def fits_nowhere(self) -> bool:
        """No corrected command fits this hardware: what still fails is short of GPU memory."""
        return self.fix_status == "no-fix" and self.shortfall_gib is not None and bool(self.still_fails)

    @property
    def corrected_command(self) -> str | None:
        """The corrected argv as a bash command line that runs exactly it (shellwords.join)."""
        return join(self.corrected_argv) if self.corrected_argv is not None else None
