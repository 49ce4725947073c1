"""A headroom is said as one only while it is one: a negative headroom is a shortfall, in the
rule's own text (engine/derivations/memory_words.py), never "leaving -2.8 GiB" — over every rule
whose text holds a headroom-like figure, at a negative headroom measured by a real check."""

from __future__ import annotations

import re
import shlex

from h3doctor.engine.check import check
from h3doctor.engine.conditions import placeholders, said
from h3doctor.engine.derivations.memory_words import headroom_said
from h3doctor.host.profiles import load_profile

# a figure that is a difference of two others, which can go below zero
HEADROOM_LIKE = re.compile(r"headroom|spare|margin|remaining|_left\b")
NEGATIVE_GIB = re.compile(r"(?<![\w-])-\d[\d.]*\s*GiB")


def _texts(rule) -> list[str]:
    texts = [rule.message, rule.why, rule.fix_note or "", rule.gives_up or ""]
    return texts + [e.get(k, "") for e in rule.releases for k in ("message", "why")]


def test_a_headroom_is_leaving_only_while_it_is_one():
    assert headroom_said(0.3, 79.1) == "leaving 0.3 GiB of the 79.1 GiB free"
    assert headroom_said(-2.8, 139.8) == "and the 139.8 GiB free are 2.8 GiB short of it"
    assert headroom_said(-0.0, 10.0) == "leaving 0.0 GiB of the 10.0 GiB free"  # never "-0.0"
    assert headroom_said(None, 10.0) is None and headroom_said(1.0, None) is None


def test_no_rule_says_a_headroom_like_figure_as_a_bare_number(rules):
    """Every headroom-like placeholder of every rule's texts is said in words (`*_said`)."""
    bare = {(r.id, p) for r in rules for t in _texts(r) for p in placeholders(t)
            if HEADROOM_LIKE.search(p.rsplit(".", 1)[-1]) and not p.endswith("_said")}
    assert not bare


def test_at_a_negative_headroom_every_rules_text_says_a_shortfall(rules, table):
    """One RTX 4070 (11.6 GiB free, a peak of 16.6 with the workspace of real runs): every text of
    every rule that says a memory figure, filled from this check's context whether or not it
    fires, holds no negative GiB figure; H3D641 says how far short the GPU falls. (Other rules'
    figures are filled where their conditions hold: H3D416's shortfall only when it is > 0.)"""
    result = check(shlex.split("sglang serve MiniMaxAI/MiniMax-H3"), load_profile("1xRTX4070"), rules, table, {})
    ctx = result.evaluation.context
    assert ctx["derived.memory.headroom_gib"] < 0
    memory = [r for r in rules if any(p.startswith("derived.memory.") for t in _texts(r) for p in placeholders(t))]
    assert {"H3D540", "H3D640", "H3D641", "H3D642", "H3D542"} <= {r.id for r in memory}
    filled = {(r.id, n): said(t, ctx) for r in memory for n, t in enumerate(_texts(r)) if t}
    assert not {k: v for k, v in filled.items() if NEGATIVE_GIB.search(v) or "leaving -" in v}
    message = next(f.message for f in result.evaluation.findings if f.rule.id == "H3D641")
    assert "and the 11.6 GiB free are 5.0 GiB short of it: torch.OutOfMemoryError is likely" in message
