"""`h3doctor doctor` (and bare `h3doctor`): this machine as flutter doctor shows it — the sglang
release installed, then each fact the probe reads (GPUs, memory, the cgroup cap, /dev/shm, disk,
ffmpeg and its encoders, FlashAttention), each ✓/✗/! with why and where it was read, and one
summary. Data only: the probe (its torch child process, its cache) reads the machine, and
output/doctor_text.py renders what this returns.

A fact the probe marks a problem is one that stops MiniMax-H3 from serving here as it is (exit
1); a fact it cannot read is "cannot verify", said in the summary, never counted as fine.
"""

from __future__ import annotations

from typing import Any

SCHEMA_VERSION = 1
FIRST = "sglang_version"  # what a user asks first: which sglang is this
# The doctor's statuses, worst first: a fact that stops H3 here, one h3doctor cannot read, one
# sglang will warn about (H3 still serves), fine, and one that does not apply on this machine.
STATUSES = ("problem", "unknown", "warning", "ok", "n/a")

# A fact's label and value in a user's words where the probe's would not say what was found (a
# label read as a question, answered "yes" for an absent limit; a bare yes/no): {fact: {"label":
# ..., value: words}}. A fact not listed reads as the probe gives it, so a fact host/ adds later
# fits with no entry here; its value in words is `said`'s (a number, GiB, yes/no, unknown, none).
WORDS: dict[str, dict[Any, str]] = {
    "cgroup_memory_unlimited": {"label": "cgroup memory limit", True: "none", False: "set"},
    "shares_host_memory": {"label": "GPU shares host memory"},
    "flash_attn": {"label": "FlashAttention", True: "available", False: "missing"},
    "ffmpeg": {True: "found", False: "missing"},
    "fa_kernel": {True: "installed", False: "missing"},
    "ffmpeg_encoders": {True: "libx264 and aac", False: "missing"},
    "hf_token": {True: "present", False: "none"},
    "cgroup_swap_off": {"label": "cgroup swap", True: "off (memory.swap.max 0)", False: "not off"},
}


def label(fact: str, probe_label: str) -> str:
    """A fact's name as `h3doctor doctor` and `h3doctor probe` both say it: WORDS' where the probe's
    would read as a question ("cgroup memory.max"), else the probe's."""
    return WORDS.get(fact, {}).get("label", probe_label)


def said(fact: str, value: Any, status: str) -> str:
    """A fact's value as a user reads it: WORDS' for the fact, else "unknown" (not read), "none"
    (does not apply here), yes/no, a size in GiB, or the value itself."""
    if value is None:
        return "unknown" if status == "unknown" else "none"
    if isinstance(value, bool):  # a bool only: 1 == True, and a count of 1 is no "available"
        return WORDS.get(fact, {}).get(value, "yes" if value else "no")
    if isinstance(value, float):
        return f"{value:g} GiB"
    if isinstance(value, (tuple, list)):  # a kernel's targets
        return ", ".join(map(str, value)) or "none"
    return str(value)


def why(reason: str, says: str) -> str:
    """The reason after the value, the value said once: "present — present" is "present", "none —
    none: public repos only" is "none — public repos only"."""
    return "" if reason == says else reason.removeprefix(says + ": ")


def report(result: Any, download_gib: float | None = None) -> dict[str, Any]:
    """The doctor's report from a ProbeResult (host/probe.py): its lines, sglang's first, each in a
    user's words (`says`, and the doctor's own label and status where WORDS and `_matters` give
    them), and the summary."""
    lines = sorted(result.lines, key=lambda ln: ln.fact != FIRST)  # stable: the probe's order otherwise
    checks = [{"fact": ln.fact, "label": label(ln.fact, ln.label), "value": ln.value,
               "status": ln.status, "reason": ln.reason, "source": ln.source} for ln in lines]
    run = result.run or {}
    if run.get("outcome") not in (None, "ok"):  # the torch child hung or crashed: its facts are unknown
        checks.insert(1, {"fact": "probe", "label": "GPU probe", "value": None, "status": "unknown",
                          "reason": str(run.get("detail") or run.get("outcome")), "source": "the probe's child process"})
    for check in checks:  # the value as the probe read it: a fact that does not apply here and
        # could not be read stays "unknown" (never "none": "swap: none" would say the host has none)
        check["says"] = said(check["fact"], check["value"], check["status"])
    _matters(checks)
    _disk_matters(checks, download_gib)
    for check in checks:
        check["why"] = why(check["reason"], check["says"])
    sglang = next(c for c in checks if c["fact"] == FIRST)
    return {"schema_version": SCHEMA_VERSION, "kind": "h3doctor-doctor",
            "sglang": {"installed": sglang["value"], "status": sglang["status"], "reason": sglang["reason"]},
            "checks": checks, "summary": summary(checks), "probe": run}


