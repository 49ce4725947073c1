"""Derived values for the `sglang generate` sampling rules (H3D80x; see derivations/__init__.py).

`sglang generate` builds the family's sampling class from its sampling flags after the model is
loaded (h3doctor/sglang/sampling.py says how, with the per-release data). These values say what
that construction and `_validate` will see; the checks stay in rules/. Only the flags typed on
the command line are modelled: an absent flag is `argparse.SUPPRESS`, never a keyword argument
(configs/sample/sampling_params.py, `add_cli_args`' `default=argparse.SUPPRESS`).
"""

from __future__ import annotations

from h3doctor.engine.derivations.common import is_int
from h3doctor.engine.derivations.registry import derives
from h3doctor.sglang import sampling

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

_ABSENT = "==SUPPRESS=="
# video_adapter.py `supported_tasks` (every release 0.5.17-0.5.23)
TASKS = ("t2va", "fl2va", "ref2va")
# task_profiles.py `conditions_required=True` (the same in every release 0.5.17-0.5.23)
TASKS_WITH_CONDITIONS = ("fl2va", "ref2va")
# get_cli_args: any Spectrum tuning flag builds spectrum_params and turns enable_spectrum on
SPECTRUM_TUNING = ("w", "taylor_order", "history_size", "spectrum_window_size", "spectrum_flex_window",
                   "spectrum_warmup_steps", "spectrum_m", "spectrum_lam", "spectrum_tau_num_steps")


def _typed(a: dict[str, Any], explicit: set[str], dest: str) -> Any:
    value = a.get(dest)
    return value if dest in explicit and value is not None and value != _ABSENT else None


def _missing_material(conditions: Any) -> str | None:
    """The first condition file sglang cannot find (material_io.localize_condition_uri: a plain
    path, `~` expanded, or a local file:// URI must be an existing file; other schemes are fetched
    later and not judged here). Only a stat, relative to the directory the command runs in."""
    if not isinstance(conditions, list):
        return None
    import urllib.parse  # with condition files only: pathlib and urllib stay off the check's path
    from pathlib import Path

    for cond in conditions:
        uri = cond.get("uri") if isinstance(cond, dict) else None
        if not isinstance(uri, str) or not uri or uri.startswith(("data:", "base64:", "tar+offset:", "tar+b64header:")):
            continue
        parsed = urllib.parse.urlsplit(uri)
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            path = Path(urllib.parse.unquote(parsed.path))
        elif not parsed.scheme:
            path = Path(uri).expanduser()
        else:
            continue
        try:
            if not path.is_file():
                return str(path)
        except (OSError, ValueError):
            return str(path)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _target_problem(target: dict[str, Any], task: str, limits: dict[str, Any]) -> str | None:
    """The first thing `_validate_target` (request_validation.py) refuses in a target object, in
    its order; `limits` is the release's (its sampling.json `request`)."""
    short_edge = target.get("short_edge")
    if not is_int(short_edge):
        return "short_edge_type"
    exact = limits.get("short_edge_exact")
    if (short_edge != exact) if exact is not None else short_edge <= 0:
        return "short_edge_value"
    aspect = target.get("aspect_ratio")
    if not isinstance(aspect, str) or not aspect:
        return "aspect_type"
    if task in ("t2va", "ref2va") and aspect != "auto" and aspect not in limits["finite_aspect_ratios"]:
        return "aspect_value"
    duration = target.get("duration_seconds")
    if duration is None:
        # ref2va may take the length from one audio reference, checked after the conditions
        return None if task == "ref2va" else "duration_missing"
    if not _number(duration):
        return "duration_type"
    if duration <= 0:
        return "duration_nonpositive"
    if not limits["min_duration_seconds"] <= float(duration) <= limits["max_duration_seconds"]:
        return "duration_range"
    return None


# MiniMaxH3SamplingParams._validate's unsupported switches, and the target fields its messages print
UNSUPPORTED_SWITCHES = ("frame_interpolation", "upscaling", "teacache")
TARGET_KEYS = ("short_edge", "aspect_ratio", "duration_seconds")


@derives("sampling_class", "sampling_outputs_or_default", "sampling_total_outputs", "sampling_seed_count",
         "sampling_seed_list_mismatch", "sampling_non_init", "sampling_non_init_first", "sampling_steps",
         "sampling_default_steps", "sampling_exact_steps", "sampling_steps_not_positive", *(f"sampling_{n}" for n in UNSUPPORTED_SWITCHES),
         "sampling_spectrum_with_high", "sampling_spectrum_with_cache_dit", "sampling_steps_not_distilled",
         "sampling_seed", "sampling_seed_negative", "sampling_seed_is_list", "sampling_outputs_not_positive",
         "sampling_outputs", "sampling_task", "sampling_task_missing", "sampling_task_missing_with_fields",
         "sampling_task_canonical", "sampling_task_not_distilled", "sampling_target_missing", "sampling_target_problem",
         *(f"sampling_target_{k}" for k in TARGET_KEYS), "sampling_aspect_ratios", "sampling_duration_min", "sampling_duration_max",
         "sampling_conditions_missing", "sampling_duration_sources", "sampling_material_missing", reads=("entry",))
