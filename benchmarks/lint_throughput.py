"""Lint throughput: N generated recipes × 2 targets linted in one process, as checks per second.

Each recipe is a different file with its own launch drawn from a grid of real H3 launches
(models, GPU counts, modes, parallel layouts, backends); every one is judged on two targets. The
rules, the flag table and the profiles are loaded once per run; identical checks (the same
launch, target and environment in two files) are computed once (`memo`), and `--no-memo`
measures every check computed afresh. Run at several sizes to show the cost is linear in files:

    python benchmarks/lint_throughput.py [--sizes 250 500 1000] [--no-memo] [--repeat 3]

Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from pathlib import Path

MODELS = ["MiniMaxAI/MiniMax-H3", "OpenVDN/vdn-minimax-h3", "FastVideo/FastVideo-FastH3-8-Step-V2"]
GPUS = [1, 2, 4, 8]
MODES = ["", "--performance-mode speed", "--performance-mode memory"]
LAYOUTS = ["", "--ulysses-degree {n}", "--ulysses-degree 2 --ring-degree {half}"]
BACKENDS = ["", "--attention-backend fa", "--attention-backend sage_attn", "--attention-backend torch_sdpa"]
TARGETS = [("4xH200", "1xH100"), ("8xH100", "2xRTX5090"), ("1xB200", "4xH20")]


def generate(directory: Path, n: int, seed: int = 10) -> list[str]:
    rng = random.Random(seed)
    grid = list(itertools.product(MODELS, GPUS, MODES, LAYOUTS, BACKENDS))
    paths = []
    for i in range(n):
        model, gpus, mode, layout, backend = rng.choice(grid)
        flags = " ".join(x for x in (f"--num-gpus {gpus}", mode, layout.format(n=gpus, half=max(gpus // 2, 1)), backend) if x)
        targets = rng.choice(TARGETS)
        path = directory / f"recipe-{i:04d}.yaml"
        path.write_text(f"description: generated {i}\ntargets: [{', '.join(targets)}]\n"
                        f"command: sglang serve {model} {flags}\n", encoding="utf-8")
        paths.append(str(path))
    return paths


def measure(n: int, memo: bool) -> tuple[float, float, int, int]:
    from h3doctor.lint.config import LintConfig
    from h3doctor.lint.session import LintSession

    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(Path(tmp), n)
        start, cpu = time.perf_counter(), time.process_time()
        session = LintSession(LintConfig())
        if not memo:
            session._memo, session._evaluations = _NoMemo(), _NoMemo()
        run = session.run(paths)
        return time.perf_counter() - start, time.process_time() - cpu, run.checks, len(run.records)


class _NoMemo(dict):
    def get(self, key, default=None):  # every check computed afresh
        return default


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--no-memo", action="store_true")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each size this many times and report the fastest (on a shared machine the "
                             "slower runs measure the neighbours, as timeit's best-of does)")
    opts = parser.parse_args()
    for n in opts.sizes:
        runs = [measure(n, memo=not opts.no_memo) for _ in range(max(1, opts.repeat))]
        elapsed, cpu, checks, findings = min(runs, key=lambda r: r[0])
        # wall time is what a CI job waits; CPU time is what it costs when other jobs share the cores
        print(f"{n:>5} recipes x 2 targets: {checks} checks in {elapsed:6.2f} s wall = {checks / elapsed:5.0f} checks/s; "
              f"{cpu:6.2f} s CPU = {checks / cpu:5.0f} checks/CPU-s ({cpu / n * 1000:5.2f} ms CPU/file, {findings} findings)"
              f"{'' if not opts.no_memo else '  [no memo]'}")


if __name__ == "__main__":
    main()
