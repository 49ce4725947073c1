"""Median time-to-verdict of `h3doctor check` on a built-in profile, as a user pays it.

Each sample is a fresh `python -m h3doctor check ...` process (interpreter start, imports,
rule loading and validation, the check and its fix loop, the report). It also asserts that
torch is never imported on that path. Run:  python benchmarks/time_to_verdict.py [--runs 21]
Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

SCENARIOS = {
    "speed 1xH100 (load OOM, fix loop)": ["--profile", "1xH100", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3",
                                          "--performance-mode", "speed"],
    "clean 4xH200": ["--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"],
    "ring+sage 4xH200 (fix loop)": ["--profile", "4xH200", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3",
                                    "--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2",
                                    "--attention-backend", "sage_attn"],
    "mps defaults m3-max (fix loop)": ["--profile", "m3-max", "--", "sglang", "serve", "MiniMaxAI/MiniMax-H3",
                                       "--enable-torch-compile"],
}

_NO_TORCH = (
    "import sys, runpy; sys.argv = ['h3doctor'] + sys.argv[1:];\n"
    "try:\n    runpy.run_module('h3doctor', run_name='__main__')\n"
    "except SystemExit as e:\n    code = e.code\n"
    "assert 'torch' not in sys.modules, 'torch was imported'\n"
)


def sample(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "h3doctor", "check", "--format", "json", *args],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    opts = parser.parse_args()
    for name, args in SCENARIOS.items():
        check = subprocess.run([sys.executable, "-c", _NO_TORCH, "check", *args], capture_output=True, text=True)
        assert "torch was imported" not in check.stderr, check.stderr
        sample(args)  # warm the file cache
        times = sorted(sample(args) for _ in range(opts.runs))
        print(f"{name:<34} median {statistics.median(times) * 1000:6.1f} ms   "
              f"min {times[0] * 1000:6.1f} ms   max {times[-1] * 1000:6.1f} ms   (n={opts.runs}, torch not imported)")


if __name__ == "__main__":
    main()

