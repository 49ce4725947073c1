"""Fix strategy: replace `--config FILE` by the file's settings as command-line flags.

Used where sglang refuses the file itself (A8: retired keys). The command line is what sglang
would have built from the file ({**config, **cli}, the CLI winning), so flags the user also
typed are left alone; retired keys are translated to their replacements.
"""

from __future__ import annotations

from typing import Any

from h3doctor.fixes import Edit, FixContext

# server_args.py:3814-3825, with the value each replacement takes
_RETIRED = {
    "decoder_tp": lambda v: ("decoder_sp", v),
    "warmup": lambda v: ("warmup_mode", "request" if v else "off"),
    "server_warmup": lambda v: ("warmup_mode", "server" if v else "off"),
}
_DYNAMIC_MAPS = ("component_paths", "component_weights_paths", "component_quantizations", "component_precisions")


def _words(fx: FixContext, key: str, value: Any) -> list[str] | None:
    """The flag words for one setting, or None when it has no command-line form."""
    if key in _DYNAMIC_MAPS and isinstance(value, dict):
        prefix = "--" + key.replace("_", "-")
        return [w for c, v in value.items() for w in (f"{prefix}.{c}", str(v))]
    flag = fx.table.primary_option(key)
    action = fx.table.by_dest.get(key)
    if flag is None or action is None:
        return None
    if action.action == "store_boolean":
        return [flag, "true" if value else "false"]
    if action.action in ("store_true", "store_false"):
        return [flag] if bool(value) == (action.action == "store_true") else []
    if isinstance(value, dict):
        entries = [f"{k}={v}" for k, v in value.items()]
        return [flag, *entries] if action.nargs in ("+", "*") else [flag, ",".join(entries)]
    if isinstance(value, list):
        return [flag, *map(str, value)] if action.nargs in ("+", "*") else [flag, ",".join(map(str, value))]
    return [flag, str(value)]


def inline_config(fx: FixContext, exclude: frozenset[str] = frozenset()) -> list[Edit]:
    """Replace --config FILE by its settings as flags, leaving out `exclude` (the ones to unset)."""
    occs = fx.occurrences("--config")
    path = fx.context.get("config.path")
    values: dict[str, Any] = {k: v for k, v in (fx.context.get("config.values") or {}).items() if k not in exclude}
    if not occs or not path or not (values or exclude):
        return []  # nothing read from the file: dropping it would lose its settings
    words: list[str] = []
    typed = set(fx.cmd.provided) | set(fx.cmd.dynamic)
    for key, value in values.items():
        if key in _RETIRED:
            retired = key
            key, value = _RETIRED[key](value)
            fx.notes.append(f"--config: retired `{retired}` replaced by --{key.replace('_', '-')} {value}")
        if key in typed or value is None:
            continue
        flag_words = _words(fx, key, value)
        if flag_words is None:
            fx.notes.append(f"--config: `{key}` has no command-line flag; it is dropped with the file")
            continue
        words += flag_words
    first = occs[0]
    return [Edit(first.start, first.end, words)] + [Edit(o.start, o.end, []) for o in occs[1:]]
