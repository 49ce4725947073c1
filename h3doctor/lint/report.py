"""A lint run (or one check) as data: the JSON report (`--format json`) and the records the SARIF,
GitHub and text renderers read. Schema: h3doctor/schema/lint-report.schema.json."""

from __future__ import annotations

from typing import Any

from h3doctor import __version__
from h3doctor.engine.conditions import render_generic
from h3doctor.engine.ruleset import Rule
from h3doctor.lint.notices import NOTICES
from h3doctor.lint.session import LintRun, Record, finding_record
from h3doctor.output.verdict import verdict

LINT_SCHEMA_VERSION = 1


def record_dict(r: Record) -> dict[str, Any]:
    rule = r.rule_obj
    catalog = list(rule.catalog) if rule else []
    return {
        "rule": r.rule,
        "name": rule.name if rule else NOTICES[r.rule][0],
        "title": rule.title if rule else NOTICES[r.rule][2],
        "severity": r.severity,
        "stage": rule.stage if rule else None,
        "message": r.message,
        "catalog": ",".join(catalog),
        "catalog_refs": catalog,
        "file": r.file,
        "line": r.pos.line,
        "col": r.pos.col,
        "target": r.target,
        "hardware": r.hardware,
        "launch": r.launch,
        "input_kind": r.kind,
        "cannot_verify": r.cannot_verify,
        "cannot_verify_why": r.cannot_verify_why if r.cannot_verify else None,
        "found_after_fix": r.found_after_fix,
        "sglang_version": r.sglang_version,
        "sglang_version_source": r.sglang_version_source,
        "suppressed": None if r.suppressed is None else {"kind": r.suppressed_by, "reason": r.suppressed},
        "fingerprint": r.fingerprint(),
    }


def rule_meta(rules: list[Rule]) -> list[dict[str, Any]]:
    """Every rule and lint notice, for SARIF's tool.driver.rules."""
    out = []
    g = render_generic
    for r in sorted(rules, key=lambda r: r.id):
        help_text = (f"{g(r.title)}\n\n{r.says}: {g(r.message)}\n\nwhy: {' '.join(g(r.why).split())}\n"
                     + (f"\nfix: {g(r.fix_note)}\n" if r.fix_note else "")
                     + f"\ncatalog {', '.join(r.catalog)}; sglang {r.where} ({r.verified_versions}); fails at: {r.stage}"
                     + ("\n\nthe line per release:" if r.where_by_release else "")
                     + "".join(f"\n- sglang {span}: {text}" for span, text in r.where_spans()))
        out.append({"id": r.id, "name": r.name, "title": g(r.title), "why": " ".join(g(r.why).split()), "help": help_text,
                    "severity": r.severity, "catalog_refs": list(r.catalog), "stage": r.stage})
    for rid, (name, severity, title, why) in sorted(NOTICES.items()):
        out.append({"id": rid, "name": name, "title": title, "why": why, "help": f"{title}\n\n{why}",
                    "severity": severity, "catalog_refs": [], "stage": None})
    return out


def build(run: LintRun, *, sglang_version: str) -> dict[str, Any]:
    active = [r for r in run.records if r.suppressed is None]
    counts = {s: sum(1 for r in active if r.severity == s) for s in ("error", "warning", "info")}
    files = []
    for f in run.files:
        launches = []
        for launch in f.launches:
            results = [lr for lr in f.results if lr.launch is launch]
            launches.append({
                "label": launch.label, "kind": launch.kind, "line": launch.pos.line, "col": launch.pos.col,
                "argv": launch.tokens, "gpu_count": launch.gpu_count, "image": launch.image,
                "results": [{"target": lr.target, "hardware": lr.hardware.description,
                             "sglang_version": lr.result.evaluation.context.get("release.version"),
                             "sglang_version_source": lr.result.evaluation.context.get("release.source"),
                             "verdict": verdict(lr.records, run.fail_on),
                             "fix_status": lr.result.fix_status, "corrected_argv": lr.result.corrected_argv,
                             "corrected_command": lr.result.corrected_command} for lr in results],
            })
        files.append({"path": f.path, "kind": f.kind, "launches": launches})
    return {
        "schema_version": LINT_SCHEMA_VERSION,
        "kind": "h3doctor-lint",
        "h3doctor_version": __version__,
        "sglang_version": sglang_version,
        "fail_on": run.fail_on,
        "verdict": verdict(run.records, run.fail_on),
        "summary": {
            "files": len(run.files),
            "inputs": sum(1 for f in run.files if f.kind is not None),
            "launches": sum(len(f.launches) for f in run.files),
            "checks": run.checks,
            "findings": counts,
            "suppressed": len(run.records) - len(active),
        },
        "files": files,
        "findings": [record_dict(r) for r in run.records],
    }


def check_findings(result, *, target: str | None, launch=None, table=None) -> list[dict[str, Any]]:
    """One check's findings as records, located in the recipe when it came from one."""
    from h3doctor.lint.locate import Locator
    from h3doctor.located import Pos

    ev = result.evaluation
    locator = Locator(table) if launch is not None and table is not None else None
    out = []
    for f in ev.findings:
        pos = locator.locate(f, ev, launch, result) if locator else Pos(0, 0)
        rec = finding_record(f, ev, launch.path if launch else "", pos, target, ev.hardware.description or target,
                             launch.label if launch else "command line", launch.kind if launch else None)
        d = record_dict(rec)
        if launch is None:
            d["file"], d["line"], d["col"] = None, None, None
        out.append(d)
    if launch is not None:  # by line and column, as lint sorts them (stable: sglang's order on one word)
        out.sort(key=lambda d: (d["line"], d["col"]))
    return out


def rules_markdown(rules: list[Rule]) -> str:
    """docs/rules.md: one section per rule and lint notice, anchored by its lowercased ID (the
    SARIF help links: <help_uri_base>/docs/rules.md#h3d305). Generated; do not edit."""
    out = ["# Rules\n",
           "Generated by `h3doctor rules --markdown docs/rules.md`; do not edit. One section per rule "
           "(`h3doctor rule ID` says the same, with examples) and per lint notice (H3DL…, see docs/lint.md). "
           "SARIF help links point here: `<help_uri_base>/docs/rules.md#<id>`.\n"]
    for meta in rule_meta(rules):
        out.append(f'<a id="{meta["id"].lower()}"></a>\n\n## {meta["id"]} {meta["name"]}\n')
        out.append(meta["help"].replace("<", "&lt;") + "\n")  # `<dp_size>` is text, not an HTML tag
        out.append(f"severity: {meta['severity']}\n")
    out += _derivations_markdown(rules)
    return "\n".join(out)


def _derivations_markdown(rules: list[Rule]) -> list[str]:
    """The derivation registry: per module of engine/derivations/, each derivation, the values it
    declares and the rules that read them."""
    from h3doctor.engine.derivations import registry

    readers = registry.read_by(rules)
    out = ['<a id="derivations"></a>\n\n## Derivations\n',
           "The `derived.*` values rules read, by the function that computes each (`@derives` in "
           "`h3doctor/engine/derivations/`), and the rules that read them. A rule naming a value no "
           "derivation declares does not load.\n"]
    module = None
    for d in registry.REGISTRY:
        if d.module != module:
            module = d.module
            out.append(f"\n### {module}\n")
        rules_text = ", ".join(f"[{i}](#{i.lower()})" for i in readers[d.name]) or "no rule (read by h3doctor's output)"
        out.append(f"- `{d.name}`: " + ", ".join(f"`{p}`" for p in d.paths) + f"; read by {rules_text}")
    return out
