"""What the command-line hook (cli_hook_line.py, hook_line.bash) adds to commands that are not
hidden launches, in an interactive bash (the DEBUG trap runs before every simple command).

Three figures, each the difference of medians between a bash with the hook loaded and one
without, timed with bash's own clock ($EPOCHREALTIME):
* an ordinary simple command (`true` in a loop: the trap's shell work, no process started);
* a line that mentions sglang but is no launch (`echo sglang`): one `h3doctor hook-line` process;
* `sglang serve …` (clean, --profile 4xH200) through the hook, against a function that runs it
  unchecked: the function's check plus the line's `hook-line` process;
* each prompt: what PROMPT_COMMAND runs before it (the trap armed again when another tool's
  replaced it: one `trap -p DEBUG`).
zsh and fish run their hook once per Enter, not per command: a string match on the line.

Run:  python benchmarks/hook_line.py [--runs 21] [--loop 20000]
Figures are recorded in benchmarks/README.md, never asserted in tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = """
{load}
s=$EPOCHREALTIME; for ((i = 0; i < {loop}; i++)); do true; done; e=$EPOCHREALTIME; echo "loop $s $e"
for ((i = 0; i < {runs}; i++)); do
  s=$EPOCHREALTIME; eval "${{PROMPT_COMMAND-}}"; e=$EPOCHREALTIME; echo "prompt $s $e"
done
for ((i = 0; i < {runs}; i++)); do
  s=$EPOCHREALTIME; echo sglang >/dev/null; e=$EPOCHREALTIME; echo "mention $s $e"
  s=$EPOCHREALTIME; sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 || exit 1; e=$EPOCHREALTIME; echo "launch $s $e"
done
"""


def timings(load: str, runs: int, loop: int, env: dict[str, str]) -> dict[str, list[float]]:
    script = SCRIPT.format(load=load, runs=runs, loop=loop)
    out = subprocess.run(["bash", "--norc", "--noprofile", "-i", "-c", script], capture_output=True, text=True,
                         env=env, check=True, stdin=subprocess.DEVNULL).stdout
    found: dict[str, list[float]] = {}
    for line in out.splitlines():
        name, start, end = line.split()
        found.setdefault(name, []).append(float(end) - float(start))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--loop", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stub = Path(tmp) / "sglang"
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
        env = {**os.environ, "PATH": os.pathsep.join([tmp, str(Path(sys.executable).parent), os.environ["PATH"]]),
               "H3DOCTOR_HOOK_ARGS": "--profile 4xH200"}
        assert shutil.which("h3doctor", path=env["PATH"]), "h3doctor is not installed beside this python"
        bare = timings("function sglang { command sglang \"$@\"; }", args.runs, args.loop, env)
        hooked = timings('eval "$(h3doctor init bash)"', args.runs, args.loop, env)
    per_command = (hooked["loop"][0] - bare["loop"][0]) / (2 * args.loop)  # the trap runs for (( )) and true
    print(f"ordinary simple command: +{per_command * 1e6:.1f} us (loop of {args.loop})")
    added = statistics.median(hooked["prompt"]) - statistics.median(bare["prompt"])
    print(f"each prompt (PROMPT_COMMAND): +{added * 1e6:.0f} us (median of {args.runs})")
    for name, said in (("mention", "a line mentioning sglang, no launch"), ("launch", "sglang serve, clean (check + hook-line)")):
        added = statistics.median(hooked[name]) - statistics.median(bare[name])
        print(f"{said}: +{added * 1000:.0f} ms (median of {args.runs})")


if __name__ == "__main__":
    main()
