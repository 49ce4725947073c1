"""The check context: the flat dict every rule condition, message and fix reads.

Roots: `args.*` (the resolved server args), `events.*` (what the adjust phase recorded), `hw.*`,
`env.*`, `intent.*` (the request to judge), `deployment.*` (what a manifest says around the
launch: its probes), `parse.*` (argparse's problems), `config.*` (the
--config file), `release.*` (the target release and what it knows of this launch), and last
`derived.*` (engine/derivations, which read all the others).
"""

from __future__ import annotations

from h3doctor.engine.derivations import derive_all
from h3doctor.sglang.argv import PARSE_KIND, ParsedCommand
from h3doctor.sglang.configfile import ConfigLoad
from h3doctor.sglang.families import FamilyMatch
from h3doctor.sglang.releases import Release, describe_foreign, family_versions, in_range, lowest
from h3doctor.sglang.releases import facts as release_facts
from h3doctor.sglang.releases import key as release_key
from h3doctor.sglang.releases import model_versions, needs_at_least
from h3doctor.sglang.resolve import Resolver
from h3doctor.sglang.sampling import request_intent

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

RELEVANT_ENV = (
    "SGLANG_DIFFUSION_PLATFORM_OVERRIDE", "SGLANG_CACHE_DIT_ENABLED", "SGLANG_DIFFUSION_MINIMAX_H3_ADALN_GPU_PLANS",
    "SGLANG_USE_SGL_FA3_KERNEL", "SGLANG_DIFFUSION_DISABLE_AUTO_RESIDENCY", "CUDA_VISIBLE_DEVICES", "SGLANG_CACHE_DIR",
)
_AFTER_PARSE = 1_000_000  # orders "unrecognized arguments" after every argparse error (rule H3D012)


def position_token(position: int) -> int | None:
    """The flag index a `parse.<kind>_position` value is about (None: no one token, e.g. an
    ambiguous abbreviation met first); the ordering offset of H3D012's leftovers taken off."""
    if position < 0:
        return None
    return position - _AFTER_PARSE if position >= _AFTER_PARSE else position


_FOREIGN_KINDS = ("unrecognized", "ambiguous")
_ARG_PATHS: dict[str, str] = {}


def _arg_path(dest: str) -> str:
    """`args.<dest>`, built once per dest: every evaluation spells ~200 of them (a lint run, thousands
    of evaluations). The cache is capped: a --config file can bring any number of odd keys."""
    path = _ARG_PATHS.get(dest)
    if path is None:
        path = "args." + dest
        if len(_ARG_PATHS) < 2048:
            _ARG_PATHS[dest] = path
    return path


_ARG_PATH_LISTS: dict[tuple[str, ...], tuple[str, ...]] = {}


def arg_paths(dests) -> tuple[str, ...]:
    """`args.<dest>` for each dest of a resolved launch, in order. The server args of one release
    are the same ~300 dests, in the same order, on every evaluation: the list of paths is kept per
    list of dests (a few per process), so an evaluation spells none of them."""
    key = tuple(dests)
    paths = _ARG_PATH_LISTS.get(key)
    if paths is None:
        paths = tuple(map(_arg_path, key))
        if len(_ARG_PATH_LISTS) < 64:  # a --config can bring odd keys: the cache stays small
            _ARG_PATH_LISTS[key] = paths
    return paths


