"""Time of `h3doctor explain`: one pasted message, and whole logs up to the 16 MiB input limit.

Each figure is a fresh `python -m h3doctor explain --format json ...` process (interpreter start,
imports, rules, the patterns compiled, the text read and matched, the report); the logs are
generated: sglang-style lines with timestamps, colours and rank prefixes, one traceback at the end.
Run:  python benchmarks/explain.py [--runs 5]. Figures go in benchmarks/README.md, never in tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

LINE = "\x1b[32m[12-01 23:41:15 TP0] Scheduler (dp replica 0) bind at endpoint: tcp://127.0.0.1:5757 step {i}\x1b[0;0m\n"
TAIL = ("Traceback (most recent call last):\n  File \"sglang/cli/serve.py\", line 42, in serve\n"
        "ValueError: MiniMax-H3 ring parallelism requires the FlashAttention backend for the transformer\n")


def run(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "explain", "--format", "json", *args],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    scenarios = {"one message": ["KeyError: 'SDPA'"]}
    with tempfile.TemporaryDirectory() as tmp:
        for mib in (1, 16):
            path = os.path.join(tmp, f"{mib}.log")
            with open(path, "w", encoding="utf-8") as fh:
                size, i = 0, 0
                while size < mib * 1024 * 1024 - len(TAIL):
                    size += fh.write(LINE.format(i=i))
                    i += 1
                fh.write(TAIL)
            scenarios[f"{mib} MiB log ({i} lines)"] = ["--log", path]
        print("| scenario | median | min | max |\n|---|---|---|---|")
        for name, args in scenarios.items():
            times = [run(args) for _ in range(runs)]
            print(f"| {name} | {statistics.median(times) * 1000:.0f} ms | {min(times) * 1000:.0f} ms | "
                  f"{max(times) * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
