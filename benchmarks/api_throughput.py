"""h3doctor.api throughput: checks per second in one process, through `api.check`.

The launches are the newest release's conformance goldens (tests/conformance/sglang-<release>.jsonl:
~1,900 generated `sglang serve` launches on 12 hardware profiles, about half rejected by sglang,
so the fix loop runs for those), each checked with `api.check(words, profile=...)` — the public
call with its argument checks and the report object, the rules loaded once per process (the
first call, left out of the timing). `--readme` checks the README's one failing launch over and
over instead. `--json` also writes each report's JSON (`to_json()`), as a service answering
with it would. `--threads N` runs the same work from N threads (one process: the GIL).

    python benchmarks/api_throughput.py [--readme] [--json] [--threads 1] [--repeat 3] [--checks N]

Instructions per check, which the load of a shared host does not change: the same command with
`--checks 300 --repeat 1` and with `--checks 0` under `valgrind --tool=callgrind`, the difference
of the two totals divided by 300 (benchmarks/README.md).

Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README_LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "2",
                 "--ring-degree", "2", "--attention-backend", "sage_attn"]


def launches(readme: bool) -> list[tuple[list[str], str]]:
    if readme:
        return [(README_LAUNCH, "4xH200")] * 2000
    sys.path.insert(0, str(ROOT / "tools" / "conformance"))
    import compare

    from h3doctor.verified import NEWEST_VERIFIED

    _, cases = compare.read_jsonl(compare.goldens_path(NEWEST_VERIFIED))
    # a case with files needs its --config written beside it: those are left out here
    return [(["sglang", "serve", *c["argv"]], c["profile"]) for c in cases if not c.get("files")]


def measure(work: list[tuple[list[str], str]], threads: int, as_json: bool) -> tuple[float, float]:
    from h3doctor import api

    def run(part: list[tuple[list[str], str]]) -> None:
        for words, profile in part:
            report = api.check(words, profile=profile)
            if as_json:
                report.to_json()

    parts = [work[i::threads] for i in range(threads)]
    pool = [threading.Thread(target=run, args=(p,)) for p in parts]
    start, cpu = time.perf_counter(), time.process_time()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", action="store_true", help="the README's failing launch, 2,000 times")
    parser.add_argument("--json", action="store_true", help="also write each report's JSON")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="report the fastest of this many runs")
    parser.add_argument("--checks", type=int, default=None, help="only the first N launches (0: start-up only)")
    args = parser.parse_args()
    from h3doctor import api

    work = launches(args.readme)[:args.checks]
    api.check(README_LAUNCH, profile="4xH200")  # the rules, flag table and imports: once per process
    runs = [measure(work, args.threads, args.json) for _ in range(args.repeat)]
    wall, cpu = min(runs)
    if not work:
        return  # --checks 0: the process's start-up and warm-up alone, for an instruction count
    print(f"{len(work)} checks, {args.threads} thread(s){', with JSON' if args.json else ''}: "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU -> {len(work) / wall:,.0f} checks/s (wall), "
          f"{len(work) / cpu:,.0f} checks/s (CPU), {1000 * cpu / len(work):.2f} ms CPU per check")


if __name__ == "__main__":
    main()
