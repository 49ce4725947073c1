"""`lint` as plain text: one `path:line:col: ID severity [target] message` line per finding,
suppressed ones left out, then each launch's corrected command per target and a summary line
(`text`); the finding lines alone (`concise`, `--quiet`); or one line per rule with its count
(`--statistics`). `qualified` is the message every lint format shows."""

from __future__ import annotations

from typing import Any

from h3doctor.shellwords import safe_text

MESSAGE_LIMIT = 2000  # a longer message is shown as an excerpt (the JSON report has it whole)


def qualified(f: dict[str, Any]) -> str:
    """A finding's message as the text, SARIF and GitHub formats show it: a "cannot verify" one says
    so first (and what is not known), one met only while fixing says when sglang reports it."""
    text = f["message"]
    if f.get("cannot_verify"):
        why = f.get("cannot_verify_why")
        text = f"cannot verify{f' ({why})' if why else ''}: {text}"
    if f.get("found_after_fix"):
        text = f"once the first findings are fixed: {text}"
    return text


def concise(report: dict[str, Any]) -> list[str]:
    """One line per finding that is not suppressed."""
    out = []
    for f in report["findings"]:
        if f.get("suppressed"):
            continue
        target = f" [{f['target']}]" if f.get("target") else ""
        out.append(f"{safe_text(str(f['file']))}:{f['line']}:{f['col']}: {f['rule']} {f['severity']}{safe_text(target)} "
                   f"{safe_text(qualified(f), MESSAGE_LIMIT)}")
    return out


def statistics(report: dict[str, Any]) -> list[str]:
    """`count  ID  severity  name` per rule, most frequent first (ruff's --statistics)."""
    counts: dict[tuple[str, str, str], int] = {}
    for f in report["findings"]:
        if not f.get("suppressed"):
            key = (f["rule"], f["severity"], f["name"])
            counts[key] = counts.get(key, 0) + 1
    return [f"{n:>5}  {rule:<8} {severity:<8} {name}"
            for (rule, severity, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def lines(report: dict[str, Any], *, show_fixes: bool = True, summary: bool = True) -> list[str]:
    out = concise(report)
    if show_fixes:
        for file in report["files"]:
            for launch in file["launches"]:
                fixes = {r["corrected_command"] for r in launch["results"] if r["corrected_command"]}
                for fix in sorted(fixes):
                    targets = ", ".join(r["target"] for r in launch["results"] if r["corrected_command"] == fix)
                    out.append(f"{safe_text(file['path'])}:{launch['line']}: corrected for {safe_text(targets)}: {fix}")
    if not summary:
        return out
    s = report["summary"]
    n = s["findings"]
    out.append(f"{s['files']} file(s), {s['launches']} launch(es), {s['checks']} check(s): "
               f"{n['error']} error(s), {n['warning']} warning(s), {n['info']} info, {s['suppressed']} suppressed"
               f" — {report['verdict']} (fail-on {report['fail_on']})")
    return out
