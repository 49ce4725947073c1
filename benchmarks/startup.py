"""What every launch pays: h3doctor's start-up beside the interpreter's own, in one interleaved run.

Three commands, each a fresh process, run in turn round after round (so a busy minute on this
shared machine slows all three alike): `python -c pass` (the interpreter's start-up, the unit),
a clean launch through the hook's command line (`h3doctor check --hook --profile 4xH200 -- sglang
serve MiniMaxAI/MiniMax-H3 --num-gpus 4`) and the README's failing check with its full text report
(`h3doctor check --profile 4xH200 -- ... --attention-backend sage_attn`, stdout a pipe, as in CI or
`| less`). Each is reported as wall time and CPU time (user + system, from wait4) and as a multiple
of the interpreter's. Goals: the hook <= 4x, the failing check <= 6x.

The rules cache is warmed first (as after the first run on a machine); bytecode caching is on
(PYTHONDONTWRITEBYTECODE is removed from the children's environment), as in an installed wheel.

`--baseline DIR` adds the same two h3doctor commands run from another checkout (an unpacked
`git archive` of an earlier commit: PYTHONPATH=DIR puts its package first), in the same rounds.
Two more rows show the floor under the hook: the standard library a clean check imports (`import
json, re, shlex, zlib, bisect, math, struct`: enum, functools and collections come with re), and
every module a clean hook launch imports, h3doctor's own included, with nothing run.

Run:  python benchmarks/startup.py [--runs 31] [--baseline DIR]
Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
FAILING = [*LAUNCH, "--ulysses-degree", "2", "--ring-degree", "2", "--attention-backend", "sage_attn"]


STDLIB = "import json, re, shlex, zlib, bisect, math, struct"
# what a clean hook launch imports (python -X importtime), without loading a rule or checking
IMPORTS = ("import h3doctor.entry, h3doctor.launch.execute, h3doctor.request, h3doctor.engine.judge, "
           "h3doctor.engine.ruleset, h3doctor.host.profiles, h3doctor.sglang.flagtable, h3doctor.engine.derivations, zlib")


def commands(baseline: str | None) -> dict[str, tuple[list[str], str | None]]:
    """name -> (argv, PYTHONPATH)."""
    h3doctor = shutil.which("h3doctor", path=os.path.dirname(sys.executable)) or "h3doctor"
    hook = [h3doctor, "check", "--hook", "--profile", "4xH200", "--", *LAUNCH]
    failing = [h3doctor, "check", "--profile", "4xH200", "--", *FAILING]
    out = {
        "python -c pass": ([sys.executable, "-c", "pass"], None),
        "stdlib floor": ([sys.executable, "-c", STDLIB], None),
        "imports only": ([sys.executable, "-c", IMPORTS], None),
        "hook, clean launch": (hook, None),
        "failing check, text": (failing, None),
    }
    if baseline:
        out["baseline: hook"] = (hook, baseline)
        out["baseline: failing"] = (failing, baseline)
    return out


def once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s, exit status) of one fresh process, its stdout a pipe that is read."""
    read, write = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: stdout into the pipe, as `| less` or a CI log would take it
        os.dup2(write, 1)
        os.close(read)
        os.close(write)
        os.execve(argv[0], argv, env)
    os.close(write)
    while os.read(read, 65536):
        pass
    os.close(read)
    _, status, usage = os.wait4(pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--baseline", help="another checkout's root, run with PYTHONPATH=DIR")
    opts = parser.parse_args()
    cmds = commands(opts.baseline)
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items()
               if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith(("SGLANG_", "H3DOCTOR_", "FORCE_COLOR"))}
        env["H3DOCTOR_CACHE_DIR"] = cache
        envs = {name: env if path is None else {**env, "PYTHONPATH": path} for name, (_, path) in cmds.items()}
        for name, (argv, _) in cmds.items():  # warm: the rules cache, the bytecode, the file cache
            once(argv, envs[name])
        wall: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(opts.runs):
            for name, (argv, _) in cmds.items():
                w, c, code = once(argv, envs[name])
                expected = 1 if "failing" in name else 0
                if code != expected:
                    sys.exit(f"{name}: exit {code}, expected {expected}")
                wall[name].append(w)
                cpu[name].append(c)
    unit_wall, unit_cpu = statistics.median(wall["python -c pass"]), statistics.median(cpu["python -c pass"])
    print(f"n={opts.runs} interleaved rounds; load average before the run: {os.getloadavg()[0]:.1f}")
    for name in cmds:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:<22} wall median {w * 1000:6.1f} ms (min {min(wall[name]) * 1000:6.1f}) = {w / unit_wall:4.1f}x   "
              f"CPU median {c * 1000:6.1f} ms = {c / unit_cpu:4.1f}x")


if __name__ == "__main__":
    main()
