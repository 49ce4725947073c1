"""Launches of a model that is not a MiniMax-H3 family member are not judged (README: h3doctor
says what sglang would do with it). `check` says so and exits 0; lint must not fail, flag or
rewrite them either (a Qwen LLM launch's documented `--tp 2` read by the diffusion parser).

Only a model lint can name is let go: a hub id (`org/name`) no H3 family matches, or a
`--model-type` that starts another backend. A local path that cannot be identified on the CI
runner (its weights are not there) stays judged: not knowing is never an all-clear.
"""

from __future__ import annotations

import re

from h3doctor.errors import UsageError
from h3doctor.sglang.families import match_family

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from h3doctor.sglang.argv import ParsedCommand

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def other_model(cmd: ParsedCommand | None) -> str | None:
    """Why the launch is not a MiniMax-H3 launch, when its own words (as lint's session parsed
    them once, None when they cannot be parsed) say so; else None."""
    if cmd is None:
        return None
    if cmd.model_type not in ("auto", "diffusion"):
        return f"--model-type {cmd.model_type}: sglang serve starts its {cmd.model_type!r} backend"
    model = cmd.provided.get("model_path")
    if not isinstance(model, str) or not _HUB_ID.match(model) or model.startswith((".", "-")):
        return None
    try:
        match = match_family(model, cmd.provided.get("model_id"), cmd.provided.get("pipeline_class_name"))
    except UsageError:  # also a file lint may not read (safeload.LoadError)
        return None
    return None if match.family is not None else f"{model} is not a MiniMax-H3 family model"
