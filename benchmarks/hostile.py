"""Hostile inputs at the size limits: time and peak memory of one whole command per case.

Every case is a fresh `python -m h3doctor ...` process on input built in a temporary directory;
the child's own CPU time (user + system) and peak RSS (both from os.wait4's rusage) are judged
against the budget: a launch of 10,000 unknown flags, or a 1 MiB recipe, `env:` or `--config`, is
judged in under 1 s of CPU and 150 MB. The wall time is shown too: on a machine shared with other
work it measures the load more than h3doctor. The lint tree (50,000 files) is measured against the same memory budget;
its time is the walk's and is shown for the record. Nothing is asserted: the figures go to
benchmarks/README.md.

    python benchmarks/hostile.py [--runs 3] [--only flags-10k ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from h3doctor.safeload import MAX_NODES  # the value budget; the launch word budget is the same (launch_forms)

# the most `env:` entries or YAML `--config` keys within the value budget (each is two values), with room to spare
WITHIN_BUDGET = MAX_NODES // 2 - 10

MiB = 1 << 20
BUDGET_S, BUDGET_MB = 1.0, 150
LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
CHECK = [sys.executable, "-m", "h3doctor", "check", "--format", "json"]


def _bogus(n: int) -> list[str]:
    return [w for i in range(n) for w in (f"--bogus{i}", "x")]


def _words_up_to(size: int) -> list[str]:
    """Unknown `--bogusN x` words adding up to just under `size` bytes of command text."""
    words, total, i = [], 0, 0
    while total + 20 < size:
        pair = [f"--bogus{i}", "x"]
        words += pair
        total += len(pair[0]) + 3
        i += 1
    return words


def _lines_up_to(size: int, pattern: str) -> list[str]:
    """pattern.format(i=0), (i=1), ... adding up to about `size` bytes."""
    lines, total = [], 0
    while total < size:
        lines.append(pattern.format(i=len(lines)))
        total += len(lines[-1])
    return lines


def _recipe(tmp: Path, name: str, body: str) -> str:
    path = tmp / name
    path.write_text(body, encoding="utf-8")
    return str(path)


def cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """name -> (argv, what it is)."""
    out: dict[str, tuple[list[str], str]] = {}
    out["flags-10k"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, *_bogus(10_000)],
                        "check: 10,000 unknown `--bogusN x` flags on the command line")
    words = _words_up_to(MiB - 200)
    command = " ".join(LAUNCH + words)
    out["recipe-1MiB"] = ([*CHECK, "--recipe", _recipe(tmp, "flags.yaml", f"targets: [4xH200]\ncommand: {command}\n")],
                          f"check --recipe: a 1 MiB recipe, {len(words) // 2:,} unknown flags in `command:` (past the word budget: exit 2)")
    # the largest launch within the word budget (launch_forms.MAX_LAUNCH_WORDS = MAX_NODES words)
    most = " ".join(LAUNCH + _bogus((MAX_NODES - len(LAUNCH)) // 2))
    out["recipe-word-budget"] = ([*CHECK, "--recipe", _recipe(tmp, "most.yaml", f"targets: [4xH200]\ncommand: {most}\n")],
                                 f"check --recipe: the largest launch within the {MAX_NODES:,}-word budget "
                                 f"({(MAX_NODES - len(LAUNCH)) // 2:,} unknown flags, {len(most) // 1024} KiB)")
    env_lines = _lines_up_to(MiB - 300, "  VAR_{i}: value{i}\n")
    body = f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\nenv:\n{''.join(env_lines)}"
    out["env-1MiB"] = ([*CHECK, "--recipe", _recipe(tmp, "env.yaml", body)],
                       f"check --recipe: a 1 MiB `env:` of {len(env_lines):,} entries (past the value budget: exit 2)")
    # the largest `env:` within the node budget (each entry is two values), ~0.5 MiB
    within = "".join(f"  VAR_{i}: value{i}\n" for i in range(WITHIN_BUDGET))
    body = f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\nenv:\n{within}"
    out["env-budget"] = ([*CHECK, "--recipe", _recipe(tmp, "env-budget.yaml", body)],
                         f"check --recipe: the largest `env:` within the {MAX_NODES:,}-value budget ({WITHIN_BUDGET:,} entries, "
                         f"{len(body) // 1024} KiB)")
    keys = _lines_up_to(MiB - 300, "key_{i}: {i}\n")
    body = f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\n{''.join(keys)}"
    out["keys-1MiB"] = ([*CHECK, "--recipe", _recipe(tmp, "keys.yaml", body)],
                        f"check --recipe: a 1 MiB recipe of {len(keys):,} top-level keys (past the value budget: exit 2)")
    config: dict[str, int] = {}
    size, i = 2, 0
    while size < MiB - 100:
        key = f"k{i}"
        config[key] = i
        size += len(key) + len(str(i)) + 6
        i += 1
    config_path = tmp / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    out["config-1MiB"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, "--config", str(config_path)],
                          f"check: a 1 MiB JSON `--config` of {len(config):,} keys")
    yaml_config = tmp / "config.yaml"
    yaml_config.write_text("".join(_lines_up_to(MiB - 100, "k{i}: {i}\n")), encoding="utf-8")
    out["config-yaml-1MiB"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, "--config", str(yaml_config)],
                               f"check: a 1 MiB YAML `--config` of ~70,000 keys (past the {MAX_NODES:,}-value budget: exit 2)")
    budget_config = tmp / "config-budget.yaml"
    budget_config.write_text("".join(f"k{i}: {i}\n" for i in range(WITHIN_BUDGET)), encoding="utf-8")
    out["config-yaml-budget"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, "--config", str(budget_config)],
                                 f"check: the largest YAML `--config` within the value budget ({WITHIN_BUDGET:,} keys, PyYAML's "
                                 "own constructor, as sglang reads it)")
    big_path = tmp / "big-value.json"
    big_path.write_text(json.dumps({"num_gpus": "4" + " " * (MiB - 100)}), encoding="utf-8")
    out["config-value-1MiB"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH[:3], "--config", str(big_path)],
                                "check: a `--config` whose one value is a 1 MiB string (H3D951 quotes it)")
    script = tmp / "script"
    script.mkdir()
    words = _words_up_to(MiB - 200)
    (script / "launch.sh").write_text("#!/bin/bash\n" + " ".join(LAUNCH + words) + "\n", encoding="utf-8")
    out["lint-shell-1MiB"] = ([sys.executable, "-m", "h3doctor", "lint", "--format", "json", "--target", "4xH200", str(script)],
                              f"lint: a 1 MiB shell script, one launch of {len(words) // 2:,} unknown flags (past the word budget: an error)")
    tree = tmp / "tree"
    for d in range(500):
        sub = tree / f"d{d:03d}"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"f{f:03d}.txt").write_text("not a launch\n", encoding="utf-8")
    (tree / "d000" / "recipe.yaml").write_text(f"targets: [4xH200]\ncommand: {' '.join(LAUNCH)}\n", encoding="utf-8")
    out["lint-tree-50k"] = ([sys.executable, "-m", "h3doctor", "lint", "--format", "json", str(tree)],
                            "lint: a tree of 50,000 files (500 directories), one recipe")
    out.update(round2_cases(tmp))
    return out


EXPLAIN = [sys.executable, "-m", "h3doctor", "explain", "--format", "json"]
LINT = [sys.executable, "-m", "h3doctor", "lint", "--format", "json", "--target", "4xH200"]


def _pattern_texts() -> tuple[list[str], dict[str, str]]:
    """(the fixed text (anchor) of every explain pattern, longest first; each pattern's fixed pieces
    joined, holes left out, by rule and template): asked of a child, so this process stays small
    (a child's peak RSS starts at its parent's)."""
    code = ("import json, re; from h3doctor.engine.ruleset import load_rules; from h3doctor.explain.patterns import compiled; "
            "ps = compiled(load_rules()); hole = re.compile(r'\\{[^{}]*\\}'); "
            "print(json.dumps([sorted({p.anchor for p in ps}, key=lambda a: (-len(a), a)), "
            "{p.rule + ' ' + p.text: ' '.join(hole.sub(' ', p.text).split()) for p in ps}]))")
    anchors, fixed = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    return anchors, fixed


def _repeated(text: str, size: int = 4096) -> str:
    return ((text + " ") * (size // (len(text) + 1) + 1))[:size]


def round2_cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    """Issue 27, item 7: the super-linear cases a second review found (explain, check, lint)."""
    out: dict[str, tuple[list[str], str]] = {}
    every, fixed = _pattern_texts()
    h3d311 = next(text for key, text in fixed.items() if key.startswith("H3D311 {backend:text} needs"))
    out["explain-rule-text-4k"] = ([*EXPLAIN, "--log", _recipe(tmp, "rule-text.log", "ValueError: " + _repeated(h3d311) + "\n")],
                                   f"explain: a 4 KB line of H3D311's fixed text repeated ({h3d311[:40]!r}...)")
    lines = "".join(f"ValueError: {_repeated(text)}\n" for text in fixed.values())
    out["explain-every-rule-text-4k"] = ([*EXPLAIN, "--log", _recipe(tmp, "every-rule-text.log", lines)],
                                         f"explain: a 4 KB line of each of the {len(fixed)} patterns' fixed text "
                                         f"({len(lines) // 1024} KiB)")
    out["explain-assign-63k"] = ([*EXPLAIN, "--log", _recipe(tmp, "assign.log", "a= " * 21_000 + "sglang\n")],
                                 "explain: a 63 KB `a= a= ... sglang` line")
    anchors = " ".join(every)
    out["explain-all-anchors"] = ([*EXPLAIN, "--log", _recipe(tmp, "anchors.log", "ValueError: " + anchors + "\n")],
                                  f"explain: one line holding every rule's anchor ({len(anchors) // 1024} KiB)")
    exc = "ValueError: " + "x" * 180 + " tail of it\n"  # 210 characters with its newline... about
    for mib in (8, 16):
        body = exc * ((mib * MiB) // len(exc))
        out[f"explain-exceptions-{mib}MiB"] = ([*EXPLAIN, "--log", _recipe(tmp, f"exc-{mib}.log", body)],
                                               f"explain: a {mib} MiB log of {len(exc)}-character exception lines")
    out["check-abbrev-1k"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, *["--tp", "1"] * 1000],
                              "check: `--tp 1` repeated 1,000 times (an abbreviation each time)")
    out["check-port-10k"] = ([*CHECK, "--profile", "4xH200", "--", *LAUNCH, *["--port", "1"] * 10_000, "--bogus", "x"],
                             "check: 10,000 `--port 1` flags and one unknown flag")
    docker = ["docker", "run", "--gpus", "all", "lmsysorg/sglang:v0.5.23", "bash", "-lc"]
    inside = "exec " + " ".join(LAUNCH) + " "  # flags written inside the container's script (issue 30 item 2)
    # no process can be given a 1 MiB argument (Linux refuses to exec it): a recipe's command can hold one
    line = " ".join(docker) + " '" + inside + "--tp 1 " * ((MiB - 4096) // 7) + "'"
    out["check-script-1MiB"] = ([*CHECK, "--recipe", _recipe(tmp, "script.yaml", f"profile: 4xH200\ncommand: {json.dumps(line)}\n")],
                                "check: a recipe's container line with a 1 MiB `bash -lc` script (refused: past MAX_ARG_STRLEN)")
    most = inside + " ".join(_words_up_to(128 * 1024 - len(inside) - 64))
    out["check-script-128KiB"] = ([*CHECK, "--profile", "4xH200", "--", *docker, most],
                                  "check: a container's `bash -lc` script of 128 KiB (the most Linux passes) of unknown flags")
    ignore = tmp / "ignore-backtrack"
    (ignore / "d").mkdir(parents=True)
    (ignore / ".gitignore").write_text("*a*a*a*a*a*a*a*a*c\n", encoding="utf-8")
    for i in range(200):
        (ignore / "d" / ("a" * 60 + f"{i}.sh")).write_text("echo hi\n", encoding="utf-8")
    out["lint-gitignore-backtrack"] = ([*LINT, str(ignore)],
                                       "lint: `.gitignore` `*a*a*a*a*a*a*a*a*c` over 200 files named `aaa...a<N>.sh` (60 a's)")
    plain = tmp / "ignore-plain"
    plain.mkdir()
    (plain / ".gitignore").write_text("".join(f"name{i}.txt\n" for i in range(50_000)), encoding="utf-8")
    for i in range(200):
        (plain / f"f{i}.sh").write_text("echo hi\n", encoding="utf-8")
    out["lint-gitignore-50k"] = ([*LINT, str(plain)], "lint: a `.gitignore` of 50,000 plain names over 200 files")
    links = tmp / "links"
    links.mkdir()
    for name in ("a", "b", "c"):
        os.symlink(".", links / name)
    (links / "run.sh").write_text("echo hi\n", encoding="utf-8")
    out["lint-glob-links"] = ([*LINT, str(links) + "/**/*.sh"], "lint: `DIR/**/*.sh` where DIR holds three links `a -> .`, `b -> .`, `c -> .`")
    many = tmp / "many"
    many.mkdir()
    (many / "launches.sh").write_text("#!/bin/bash\n" + "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\n" * 10_000,
                                      encoding="utf-8")
    out["lint-launches-10k"] = ([*LINT, str(many)], "lint: one script of 10,000 launches (470 KB, within the 1 MiB limit)")
    shard = tmp / "shard.safetensors"
    # written entry by entry: a child's peak RSS starts at this process's (fork), so nothing large is held here
    entry = '"model.layers.{i}.weight": {{"dtype": "F16", "shape": [1, 1], "data_offsets": [0, 0]}}'
    size = 56 * MiB
    with shard.open("wb") as fh:
        fh.write(size.to_bytes(8, "little") + b"{")
        written, i = 1, 0
        while True:
            piece = (("," if i else "") + entry.format(i=i)).encode()
            if written + len(piece) + 1 > size:
                break
            fh.write(piece)
            written += len(piece)
            i += 1
        fh.write(b" " * (size - written - 1) + b"}")
    out["check-shard-header-56MiB"] = ([*CHECK, "--profile", "m3-max", "--", *LAUNCH[:3], "--layerwise-offload-components",
                                        "all", "--transformer-weights-path", str(shard)],
                                       f"check: a `.safetensors` shard with a {size // MiB} MiB header ({i:,} tensors)")
    return out


def run_once(argv: list[str], timeout: float | None = None) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in MB of that child, exit code, its CPU seconds: user + system,
    which a machine shared with other work inflates less than the wall time). A child still
    running after `timeout` seconds is killed (exit -9)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill) if timeout else None
    if timer:
        timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    if timer:
        timer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    kb = usage.ru_maxrss  # kilobytes on Linux
    return wall, kb / 1024, proc.returncode, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--timeout", type=float, default=None, help="kill a case after this many seconds (exit -9)")
    opts = parser.parse_args()
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": tempfile.mkdtemp(prefix="h3d-bench-cache-")}
    os.environ.update(env)
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases(Path(tmp))
        subprocess.run([*CHECK, "--profile", "4xH200", "--", *LAUNCH], stdout=subprocess.DEVNULL)  # warm the rules cache
        print(f"budget: {BUDGET_S:.0f} s and {BUDGET_MB} MB per case; median of {opts.runs} runs (max)\n")
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        print("| case | what | wall, median (max) | CPU, median | peak RSS, max | exit | within budget |")
        print("|---|---|---|---|---|---|---|")
        for name, (argv, what) in all_cases.items():
            if opts.only and name not in opts.only:
                continue
            runs = [run_once(argv, opts.timeout) for _ in range(opts.runs)]
            walls = [r[0] for r in runs]
            rss = max(r[1] for r in runs)
            med = statistics.median(walls)
            cpu = statistics.median(r[3] for r in runs)
            ok = cpu < BUDGET_S and rss < BUDGET_MB
            print(f"| {name} | {what} | {med * 1000:.0f} ms ({max(walls) * 1000:.0f}) | {cpu * 1000:.0f} ms | "
                  f"{rss:.0f} MB | {runs[0][2]} | {'yes' if ok else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
