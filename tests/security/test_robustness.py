"""Random launches never crash the check: every outcome is findings, never an exception.

Seeded, so a failure reproduces; the words mix every flag of the serve parser with values of
every shape sglang might be handed (numbers, booleans, maps, JSON, empty, dashes)."""

from __future__ import annotations

import random
import shlex

from h3doctor.engine.check import check
from h3doctor.host.profiles import builtin_profile_names, load_profile

VALUES = ["0", "1", "-1", "2", "4", "8", "true", "false", "fa", "sage_attn", "x", "", "=", "a=b", '{"a":1}', "[1]",
          "transformer=fa", "all=resident", "dit,vae", "none", "7", "3.5", "nan", "--", "-"]
MODELS = ["MiniMaxAI/MiniMax-H3", "OpenVDN/vdn-minimax-h3", "FastVideo/FastVideo-FastH3-8-Step-V2",
          "FastVideo/FastVideo-FastH3-Omni-8-Step-V1", "black-forest-labs/FLUX.1-dev"]
EXTRA = ["--component-paths.text_encoder", "--component-attention-backends.transformer", "--x-path", "--model-type",
         "--ring", "--mode", "--model"]


def test_random_launches_never_crash(rules, table):
    rng = random.Random(20261130)
    options = sorted(table.options_for("serve")) + EXTRA
    profiles = [load_profile(name) for name in builtin_profile_names()]
    for _ in range(600):
        argv = ["sglang", rng.choice(["serve", "serve", "generate"]), rng.choice(MODELS)]
        for _ in range(rng.randint(0, 6)):
            argv.append(rng.choice(options))
            argv += [rng.choice(VALUES) for _ in range(rng.choice([0, 1, 1, 2]))]
        try:
            result = check(argv, rng.choice(profiles), rules, table, {})
        except Exception as exc:  # noqa: BLE001 - the assertion names the launch
            raise AssertionError(f"check crashed on: {shlex.join(argv)}") from exc
        assert result.fix_status in ("clean", "fixed", "no-fix", "not-converged")
