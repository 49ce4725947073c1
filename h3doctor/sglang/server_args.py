"""sglang's server arguments for one parsed command: dataclass defaults, then the --config file,
then the command line (catalog 1.2 step 5), and which H3 family sglang builds from them.
"""

from __future__ import annotations

import functools

from h3doctor.sglang.argv import ParsedCommand
from h3doctor.sglang.configfile import ConfigLoad, coerce, load_config
from h3doctor.sglang.families import FamilyMatch, match_family
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.sglang.resolve import parse_component_backend_map

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


def config_for(cmd: ParsedCommand, table: FlagTable) -> ConfigLoad | None:
    """The --config file the command names, read as this release's parser reads it (None: none)."""
    path = cmd.provided.get("config")
    if not path:
        return None
    booleans = {a.dest for a in table.actions if a.action in ("store_boolean", "store_true", "store_false")}
    numeric = {a.dest: a.type for a in table.actions if a.type in ("int", "float") and a.nargs is None}
    return load_config(str(path), known_fields=set(table.dataclass_defaults), boolean_fields=booleans,
                       removed=table.removed_config_keys, numeric_fields=numeric)


@functools.lru_cache(maxsize=16)
def _table_defaults(table: FlagTable) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    """Every dest's default, and how to copy the mutable ones: worked out once per flag table."""
    base = {dest: table.default_of(dest) for dest in table.dataclass_defaults}
    for action in table.actions:
        base.setdefault(action.dest, table.default_of(action.dest))
    mutable = tuple((k, _copier(v)) for k, v in base.items() if isinstance(v, (dict, list, set)))
    return base, mutable


def _defaults(table: FlagTable) -> dict[str, Any]:
    """Every dest's default; mutable defaults copied per check."""
    base, mutable = _table_defaults(table)
    args = dict(base)
    for key, copier in mutable:
        args[key] = copier(base[key])
    return args


def _copier(value: Any) -> Any:
    """How to copy a mutable default: its own shallow copy when that is a full copy (copy is imported
    only for a nested one: the module is not on the check's path otherwise)."""
    if _flat(value):
        return type(value).copy
    import copy

    return copy.deepcopy


def _flat(value: Any) -> bool:
    """A container of immutable values only: a shallow copy is a full copy."""
    items = value.values() if isinstance(value, dict) else value
    return all(isinstance(v, (str, int, float, bool, type(None), tuple)) for v in items)


def server_args(cmd: ParsedCommand, config: ConfigLoad | None, table: FlagTable) -> tuple[dict[str, Any], set[str]]:
    """Dataclass defaults, then --config, then the CLI (catalog 1.2 step 5): the args, and the
    dests the user set (in the file or on the command line)."""
    args = _defaults(table)
    explicit: set[str] = set()
    if config is not None and config.error is None:
        args.update(config.values)
        explicit |= set(config.values)
        for key, expected in config.type_mismatches.items():  # reported by a rule; coerced so the check goes on
            if key in cmd.provided:
                continue
            converted = coerce(args[key], expected)
            args[key] = table.default_of(key) if converted is None else converted
    cli = {k: v for k, v in cmd.provided.items() if k != "config"}
    args.update(cli)
    explicit |= set(cli)
    for dest, mapping in cmd.dynamic.items():  # from_cli_args merges the dynamic maps last
        if dest == "component_attention_backends":
            merged, _ = parse_component_backend_map(args.get(dest))
        else:
            merged = dict(args.get(dest) or {})
        merged.update(mapping)
        args[dest] = merged
        explicit.add(dest)
    if cmd.entry == "serve" and "warmup_mode" not in explicit:
        args["warmup_mode"] = "server"
    for key in ("component_paths", "component_weights_paths", "component_quantizations"):
        if args.get(key) is None:
            args[key] = {}
    return args, explicit


def family_of(cmd: ParsedCommand, args: dict[str, Any]) -> FamilyMatch:
    """Which H3 family sglang would build, or why this launch is not an H3 diffusion launch."""
    if cmd.model_type not in ("auto", "diffusion"):
        return FamilyMatch(None, f"--model-type {cmd.model_type}: sglang serve starts its {cmd.model_type!r} backend, "
                                 "not the diffusion server (cli/serve.py:181-225)")
    match = match_family(args.get("model_path"), args.get("model_id"), args.get("pipeline_class_name"))
    if match.family is not None and diffusers_backend(args):
        return FamilyMatch(match.family, match.how + "; with --backend diffusers sglang uses the generic diffusers "
                                         "pipeline config (registry.py:617): the H3 model, worker, load and request "
                                         "checks do not run, the generic ones do")
    return match


def diffusers_backend(args: dict[str, Any]) -> bool:
    """--backend diffusers: sglang's generic diffusers pipeline, not the H3 one."""
    return str(args.get("backend") or "auto").lower() == "diffusers"
