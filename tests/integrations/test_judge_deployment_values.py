"""A launcher policy corrects a task only with fixes lint would make unasked: a correction that
leaves a fix out because it would write over a value the deployment gives (lint/fix.py `kept`,
issue 30 item 8) is not made. The launchers' readers leave such a task not judged today, so the
correction is given its `kept` note here."""

from __future__ import annotations

import dataclasses

from h3doctor.integrations import judge
from h3doctor.integrations.skypilot import decide_task

RING = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn"
KEPT = "the fix of H3D305 would write over `$BACKEND`, a value the deployment gives, not the file"


def test_a_correction_that_leaves_a_fix_out_is_not_made(monkeypatch):
    real = judge.correct

    def leaving_one_out(session, launch, hold=frozenset()):
        fix, why = real(session, launch, hold)
        return (dataclasses.replace(fix, kept=[KEPT]) if fix else None), why

    monkeypatch.setattr(judge, "correct", leaving_one_out)
    d = decide_task({"resources": {"accelerators": "H200:4"}, "run": RING}, mutate=True)
    assert d.action == "reject" and d.config is None and KEPT in d.message
