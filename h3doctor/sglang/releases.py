"""Which sglang release a launch targets, and what that release knows (flags, H3 models): the
`Release` object one check is built around.

Reads data only: the generated flag history (`flagdata/flag-history.json`), the cited release
facts (`flagdata/releases.json`, `flagdata/runtime-facts.json`), the cited flag equivalents
(`flagdata/flag-equivalents.json`), the cited per-release enumerations (`flagdata/enums.json`)
and what each release's attention backends accept (`releasedata/X.Y.Z/attention-backends.json`).
The installed sglang is read from its package metadata, never imported (importing it pulls torch).
"""

from __future__ import annotations

import functools
import json
import re

from h3doctor.digits import is_digits
from h3doctor.errors import UsageError
from h3doctor.paths import installed_versions, read_package_text
from h3doctor.record import record, replace
from h3doctor.sglang import release_files
from h3doctor.sglang.images import image_release, sglang_repositories
from h3doctor.unresolved import as_written, has_mark
from h3doctor.verified import NEWEST_VERIFIED

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any
    from h3doctor.sglang.flagtable import FlagTable
    from h3doctor.sglang.memory import MemoryModel

_RELEASE = re.compile(r"^([0-9]+)\.([0-9]+)\.([0-9]+)")


@record(frozen=True)
class Release:
    """The sglang release one check is judged against, built once per check and handed to the
    resolver, every derivation and the outputs. What the release knows is read from its data on
    first use only (a check that reads no memory figure never opens the memory constants):

    * `table`: its generated flag table; `enum(name)`: its enumerations (flagdata/enums.json);
    * `attention_backend_facts` / `attention_backends`: what its backends accept;
    * `model_variants`, `quality_levels`, `has_data_parallel`: its runtime facts;
    * `sampling`: its sampling classes (releasedata/<release>/sampling.json, exact release only);
    * `memory`: its memory model (releasedata/<release>/memory.json), or None when none is recorded.

    Rooms above this one keep their own per-release files (the catalog, `engine/catalog/`; the
    cookbook, `suggest/`) and read them for `table_version`.

    Release-keyed data is read for `table_version`, the release whose flag table and rules judge
    the launch; `version` is the release the user targets, which may be newer than any table.
    A launch in a container also carries its `image`, what the image's tag does not say
    (`image_note`) and whether it is a dev build newer than every release (`unreleased`).
    Equal and hashable by its fields (the release and the image): the loaded data is a cache, not state.
    """

    version: str  # the release the user targets (may be newer than any flag table)
    source: str = "default"  # option | recipe | image | installed | default
    table_version: str = ""  # the flag table (and rules) it is judged with; empty: `version`
    image: str | None = None  # the container image the launch runs in, as written
    image_note: str | None = None  # what the image's tag does not say (`latest` moves; not sglang's image)
    unreleased: bool = False  # a dev/nightly image: built after the newest release

    def __post_init__(self) -> None:
        if not self.table_version:
            object.__setattr__(self, "table_version", self.version)

    @property
    def newer_than_verified(self) -> bool:
        return self.unreleased or key(self.version) > key(self.table_version)

    @property
    def named(self) -> str:
        """How messages name the release: `0.5.24`, or the dev image it comes from."""
        return f"in {self.image}" if self.unreleased and self.image else self.version

    @functools.cached_property
    def table(self) -> FlagTable:
        from h3doctor.sglang.flagtable import load_flag_table

        return load_flag_table(self.table_version)

    def enum(self, name: str) -> tuple[str, ...] | None:
        return enum_values(name, self.table_version)

    @functools.cached_property
    def attention_backend_facts(self) -> dict[str, Any] | None:
        return attention_backend_facts(self.table_version)

    @functools.cached_property
    def attention_backends(self) -> frozenset[str] | None:
        return attention_backends(self.table_version)

    @functools.cached_property
    def model_variants(self) -> dict[str, str]:
        return model_variants(self.table_version)

    @functools.cached_property
    def quality_levels(self) -> tuple[str, ...]:
        return quality_levels(self.table_version)

    @functools.cached_property
    def has_data_parallel(self) -> bool:
        return has_data_parallel(self.table_version)

    @functools.cached_property
    def dit_layerwise_offload_modes(self) -> tuple[str, ...]:
        return dit_layerwise_offload_modes(self.table_version)

    @functools.cached_property
    def mps_clears_offload(self) -> bool:
        return in_range(self.table_version, facts()["mps_clears_offload"]["versions"])

    @functools.cached_property
    def sampling(self) -> dict[str, Any] | None:
        # generated per release: a release newer than every table has no record (None), and
        # generate's request checks then say nothing rather than judge by another release
        from h3doctor.sglang import sampling

        return sampling.release(self.version)

    @functools.cached_property
    def memory(self) -> MemoryModel | None:
        from h3doctor.sglang.memory import model_for

        return model_for(self.table_version)


