"""Every rule and lint notice as SARIF's `tool.driver.rules` lists them (and docs/rules.md
shows them): ID, name, title, why, the help text, severity, catalog and stage."""

from __future__ import annotations

from typing import Any

from h3doctor.engine.conditions import render_generic
from h3doctor.engine.notices import NOTICES
from h3doctor.engine.ruleset import Rule


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
