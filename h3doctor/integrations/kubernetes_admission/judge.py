"""One admitted object judged: its launches read by lint's Kubernetes reader (inputs/kubernetes.py),
each evaluated by the lint session's rules, flag tables and releases on the GPU its pod template's
node labels name (inputs/gpu_labels.py, lint/targets.py) and the GPUs its container is granted.

What it cannot read it says, as a warning: a launch it cannot understand, a GPU type it does not
know, a rule that needs a fact no label gives ("cannot verify"). A file a launch names (`--config`)
is a file of the node, never of the webhook's machine: nothing is opened (`confined` to no root).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from h3doctor.engine.judge import Judge as RuleJudge
from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts
from h3doctor.host.gpus import ProfileNameError
from h3doctor.inputs.kubernetes import is_manifest, read_manifests
from h3doctor.inputs.launch import Launch
from h3doctor.inputs.gpu_labels import GpuChoice, gpu_choices
from h3doctor.lint.targets import choice_name
from h3doctor.integrations.kubernetes_admission.warnings import warning_lines
from h3doctor.lint.config import LintConfig
from h3doctor.lint.session import LintSession, load_profile_mapping
from h3doctor.located import Document
from h3doctor.safeload import OutsideRepository, confined

MAX_LAUNCHES = 32  # containers judged per object (a pod holds a few); past it the rest is said, not judged


@dataclass(frozen=True)
class Verdict:
    warnings: tuple[str, ...]  # each at most 120 characters (what Kubernetes shows a user)
    failing: tuple[str, ...]  # "RULE: message" of the findings that say the launch will fail
    judged: int  # launches judged


class Judge:
    """Loaded once (rules, tables); `judge` may be called from any thread (one at a time: the
    session's caches and the read confinement are process state, and checks are CPU-bound anyway)."""

    def __init__(self, *, sglang_version: str | None = None, rules_dir: str | None = None) -> None:
        self.session = LintSession(LintConfig(), rules_dir=rules_dir, sglang_version=sglang_version, roots=())
        self._lock = threading.Lock()

    def judge(self, obj: dict[str, Any]) -> Verdict:
        with self._lock, confined(()):
            return self._judge(obj)

    def _judge(self, obj: dict[str, Any]) -> Verdict:
        said: list[str] = []
        failing: list[str] = []
        launches: list[tuple[Launch, Any]] = []
        for item in readable_objects(obj):
            doc = Document("admission", item)
            found, notes = read_manifests([doc], "")
            said += [f"h3doctor: {n.message}" for n in notes]
            launches += [(launch, pod_spec_of(item, launch)) for launch in found]
        if len(launches) > MAX_LAUNCHES:
            said.append(f"h3doctor: {len(launches)} launches; those past {MAX_LAUNCHES} are not judged")
        judged = 0
        for launch, spec in launches[:MAX_LAUNCHES]:
            if self.session.other_model(launch) is not None:
                continue  # not a MiniMax-H3 launch: not h3doctor's to judge, said nowhere
            judged += 1
            self._judge_launch(launch, gpu_choices(spec), said, failing)
        return Verdict(warning_lines(said), tuple(dict.fromkeys(failing)), judged)

    def _judge_launch(self, launch: Launch, choices: list[GpuChoice], said: list[str], failing: list[str]) -> None:
        who = launch.label.rsplit(" container ", 1)[-1]
        for choice in choices or [None]:
            on = f" on {choice.value}" if choice is not None and len(choices) > 1 else ""
            hw, unknown_gpu = hardware_for(choice, launch.gpu_count)
            try:
                release = self.session.release_for(launch)
                ev = RuleJudge(self.session.rules).evaluate(list(launch.tokens), self.session.target(launch, hw, release))
            except OutsideRepository as exc:  # a file of the node, not of this machine: never opened
                said.append(f"h3doctor ({who}): not judged: names a file of the node (not read): {exc.path!r}")
                continue
            except UsageError as exc:  # an unknown release: not judged
                said.append(f"h3doctor ({who}){on}: not judged: {exc.message}")
                continue
            unverified = []
            for f in ev.findings:
                if f.cannot_verify:
                    unverified.append(f.rule.id)
                    continue
                said.append(f"h3doctor {f.rule.id} ({who}){on}: {f.message}")
                if f.predicts_failure:
                    failing.append(f"{f.rule.id}: {f.message}")
            if unverified:
                why = unknown_gpu or "a fact the pod template does not give"
                said.append(f"h3doctor ({who}){on}: {why}: cannot verify {', '.join(dict.fromkeys(unverified))}")


def readable_objects(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The object as lint's reader reads it; a kind it reads no pod template of (JobSet, a Ray or
    Knative resource, ...) as one Pod per nested object holding `containers`."""
    doc = Document("admission", obj)
    found, notes = read_manifests([doc], "")
    if found or notes or not is_manifest(obj):
        return [obj]
    name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{obj['kind']}/{name or '?'} {where}"},
             "spec": spec} for where, spec in _pod_specs(obj, "")]


def _pod_specs(value: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            return [(where.lstrip("."), value)]
        return [found for key, item in value.items() for found in _pod_specs(item, f"{where}.{key}")]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _pod_specs(item, f"{where}[{i}]")]
    return []


def pod_spec_of(obj: dict[str, Any], launch: Launch) -> Any:
    """The pod spec holding the launch's container: its words' path, cut before `containers`."""
    path = launch.segments[0].path if launch.segments and launch.segments[0].path else ()
    cut = next((i for i in range(len(path) - 1, -1, -1) if path[i] in ("containers", "initContainers")), None)
    spec: Any = obj
    for key in path[:cut] if cut is not None else ():
        spec = spec[key] if isinstance(spec, (dict, list)) else None
    return spec if cut is not None else None


def hardware_for(choice: GpuChoice | None, granted: int | None) -> tuple[HardwareFacts, str | None]:
    """The facts of the GPU a label names (as lint's bare GPU target: as many as granted); an
    unknown GPU is facts with nothing known but the count, and why."""
    if choice is None:
        return _unknown(granted), "no GPU type in the pod's node labels"
    key = choice_name(choice)
    if key is None:
        return _unknown(granted), f"GPU {choice.value!r} is not in h3doctor's catalog"
    try:
        return _catalog_facts(key, granted or 1), None
    except ProfileNameError as exc:
        return _unknown(granted), str(exc)


@functools.lru_cache(maxsize=512)  # keys: catalog GPUs x the counts the catalog accepts
def _catalog_facts(key: str, count: int) -> HardwareFacts:
    return load_profile_mapping(key, count)


def _unknown(granted: int | None) -> HardwareFacts:
    return HardwareFacts(platform="cuda", gpu_count=granted, description="a GPU the pod template does not name")

