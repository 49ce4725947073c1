"""The one pass/fail verdict: check's report, lint's report and each of its launches, and the exit
codes all read it, so a suppressed finding cannot pass in one place and fail in another.

A finding fails when it is not suppressed and its severity is at or above `--fail-on`. Lint's
records carry `suppressed` (why a suppression or ignore accepted it, else None); the engine's
findings have no such field, as `check` has no suppressions: they are never suppressed.
"""

from __future__ import annotations

from h3doctor.engine.ruleset import SEVERITY_RANK

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, TypeVar

    F = TypeVar("F")


def failing(findings: Iterable[F], fail_on: str) -> list[F]:
    """The findings that fail the run: not suppressed, at or above the `fail_on` severity."""
    bar = SEVERITY_RANK[fail_on]
    return [f for f in findings if getattr(f, "suppressed", None) is None and SEVERITY_RANK[f.severity] >= bar]


def verdict(findings: Iterable[Any], fail_on: str) -> str:
    """"fail" when any finding fails the run (`failing`), else "pass"."""
    return "fail" if failing(findings, fail_on) else "pass"


# sglang's stages in the order a launch meets them, and where a failure there leaves the user
STAGE_ORDER = ("launch", "worker", "after-download", "first-request")
_FAILS_AT = {
    "launch": "sglang will refuse this launch ({n}, before any download)",
    "worker": "sglang will fail to start ({n}, before the weight download)",
    "after-download": "sglang will fail after the weight download ({n})",
    "first-request": "sglang will fail at the first request ({n})",
}
# a warning that predicts a failure (`predicts_failure: true`) says it is likely, not certain: the
# launch passes the default --fail-on error, so "will fail" over an exit 0 would contradict it
_LIKELY_AT = {
    "launch": "likely to be refused at launch",
    "worker": "likely to fail to start, before the weight download",
    "after-download": "likely to fail after the weight download",
    "first-request": "likely to fail at the first request",
}
# each verdict's mark, the same in check's report, the hook's lines and explain's: ✗ will fail (an error),
# ! likely to fail (a warning that predicts a failure), ? cannot tell, ✓ will start
VERDICT_MARK = {"fail": "[bold red]✗[/]", "likely-fail": "[bold yellow]![/]", "cannot-verify": "[yellow]?[/]",
                "pass": "[green]✓[/]"}


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _earliest(findings: list[Any]) -> str | None:
    return min((f.rule.stage for f in findings), key=STAGE_ORDER.index, default=None)


def _grouped(whys: Iterable[str]) -> list[str]:
    """Reasons that share their words before a colon said once with what each names: "not known
    for this hardware: ffmpeg, shm_gib", not "not known for this hardware: ffmpeg; not known for
    this hardware: shm_gib"."""
    groups: dict[str, list[str]] = {}
    for why in whys:
        head, colon, tail = why.partition(": ")
        named = groups.setdefault(head if colon else why, [])
        if colon and tail not in named:
            named.append(tail)
    return [head + (": " + ", ".join(named) if named else "") for head, named in groups.items()]


def summary(findings: list[Any], *, judged: bool, memory: dict[str, Any] | None, gpus_used: int | None,
            gpus_present: int | None, not_judged_why: str = "", all_gpus_command: str | None = None) -> dict[str, Any]:
    """The launch's answer to "will it work?", in plain words (`text`), with the numbers it rests
    on. "fail" when an error predicts a failure (every error that is not "cannot verify"); else
    "likely-fail" when a warning of a rule that says the launch fails (`predicts_failure`) stands:
    likely, not certain, and below the default --fail-on, so never "will fail"; else
    "cannot-verify" when a fact it needed is unknown, or the launch is not one h3doctor judges; else
    "pass". It never says "will start" over a predicted failure or an unknown fact. This is the
    headline, not the exit code: that stays `failing`'s, at the user's --fail-on. `all_gpus_command`
    is the launch that uses the GPUs this one leaves idle, checked clean (engine/idle_gpus.py)."""
    findings = list(findings)
    fails = [f for f in findings if f.predicts_failure]
    certain = [f for f in fails if f.severity == "error"]
    likely = [f for f in fails if f.severity != "error"]
    unknown = [f for f in findings if f.cannot_verify]
    counts = {"errors": sum(f.severity == "error" for f in findings),
              "warnings": sum(f.severity == "warning" for f in findings),
              "infos": sum(f.severity == "info" for f in findings),
              "predicted_failures": len(fails), "cannot_verify": len(unknown)}
    stage = _earliest(certain) or _earliest(likely)
    memory = memory or {}
    peak, capacity = memory.get("peak_typical_gib"), memory.get("capacity_gib")
    if not judged:
        verdict_, text = "cannot-verify", f"cannot tell: {not_judged_why}"
    elif certain:
        verdict_, text = "fail", _FAILS_AT[stage].format(n=_count(len(certain), "error"))
    elif likely:
        first = min(likely, key=lambda f: STAGE_ORDER.index(f.rule.stage))
        verdict_, detail = "likely-fail", [_count(len(likely), "warning")]
        if first.rule.judges_gpu_memory:  # what runs out, in torch's words, and by the measured peak
            reason = "torch.OutOfMemoryError is likely"
            if peak is not None and capacity is not None:
                detail.insert(0, f"peak {peak:.1f} of {capacity:.1f} GiB per GPU")
        else:
            reason = first.rule.title
        text = f"{_LIKELY_AT[stage]}: {reason} ({', '.join(detail)})"
    elif unknown:
        # what is missing, in the engine's words (engine/evaluate.unknown_why), and how to give it
        whys = _grouped(f.unknown_why or ", ".join(f.unknown_facts) for f in unknown)
        hardware = any(fact.startswith(("hw.", "derived.memory.")) for f in unknown for fact in f.unknown_facts)
        verdict_ = "cannot-verify"
        text = f"cannot tell: {_count(len(unknown), 'check')} could not be made ({'; '.join(whys)})" + (
            "; a profile file that gives these facts lets h3doctor decide (--profile FILE, see h3doctor profiles)"
            if hardware else "")
    else:
        verdict_ = "pass"
        fits = peak is not None and capacity is not None and peak <= capacity
        parts = [f"peak {peak:.1f} of {capacity:.1f} GiB per GPU"] if fits else []
        if gpus_used is not None and gpus_present:
            parts.append(f"uses {gpus_used} of {gpus_present} GPUs")
        if counts["warnings"]:
            parts.append(_count(counts["warnings"], "warning"))
        text = ("will start and fit" if fits else "will start") + (": " + ", ".join(parts) if parts else "")
    return {"verdict": verdict_, "text": text, "counts": counts, "stage": stage, "peak_gib": peak,
            "capacity_gib": capacity, "gpus_used": gpus_used, "gpus_present": gpus_present,
            "all_gpus_command": all_gpus_command if verdict_ == "pass" else None}


def corrected_heading(unverified: list[str]) -> str:
    """What the corrected command is said to do: "passes every rule" only when every rule could be
    checked on it ("clean" is a promise); else which checks could not be made."""
    if not unverified:
        return "passes every rule"
    return (f"fixes every finding; {_count(len(unverified), 'check')} could not be made on it: "
            + " ".join(unverified[:8]) + (" …" if len(unverified) > 8 else ""))
