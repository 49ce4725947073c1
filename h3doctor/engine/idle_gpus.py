"""A launch that leaves GPUs idle, and the launch that uses them all.

sglang starts `--num-gpus` workers (1 unless told), whatever the machine has: on 2×RTX 4090 a
plain `sglang serve` runs on one card and says nothing of the other. When the launch (its
corrected command, if it has one) leaves GPUs idle and the user did not choose the number, the
same launch with `--num-gpus N` is checked like any other and offered only if it checks clean:
a flag that does not make a valid launch is never suggested.
"""

from __future__ import annotations

from h3doctor.engine.results import CheckResult

from h3doctor.engine.judge import Judge
from h3doctor.engine.target import Target

FLAG = "--num-gpus"


def all_gpus_argv(result: CheckResult, tokens: list[str], judge: Judge, target: Target) -> list[str] | None:
    """The launch with `--num-gpus` the target's GPU count added, when `result` leaves GPUs idle,
    the user gave no --num-gpus, and the judge's check of it on the same target finds nothing that
    fails or cannot be verified in it; else None."""
    gpu_count = target.hw.gpu_count
    ev = result.evaluation
    used = ev.effective.get("num_gpus")
    if ev.family.family is None or not gpu_count or not isinstance(used, int) or used >= gpu_count:
        return None
    base = result.corrected_argv if result.corrected_argv is not None else tokens
    if any(word == FLAG or word.startswith(FLAG + "=") for word in (*tokens, *base)):
        return None  # the user (or a fix) chose how many GPUs; the headline still says how many it uses
    if result.corrected_argv is None and result.fix_status != "clean":
        return None
    candidate = [*base, FLAG, str(gpu_count)]
    again = judge.check(candidate, target)
    findings = again.evaluation.findings
    if again.evaluation.effective.get("num_gpus") != gpu_count or any(f.predicts_failure or f.cannot_verify for f in findings):
        return None
    return candidate