def sampling_request(r: Any, hw: Any, ctx: dict[str, Any]) -> dict[str, Any]:
    """What building the family's sampling class and its _validate see (`sglang generate` only)."""
    if ctx.get("entry") != "generate":
        return {}
    facts = r.release.sampling or {}  # the target release's sampling classes (None: not generated for it)
    fam = (facts.get("families") or {}).get(r.family.key)
    if fam is None:
        return {}
    a, explicit = r.args, r.explicit
    given = [name for name in sampling.init_false_in_order(fam) if _typed(a, explicit, name) is not None]
    steps = _typed(a, explicit, "num_inference_steps")
    exact = fam.get("exact_steps")
    seed = _typed(a, explicit, "seed")
    if isinstance(seed, list) and len(seed) == 1:  # get_cli_args collapses one seed to an int
        seed = seed[0]
    outputs = _typed(a, explicit, "num_outputs_per_prompt")
    # The request (step 6, per prompt, still in the client): task, target and conditions come only
    # from --config (no release has flags for them); FastH3 Omni's class defaults task="ref2va".
    task = _typed(a, explicit, "task")
    task = fam.get("default_task") if task is None else task
    canonical = task.strip().lower() if isinstance(task, str) else None
    target = _typed(a, explicit, "target")
    conditions = _typed(a, explicit, "conditions")
    request_fields = [name for name in ("conditions", "target", "flow_shift", "audio_flow_shift")
                      if _typed(a, explicit, name) is not None]
    # expand_request_outputs -> normalize_output_seeds, per prompt (request_utils.py; 0.5.17-0.5.19:
    # entrypoints/utils.py): a seed list gives one seed per output of a prompt, or of all prompts
    prompt = _typed(a, explicit, "prompt")
    prompts = len(prompt) if isinstance(prompt, list) and not _typed(a, explicit, "prompt_path") else 1
    per_prompt = outputs if is_int(outputs) else 1
    seeds = len(seed) if isinstance(seed, list) else None
    limits = facts.get("request") or {}
    quality = _typed(a, explicit, "quality")
    quality = (facts.get("quality_aliases") or {}).get(quality, quality)
    spectrum = bool(_typed(a, explicit, "enable_spectrum")) or any(
        _typed(a, explicit, name) is not None for name in SPECTRUM_TUNING)
    problem = (_target_problem(target, canonical, limits)
               if canonical in TASKS and isinstance(target, dict) and limits else None)
    target_ok = canonical in TASKS and isinstance(target, dict) and problem is None
    return {
        "derived.sampling_class": fam["class"],
        "derived.sampling_outputs_or_default": per_prompt,
        "derived.sampling_total_outputs": per_prompt * prompts,
        "derived.sampling_seed_count": seeds,
        "derived.sampling_seed_list_mismatch": seeds is not None and per_prompt > 0 and seeds not in (per_prompt, per_prompt * prompts),
        # every init=False field the command gives (the TypeError names one of them)
        "derived.sampling_non_init": given,
        "derived.sampling_non_init_first": given[0] if given else None,
        "derived.sampling_steps": steps,
        "derived.sampling_default_steps": fam.get("default_steps"),
        "derived.sampling_exact_steps": exact,
        # SamplingParams._validate: a positive int, or the class's own distilled count after it
        "derived.sampling_steps_not_positive": steps is not None and not (is_int(steps) and steps > 0),
        # MiniMaxH3SamplingParams._validate, after the generic checks: switches H3 does not support
        **{f"derived.sampling_{name}": bool(_typed(a, explicit, f"enable_{name}"))
           for name in UNSUPPORTED_SWITCHES},
        "derived.sampling_spectrum_with_high": spectrum and quality == "high",
        "derived.sampling_spectrum_with_cache_dit": spectrum and quality != "high" and bool(_typed(a, explicit, "enable_cache_dit")),
        "derived.sampling_steps_not_distilled": exact is not None and is_int(steps) and steps > 0 and steps != exact,
        "derived.sampling_seed": seed,
        "derived.sampling_seed_negative": seed is not None and (
            any(not is_int(s) or s < 0 for s in seed) if isinstance(seed, list) else not is_int(seed) or seed < 0),
        "derived.sampling_seed_is_list": isinstance(seed, list),
        "derived.sampling_outputs_not_positive": outputs is not None and not (is_int(outputs) and outputs > 0),
        "derived.sampling_outputs": outputs,
        "derived.sampling_task": task,
        # build_request_extra: no task but request fields; else validate_task_gate: no task at all
        "derived.sampling_task_missing": task is None and not request_fields,
        "derived.sampling_task_missing_with_fields": task is None and bool(request_fields),
        # minimax_h3_validate_canonical_request: a known task, then the target object
        "derived.sampling_task_canonical": canonical,
        # a distilled class's own _validate (step 5): the tasks it was distilled for
        "derived.sampling_task_not_distilled": (fam.get("tasks") is not None and isinstance(task, str)
                                                and task.strip().lower() not in fam["tasks"]),
        "derived.sampling_target_missing": canonical in TASKS and not isinstance(target, dict),
        # _validate_conditions, after the target: fl2va and ref2va need at least one condition
        "derived.sampling_target_problem": problem,
        # the target's values as sglang's messages print them
        **{f"derived.sampling_target_{key}": (target.get(key) if isinstance(target, dict) else None)
           for key in TARGET_KEYS},
        "derived.sampling_aspect_ratios": limits.get("finite_aspect_ratios"),
        "derived.sampling_duration_min": format(limits["min_duration_seconds"], "g") if limits else None,
        "derived.sampling_duration_max": format(limits["max_duration_seconds"], "g") if limits else None,
        "derived.sampling_conditions_missing": (canonical in TASKS_WITH_CONDITIONS and target_ok
                                                and conditions in (None, [])),
        # ref2va without a duration takes it from exactly one audio-bearing reference
        "derived.sampling_duration_sources": (
            sum(1 for c in conditions if isinstance(c, dict) and c.get("type") in ("audio", "video", "video_audio"))
            if canonical == "ref2va" and target_ok and target.get("duration_seconds") is None
            and isinstance(conditions, list) and conditions else None),
        "derived.sampling_material_missing": (_missing_material(conditions)
                                              if canonical in TASKS_WITH_CONDITIONS and target_ok else None),
    }
