"""What `h3doctor suggest` is asked, turned into one search: model, hardware, rules, parser table."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.sglang.memory import QUANTIZED_DIT
from h3doctor.suggest.report import build
from h3doctor.suggest.search import PREFERENCES, search

DEFAULT_MODEL = "MiniMaxAI/MiniMax-H3"
_REQUEST = re.compile(r"([1-9][0-9]{1,4})x([1-9][0-9]{1,4})x([0-9]{1,3}(?:\.[0-9]{1,3})?)s?")
MAX_RUNNER_UPS = 10


@dataclass
class SuggestRequest:
    profile: str | None = None
    model: str = DEFAULT_MODEL
    variant: str | None = None
    prefer: str = "balanced"
    request: str | None = None  # WIDTHxHEIGHTxSECONDSs, e.g. 1344x768x5s
    quantization: str | None = None
    sglang_version: str | None = None
    rules_dir: str | None = None
    use_probe_cache: bool = True
    runner_ups: int = 3


def parse_request(text: str | None) -> dict[str, Any]:
    """`1344x768x5s` -> the intent `check` reads (resolution, seconds)."""
    if text is None:
        return {}
    match = _REQUEST.fullmatch(text.strip().lower())
    seconds = float(match.group(3)) if match else 0.0
    if match is None or not 0 < seconds <= 600:
        raise UsageError(f"--request must be WIDTHxHEIGHTxSECONDS, e.g. 1344x768x5s (seconds in (0, 600]), got {text[:40]!r}")
    return {"resolution": f"{match.group(1)}x{match.group(2)}", "seconds": seconds}


def run(req: SuggestRequest) -> dict[str, Any]:
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.sglang.families import FAMILIES, match_family
    from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, load_flag_table

    if req.prefer not in PREFERENCES:
        raise UsageError(f"--prefer must be one of {', '.join(PREFERENCES)}, got {req.prefer[:40]!r}")
    if not 0 <= req.runner_ups <= MAX_RUNNER_UPS:
        raise UsageError(f"--runner-ups must be between 0 and {MAX_RUNNER_UPS}")
    intent = parse_request(req.request)
    if req.quantization is not None and req.quantization.lower() not in QUANTIZED_DIT:
        raise UsageError(f"--quantization must be one of {', '.join(QUANTIZED_DIT)} (the methods h3doctor's memory "
                         f"model sizes), got {req.quantization[:40]!r}")
    family = match_family(req.model).family
    if family is None:
        known = ", ".join(f.hub_id for f in FAMILIES.values())
        raise UsageError(f"{req.model[:80]!r} is not a MiniMax-H3 family model sglang recognises; suggest knows {known}")
    env = dict(os.environ)
    hw = _hardware(req.profile, env, req.use_probe_cache)
    table = load_flag_table(req.sglang_version or DEFAULT_SGLANG_VERSION)
    rules = load_rules(Path(req.rules_dir) if req.rules_dir else None)
    if not any(r.in_release(table.sglang_version) for r in rules):
        raise UsageError(f"no rule is verified for sglang {table.sglang_version}; h3doctor cannot judge that release yet")
    result = search(hw, rules, table, env, model=req.model, family=family.key, variant=req.variant, prefer=req.prefer,
                    intent=intent, quantization=req.quantization, runner_ups=req.runner_ups)
    return build(result, hw=hw, family=family, model=req.model, variant=req.variant, intent=intent,
                 quantization=req.quantization, sglang_version=table.sglang_version)


def _hardware(profile: str | None, env: dict[str, str], use_cache: bool):
    if profile is not None:
        from h3doctor.host.profiles import load_profile

        return load_profile(profile)
    from h3doctor.host.probe import facts_for_check

    return facts_for_check(env, use_cache=use_cache)
