"""What a launcher's policy hook decides about one task (SkyPilot) or run configuration (dstack):
allow it, reject it with sglang's words and the corrected command, or (opt-in) correct it.

The task is judged as `h3doctor lint` judges the same file: its launches come from the input
readers (inputs/skypilot.py, inputs/dstack.py), each is checked on every target its accelerators
name (lint's session: the image's release, the task's own environment, never this process's),
and the correction is lint's (lint/fix.py `correct`: one command for all targets, unsafe when it
takes away what was asked for, lint/applicability.py). No file is read on a task's behalf: a
launch naming one (`--config`, `--env-file`) is not judged.

A launch h3doctor cannot judge (no sglang launch, not MiniMax-H3, no accelerators, a variable not
bound, an unknown GPU) is allowed with a message saying "not judged", never "passed".
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from h3doctor.errors import H3DoctorError
from h3doctor.inputs.launch import Launch, Note
from h3doctor.integrations.message import bounded, reject_message
from h3doctor.located import Document, load_json
from h3doctor.lint.config import LintConfig
from h3doctor.lint.fix import Refused, correct, segment_edits
from h3doctor.lint.session import LintSession
from h3doctor.lint.textedit import edit_words
from h3doctor.output.verdict import failing
from h3doctor.safeload import confined

Reader = Callable[[Document], "tuple[list[Launch], list[Note]]"]
# Every file read is refused outside this folder, made empty and private once per process: a
# task's `--config /etc/…` is a launch not judged, never a file opened by the policy's server.
_NOWHERE = tempfile.TemporaryDirectory(prefix="h3doctor-policy-")


@dataclass(frozen=True)
class Decision:
    action: str  # "allow", "reject" or "mutate"
    message: str  # why: "passed …", "not judged: …", the rejection, or what the correction changed
    config: dict[str, Any] | None = None  # "mutate": the configuration with the launches' words corrected


def decide(config: Mapping[str, Any], reader: Reader, *, origin: str, mutate: bool = False) -> Decision:
    """The decision about `config` (a task or run configuration as a mapping), read by `reader`.
    With `mutate`, a launch that fails is corrected in place when every correction is safe."""
    try:
        doc = load_json(json.dumps(config, default=str), origin)
        launches, notes = reader(doc)
    except (H3DoctorError, ValueError, TypeError, RecursionError) as exc:  # the task's own shape: not judged
        what = exc.message if isinstance(exc, H3DoctorError) else f"{type(exc).__name__}: {exc}"
        return Decision("allow", bounded(f"h3doctor: not judged: the task cannot be read ({what})"))
    for launch in launches:
        _label_in_script(launch, config)
    # anything else is h3doctor's own failure: raised, so the launcher refuses rather than allows
    decision = _decide(config, launches, notes, mutate)
    if decision.action == "mutate" and decision.config is not None:  # the corrected task, judged afresh
        again = decide(decision.config, reader, origin=origin)
        if again.action != "allow":
            return Decision("reject", bounded(f"{again.message}\nh3doctor: the corrected task still fails"))
    return decision


def _label_in_script(launch: Launch, config: Mapping[str, Any]) -> None:
    """A launch in a top-level script (`run:`) labelled by its line in the script: the task came as
    an object, and the lines of the text it was read from are no one's."""
    seg = launch.segments[0] if launch.segments else None
    if seg is not None and seg.kind == "string" and len(seg.path) == 1 and isinstance(config.get(seg.path[0]), str):
        launch.label = f"{seg.path[0]} line {config[seg.path[0]].count(chr(10), 0, seg.spans[0][0]) + 1}"


def _decide(config: Mapping[str, Any], launches: list[Launch], notes: list[Note], mutate: bool) -> Decision:
    unjudged = [n.message for n in notes]
    if not launches:
        return Decision("allow", bounded("h3doctor: not judged: no sglang launch in the task"
                                         + "".join(f"; {m}" for m in unjudged)))
    session = LintSession(LintConfig())  # the rules are h3doctor's own: read before the confinement
    failures: list[tuple[Launch, str, Any]] = []
    passed: list[str] = []
    for launch in launches:
        why = session.other_model(launch)
        targets = session.targets_for(launch)
        if why is not None or not targets:
            unjudged.append(f"{launch.label}: {why or 'no accelerators to judge it on'}")
            continue
        for target in targets:
            try:
                with confined((_NOWHERE.name,)):
                    _hw, result = session.check(launch, target)
            except H3DoctorError as exc:  # an unknown GPU, a file the launch names
                unjudged.append(f"{launch.label} on {target}: {exc.message}")
                continue
            if failing(result.evaluation.findings, "error"):
                failures.append((launch, target, result))
            else:
                passed.append(f"{launch.label} on {target}")
    if not failures:
        said = [f"h3doctor: passed: {', '.join(passed)}"] if passed else []
        return Decision("allow", bounded("; ".join(said + [f"h3doctor: not judged: {m}" for m in unjudged])))
    if mutate:
        fixed = _corrected(config, session, [f[0] for f in failures])
        if isinstance(fixed, dict):
            return Decision("mutate", bounded("h3doctor: corrected " + ", ".join(
                dict.fromkeys(f"{launch.label} (safe fixes only)" for launch, _t, _r in failures))), fixed)
        return Decision("reject", reject_message(failures, f"not corrected: {fixed}"))
    return Decision("reject", reject_message(failures))


def _corrected(config: Mapping[str, Any], session: LintSession, launches: list[Launch]) -> dict[str, Any] | str:
    """`config` with each failing launch's words replaced by its safe correction, or why not."""
    planned: dict[tuple, list[tuple[list[tuple[int, int]], list]]] = {}
    for launch in {id(launch): launch for launch in launches}.values():  # once per launch, not per target
        with confined((_NOWHERE.name,)):
            fix, why = correct(session, launch)
        if fix is None:
            return why or f"{launch.label}: no corrected command"
        if fix.unsafe:
            return f"{launch.label}: the fix is not safe ({'; '.join(fix.unsafe)})"
        if fix.kept:  # the correction leaves a finding unfixed: the launch would still fail
            return f"{launch.label}: {'; '.join(fix.kept)}"
        try:
            for n, edits in segment_edits(launch, fix.argv).items():
                seg = launch.segments[n]
                planned.setdefault(tuple(seg.path), []).append((seg.spans, edits))
        except Refused as exc:
            return f"{launch.label}: {exc}"
    out = copy.deepcopy(dict(config))
    for path, items in planned.items():
        parent = out
        for key in path[:-1]:
            parent = parent[key]
        text = parent[path[-1]]
        for spans, edits in sorted(items, key=lambda item: -item[0][0][0]):  # right to left
            text = edit_words(text, spans, edits)
        parent[path[-1]] = text
    return out