NEWEST = Release(NEWEST_VERIFIED)  # the release a check without any target is judged against


# Version strings and range specs are few (the releases, the rules' ranges) and met on every check:
# their parses are cached.
@functools.lru_cache(maxsize=512)
def key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if is_digits(p))


@functools.lru_cache(maxsize=4096)
def in_range(version: str, spec: str) -> bool:
    v = key(version)
    for clause in spec.split(","):
        for op in (">=", "<=", "==", ">", "<"):
            if clause.startswith(op):
                bound = key(clause[len(op):])
                if not {">=": v >= bound, "<=": v <= bound, "==": v == bound, ">": v > bound, "<": v < bound}[op]:
                    return False
                break
    return True


def _data(name: str) -> dict[str, Any]:
    return json.loads(read_package_text("h3doctor.sglang.flagdata", name))


@functools.lru_cache(maxsize=1)
def history() -> dict[str, Any]:
    return _data("flag-history.json")


@functools.lru_cache(maxsize=1)
def facts() -> dict[str, Any]:
    return _data("releases.json")


@functools.lru_cache(maxsize=1)
def _enums() -> dict[str, Any]:
    return _data("enums.json")


@functools.lru_cache(maxsize=64)
def enum_values(name: str, version: str) -> tuple[str, ...] | None:
    """The values of one of sglang's enumerations (`flagdata/enums.json`: AttentionBackendEnum,
    COMPONENT_RESIDENCY_MODES, RoleType, AttentionRole, QUANTIZATION_METHOD_ALIASES,
    WEIGHT_FILE_OVERRIDE_COMPONENTS) in `version`, in sglang's order; None when
    that release has no such enumeration."""
    for entry in _enums().get(name, ()):
        if in_range(version, entry["versions"]):
            return tuple(entry["values"])
    return None


@functools.lru_cache(maxsize=1)
def runtime_facts() -> dict[str, Any]:
    return _data("runtime-facts.json")


@functools.lru_cache(maxsize=1)
def equivalents() -> dict[str, dict[str, Any]]:
    return {e["option"]: e for e in _data("flag-equivalents.json")["equivalents"]}


@functools.lru_cache(maxsize=None)
def attention_backend_facts(version: str | None) -> dict[str, Any] | None:
    """What `version` knows of attention backends (releasedata/<version>/attention-backends.json,
    with the AttentionBackendEnum names from enums.json under `names`), or None for a release with
    no record: then the model's own (newest) behaviour stands."""
    entry = release_files.data(version, "attention_backends")
    if entry is None:
        return None
    return {**entry, "names": list(enum_values("AttentionBackendEnum", version) or ())}


def attention_backends(version: str | None) -> frozenset[str] | None:
    """The AttentionBackendEnum names `version` defines (lower case), or None for a release
    with no record (then nothing is known to be missing)."""
    entry = attention_backend_facts(version)
    return frozenset(entry["names"]) if entry else None


def known_releases() -> list[str]:
    """Releases with a generated flag table, oldest first."""
    return list(_known_releases())


@functools.lru_cache(maxsize=1)
def _known_releases() -> tuple[str, ...]:
    # the release folders with a flag table: the same list as flag-history.json's, without
    # parsing that file's ~180 KB on every check (tests/sglang/test_flagdata.py keeps the two equal)
    return release_files.known()


def installed_version() -> str | None:
    """The installed sglang's version, from its dist-info directory (paths.installed_versions: no
    importlib.metadata on the check's start-up path)."""
    return installed_versions(("sglang",))["sglang"]


def target(option: str | None, recipe: str | None, *, installed: str | None = None,
           image: str | None = None) -> Release:
    """Option > recipe > the container image's tag > installed sglang > the newest verified release.
    A launch in a container never runs the host's sglang: with an image, `installed` is not read."""
    for source, raw in (("option", option), ("recipe", recipe)):
        if raw:
            return replace(_target(str(raw), source), image=image)
    if image is not None:
        return image_target(image)
    if installed:
        return _target(str(installed), "installed")
    return NEWEST


