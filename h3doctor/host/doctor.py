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


def report(result: Any) -> dict[str, Any]:
    """The doctor's report from a ProbeResult (host/probe.py): its lines, sglang's first, and the summary."""
    lines = sorted(result.lines, key=lambda ln: ln.fact != FIRST)  # stable: the probe's order otherwise
    checks = [{"fact": ln.fact, "label": ln.label, "value": ln.value, "status": ln.status, "reason": ln.reason,
               "source": ln.source} for ln in lines]
    run = result.run or {}
    if run.get("outcome") not in (None, "ok"):  # the torch child hung or crashed: its facts are unknown
        checks.insert(1, {"fact": "probe", "label": "GPU probe", "value": None, "status": "unknown",
                          "reason": str(run.get("detail") or run.get("outcome")), "source": "the probe's child process"})
    sglang = next(c for c in checks if c["fact"] == FIRST)
    return {"schema_version": SCHEMA_VERSION, "kind": "h3doctor-doctor",
            "sglang": {"installed": sglang["value"], "status": sglang["status"], "reason": sglang["reason"]},
            "checks": checks, "summary": summary(checks), "probe": run}


def summary(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The verdict: 'problem' (a fact stops H3 from serving here; exit 1), 'unknown' (nothing seen
    stops it, some facts could not be read), or 'ok'."""
    of = {s: [c["label"] for c in checks if c["status"] == s] for s in ("ok", "problem", "unknown", "n/a")}
    if of["problem"]:
        status, text = "problem", (f"MiniMax-H3 cannot serve on this machine as it is: {len(of['problem'])} "
                                   f"problem(s) ({', '.join(of['problem'])})")
    elif of["unknown"]:
        status, text = "unknown", (f"nothing h3doctor can see stops MiniMax-H3 here, but {len(of['unknown'])} "
                                   f"fact(s) cannot be verified ({', '.join(of['unknown'])})")
    else:
        status, text = "ok", "nothing stops MiniMax-H3 from serving on this machine"
    return {"status": status, "text": text, "exit_code": 1 if status == "problem" else 0,
            "counts": {k: len(v) for k, v in of.items()}}
