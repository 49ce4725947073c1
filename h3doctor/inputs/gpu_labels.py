"""The GPU a pod template will run on, from the node labels it requires.

A pod lands on a node its `nodeSelector` and its *required* node affinity allow; the labels that
name a GPU type are NVIDIA GPU feature discovery's `nvidia.com/gpu.product`, GKE's
`cloud.google.com/gke-accelerator` and Karpenter's `karpenter.k8s.aws/instance-gpu-name`
(with `karpenter.k8s.aws/instance-gpu-memory`, MiB, where the name alone is two cards). NFD's
`nvidia.com/gpu.memory` (MiB per card) beside its product tells the A100 40 GB from the 80 GB
where the product name does not say (lint/targets.py), and its `nvidia.com/gpu.count` is the
node's GPUs, the count where no `nvidia.com/gpu` limit gives one.
Preferred affinity constrains nothing, so it names no GPU. A value that is not a catalog GPU
exactly (a MIG slice, a shared card, a card h3doctor does not know) is returned as unknown: the
hardware rules then cannot verify, never pass.

Read by lint's Kubernetes reader (a launch's GPU type, issue 30 item 7) and the admission webhook
alike; which catalog GPU a value is, is the session's to say (lint/targets.py: the catalog is the
host room's), from the name `label_gpu_name` gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from h3doctor.digits import is_digits

GPU_PRODUCT_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator",
                      "karpenter.k8s.aws/instance-gpu-name")
KARPENTER_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
NFD_MEMORY = "nvidia.com/gpu.memory"  # MiB per card, beside nvidia.com/gpu.product
NFD_COUNT = "nvidia.com/gpu.count"
MAX_CHOICES = 4  # a template allowing more GPU types than this is judged on the first four
_VENDOR_PREFIXES = ("nvidia-", "tesla-")
# names whose catalog reading would be a guess: GKE's nvidia-tesla-a100 is the 40 GB card, and a
# bare "a100" (Karpenter without its memory label) is either card
_EXACT = {"nvidia-tesla-a100": "A100-40GB"}
_AMBIGUOUS = {"a100"}


@dataclass(frozen=True)
class GpuChoice:
    """One GPU type a pod may be scheduled on, as its labels say it."""

    value: str  # the label's value, as written
    where: str  # "nodeSelector nvidia.com/gpu.product"
    memory_mib: str | None = None  # Karpenter's per-GPU memory label beside the name
    card_memory_mib: str | None = None  # NFD's nvidia.com/gpu.memory beside nvidia.com/gpu.product
    count: int | None = None  # NFD's nvidia.com/gpu.count: the node's GPUs

    @property
    def name(self) -> str | None:
        """The GPU name to look up in the catalog, or None where the label names no card exactly."""
        return label_gpu_name(self.value, self.memory_mib)


def gpu_choices(pod_spec: Any) -> list[GpuChoice]:
    """Every GPU type the pod may be scheduled on; empty when the template requires none."""
    if not isinstance(pod_spec, dict):
        return []
    found: list[GpuChoice] = []
    selector = pod_spec.get("nodeSelector")
    if isinstance(selector, dict):
        found += _from_labels({k: [v] for k, v in selector.items() if isinstance(v, str)}, "nodeSelector")
    for term in _required_terms(pod_spec):
        exprs = term.get("matchExpressions") if isinstance(term, dict) else None
        labels: dict[str, list[str]] = {}
        for expr in exprs if isinstance(exprs, list) else []:
            if isinstance(expr, dict) and expr.get("operator") == "In" and isinstance(expr.get("values"), list):
                labels[str(expr.get("key"))] = [v for v in expr["values"] if isinstance(v, str)]
        found += _from_labels(labels, "nodeAffinity")
    return list(dict.fromkeys(found))[:MAX_CHOICES]


def label_gpu_name(value: str, memory_mib: str | None = None) -> str | None:
    """The name a label value gives the GPU, to be looked up in the catalog (vendor prefix dropped,
    Karpenter's memory made part of it), or None when it names two cards (a bare `a100`)."""
    name = value.strip().lower()
    if name in _EXACT:
        return _EXACT[name]
    for prefix in _VENDOR_PREFIXES:
        name = name.removeprefix(prefix)
    if memory_mib is not None and is_digits(memory_mib) and len(memory_mib) < 8:
        name = f"{name}-{round(int(memory_mib) / 1024)}GB"
    elif name in _AMBIGUOUS:
        return None
    return name


def _required_terms(pod_spec: dict[str, Any]) -> list[Any]:
    node = pod_spec.get("affinity")
    for key in ("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, list) else []


def _from_labels(labels: dict[str, list[str]], where: str) -> list[GpuChoice]:
    memory = labels.get(KARPENTER_MEMORY, [])
    return [GpuChoice(value, f"{where} {key}",
                      memory[0] if key == GPU_PRODUCT_LABELS[2] and len(memory) == 1 else None,
                      *(_nfd(labels) if key == GPU_PRODUCT_LABELS[0] else (None, None)))
            for key in GPU_PRODUCT_LABELS for value in labels.get(key, [])]


def _nfd(labels: dict[str, list[str]]) -> tuple[str | None, int | None]:
    """NFD's memory and count beside its product, each only where the selector names one value
    (an `In` of several counts says no one count)."""
    memory, count = labels.get(NFD_MEMORY, []), labels.get(NFD_COUNT, [])
    one = count[0].strip() if len(count) == 1 else ""
    return (memory[0] if len(memory) == 1 else None,
            int(one) if is_digits(one) and len(one) < 4 and int(one) > 0 else None)


def labelled_count(choices: list[GpuChoice]) -> int | None:
    """The GPUs the node labels say the pod's node has (NFD's gpu.count), where every choice says
    the same; None where none or several counts are named."""
    counts = {c.count for c in choices}
    return counts.pop() if len(counts) == 1 and None not in counts else None
