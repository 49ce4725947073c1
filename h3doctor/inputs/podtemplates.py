"""Where an object of any kind holds pod templates, found by their shape, not by a list of kinds.

Operators wrap a PodSpec in their own fields: an Argo Rollout and a Knative Service at
`spec.template.spec`, a JobSet at `spec.replicatedJobs[].template.spec.template.spec`, a
RayService under `rayClusterConfig.headGroupSpec` and each `workerGroupSpecs[]`, a Kubeflow
PyTorchJob under `pytorchReplicaSpecs.<role>`, a Dynamo graph's services under
`extraPodSpec.mainContainer`. A pod spec is a mapping whose `containers` is a list of mappings
that run something (`image`, `command` or `args`); Dynamo's `mainContainer` is one such container
on its own. The walk visits each value once (the reader's value budget bounds it) and does not
look inside a pod spec it found.
"""

from __future__ import annotations

from typing import Any, Iterator

from h3doctor.inputs.launch import mentions_sglang

_RUNS = ("image", "command", "args")


def pod_specs(obj: Any, base: tuple = ()) -> Iterator[tuple[tuple, dict[str, Any]]]:
    """(path, pod spec) of every pod template inside `obj`, in document order; a Dynamo
    `mainContainer` is given as a pod spec of that one container (its path the container's parent)."""
    stack: list[tuple[tuple, Any]] = [(base, obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            if _is_pod_spec(value):
                yield path, value
                continue
            main = value.get("mainContainer")
            if _is_container(main):
                yield path, {"containers": [main], "_main": True}
                continue
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))


def _is_container(value: Any) -> bool:
    return isinstance(value, dict) and any(k in value for k in _RUNS)


def _is_pod_spec(value: dict[str, Any]) -> bool:
    containers = value.get("containers")
    return (isinstance(containers, list) and bool(containers) and all(isinstance(c, dict) for c in containers)
            and any(_is_container(c) for c in containers))


def mentions_a_launch(obj: Any) -> bool:
    """Whether a string of `obj`, or a list of strings read as one command, names an sglang launch."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str) and mentions_sglang(value):
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            if mentions_sglang(" ".join(v for v in value if isinstance(v, str))):
                return True
            stack.extend(value)
    return False
