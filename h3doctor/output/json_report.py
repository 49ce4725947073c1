"""The check result as one JSON-able object (schema documented in docs/json-output.md)."""

from __future__ import annotations

from h3doctor.facts import assumed, assumed_sources
from h3doctor import __version__
from h3doctor.engine.results import Alternative, CheckResult, Finding, FixStep
from h3doctor.engine.ruleset import SEVERITY_RANK as _RANK
from h3doctor.output.verdict import summary, verdict
from h3doctor.shellwords import join
from h3doctor.unresolved import UNRESOLVED, written

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 1
STAGE_TITLES = {
    "launch": "sglang's launcher rejects it within seconds, before any download",
    "worker": "a worker process fails before the weight download",
    "after-download": "fails only after the weight download",
    "first-request": "fails at the first request (or the server warmup)",
}
# a stage whose findings are warnings or notes only: sglang does not stop there
STAGE_TITLES_NOT_FAILING = {
    "launch": "sglang's launcher accepts it, with warnings",
    "worker": "the workers start, with warnings",
    "after-download": "runs on after the weight download, with warnings",
    "first-request": "serves the first request, with warnings",
}


def stage_title(stage: str, severities: list[str]) -> str:
    """The headline over one stage's findings: that sglang fails there only when one is an error."""
    return (STAGE_TITLES if "error" in severities else STAGE_TITLES_NOT_FAILING)[stage]


_CONFIG_KEYS = (
    "model_path", "model_variant", "model_subfolder", "model_id", "pipeline_class_name", "backend", "performance_mode",
    "num_gpus", "dp_size", "tp_size", "sp_degree", "ulysses_degree", "ring_degree", "kv_gather_degree",
    "enable_cfg_parallel", "cfg_parallel_degree", "attention_backend", "component_attention_backends",
    "attention_backend_config", "enable_torch_compile", "enable_breakable_cuda_graph", "warmup_mode",
    "layerwise_offload_components", "component_residency", "cpu_offload_components", "dit_cpu_offload",
    "text_encoder_cpu_offload", "image_encoder_cpu_offload", "vae_cpu_offload", "dit_layerwise_offload",
    "use_fsdp_inference", "direct_gpu_weight_loading", "quantization", "transformer_weights_path", "lora_path",
    "component_paths", "component_weights_paths", "component_quantizations", "minimax_h3_adaln_online",
    "minimax_h3_adaln_plan_width", "minimax_h3_adaln_cache_path", "disagg_role",
)


def changes_by_rule(result: CheckResult) -> dict[str, list[str]]:
    """What the corrected (or nearest) command changes, per rule whose fix changed it (nothing
    when there is neither: the fixes did not converge)."""
    out: dict[str, list[str]] = {}
    if result.corrected_argv is None and result.nearest_argv is None:
        return out
    for step in result.fix_steps:
        out.setdefault(step.rule.id, []).extend(c.text for c in step.changes)
    return out


def fix_step_dict(step: FixStep) -> dict[str, Any]:
    return {"rule": step.rule.id, "message": step.message, "found_after_fix": step.found_after_fix,
            "changes": [{"removed": list(c.removed), "added": list(c.added), "text": c.text} for c in step.changes]}


def finding_dict(f: Finding, changes: list[str] | None = None) -> dict[str, Any]:
    r = f.rule
    return {
        "rule": r.id,
        "name": r.name,
        "catalog": ",".join(r.catalog),
        "catalog_refs": list(r.catalog),
        "severity": f.severity,
        "stage": r.stage,
        "sglang_stage": r.sglang_stage,
        "message": f.message,
        "message_by": r.message_by,
        "title": r.title,
        "why": f.why or r.why,
        "fix": list(r.fix) if r.fix else None,
        "fix_note": f.fix_note or None,  # the rule's, rendered
        "sglang_where": r.where,
        "cannot_verify": f.cannot_verify,
        # the facts a fuller profile could give; the engine's own verdicts it could not reach are
        # said in words (cannot_verify_why), not by their internal context paths
        "unknown_facts": [u for u in f.unknown_facts if not u.startswith("derived.")],
        "cannot_verify_why": f.unknown_why or None,
        "detail": f.detail,
        "changes": list(changes or []),
    }


