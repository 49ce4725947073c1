"""What a launcher shows its user when h3doctor rejects a launch: the report's headline (the stage
where sglang fails), each error's message in sglang's words, and the corrected command; bounded,
because a launcher prints it whole (SkyPilot's rejection, dstack's apply error)."""

from __future__ import annotations

from typing import Any

from h3doctor.output.json_report import stage_title
from h3doctor.output.verdict import failing

MAX_MESSAGE = 4000  # characters: a rejection is read in a terminal, not scrolled through
MAX_ERRORS = 8  # per launch and target; the rest are counted
MAX_LINE = 400


def bounded(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 40].rstrip() + f" … ({len(text) - limit + 40} more characters)"


def reject_message(failures: list[tuple[Any, str, Any]], tail: str | None = None) -> str:
    """(launch, target, check result) of each failing check, as one message."""
    lines: list[str] = []
    for launch, target, result in failures:
        errors = failing(result.evaluation.findings, "error")
        stage = errors[0].rule.stage
        lines.append(f"h3doctor rejects {launch.label} on {target}: "
                     f"{stage_title(stage, [f.severity for f in errors if f.rule.stage == stage])}")
        for f in errors[:MAX_ERRORS]:
            lines.append(bounded(f"  {f.rule.id}: {f.message}", MAX_LINE))
        if len(errors) > MAX_ERRORS:
            lines.append(f"  … and {len(errors) - MAX_ERRORS} more errors (h3doctor check shows them all)")
        command = result.corrected_command
        lines.append(bounded(f"  corrected command: {command}" if command is not None else
                             f"  no corrected command ({result.fix_status}): h3doctor check shows the nearest launch",
                             MAX_LINE * 2))
    if tail:
        lines.append(bounded(f"h3doctor: {tail}", MAX_LINE))
    return bounded("\n".join(lines))