def _matters(checks: list[dict[str, Any]]) -> None:
    """Whether a fact matters for H3 on this machine, where the probe's status cannot say it alone:
    no cgroup memory limit matters only when the GPU shares host memory — then sglang warns at
    start-up (rule H3D144: the page cache can hold the memory device allocations need), a warning;
    on a discrete GPU or the CPU it does not apply."""
    by_fact = {c["fact"]: c for c in checks}
    cgroup, shared = by_fact.get("cgroup_memory_unlimited"), by_fact.get("shares_host_memory")
    sharing = None if shared is None or shared["status"] == "unknown" else shared["value"]
    _swap_matters(by_fact, sharing)
    if cgroup is None or cgroup["value"] is not True:
        return
    if sharing is True:
        cgroup["status"] = "warning"
        cgroup["reason"] += ("; this GPU shares host memory, so sglang warns that device allocations may fail "
                             "while the page cache holds the free memory (run with a memory limit, e.g. docker "
                             "--memory; h3doctor rule H3D144)")
    else:
        _not_applying(cgroup, sharing)


def _not_applying(line: dict[str, Any], sharing: bool | None) -> None:
    """A fact that matters only where the GPU shares host memory, on a machine where it does not
    (or where that is not known): '-', and why."""
    line["status"] = "n/a"
    line["reason"] += "; matters only for a GPU that shares host memory, " + (
        "which this one does not" if sharing is False else "and whether this one does is not known")


def _disk_matters(checks: list[dict[str, Any]], download_gib: float | None) -> None:
    """Free disk under the Hugging Face cache below what one MiniMax-H3 variant downloads
    (`download_gib`, the caller's: the release's published partition) cannot be called fine: it is
    enough only if the cache already holds the variant a launch loads, which only a check of that
    launch reads. So it is "cannot verify" here, never a ✓ over a disk a download would fill."""
    disk = next((c for c in checks if c["fact"] == "disk_free_gib"), None)
    if disk is None or download_gib is None or disk["value"] is None or disk["value"] >= download_gib:
        return
    disk["status"] = "unknown"
    disk["reason"] += (f"; one MiniMax-H3 variant downloads about {download_gib:g} GiB: enough only if this "
                       "cache already holds the one a launch loads (h3doctor check -- LAUNCH reads the cache for it)")


def _swap_matters(by_fact: dict[str, dict[str, Any]], sharing: bool | None) -> None:
    """Swap matters only where the GPU shares host memory: there sglang warns when the host has swap
    and the cgroup's memory.swap.max is not 0 (rule H3D419: weight copies swapped out, slow steps);
    elsewhere both lines do not apply."""
    swap, off = by_fact.get("swap_gib"), by_fact.get("cgroup_swap_off")
    if swap is None or off is None:
        return
    if sharing is not True:
        for line in (swap, off):
            _not_applying(line, sharing)
        return
    if swap["value"] and off["value"] is False:
        swap["status"] = "warning"
        swap["reason"] += ("; this GPU shares host memory, so sglang warns that the kernel may swap out weight "
                           "copies (run with swap off for this process; h3doctor rule H3D419)")


def summary(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict: 'problem' (a fact stops H3 from serving here; exit 1), 'unknown' (nothing seen
    stops it, some facts could not be read), 'warning' (H3 serves; sglang will warn about a fact),
    or 'ok'."""
    of = {s: [c["label"] for c in checks if c["status"] == s] for s in STATUSES}
    warns = f"; sglang will warn about: {', '.join(of['warning'])}" if of["warning"] else ""
    if of["problem"]:
        status, text = "problem", (f"MiniMax-H3 cannot serve on this machine as it is: {len(of['problem'])} "
                                   f"problem(s) ({', '.join(of['problem'])})")
    elif of["unknown"]:
        status, text = "unknown", (f"nothing h3doctor can see stops MiniMax-H3 here, but {len(of['unknown'])} "
                                   f"fact(s) cannot be verified ({', '.join(of['unknown'])}){warns}")
    elif of["warning"]:
        status, text = "warning", f"nothing stops MiniMax-H3 from serving on this machine{warns}"
    else:
        status, text = "ok", "nothing stops MiniMax-H3 from serving on this machine"
    return {"status": status, "text": text, "exit_code": 1 if status == "problem" else 0,
            "counts": {k: len(v) for k, v in of.items()}}
