"""What the memory budget adds to one check, in-process (goal: <= 1 ms).

Times the memory derivation alone (`engine/derivations/memory.derive`, which runs the budget and,
when the launch does not fit, the search for the least disruptive fix), and a whole check with and
without it, on launches that fit and that do not.

    python benchmarks/memory_budget.py
"""

from __future__ import annotations

import shlex
import statistics
import time

from h3doctor.engine.check import check, evaluate_launch
from h3doctor.engine.derivations import memory as memory_derivation
from h3doctor.engine.derivations import registry
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.resolve import Resolver
from h3doctor.sglang.server_args import server_args

CASES = {
    "fits: 4xH200 default": ("4xH200", "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"),
    "fits: 1xRTX5090 auto": ("1xRTX5090", "sglang serve MiniMaxAI/MiniMax-H3"),
    "OOM + fix search: 1xRTX5090 speed": ("1xRTX5090", "sglang serve MiniMaxAI/MiniMax-H3 --performance-mode speed"),
}


def _median_us(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def main() -> None:
    rules, table = load_rules(), load_flag_table("0.5.23")
    for label, (profile, command) in CASES.items():
        hw, tokens = load_profile(profile), shlex.split(command)
        ev = evaluate_launch(tokens, hw, rules, table, {})
        # the derivation reads the resolver: rebuild one the way check does
        args, explicit = server_args(ev.cmd, None, table)
        resolver = Resolver(args, explicit, ev.family.family, hw, {})
        resolver.run()
        derive_us = _median_us(lambda: memory_derivation.memory_budget(resolver, hw, ev.context), 300)
        with_us = _median_us(lambda: check(tokens, hw, rules, table, {}), 60)
        saved = list(registry.REGISTRY)
        registry.REGISTRY[:] = [d for d in saved if d.module != "memory"]
        try:
            without_us = _median_us(lambda: check(tokens, hw, rules, table, {}), 60)
        finally:
            registry.REGISTRY[:] = saved
        print(f"{label:38s} derive {derive_us:7.0f} us   check with {with_us / 1000:6.2f} ms, "
              f"without {without_us / 1000:6.2f} ms")


if __name__ == "__main__":
    main()
