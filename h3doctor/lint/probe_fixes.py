"""`lint --fix` of a manifest's probes (issue 30 item 15): where the change is exact, one scalar
replaced on the line and column the manifest writes it — the file's layout, quoting and comments
kept, never a reformat:

* H3D420 (a livenessProbe on `/health`, which answers 503 through the warmup from 0.5.18): its
  `httpGet.path` becomes `/liveness`;
* H3D422 (the readinessProbe does not ask `/health`): an `httpGet` readinessProbe's written
  `path` becomes `/health` (no readinessProbe, or one of another handler: no edit, the note says
  what to add);
* H3D423 (the probe that restarts the container gives up before the load can be done): its
  written `failureThreshold` is raised so initialDelaySeconds + failureThreshold × periodSeconds
  reaches the ceiling h3doctor gives the load (the finding's own figure; periodSeconds kept).

A probe field that is not written (a default) is not added: that is no replacement. A finding
that is suppressed, held by the configuration or "cannot verify" gets no edit. Each edit is the
same on every target except H3D423's threshold, which takes the largest the targets need.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from h3doctor.inputs.launch import Launch
from h3doctor.located import Pos

if TYPE_CHECKING:
    from h3doctor.lint.session import FileResult, LintSession

_PLAIN_INT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class ProbeEdit:
    rule: str
    launch: str  # the launch's label (SARIF's fix goes to its findings of `rule`)
    pos: Pos  # where the replaced text starts
    end: Pos  # the column past it (same line)
    text: str  # what it becomes
    what: str  # the change, in words
    unsafe: str = ""  # why it is applied only with --unsafe-fixes (empty: safe)

    @property
    def key(self) -> tuple[int, int]:
        return self.pos.line, self.pos.col


def probe_edits(f: FileResult, session: LintSession) -> list[ProbeEdit]:
    """The file's probe edits, one per scalar (H3D423's: the largest threshold any target needs)."""
    if f.kind != "kubernetes":  # a Helm chart's manifests are rendered: the template is not edited
        return []
    found: dict[tuple[int, int], ProbeEdit] = {}
    lines = f.text.split("\n")
    for n, launch in enumerate(f.launches):
        if launch.probes is None or launch.doc is None:
            continue
        hold = f.holds[n] if n < len(f.holds) else frozenset()
        for target in session.judged_on(launch):
            ev = session.check(launch, target, hold)[1].evaluation
            for finding in ev.findings:
                rule = finding.rule.id
                if rule in hold or finding.cannot_verify or rule not in _EDITS:
                    continue
                edit = _EDITS[rule](launch, ev.context, lines)
                if edit is not None and (edit.key not in found or _larger(edit, found[edit.key])):
                    found[edit.key] = edit
    return sorted(found.values(), key=lambda e: e.key)


def edited_rules(edits: list[ProbeEdit]) -> dict[str, frozenset[str]]:
    """Per launch label, the rules its probe edits fix."""
    out: dict[str, frozenset[str]] = {}
    for e in edits:
        out[e.launch] = out.get(e.launch, frozenset()) | {e.rule}
    return out


def _larger(edit: ProbeEdit, than: ProbeEdit) -> bool:
    """H3D423 on another target needing a larger threshold (a path edit is the same on every target)."""
    return edit.rule == than.rule == "H3D423" and int(edit.text) > int(than.text)  # our own str(int)


def apply(text: str, edits: list[ProbeEdit]) -> str:
    """`text` with the edits made, right to left (each within one line: no line moves)."""
    lines = text.split("\n")
    for e in sorted(edits, key=lambda e: e.key, reverse=True):
        line = lines[e.pos.line - 1]
        lines[e.pos.line - 1] = line[:e.pos.col - 1] + e.text + line[e.end.col - 1:]
    return "\n".join(lines)


def _liveness_path(launch: Launch, _ctx: dict, lines: list[str]) -> ProbeEdit | None:
    return _path_edit(launch, "liveness", "/health", "/liveness", "H3D420", lines)


def _readiness_path(launch: Launch, _ctx: dict, lines: list[str]) -> ProbeEdit | None:
    probe = launch.probes.get("readiness")
    if probe is None or probe.handler != "httpGet" or probe.path in (None, "/health"):
        return None
    return _path_edit(launch, "readiness", probe.path, "/health", "H3D422", lines)


def _path_edit(launch: Launch, role: str, old: str, new: str, rule: str, lines: list[str]) -> ProbeEdit | None:
    """The probe's written `httpGet.path` scalar `old` replaced by `new`, quoted as it was."""
    probe = launch.probes.get(role)
    if probe is None or probe.handler != "httpGet" or probe.path != old:
        return None
    placed = launch.doc.scalars.get(probe.at + ("httpGet", "path"))
    if placed is None:  # the path is not written (the kubelet asks "/"), or not as a string scalar
        return None
    start, end, style = placed
    if start.line != end.line:
        return None
    written = lines[start.line][start.column:end.column]
    quote = style if style in ("'", '"') else ""
    if written != f"{quote}{old}{quote}":  # not the plain text: an escape; no exact replacement
        return None
    return ProbeEdit(rule, launch.label, Pos(start.line + 1, start.column + 1), Pos(end.line + 1, end.column + 1),
                     f"{quote}{new}{quote}", f"{role}Probe httpGet.path: {old} -> {new}")


def _failure_threshold(launch: Launch, ctx: dict, lines: list[str]) -> ProbeEdit | None:
    """The restarting probe's written failureThreshold raised so its budget reaches the ceiling."""
    role, ceiling = ctx.get("derived.probe.killer"), ctx.get("derived.probe.ceiling_s")
    probe = launch.probes.get(role) if role else None
    if probe is None or not isinstance(ceiling, (int, float)):
        return None
    delay, period, threshold = (probe.timing[k] for k in ("initialDelaySeconds", "periodSeconds", "failureThreshold"))
    mark = launch.doc.values.get(probe.at + ("failureThreshold",))
    if None in (delay, period, threshold) or mark is None:  # unknown timing, or the default (not written)
        return None
    needed = max(1, math.ceil((ceiling - delay) / period))
    written = _PLAIN_INT.match(lines[mark.line], mark.column)
    if needed <= threshold or written is None or int(written.group()) != threshold:
        return None
    # a startupProbe's threshold is its start-up budget and nothing else; a livenessProbe's also
    # decides, for the server's whole life, how long a hung server is left before its restart
    unsafe = ("the livenessProbe's threshold also delays the restart of a server that hangs later; a startupProbe "
              "is the fix that changes only the start-up") if role == "liveness" else ""
    return ProbeEdit("H3D423", launch.label, Pos(mark.line + 1, mark.column + 1), Pos(mark.line + 1, written.end() + 1),
                     str(needed), f"{role}Probe failureThreshold: {threshold} -> {needed} "
                                  f"({delay} + {needed} x {period} s >= {math.ceil(ceiling)} s)", unsafe)


_EDITS = {"H3D420": _liveness_path, "H3D422": _readiness_path, "H3D423": _failure_threshold}