def alternative_dict(alt: Alternative) -> dict[str, Any]:
    return {"argv": written(alt.argv), "command": alt.command, "gives_up": alt.gives_up, "answers": alt.answers,
            "checks_clean": alt.checks_clean, "still_failing": alt.still_failing, "fix_notes": alt.fix_notes}


def effective_config(result: CheckResult) -> dict[str, Any]:
    ev = result.evaluation
    if ev.family.family is None:
        return {}
    out = {k: ev.effective.get(k) for k in _CONFIG_KEYS}
    ctx = ev.context
    out["residency"] = ctx.get("derived.residency")
    out["transformer_attention_backend"] = ctx.get("derived.transformer_backend")
    out["dit_runtime_attention_backend"] = ctx.get("derived.dit_backend")
    out["memory"] = ctx.get("derived.memory")  # the per-GPU budget (sglang/memory.py); null off CUDA/ROCm
    out["environment"] = {k.removeprefix("env."): v for k, v in ctx.items() if k.startswith("env.") and v is not None}
    # a value that depends on a word the shell gives only when the launch runs is not known: null
    return {k: None if v is UNRESOLVED else v for k, v in out.items()}


def launch_summary(result: CheckResult, effective: dict[str, Any]) -> dict[str, Any]:
    """The report's headline (output/verdict.summary) from the check and its effective configuration."""
    ev = result.evaluation
    return summary(ev.findings, judged=ev.family.family is not None, memory=effective.get("memory"),
                   gpus_used=effective.get("num_gpus"), gpus_present=ev.hardware.gpu_count,
                   not_judged_why=f"not a MiniMax-H3 launch ({ev.family.how}); h3doctor judges only those",
                   all_gpus_command=join(result.all_gpus_argv) if result.all_gpus_argv else None)


def build(result: CheckResult, fail_on: str = "error") -> dict[str, Any]:
    ev = result.evaluation
    fam = ev.family.family
    changes = changes_by_rule(result)
    effective = effective_config(result)
    return {
        "schema_version": SCHEMA_VERSION,
        "h3doctor_version": __version__,
        "sglang_version": ev.context.get("release.version", ev.context.get("sglang_version")),
        "sglang_version_source": ev.context.get("release.source", "default"),
        "command": {"argv": written(ev.cmd.tokens), "entry": ev.cmd.entry, "program_given": ev.cmd.program_given,
                    "launcher": ev.cmd.launcher, "wrapper": written(ev.cmd.tokens[: ev.cmd.wrapper_len])},
        "is_h3_launch": fam is not None,
        "family": None if fam is None else {"key": fam.key, "label": fam.label, "config_class": fam.config_class,
                                             "pipeline_class": fam.pipeline_class, "matched_by": ev.family.how},
        "note": None if fam is not None else ev.family.how,
        "verdict": verdict(ev.findings, fail_on),
        "summary": launch_summary(result, effective),
        "findings": [finding_dict(f, changes.get(f.rule.id)) for f in ev.findings],
        "fix_steps": [fix_step_dict(step) for step in result.fix_steps],
        "corrected_argv": written(result.corrected_argv),
        "corrected_command": result.corrected_command,
        "corrected_unverified": result.corrected_unverified,
        "nearest_argv": written(result.nearest_argv),
        "fits_nowhere": result.fits_nowhere,
        "still_fails": result.still_fails,
        "shortfall_gib": result.shortfall_gib,
        "fix_status": result.fix_status,
        "fix_notes": result.fix_notes,
        "gives_up": result.gives_up,
        "alternatives": [alternative_dict(a) for a in result.alternatives],
        "effective_config": effective,
        "hardware": ev.hardware.as_dict(),
        "assumed": assumed(ev.hardware),
        "assumed_sources": assumed_sources(ev.hardware),
    }


