"""The time the shell hook adds to a clean launch, and what loading it costs a shell's start-up.

One bash loads the hook (`eval "$(h3doctor init bash)"`) and then alternates launches of a
stand-in `sglang` (a tiny script that exits 0 at once) through the hook function and around it
(`command sglang`), timing each with bash's own clock ($EPOCHREALTIME). The hook's cost is the
difference of the medians: one `h3doctor check --hook` process (interpreter start, imports,
rules, the check) plus the function's own work. Three scenarios: a named profile
(H3DOCTOR_HOOK_ARGS="--profile 4xH200"), the live probe with a warm cache (no --profile), and an
h3doctor that answers 0 at once, which leaves the shell function's own cost.

Run:  python benchmarks/hook.py [--runs 21]
Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIOS = (  # (name, H3DOCTOR_HOOK_ARGS, a launch that is clean there)
    ("--profile 4xH200", "--profile 4xH200", "serve MiniMaxAI/MiniMax-H3 --num-gpus 4"),
    ("live probe, warm cache", "", "serve MiniMaxAI/MiniMax-H3"),
    ("no-op h3doctor (shell only)", "--profile 4xH200", "serve MiniMaxAI/MiniMax-H3 --num-gpus 4"),
)
SCRIPT = """
eval "$(h3doctor init bash)"
for ((i = 0; i < {runs}; i++)); do
  s=$EPOCHREALTIME; sglang {launch} || exit 1; e=$EPOCHREALTIME; echo "hook $s $e"
  s=$EPOCHREALTIME; command sglang {launch} || exit 1; e=$EPOCHREALTIME; echo "bare $s $e"
done
"""


def _env(root: Path, hook_args: str, *, noop_check: bool = False) -> dict[str, str]:
    bindir = root / ("bin-noop" if noop_check else "bin")
    bindir.mkdir(exist_ok=True)
    for name in ("sglang", "ffmpeg", "ffprobe"):  # stand-ins: the probe looks ffmpeg/ffprobe up on PATH
        _script(bindir / name, "#!/bin/sh\nexit 0\n")
    if noop_check:  # an h3doctor whose check costs nothing: what is left is the shell function's own work
        real = shutil.which("h3doctor", path=str(Path(sys.executable).parent)) or "h3doctor"
        _script(bindir / "h3doctor", f'#!/bin/sh\n[ "$1" = init ] && exec {real} "$@"\nexit 0\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "H3DOCTOR_"))}
    env.update({"PATH": os.pathsep.join([str(bindir), str(Path(sys.executable).parent), env.get("PATH", "")]),
                "H3DOCTOR_HOOK_ARGS": hook_args, "H3DOCTOR_CACHE_DIR": str(root / "cache"), "NO_COLOR": "1"})
    return env


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def launches(env: dict[str, str], launch: str, runs: int) -> tuple[list[float], list[float]]:
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", SCRIPT.format(runs=runs, launch=launch)],
                         capture_output=True, text=True, env=env, check=True).stdout
    times: dict[str, list[float]] = {"hook": [], "bare": []}
    for line in out.splitlines():
        kind, start, end = line.split()
        times[kind].append(float(end) - float(start))
    return sorted(times["hook"]), sorted(times["bare"])


def cpu_per_launch(env: dict[str, str], launch: str, runs: int, call: str) -> float:
    """CPU seconds (user + system, bash and all it starts) per launch: unlike wall time, hardly
    changed by other work on a shared machine."""
    loop = f'eval "$(h3doctor init bash)"; for ((i = 0; i < {runs}; i++)); do {call} {launch} || exit 1; done'
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["bash", "--norc", "--noprofile", "-c", loop], env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / runs


def init_cost(env: dict[str, str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(["h3doctor", "init", "bash"], stdout=subprocess.DEVNULL, env=env, check=True)
        samples.append(time.perf_counter() - start)
    return sorted(samples)


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:6.1f} ms   min {xs[0] * 1000:6.1f} ms   max {xs[-1] * 1000:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    opts = parser.parse_args()
    if shutil.which("bash") is None:
        sys.exit("bash is needed")
    with tempfile.TemporaryDirectory() as tmp:
        for name, hook_args, launch in SCENARIOS:
            env = _env(Path(tmp), hook_args, noop_check=name.startswith("no-op"))
            launches(env, launch, 1)  # warm the probe cache and the file cache
            hook, bare = launches(env, launch, opts.runs)
            added = statistics.median(hook) - statistics.median(bare)
            print(f"{name:<28} through the hook {ms(hook)}")
            print(f"{'':<28} around it       {ms(bare)}")
            print(f"{'':<28} the hook adds   {added * 1000:6.1f} ms (difference of medians, n={opts.runs})")
            cpu = cpu_per_launch(env, launch, opts.runs, "sglang") - cpu_per_launch(env, launch, opts.runs, "command sglang")
            print(f"{'':<28} CPU time added  {cpu * 1000:6.1f} ms per launch (user + system)")
        print(f"{'h3doctor init bash':<28}                 {ms(init_cost(_env(Path(tmp), ''), opts.runs))}")


if __name__ == "__main__":
    main()
