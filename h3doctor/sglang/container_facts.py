"""The host facts of a container: what `docker|podman|nerdctl run` gives the launch inside it,
instead of what the caller's machine (its profile or probe) has.

API (small on purpose; `engine/target.py` applies it to every container launch):

    in_container(hw, run, caller_env) -> HardwareFacts   # hw with the container's facts, each sourced
    with_container(hw, spec) -> HardwareFacts            # the same from a ContainerSpec (shm, memory, image)
    runtime_size_bytes(text, option) -> int               # a size as docker/podman/nerdctl parse it
    image_facts(image) -> dict[fact, (value, source)]     # what sglang's image holds (data per release)

What the container has:

* /dev/shm: `--shm-size` (0 is the default); `--ipc=host` or a bind of the host's /dev/shm: the
  host's; `--ipc=none`: none mounted; `--ipc=container:…`, `ns:…` or another mount on /dev/shm:
  not known; else the runtime's default, 64 MiB for all three (docker's `DefaultShmSize`,
  podman's containers.conf `shm_size = "65536k"`, containerd's default spec that nerdctl uses).
* host memory: `--memory`/`-m` caps it (the smaller of cap and host; 0 is no cap); with no cap
  the container's cgroup `memory.max` is "max" (sglang's H3D144 reading).
* GPUs: the grant's count (`--gpus`, CDI `--device`, `NVIDIA_VISIBLE_DEVICES`) against the host's;
  more than the host has is refused by the runtime before anything starts (`gpu_grant_error`).
* ffmpeg, FlashAttention and the kernels: the image's (`flagdata/image-facts.json`), never the
  caller's; an image that is not sglang's, or a tag the data does not list, leaves them unknown.
"""

from __future__ import annotations

import functools
import json
import re

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts
from h3doctor.paths import read_package_text
from h3doctor.record import record, replace
from h3doctor.safeload import excerpt
from h3doctor.sglang.container_run import ContainerRun
from h3doctor.sglang.images import image_release
from h3doctor.verified import NEWEST_VERIFIED

DEFAULT_SHM_BYTES = 64 << 20  # docker, podman and nerdctl alike
_GIB = float(1 << 30)
# docker's units.RAMInBytes (also podman's and nerdctl's): a decimal number, a binary unit, `b` optional
_SIZE = re.compile(r"^(\d+(?:\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?$")
_UNIT = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
IMAGE_FACTS = ("ffmpeg", "ffmpeg_encoders", "flash_attn", "fa_kernel")


def runtime_size_bytes(text: str, option: str) -> int:
    """`--shm-size`/`--memory` as the runtimes parse them (a bare number is bytes, not GiB);
    anything else is docker's own refusal."""
    m = _SIZE.match(text) if len(text) <= 40 else None
    try:
        number = float(m.group(1)) if m else None
    except ValueError:  # `1.2.3` passes the pattern and fails the float, in docker too
        number = None
    if number is None:
        raise UsageError(f'invalid argument "{excerpt(text)}" for "{option}" flag: invalid size: \'{excerpt(text)}\'')
    return int(number * (1024 ** _UNIT[(m.group(2) or "").lower()]))


def gib(n: int) -> float:
    return round(n / _GIB, 6)


def _shm(run: ContainerRun, hw: HardwareFacts) -> tuple[float | str | None, str]:
    """The container's /dev/shm in GiB ("host": the host's; None: not known) and where that comes from."""
    opts = run.options
    ipc = next((v for o, v in reversed(opts) if o == "--ipc"), "")
    mounted = _shm_mount(opts)
    if ipc == "host" or mounted == "host":
        said = "--ipc=host" if ipc == "host" else "a bind of the host's /dev/shm"
        return "host", f"{said}: the host's /dev/shm ({hw.sources.get('shm_gib', hw.source)})"
    if ipc == "none":
        return 0.0, "--ipc=none: no /dev/shm is mounted"
    if ipc.startswith(("container:", "ns:")):
        return None, f"--ipc={excerpt(ipc)}: that namespace's /dev/shm, which the line does not show"
    if mounted is not None:
        return mounted
    size = next((v for o, v in reversed(opts) if o == "--shm-size"), None)
    if size is not None:
        n = runtime_size_bytes(size, "--shm-size")
        if n:  # 0 is the runtime's default
            return gib(n), f"--shm-size {excerpt(size)}"
    return gib(DEFAULT_SHM_BYTES), f"{run.runtime}'s default for a container without --shm-size or --ipc=host (64 MiB)"