def image_target(image: str) -> Release:
    """The release a container image runs (sglang/images.py reads its tag). An image the file
    leaves to the shell or to make (`$(IMAGE)`, h3doctor/unresolved.py) names no release."""
    newest = NEWEST_VERIFIED
    if has_mark(image):
        return Release(newest, "default", newest, image,
                       f"cannot verify the release: the image {as_written(image)} is known only when the launch "
                       f"runs; judged as {newest}; give --sglang-version")
    found = image_release(image)
    if found.kind == "release" and found.version:
        return replace(_target(found.version, "image"), image=image)
    if found.kind == "latest":
        return Release(newest, "image", newest, image, f"the image tag `{found.tag or 'latest'}` of {image} "
                       f"moves with each sglang release: judged as {newest}, the newest verified release; "
                       "pin a release tag (e.g. lmsysorg/sglang:v" + newest + ")")
    if found.kind == "dev":
        return Release(newest, "image", newest, image, unreleased=True)
    what = (f"the image {image} is not sglang's ({', '.join(sorted(sglang_repositories()))}), so its sglang release "
            "is not known" if found.kind == "foreign" else
            f"the tag of {image} names no sglang release h3doctor can read")
    return Release(newest, "default", newest, image,
                   f"cannot verify the release: {what}; judged as {newest}; give --sglang-version")


def _target(raw: str, source: str) -> Release:
    m = _RELEASE.match(raw.strip())
    if not m:
        raise UsageError(f"sglang version must look like {NEWEST_VERIFIED}, got {raw[:40]!r} (from the {source})")
    version = ".".join(m.groups())  # X.Y.Z.post1 and X.Y.Zrc1 are judged as X.Y.Z
    releases = known_releases()
    if version in releases:
        return Release(version, source, version)
    newest = releases[-1]
    if key(version) > key(newest):
        return Release(version, source, newest)
    raise UsageError(f"no flag table for sglang {version}; known releases: {', '.join(releases)}")


def option_releases(option: str, entry: str) -> list[str]:
    """The releases whose `entry` parser has this exact option string (empty if none has it)."""
    info = history()["options"].get(option)
    if info is None:
        return _component_map_releases(option)
    return list(info.get("entry_points", {}).get(entry, info["releases"]))


def _component_map_releases(option: str) -> list[str]:
    """A dotted `--component-<map>.<component>` flag: the releases whose parser extracts that map
    (each flag table's component_map_flags); empty for any other option."""
    head, dot, component = option.partition(".")
    if not dot or not component or not head.startswith("--component"):
        return []
    from h3doctor.sglang.flagtable import load_flag_table

    dest = head[2:].replace("-", "_")
    return [r for r in known_releases() if dest in (load_flag_table(r).component_maps or ())]


def family_versions(family: str) -> str:
    return facts()["families"][family]["versions"]


@functools.lru_cache(maxsize=None)
def model_variants(version: str) -> dict[str, str]:
    """The --model-variant values release `version`'s H3 pipeline accepts, each with the weight
    partition it selects (flagdata/runtime-facts.json; `hybrid` arrived in 0.5.20)."""
    return {v["name"]: v["subfolder"] for v in runtime_facts()["model_variants"] if in_range(version, v["versions"])}


def published_download(version: str, repo: str) -> dict[str, Any] | None:
    """What a launch of Hub repo `repo` fetches under release `version` when the cache does not say:
    its default partition and each partition's published size (runtime-facts.json `downloads`)."""
    return next((e for e in runtime_facts()["downloads"] if e["repo"] == repo and in_range(version, e["versions"])), None)


def published_partition(version: str, repo: str, asked: str | None) -> tuple[str | None, int | None]:
    """(the partition a launch of `repo` loads — `asked`, else the repo's default —, its published
    bytes or None): what the download and the probes' load time both weigh."""
    published = published_download(version, repo) or {}
    subfolder = asked or published.get("default_subfolder")
    return subfolder, (published.get("partitions") or {}).get(subfolder) if subfolder else None


def startup_facts(version: str) -> dict[str, Any] | None:
    """How long release `version` takes before its probe endpoints answer, as data (runtime-facts.json
    `startup`: where the HTTP server starts, /liveness, /health gated on warmup, the load figures
    and their sources); None for a release it does not cover."""
    return next((e for e in runtime_facts()["startup"] if in_range(version, e["versions"])), None)