def build_context(cmd: ParsedCommand, config: ConfigLoad | None, family: FamilyMatch, hw: Any, env: dict[str, str],
                  resolver: Resolver | None, intent: dict[str, Any], release: Release,
                  reads: frozenset[str], deployment: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every root of the context for one launch. `reads`: the paths the applicable rules read (the
    costly values, and the derivations, are worked out only for them)."""
    ctx: dict[str, Any] = {"family": family.family.key if family.family else None, "entry": cmd.entry,
                           "launcher": cmd.launcher}
    foreign = _release_context(ctx, cmd, family, resolver, release, reads)
    resolved = resolver is not None and "resolution_error" not in resolver.events
    if resolver is not None:
        ctx.update(zip(arg_paths(resolver.args), resolver.args.values()))
        ctx.update({f"events.{k}": v for k, v in resolver.events.items()})
        ctx["explicit"] = sorted(resolver.explicit)
    ctx.update({f"hw.{k}": v for k, v in hw.as_dict().items()})
    ctx.update({f"env.{k}": env.get(k) for k in RELEVANT_ENV})
    ctx.update({f"intent.{k}": v for k, v in intent.items()})
    if deployment:  # a manifest's launch only: the rules reading it do not apply to a bare command line
        ctx.update({f"deployment.{k}": v for k, v in deployment.items()})
    if cmd.entry == "generate":  # its one request is the command's own: --quality, --num-inference-steps
        own = request_intent(cmd.provided, release.version)
        ctx.update({f"intent.{k}": v for k, v in own.items()})
        intent = {**intent, **own}
    ctx["intent"] = {k: v for k, v in intent.items() if v is not None}  # the whole request, for derivations
    _parse_context(ctx, cmd, foreign)
    if config is not None:
        _config_context(ctx, cmd, config)
    ctx["launch_form"], ctx["launch_path"] = cmd.form, env.get("PATH")  # for the derivations of what --exec runs
    # last, so derivations can read every other root; without a resolved launch, only those that
    # read the launch's words (what --exec would run is judged for every launch)
    derive_all(resolver if resolved else None, hw, ctx, reads)
    return ctx


def _parse_context(ctx: dict[str, Any], cmd: ParsedCommand, foreign: set[int]) -> None:
    """`parse.<kind>`: every problem of a kind, the first one's message and its position."""
    names: dict[str, tuple[str, str, str]] = {}  # kind -> its three roots (70,000 unknown flags are one kind)
    for p in cmd.problems:
        kind = PARSE_KIND.get(p.kind, p.kind)
        if id(p) in foreign:  # a flag of another release: rule H3D012 reports it where argparse meets it
            kind = "release_flag"
        roots = names.get(kind)
        if roots is None:
            roots = names[kind] = (f"parse.{kind}", f"parse.{kind}_message", f"parse.{kind}_position")
        every, first, where = roots
        ctx.setdefault(every, []).append(p.message)
        ctx.setdefault(first, p.message)
        # argparse classifies every option before it consumes any value, so an ambiguous
        # abbreviation is met first; the others in argv order (parse_known_args)
        position = -1 if p.kind == "ambiguous" else p.start
        if kind == "release_flag":
            # argparse stops at an ambiguous option at once; leftovers are reported after the whole parse
            position = -1 if p.kind == "ambiguous" else _AFTER_PARSE + p.start
        if position < ctx.get(where, float("inf")):
            ctx[where] = position
            ctx[first] = p.message if p.message.startswith("error: ") else f"error: {p.message}"\
                if kind == "release_flag" else p.message


def _config_context(ctx: dict[str, Any], cmd: ParsedCommand, config: ConfigLoad) -> None:
    """`config.*`: the --config file, what it sets and what sglang makes of it."""
    ctx["config.path"] = config.path
    ctx["config.error"] = config.error
    ctx["config.error_kind"] = config.error_kind
    ctx["config.string_booleans"] = config.string_booleans
    ctx["config.ignored_keys"] = config.ignored_keys
    ctx["config.removed_keys"] = config.removed_keys
    ctx["config.keys"] = sorted(config.values)
    ctx["config.values"] = config.values
    for key, value in config.values.items():  # per-component maps the file sets (fixes override them)
        if isinstance(value, dict):
            ctx[f"config.map.{key}"] = sorted(str(k).replace("-", "_") for k in value)
    # the command line wins over the file, so a value typed there is no longer mistyped
    mistyped = [key for key in config.type_mismatches if key not in cmd.provided]
    ctx["config.mistyped_keys"] = mistyped
    ctx["config.type_mismatches"] = [config.describe_mismatch(key) for key in mistyped]


def _release_context(ctx: dict[str, Any], cmd: ParsedCommand, family: FamilyMatch, resolver, release: Release,
                     reads: frozenset[str]) -> set[int]:
    """`release.*`: the target release and what it knows of this launch. Returns the parse problems
    (by id) that are flags of another release. `reads`: the paths the applicable rules read; the
    oldest release the launch needs is worked out only when one reads it (it reads every flag's
    history, ~180 KB of data, for the one rule that says it)."""
    version = release.version
    ctx.update({"release.version": version, "release.source": release.source, "release.table": release.table_version,
                "release.newer_than_verified": release.newer_than_verified, "release.named": release.named,
                "release.image": release.image, "release.image_note": release.image_note,
                "sglang_version": release.table_version})  # before the derivations: the memory model reads it
    first = release_facts()["first_h3"]
    ctx["release.first_h3"] = first
    ctx["release.has_h3"] = release_key(version) >= release_key(first)
    model = resolver.args.get("model_path") if resolver is not None else None
    fam = family.family.key if family.family else None
    spec = model_versions(model) or (family_versions(fam) if fam else None)
    ctx["release.model_registered"] = None if spec is None else in_range(version, spec)
    ctx["release.model_since"] = lowest(spec) if spec else None
    typed = [o.option for o in cmd.occurrences if not o.abbreviated and o.option.startswith("--")]
    notes, ids = [], set()
    for p in cmd.problems:
        if p.kind in _FOREIGN_KINDS and p.option:
            info = describe_foreign(p.option, cmd.entry, release.table_version)
            if info is not None:
                ids.add(id(p))
                notes.append(info["text"])
                typed.append(p.option)
    ctx["release.foreign_flags"] = notes
    ctx["release.foreign_text"] = "; ".join(notes)
    if "release.needs_at_least" in reads or "release.needs_why" in reads:
        floor, why = needs_at_least(typed, cmd.entry, fam, model)
        ctx["release.needs_at_least"], ctx["release.needs_why"] = floor, why
    return ids
