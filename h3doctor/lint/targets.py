"""The GPU a launch's own file names, as a target: Kubernetes node labels (inputs/gpu_labels.py)
read against h3doctor's GPU catalog (the admission webhook reads a pod template's GPU with the
same function, so lint and admission agree on what a label names); and what a launch with no
target at all is judged on."""

from __future__ import annotations

from h3doctor.digits import is_digits
from h3doctor.facts import HardwareFacts
from h3doctor.host.gpus import find_gpu
from h3doctor.inputs.gpu_labels import GpuChoice, label_gpu_name
from h3doctor.inputs.launch import Launch


def catalog_name(value: str, memory_mib: str | None = None, card_memory_mib: str | None = None) -> str | None:
    """The catalog GPU a label value names, or None when it names none exactly (a MIG slice, a
    shared card, `a100` without its memory, a card the catalog does not know). With NFD's
    per-card memory (MiB), the card must have that memory: it picks the A100 40 GB or 80 GB where
    the product does not say, and a product whose memory contradicts it names none."""
    if card_memory_mib is not None:
        return _with_card_memory(value, card_memory_mib)
    name = label_gpu_name(value, memory_mib)
    found = find_gpu(name) if name is not None else None
    return found[0].key if found is not None and found[1] is None else None


def choice_name(choice: GpuChoice) -> str | None:
    """The catalog GPU one of a pod's GPU choices names (catalog_name of its labels)."""
    return catalog_name(choice.value, choice.memory_mib, choice.card_memory_mib)


_FORM_FACTORS = ("-sxm4", "-sxm5", "-sxm", "-pcie", "-nvl", "-hbm3")
_MEMORY_TOLERANCE = 0.08  # the catalog's usable GiB against the label's whole card: 39.4 of 40, 139.8 of 140.4


def _with_card_memory(value: str, mib: str) -> str | None:
    if not is_digits(mib) or not 0 < len(mib) < 8 or int(mib) == 0:
        return None  # no memory a card has: the label names nothing for certain
    gib = int(mib) / 1024
    base = value.strip().lower()
    for prefix in ("nvidia-", "tesla-"):
        base = base.removeprefix(prefix)
    bare = base
    for suffix in _FORM_FACTORS:
        bare = bare.replace(suffix, "")
    for name in dict.fromkeys((base, bare, f"{bare}-{round(gib)}gb")):
        found = find_gpu(name)
        if found is not None and found[1] is None and abs(found[0].memory_gib - gib) <= _MEMORY_TOLERANCE * gib:
            return found[0].key
    return None


# A launch with no target anywhere is judged on a GPU nothing is known of: the rules that do not
# depend on the hardware (a misspelt flag, a parallel layout that cannot hold) run as on any
# target; the ones that do cannot verify, and H3DL004 (a warning) names them (issue 30 item 7).
NO_TARGET = "no target"


def labelled_targets(choices: list[GpuChoice]) -> tuple[str, ...]:
    """A pod's GPU node labels as targets: each type it may run on that the catalog names exactly
    (a bare GPU name: as many as the container is granted). A label the catalog does not name is
    no target: the launch is judged as one without (NO_TARGET), never on a guess."""
    names = [choice_name(c) for c in choices]
    return tuple(dict.fromkeys(n for n in names if n is not None)) if all(names) else ()


def no_target_facts(granted: int | None) -> HardwareFacts:
    """Facts of a GPU nothing is known of but the count the deployment grants (the admission
    webhook judges a pod without a GPU label on the same)."""
    return HardwareFacts(platform="cuda", gpu_count=granted, description="no GPU type given")


def no_target_message(launch: Launch, unverified: list[str]) -> str:
    unknown = [c.value for c in launch.gpu_choices if choice_name(c) is None]
    why = (f"the GPU {unknown[0]!r} its node labels name is not in h3doctor's catalog" if unknown
           else "no target (--target, .h3doctor.yaml) and no GPU type in its file")
    said = (f"these cannot verify: {', '.join(dict.fromkeys(unverified))}" if unverified
            else "none of the others applied")
    return f"{launch.label}: {why}: judged on the rules that do not depend on the GPU; {said}"