def host_spill(version: str) -> dict[str, Any] | None:
    """sglang's host spill in release `version` (0.5.20 on): the DiT's fused bytes, in how many
    tensors, and the free space it keeps (runtime-facts.json `spill`); None before it existed."""
    return next((e for e in runtime_facts()["spill"] if in_range(version, e["versions"])), None)


@functools.lru_cache(maxsize=None)
def kernels_loaded(version: str) -> tuple[tuple[str, str, str | None], ...]:
    """The CUDA kernel libraries release `version` loads on a MiniMax-H3 launch, each as (label,
    package prefix of its facts, the DiT attention backend that loads it, or None: every launch)
    (runtime-facts.json `kernels`); () for a release it does not cover."""
    for entry in runtime_facts()["kernels"]:
        if in_range(version, entry["versions"]):
            return tuple((k["label"], k["prefix"], k["backend"]) for k in entry["loaded"])
    return ()


@functools.lru_cache(maxsize=None)
def quality_levels(version: str) -> tuple[str, ...]:
    """The request qualities release `version` admits (QUALITY_LEVELS, in sglang's order)."""
    for entry in runtime_facts()["quality_levels"]:
        if in_range(version, entry["versions"]):
            return tuple(entry["levels"])
    return ()


def has_data_parallel(version: str) -> bool:
    """Whether release `version`'s launcher accepts --dp-size above 1 (releases.json)."""
    return in_range(version, facts()["data_parallel"]["versions"])


def dit_layerwise_offload_modes(version: str) -> tuple[str, ...]:
    """The performance modes in which release `version`'s auto policy offloads H3's DiT layerwise
    (ModelDeploymentConfig.dit_layerwise_offload_modes, releases.json): none up to 0.5.18."""
    for entry in facts()["dit_layerwise_offload_modes"]:
        if in_range(version, entry["versions"]):
            return tuple(entry["modes"])
    return ()


def quality_high_audited(version: str, key: str) -> bool:
    """Whether release `version`'s quality="high" audit compares this server arg."""
    spec = runtime_facts()["quality_high_audit"]["added"].get(key)
    return spec is None or in_range(version, spec)


def model_versions(model_path: str | None) -> str | None:
    """The release range that registers this exact hub id (None: not a registered id)."""
    for m in facts()["models"]:
        if model_path == m["id"]:
            return m["versions"]
    return None


@functools.lru_cache(maxsize=256)
def lowest(spec: str) -> str | None:
    """The oldest known release inside `spec`."""
    inside = [r for r in _known_releases() if in_range(r, spec)]
    return inside[0] if inside else None


def describe_foreign(option: str, entry: str, version: str) -> dict[str, Any] | None:
    """A flag this release does not know but another release does: when it came or went, and the
    equivalent here, if any. None when no release knows it (a plain unknown flag)."""
    have = option_releases(option, entry)
    if not have or version in have:
        return None
    all_releases = known_releases()
    later = [r for r in have if key(r) > key(version)]
    earlier = [r for r in have if key(r) < key(version)]
    if later:
        when = f"{option} was added in sglang {later[0]}"
    else:
        gone = next((r for r in all_releases if key(r) > key(earlier[-1])), None)
        when = f"{option} exists only up to sglang {earlier[-1]}" + (f" (removed in {gone})" if gone else "")
    eq = equivalents().get(option)
    if eq and version in option_releases(eq["replacement"], entry):
        return {"option": option, "when": when, "equivalent": eq,
                "text": f"{when}; sglang {version} spells it {eq['replacement']} ({eq['where']})"}
    return {"option": option, "when": when, "equivalent": None,
            "text": f"{when}; sglang {version} has no equivalent, so the corrected command drops it"}


def needs_at_least(options: list[str], entry: str, family: str | None, model_path: str | None) -> tuple[str, str]:
    """The oldest release that knows every typed flag and serves the model, and why."""
    floor, why = facts()["first_h3"], "MiniMax-H3 support"
    spec = model_versions(model_path) or (family_versions(family) if family else None)
    low = lowest(spec) if spec else None
    if low and key(low) > key(floor):
        floor, why = low, f"the model {model_path}"
    for option in options:
        have = option_releases(option, entry)
        if have and key(have[0]) > key(floor):
            floor, why = have[0], f"the flag {option}"
    return floor, why
