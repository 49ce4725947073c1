"""The frozen results of `h3doctor.api`: each is what one CLI command reports.

`to_dict()` is the command's `--format json` object (its published schema: `h3doctor schema
NAME`), a new object on every call; `to_json()` is the CLI's stdout for it, byte for byte (the
one JSON writer, output/json_text.py). `exit_code` is the CLI's exit code for the same report.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

__all__ = ["ExplainReport", "Finding", "Hardware", "LintReport", "Report", "Suggestions"]


class _Json:
    """`to_json()` from `to_dict()`, as the CLI writes it."""

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - every result defines it
        raise NotImplementedError

    def to_json(self) -> str:
        """The CLI's `--format json` output for this result: the same text, final newline included."""
        from h3doctor.output.json_text import json_text

        return json_text(self.to_dict())


class _Data(_Json):
    """A result kept as its JSON object; `to_dict()` hands out a copy, so the result stays as made."""

    _data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The command's `--format json` object (a fresh copy)."""
        return copy.deepcopy(self._data)


@dataclass(frozen=True)
class Finding:
    """One finding of a check: the rule, its severity and sglang's words for it."""

    rule: str  # the rule ID, e.g. "H3D305"
    name: str  # the rule's name
    severity: str  # "error", "warning" or "info"
    stage: str  # where sglang fails: "launch", "worker", "after-download" or "first-request"
    message: str  # sglang's own text where sglang prints one
    why: str  # h3doctor's explanation
    cannot_verify: bool  # h3doctor could not decide it (a fact is unknown): never read as clean


@dataclass(frozen=True)
class Report(_Json):
    """One check (`h3doctor check --format json`; schema `h3doctor schema report`)."""

    _result: Any = field(repr=False)  # the engine's CheckResult (not part of the stable API)
    fail_on: str = "error"  # the lowest severity that fails: "error", "warning" or "info"
    argv: tuple[str, ...] = ()  # the launch judged: the words given, or the recipe's command

    def to_dict(self) -> dict[str, Any]:
        """The `check --format json` object (built anew on every call)."""
        from h3doctor.output.json_report import build

        return build(self._result, self.fail_on)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Every finding, in the report's order."""
        return tuple(Finding(f.rule.id, f.rule.name, f.severity, f.rule.stage, f.message, f.why or f.rule.why,
                             bool(f.cannot_verify)) for f in self._result.evaluation.findings)

    @property
    def verdict(self) -> str:
        """"fail" when a finding reaches `fail_on`, else "pass"."""
        from h3doctor.output.verdict import verdict

        return verdict(self._result.evaluation.findings, self.fail_on)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 1 when a finding reaches `fail_on`, else 0."""
        return 1 if self.verdict == "fail" else 0

    @property
    def corrected_argv(self) -> list[str] | None:
        """The one corrected command that passes every fixable finding, or None."""
        argv = self._result.corrected_argv
        return None if argv is None else list(argv)

    @property
    def fix_status(self) -> str:
        """How the fixes ended (e.g. "clean", "fixed", "no-fix")."""
        return self._result.fix_status

    @property
    def is_h3_launch(self) -> bool:
        """Whether the launch serves a MiniMax-H3 family model (others are not judged)."""
        return self._result.evaluation.family.family is not None


@dataclass(frozen=True)
class LintReport(_Data):
    """One lint run (`h3doctor lint --format json`; schema `h3doctor schema lint-report`)."""

    _data: dict[str, Any] = field(repr=False)
    exit_code: int = 0  # the CLI's: 1 when a finding reaches fail_on, else 0
    notes: tuple[str, ...] = ()  # what the CLI writes to stderr (configurations found and not used)

    @property
    def verdict(self) -> str:
        """"fail" when a finding that is not suppressed reaches fail_on, else "pass"."""
        return self._data["verdict"]


@dataclass(frozen=True)
class ExplainReport(_Data):
    """One explain (`h3doctor explain --format json`; schema `h3doctor schema explain`)."""

    _data: dict[str, Any] = field(repr=False)

    @property
    def explained(self) -> bool:
        """Whether a rule was named for the text."""
        return bool(self._data["explained"])

    @property
    def rules(self) -> tuple[str, ...]:
        """The IDs of the rules the text's errors are, in the order of the text."""
        return tuple(m["rule"] for m in self._data["matches"])

    @property
    def corrected_argv(self) -> list[str] | None:
        """The corrected command of the launch (given, or found in the log), or None."""
        argv = self._data["corrected_argv"]
        return None if argv is None else list(argv)

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 when a rule is named, 1 when nothing matched."""
        return 0 if self.explained else 1


@dataclass(frozen=True)
class Suggestions(_Data):
    """One suggest (`h3doctor suggest --format json`; schema `h3doctor schema suggest`)."""

    _data: dict[str, Any] = field(repr=False)

    @property
    def status(self) -> str:
        """"fits", "cannot-verify" (the memory fit cannot be judged here), or why none is offered."""
        return self._data["status"]

    @property
    def best_argv(self) -> list[str] | None:
        """The best launch's words, or None when nothing checks clean."""
        best = self._data.get("best")
        return None if not best else list(best["argv"])

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 when the best launch fits (or its fit cannot be verified), else 1."""
        return 0 if self.status in ("fits", "cannot-verify") else 1


@dataclass(frozen=True)
class Hardware(_Data):
    """This host as sglang would see it (`h3doctor probe --format json`); hand it to
    `check(hardware=...)` to judge launches against it without probing again."""

    _data: dict[str, Any] = field(repr=False)
    facts: Any = field(repr=False, default=None)  # the HardwareFacts a check reads (not part of the stable API)
    _settings: Mapping[str, str] = field(repr=False, default_factory=dict)  # the environment it was probed in

    def _for_launch(self, launch_env: Mapping[str, str], use_cache: bool = True) -> Any:
        """The facts a check of a launch starting in `launch_env` reads: these, when the launch
        starts in the environment the probe ran in; else this host probed for that launch, as the
        CLI does (its `CUDA_VISIBLE_DEVICES=...`, a recipe's `env`: the devices, PATH and switches
        it sees are its own; the probe's cache answers when nothing changed)."""
        if launch_env != self._settings or self.facts is None or self.facts.platform is None:
            from h3doctor.host.probe import facts_for_check

            return facts_for_check(launch_env, use_cache=use_cache)  # an unknown platform: its error
        return self.facts

    @property
    def description(self) -> str:
        """The host in a line, e.g. "this host, probed: 4x NVIDIA H200 (cc 9.0)"."""
        return self.facts.description

    @property
    def platform(self) -> str | None:
        """"cuda", "rocm", "mps", "cpu", ..., or None when the probe could not tell."""
        return self.facts.platform