def _shm_mount(opts: tuple[tuple[str, str], ...]) -> str | tuple[float | None, str] | None:
    """A mount on /dev/shm: "host" for a bind of the host's, else (size or None, source); None: no mount."""
    for opt, value in reversed(opts):
        if opt in ("-v", "--volume"):
            parts = value.split(":")
            if len(parts) >= 2 and parts[1].rstrip("/") == "/dev/shm":
                return "host" if parts[0].rstrip("/") == "/dev/shm" else (None, f"{opt} {excerpt(value)} on /dev/shm")
        elif opt == "--mount":
            fields = dict(f.partition("=")[::2] for f in value.split(","))
            target = fields.get("target") or fields.get("destination") or fields.get("dst")
            if target and target.rstrip("/") == "/dev/shm":
                source = fields.get("source") or fields.get("src") or ""
                return "host" if source.rstrip("/") == "/dev/shm" else (None, f"--mount {excerpt(value)}")
        elif opt == "--tmpfs":
            path, _, options = value.partition(":")
            if path.rstrip("/") == "/dev/shm":
                size = next((o[5:] for o in options.split(",") if o.startswith("size=")), None)
                if size is None:
                    return None, f"--tmpfs {excerpt(value)} with no size="
                return gib(runtime_size_bytes(size, "--tmpfs size")), f"--tmpfs {excerpt(value)}"
    return None


def _memory(run: ContainerRun) -> tuple[float | None, str | None]:
    """The container's memory cap in GiB and its source; (None, None) when the line sets none."""
    said = next(((o, v) for o, v in reversed(run.options) if o in ("-m", "--memory")), None)
    if said is None:
        return None, None
    n = runtime_size_bytes(said[1], said[0])
    if not n:  # 0: no limit
        return None, None
    return gib(n), f"{said[0]} {excerpt(said[1])}"


def _requested(run: ContainerRun, caller: dict[str, str]) -> tuple[int, list[str] | None, str] | None:
    """How many GPUs the grant asks for, the device names it lists (None: a count, which the
    runtime reads as the indices 0..N-1), and how the runtime refuses one it does not have;
    None for `all` or no grant."""
    for opt, value in reversed(run.options):
        if opt == "--gpus":
            text = value.strip()
            fields = [f.partition("=") for f in _csv(text)] if not is_digits(text) else []
            count = [v for k, _, v in fields if k.strip().lower() == "count"]
            text = count[-1] if count else text
            if is_digits(text):
                return int(text), None, "nvidia"
            ids = [d.strip() for k, _, v in fields if k.strip().lower() in ("device", "devices")
                   for d in v.split(",") if d.strip()]
            return (len(dict.fromkeys(ids)), ids, "nvidia") if ids else None
    cdi = [v.split(":", 1)[0] for o, v in run.options if o == "--device" and "/gpu=" in v.split(":", 1)[0]]
    if cdi:
        names = [(d.split("=", 1)[0], n) for d in cdi for n in d.split("=", 1)[1].split(",") if n]
        if any(n == "all" for _, n in names):
            return None
        ids = [f"{k}={n}" for k, n in names]
        return len(dict.fromkeys(ids)), ids, "cdi"
    visible = run.environment(caller).get("NVIDIA_VISIBLE_DEVICES")
    if visible is None or visible.strip() in ("all", "", "none", "void"):
        return None
    ids = [d.strip() for d in visible.split(",") if d.strip()]
    return len(dict.fromkeys(ids)), ids, "nvidia"


def _csv(text: str) -> list[str]:
    import csv  # only for a --gpus list

    try:
        return next(csv.reader([text]))
    except (csv.Error, StopIteration):
        return []


def _grant_error(count: int, ids: list[str] | None, how: str, host: int) -> str:
    """The runtime's refusal of a grant of more GPUs than the host has ("": it has them all). A
    count asks for the indices 0..N-1, so the first refused is the host's count; of a list, the
    first index past the host's; a list of UUIDs longer than the host's count names the first
    one past it (which UUID is missing only the host knows)."""
    if ids is None:
        return f"nvidia-container-cli: device error: {host}: unknown device" if count > host else ""
    ids = list(dict.fromkeys(ids))  # a device named twice is granted once

    def past(i: str) -> bool:
        index = i.rpartition("=")[2]  # CDI: vendor.com/gpu=N
        return is_digits(index) and int(index) >= host

    if len(ids) <= host and not any(map(past, ids)):
        return ""
    name = next((i for i in ids if past(i)), ids[min(host, len(ids) - 1)])
    if how == "cdi":  # docker 25+ and podman resolve CDI names before the container is made
        return f"unresolvable CDI devices {name}"
    # the NVIDIA container runtime hook, which docker reports as it fails to start the container
    return f"nvidia-container-cli: device error: {name}: unknown device"


