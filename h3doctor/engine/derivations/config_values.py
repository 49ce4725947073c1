"""Derived values of what a --config file sets that the command line cannot: retired keys
(from_dict rejects them) and boolean fields given as strings meaning false.
"""

from __future__ import annotations

import functools
import json

from h3doctor.engine.derivations.common import FALSE_WORDS
from h3doctor.engine.derivations.registry import derives

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

RETIRED_ARGS = {  # server_args.py:3814-3825, in sglang's order
    "decoder_tp": "decoder_sp for decoder/VAE parallel decode",
    "warmup": "warmup_mode=request or warmup_mode=off",
    "server_warmup": "warmup_mode=server or warmup_mode=off",
}
# attention_backend_config keys the H3 code reads as booleans (minimax_h3_vdn.py:50-54).
ABC_BOOLEAN_KEYS = ("vdn_h3_dense_smoke",)


def _config_removed_message(r: Any) -> str | None:
    """A8: from_dict rejects retired keys (server_args.py:3814-3825). The command line cannot set
    these dests, so a retired key among the explicit ones came from the --config file."""
    removed = [k for k in RETIRED_ARGS if k in r.explicit]
    if not removed:
        return None
    return "Removed server argument(s): " + "; ".join(f"{k} -> {RETIRED_ARGS[k]}" for k in removed)


@functools.lru_cache(maxsize=None)
def _store_boolean_dests(version: str) -> frozenset[str]:
    from h3doctor.sglang.flagtable import load_flag_table

    return frozenset(a.dest for a in load_flag_table(version).actions if a.action == "store_boolean")


def _string_false_config_keys(r: Any, version: str) -> list[str]:
    """StoreBoolean fields (of the target release's parser) whose effective value is a string
    meaning false. The command line always yields a bool for these, so a string is a --config
    value sglang did not convert."""
    booleans = _store_boolean_dests(version)
    return sorted(
        k for k in r.explicit
        if k in booleans and isinstance(r.args.get(k), str) and r.args[k].strip().lower() in FALSE_WORDS
    )


@derives("config_removed_message", points_at={"config_removed_message": ("config.removed_keys",)})
def config_removed_message(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.config_removed_message": _config_removed_message(r)}


@derives("config_string_false_keys", fallback={"config_string_false_keys": []})
def string_false_config_keys(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    return {"derived.config_string_false_keys": _string_false_config_keys(r, r.release.table_version)}


@derives("abc_string_false_keys", "abc_fixed_json", "string_false_keys", reads=("derived.config_string_false_keys",),
         # H3D950's fix is a strategy (config_false_on_command_line) that names no flag: lint points at the key
         points_at={"string_false_keys": ("derived.config_string_false_keys",)})
def string_false_keys(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """h3doctor's own: boolean strings sglang reads as truthy, in --config and in
    --attention-backend-config (with the JSON that fixes the latter)."""
    abc = r.args.get("attention_backend_config")
    abc = abc if isinstance(abc, dict) else {}
    false_keys = [k for k in ABC_BOOLEAN_KEYS if isinstance(abc.get(k), str) and abc[k].strip().lower() in FALSE_WORDS]
    out: dict[str, Any] = {"derived.abc_string_false_keys": false_keys}
    if false_keys:
        fixed = {k: (False if k in false_keys else v) for k, v in abc.items()}
        out["derived.abc_fixed_json"] = json.dumps(fixed)
    out["derived.string_false_keys"] = ctx["derived.config_string_false_keys"] + [
        f"attention_backend_config.{k}" for k in false_keys
    ]
    return out
