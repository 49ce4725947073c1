"""Time of a full `h3doctor suggest` search for one profile (goal: <= 1 s on this machine).

Two figures per scenario: the whole command as a user pays it (a fresh `python -m h3doctor
suggest --format json ...` process: interpreter start, imports, rules, the search, the report),
and the search alone in-process (rules and flag table loaded once, as the command does), with
its counts (candidates resolved, placements dropped by the memory model, full checks).
Run:  python benchmarks/suggest.py [--runs 11]. Figures go in benchmarks/README.md, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SCENARIOS = {  # the largest space (8 GPUs), the cookbook's 4-GPU host, one small card, a no-fix variant
    "8xH100 balanced": ["--profile", "8xH100"],
    "8xH200 speed": ["--profile", "8xH200", "--prefer", "speed"],
    "4xH200 balanced": ["--profile", "4xH200"],
    "1xRTX5090 speed": ["--profile", "1xRTX5090", "--prefer", "speed"],
    "8xH100 --variant hybrid (nothing checks clean)": ["--profile", "8xH100", "--variant", "hybrid"],
}


def whole_command(args: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "suggest", "--format", "json", *args],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    return time.perf_counter() - start, json.loads(proc.stdout)


def in_process(args: list[str], runs: int) -> list[float]:
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.host.profiles import load_profile
    from h3doctor.sglang.flagtable import load_flag_table
    from h3doctor.suggest.search import search

    rules, table = load_rules(), load_flag_table("0.5.23")
    opts = dict(zip(args[::2], args[1::2]))
    hw = load_profile(opts["--profile"])
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        search(hw, rules, table, {}, model="MiniMaxAI/MiniMax-H3", family="h3", variant=opts.get("--variant"),
               prefer=opts.get("--prefer", "balanced"))
        times.append(time.perf_counter() - start)
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    opts = parser.parse_args()
    for name, args in SCENARIOS.items():
        whole_command(args)  # warm the file cache and the rules cache
        samples = [whole_command(args) for _ in range(opts.runs)]
        wall = sorted(t for t, _ in samples)
        counts = samples[0][1]["search"]
        inner = in_process(args, opts.runs)
        print(f"{name:<48} command median {statistics.median(wall) * 1000:6.0f} ms (max {wall[-1] * 1000:4.0f})   "
              f"search median {statistics.median(inner) * 1000:5.0f} ms (max {inner[-1] * 1000:4.0f})   "
              f"resolved {counts['resolved']}, pruned {counts['pruned_by_memory']}, checked {counts['checked']}")


if __name__ == "__main__":
    main()