_UNLISTED = {"value": None, "source": "the data gives this fact for other releases only"}


@functools.lru_cache(maxsize=1)
def _image_data() -> dict:
    return json.loads(read_package_text("h3doctor.sglang.flagdata", "image-facts.json"))


def image_facts(image: str) -> dict[str, tuple[bool | str | None, str]]:
    """What the image holds of IMAGE_FACTS, each with its source: sglang's image for a release the
    data lists (`latest` as the newest verified release, which it names until sglang publishes
    another); anything else is not known ("profile": the same fact as the machine's)."""
    data = _image_data()
    found = image_release(image)
    version = found.version if found.kind == "release" else NEWEST_VERIFIED if found.kind == "latest" else None
    if found.repository == data["repository"] and version in data["releases"]:
        # a fact that differs per release names each listed release (by_release); one it omits is not known
        said = {name: fact["by_release"].get(version, _UNLISTED) if "by_release" in fact else fact
                for name, fact in data["facts"].items()}
        return {name: (fact["value"], f"{image}: {fact['source']}") for name, fact in said.items()}
    why = (f"{image} is not sglang's image: what it installs is not known" if found.kind == "foreign" else
           f"{image}'s tag names no release whose image h3doctor has facts for")
    return {name: (None, why) for name in IMAGE_FACTS}


@record(frozen=True)
class ContainerSpec:
    """What a container's definition says of the host facts, whatever wrote it (a `docker run`
    line, a compose service, a pod template): /dev/shm in GiB ("host": the host's; "memory": as
    large as the host's memory), the memory
    cap in GiB (None: none), each with its source, and the image."""

    shm_gib: float | str | None
    shm_source: str
    memory_gib: float | None = None
    memory_source: str | None = None
    image: str | None = None


def run_spec(run: ContainerRun, hw: HardwareFacts) -> ContainerSpec:
    shm, shm_source = _shm(run, hw)
    memory, memory_source = _memory(run)
    return ContainerSpec(shm, shm_source, memory, memory_source, run.image)


def with_container(hw: HardwareFacts, spec: ContainerSpec) -> HardwareFacts:
    """`hw` (the profile's or the probe's machine) as the container of `spec` sees it: its
    /dev/shm, its memory cap and its image's ffmpeg and kernels, each fact's source naming the
    container (`container: …`)."""
    sources = dict(hw.sources)
    given: dict[str, object] = {}

    def fact(name: str, value: object, source: str) -> None:
        given[name] = value
        sources[name] = f"container: {source}"

    # "host": the host's /dev/shm; "memory": a tmpfs as large as the host's memory (a pod's
    # memory-backed emptyDir with no size and no memory limit)
    shm = {"host": hw.shm_gib, "memory": hw.host_memory_gib}.get(spec.shm_gib, spec.shm_gib)  # type: ignore[arg-type]
    fact("shm_gib", shm, spec.shm_source)
    cap = spec.memory_gib
    if cap is not None:
        host = hw.host_memory_gib
        fact("host_memory_gib", None if host is None else min(cap, host),
             f"{spec.memory_source} caps the host's {'unknown' if host is None else f'{host:g} GiB'}")
    fact("cgroup_memory_unlimited", cap is None, f"{spec.memory_source} sets the container's memory.max"
         if cap is not None else "no memory limit: the container's memory.max is max")
    if spec.image is not None:
        for name, (value, source) in image_facts(spec.image).items():
            fact(name, getattr(hw, name) if value == "profile" else value, source)
    return replace(hw, **given, sources=sources)


def in_container(hw: HardwareFacts, run: ContainerRun, caller: dict[str, str]) -> HardwareFacts:
    """`hw` as the container of a `docker|podman|nerdctl run` line sees it (with_container), and
    the GPUs the line grants against the host's (H3D148)."""
    hw = with_container(hw, run_spec(run, hw))
    requested = _requested(run, caller)
    if requested is None:
        return hw
    count, ids, how = requested
    given: dict[str, object] = {"gpus_granted": count}
    if hw.gpu_count is not None:  # else not known: H3D148 cannot verify
        given["gpu_grant_error"] = _grant_error(count, ids, how, hw.gpu_count)
    return replace(hw, **given)

