"""Launches in Kubernetes manifests: every container of a Pod, Deployment, StatefulSet, ReplicaSet,
DaemonSet, Job or CronJob (and `kind: List`), a LeaderWorkerSet's leader and worker templates, and
KServe's ServingRuntime / ClusterServingRuntime / InferenceService predictor containers (and their
multi-node `workerSpec`), in any document of a multi-document file.

A LeaderWorkerSet runs `size` pods per group, one sglang node each: its controller gives every
container `LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` (0 for the leader; a worker is judged as worker
1), which `$(VAR)` expands; a launch whose `--nnodes` is not the group's size is named (H3DL002).

A container's words are `command` + `args` (`$(VAR)` expanded from its environment, as the
kubelet does), its environment its `env` and `envFrom` (a ConfigMap's values where the repository
holds it: inputs/configmaps.py), and the GPUs it is granted `resources.limits["nvidia.com/gpu"]`
(or `amd.com/gpu`); its /dev/shm (a memory-backed emptyDir mounted there, `hostIPC`) and memory
cap `resources.limits.memory` (inputs/container_specs.py). A variable whose value only the cluster gives (a Secret, a field, a ConfigMap
the repository does not hold) is unknown: `$(VAR)` of it is a marked word (h3doctor/unresolved.py),
judged as "any value" where it reaches sglang; `$(VAR)` of a variable defined nowhere stays as
written, as the kubelet leaves it. Helm templates are not rendered: a
document with `{{ }}` is reported, not guessed at.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.inputs.argvparts import Context, launches_from_parts
from h3doctor.inputs.configmaps import ConfigMaps, repository_configmaps
from h3doctor.inputs.container_specs import pod_spec
from h3doctor.inputs.gpu_labels import gpu_choices, labelled_count
from h3doctor.inputs.launch import Launch, Note
from h3doctor.inputs.podtemplates import mentions_a_launch, pod_specs
from h3doctor.inputs.probes import container_probes
from h3doctor.located import Document
from h3doctor.unresolved import has_mark, marked

_POD_SPEC_ITSELF = "\0pod-spec"  # an object that is a pod spec (a template's), read in place
_POD_SPEC = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "ServingRuntime": ("spec",),  # KServe: the pod spec's fields inline
    "ClusterServingRuntime": ("spec",),
    "InferenceService": ("spec", "predictor"),
    _POD_SPEC_ITSELF: (),
}
_WORKER_SPECS = {"ServingRuntime": ("spec", "workerSpec"), "ClusterServingRuntime": ("spec", "workerSpec"),
                 "InferenceService": ("spec", "predictor", "workerSpec")}
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def is_manifest(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("kind"), str) and "apiVersion" in data


def read_manifests(docs: list[Document], text: str) -> tuple[list[Launch], list[Note]]:
    launches: list[Launch] = []
    notes: list[Note] = []
    configmaps = repository_configmaps(docs) if "configMap" in text else {}
    for doc in docs:
        if not is_manifest(doc.data):
            continue
        _read_object(doc, doc.data, (), launches, notes, configmaps=configmaps)
    if "{{" in text and not launches:
        notes.append(Note(docs[0].origin, docs[0].start, "Helm template syntax ({{ }}): render the chart first "
                                                          "(helm template); not judged"))
    return launches, notes


def _get(data: Any, path: tuple) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _read_object(doc: Document, obj: dict[str, Any], base: tuple, launches: list[Launch], notes: list[Note],
                 owner: str | None = None, given_env: dict[str, str] | None = None,
                 configmaps: dict[str, dict[str, str]] | None = None) -> None:
    kind = obj.get("kind")
    name = _get(obj, ("metadata", "name")) or "?"
    if kind == "List":
        for i, item in enumerate(obj.get("items") or []):
            if isinstance(item, dict):
                _read_object(doc, item, base + ("items", i), launches, notes, configmaps=configmaps)
        return
    if kind == "LeaderWorkerSet":
        _read_group(doc, obj, base, launches, notes, configmaps)
        return
    worker_path = _WORKER_SPECS.get(kind)
    worker = _get(obj, worker_path) if worker_path else None
    if isinstance(worker, dict):
        _read_object(doc, {**worker, "kind": _POD_SPEC_ITSELF}, base + worker_path, launches, notes,
                     f"{kind}/{name} workerSpec", configmaps=configmaps)
    spec_path = _POD_SPEC.get(kind)
    if spec_path is None:  # another kind: its pod templates found by their shape (Services, ConfigMaps: none)
        _read_templates(doc, obj, base, launches, notes, f"{kind}/{name}", configmaps)
        return
    spec = _get(obj, spec_path)
    if not isinstance(spec, dict):
        return
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            if not isinstance(container, dict):
                continue
            path = base + spec_path + ((group, i) if not spec.get("_main") else ("mainContainer",))
            label = f"{owner or f'{kind}/{name}'} container {container.get('name', i)}"
            env, open_sources = _env(container, configmaps or {})
            given = given_env or {}
            # a LeaderWorkerSet's index read back from the pod's label (valueFrom) is the one it gives
            env = {**given, **{k: v for k, v in env.items() if k not in given or not has_mark(v)}}
            parts = []
            for key in ("command", "args"):
                value = container.get(key)
                if isinstance(value, list):
                    parts.append((path + (key,), [_expand(str(v), env, open_sources) for v in value]))
            found = launches_from_parts(parts, Context(doc, "kubernetes", label, env, _gpus(container),
                                                        _image(container.get("image")), path + ("image",),
                                                        _mounts(container, spec.get("volumes"), configmaps)), notes)
            choices = gpu_choices(spec)
            probes = container_probes(container, doc, path)
            shm_and_memory = pod_spec(spec, container, doc, base + spec_path, path, _image(container.get("image"))) \
                if found else None
            for launch in found:
                launch.gpu_choices = list(choices)
                launch.probes = dict(probes)
                launch.container, launch.container_pos = shm_and_memory[0], dict(shm_and_memory[1])
                if launch.gpu_count is None:  # no nvidia.com/gpu limit: NFD's node count, where its labels say one
                    launch.gpu_count = labelled_count(choices)
            launches.extend(found)


def _read_templates(doc: Document, obj: dict[str, Any], base: tuple, launches: list[Launch], notes: list[Note],
                    owner: str, configmaps: dict[str, dict[str, str]] | None) -> None:
    """An object of a kind not listed above (an Argo Rollout, a Knative Service, a JobSet, a
    RayService, a PyTorchJob, a Dynamo graph…): each pod template inside it, found by its shape
    (inputs/podtemplates.py). One that mentions an sglang launch where no template is found is
    named (H3DL002), never passed in silence."""
    found = False
    for path, spec in pod_specs(obj):
        found = True
        where = ".".join(str(p) for p in path)
        _read_object(doc, {**spec, "kind": _POD_SPEC_ITSELF}, base + path, launches, notes, f"{owner} {where}",
                     configmaps=configmaps)
    if not found and mentions_a_launch(obj):
        notes.append(Note(doc.origin, doc.pos(base + ("kind",)),
                          f"{owner}: mentions an sglang launch, but no pod template (a `containers:` list) was found "
                          "in it; not judged"))


def _read_group(doc: Document, obj: dict[str, Any], base: tuple, launches: list[Launch], notes: list[Note],
                configmaps: dict[str, dict[str, str]]) -> None:
    name = _get(obj, ("metadata", "name")) or "?"
    group_path = ("spec", "leaderWorkerTemplate")
    group = _get(obj, group_path)
    if not isinstance(group, dict):
        return
    size = group.get("size", 1)
    size = size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None
    for role, index in (("leader", "0"), ("worker", "1")):
        key = f"{role}Template"
        if role == "leader" and not isinstance(group.get(key), dict):
            continue  # no leaderTemplate: the leader runs the worker template
        if role == "worker" and size == 1:
            continue  # a group of one pod: the leader alone
        spec = _get(group, (key, "spec"))
        if not isinstance(spec, dict):
            continue
        env = {"LWS_WORKER_INDEX": index, **({"LWS_GROUP_SIZE": str(size)} if size else {})}
        before = len(launches)
        _read_object(doc, {**spec, "kind": _POD_SPEC_ITSELF}, base + group_path + (key, "spec"), launches, notes,
                     f"LeaderWorkerSet/{name} {role}", env, configmaps)
        for launch in launches[before:]:
            nnodes = _option(launch.tokens, "--nnodes") or "1"
            if size is not None and nnodes != str(size):
                notes.append(Note(doc.origin, doc.pos(base + group_path + ("size",)),
                                  f"{launch.label}: the LeaderWorkerSet runs {size} pod(s) per group but the launch "
                                  f"says --nnodes {nnodes}; the group is not judged as one multi-node launch"))


def _option(tokens: list[str], flag: str) -> str | None:
    for i, token in enumerate(tokens):
        if token == flag and i + 1 < len(tokens):
            return tokens[i + 1]
        if token.startswith(flag + "="):
            return token[len(flag) + 1:]
    return None


def _image(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _env(container: dict[str, Any], configmaps: dict[str, dict[str, str]]) -> tuple[dict[str, str], bool]:
    """The container's environment as the kubelet builds it (`envFrom` first, `env` over it), and
    whether some `envFrom` source is not in the repository (any other name may come from it).
    A value only the cluster gives is marked (`$(NAME)`): known only when the launch runs."""
    env: dict[str, str] = {}
    open_sources = False
    for source in container.get("envFrom") or []:
        if not isinstance(source, dict):
            continue
        ref = source.get("configMapRef")
        data = configmaps.get(ref.get("name")) if isinstance(ref, dict) else None
        if data is None:  # a Secret, or a ConfigMap the repository does not hold
            open_sources = True
            continue
        prefix = source.get("prefix") if isinstance(source.get("prefix"), str) else ""
        env.update({prefix + k: v for k, v in data.items()})
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        if "value" in item:
            value = item["value"]
            env[name] = "" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        elif "valueFrom" in item:
            env[name] = _value_from(name, item["valueFrom"], configmaps)
    return env, open_sources


def _value_from(name: str, source: Any, configmaps: dict[str, dict[str, str]]) -> str:
    ref = source.get("configMapKeyRef") if isinstance(source, dict) else None
    if isinstance(ref, dict):
        value = configmaps.get(ref.get("name"), {}).get(ref.get("key"))
        if value is not None:
            return value
    return marked(f"$({name})")


def _expand(word: str, env: dict[str, str], open_sources: bool = False) -> str:
    """The kubelet's `$(VAR)` expansion: defined variables are replaced, `$$` is a literal `$`, a
    variable defined nowhere stays as written (unknown where an `envFrom` source is not known)."""
    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        if m.group(1) not in env and open_sources:
            return marked(m.group(0))
        return env.get(m.group(1), m.group(0))

    return _VAR.sub(sub, word)


def _mounts(container: dict[str, Any], volumes: Any, configmaps: ConfigMaps | None) -> dict[str, tuple[str, str]]:
    """The files the container sees from a `configMap` volume whose ConfigMap the repository holds:
    container path -> (text, where the repository holds it), as the kubelet lays them out (every
    key, or the volume's `items`, under `mountPath`; one file at `mountPath` with `subPath`)."""
    by_name = {v.get("name"): v.get("configMap") for v in volumes or [] if isinstance(v, dict)}
    files: dict[str, tuple[str, str]] = {}
    for mount in container.get("volumeMounts") or []:
        source = by_name.get(mount.get("name")) if isinstance(mount, dict) else None
        at = mount.get("mountPath") if isinstance(source, dict) else None
        data = (configmaps or {}).get(source.get("name")) if isinstance(at, str) else None
        if data is None:
            continue
        items = source.get("items")
        layout = ({i["path"]: i["key"] for i in items if isinstance(i, dict) and isinstance(i.get("path"), str)}
                  if isinstance(items, list) else {k: k for k in data})
        where = f"{configmaps.origin[source['name']]} (ConfigMap {source['name']})"
        sub = mount.get("subPath")
        for name, key in layout.items():
            if key in data and (not isinstance(sub, str) or sub == name):
                files[posixpath.normpath(at if isinstance(sub, str) else posixpath.join(at, name))] = (data[key], where)
    return files


def _gpus(container: dict[str, Any]) -> int | None:
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):  # a GPU request must equal its limit; limits decide
        values = resources.get(section) or {}
        for name in GPU_RESOURCES:
            value = values.get(name) if isinstance(values, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and is_digits(value.strip()):
                return int(value)
    return None
