"""What the live probe costs, as a user pays it.

* cold probe: a fresh `h3doctor probe --no-cache --format json` process (interpreter start, the
  probe child importing torch and walking sglang's platform detection, the report), and the
  child's own share as the probe reports it;
* `check` time-to-verdict without --profile: with a warm probe cache, with --no-cache (cold), and
  with --profile for reference (what the cache lookup adds).

Each sample is a fresh process; the cache lives in a temporary H3DOCTOR_CACHE_DIR. It also
asserts that the warm `check` never imports torch. Run:
    python benchmarks/probe.py [--runs 21] [--cold-runs 5]
Figures are recorded in benchmarks/README.md ("Probe"), never asserted in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

LAUNCH = ["--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"]

_NO_TORCH = (
    "import sys, runpy; sys.argv = ['h3doctor'] + sys.argv[1:];\n"
    "try:\n    runpy.run_module('h3doctor', run_name='__main__')\n"
    "except SystemExit as e:\n    code = e.code\n"
    "assert 'torch' not in sys.modules, 'torch was imported'\n"
)


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "h3doctor", *args], capture_output=True, text=True, env=env)
    return time.perf_counter() - start, proc.stdout


def summary(name: str, times: list[float], extra: str = "") -> None:
    times = sorted(times)
    print(f"{name:<40} median {statistics.median(times) * 1000:7.1f} ms   min {times[0] * 1000:7.1f} ms   "
          f"max {times[-1] * 1000:7.1f} ms   (n={len(times)}){extra}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--cold-runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NO_COLOR": "1", "H3DOCTOR_CACHE_DIR": cache}
        run(["probe", "--no-cache", "--format", "json"], env)  # warm the OS file cache (torch's files)
        cold, child = [], []
        for _ in range(opts.cold_runs):
            seconds, out = run(["probe", "--no-cache", "--format", "json"], env)
            cold.append(seconds)
            child.append(json.loads(out)["probe"]["child_elapsed_s"])
        platform = json.loads(out)["facts"]["platform"]
        summary("cold probe (h3doctor probe --no-cache)", cold, f"   platform {platform}")
        print(f"{'  of which the probe child':<40} median {statistics.median(child) * 1000:7.1f} ms")

        run(["probe", "--refresh", "--format", "json"], env)  # a warm cache
        check = subprocess.run([sys.executable, "-c", _NO_TORCH, "check", "--format", "json", *LAUNCH],
                               capture_output=True, text=True, env=env)
        assert "torch was imported" not in check.stderr, check.stderr
        assert '"source": "probe (cached' in check.stdout, check.stdout[-400:]
        warm = [run(["check", "--format", "json", *LAUNCH], env)[0] for _ in range(opts.runs)]
        summary("check, probe cache warm", warm, "   torch not imported")
        ref = [run(["check", "--format", "json", "--profile", "cpu", *LAUNCH], env)[0] for _ in range(opts.runs)]
        summary("check --profile cpu (reference)", ref)
        nocache = [run(["check", "--no-cache", "--format", "json", *LAUNCH], env)[0] for _ in range(opts.cold_runs)]
        summary("check --no-cache (cold probe)", nocache)


if __name__ == "__main__":
    main()
