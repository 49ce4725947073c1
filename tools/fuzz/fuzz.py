"""Fault and fuzz run of h3doctor's command line: hostile and careless argv, profiles, recipes,
`--config` and attention-backend-config files, model_index.json, caches, environments and
output streams. Seeded, so every case reproduces.

    python tools/fuzz/fuzz.py --cases 10000 --seed 12 --out fuzz-out

Each case runs `h3doctor.cli.main()` in a child forked from a parent that has imported h3doctor
once (a fresh interpreter per case would cost ~0.2 s of start-up each); the child gets its own
argv, environment, working directory, stdout (a pipe, closed, /dev/full, or an ASCII or Latin-1
stream) and stderr. The parent measures each child's wall time and peak resident memory
(wait4's ru_maxrss, which includes the pages shared with the parent) and kills it after 20 s.

A case fails when it exits 3 (internal error) or with anything but 0, 1 or 2, prints a
traceback, runs past 5 s, peaks above 200 MB, prints more than 64 KiB to stderr, echoes the
planted canary of a file it has no business reading, replaces /dev/full by a file (the cases
write reports to it), writes JSON that is not JSON, or proposes
a corrected command whose changed tokens the report does not name. Failing cases are kept in
OUT/failures/ with their files; OUT/summary.json holds the figures (docs/reliability.md).

The probe child (torch, ~10 s here) is replaced by a stub returning fixed CPU observations in
the cases that would probe; what is fuzzed there is h3doctor's side: the cache and the facts.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import signal
import stat
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

TIMEOUT_S = 20.0
# "slow" is judged on the case's own CPU time (user + system, from wait4), not the wall clock: on a
# loaded machine wall time measures the load; a hang is caught by TIMEOUT_S, which stays wall time.
SLOW_S = 5.0
MEMORY_MB = 200
STDERR_LIMIT = 64 << 10
CANARY = "CANARY-h3doctor-must-not-print-this"

MODELS = ["MiniMaxAI/MiniMax-H3", "OpenVDN/vdn-minimax-h3", "FastVideo/FastVideo-FastH3-8-Step-V2",
          "FastVideo/FastVideo-FastH3-Omni-8-Step-V1", "black-forest-labs/FLUX.1-dev", "./local-model"]
VALUES = ["0", "1", "2", "4", "8", "-1", "1e9", "true", "false", "fa", "sage_attn", "nope", "FA3", "", "=", "a=b",
          '{"a":1}', '{"transformer": "fa"}', "transformer=fa", "all=resident", "dit,vae", "none", "3.5", "nan",
          "inf", "speed", "memory", "--", "-", "x" * 300, "é☃", "{", "[1]"]
EXTRA_FLAGS = ["--qua", "--ring", "--mode", "--model", "--enable-cache-dit", "--attention_backend", "--num-gpu",
               "--component-attention-backends.transformer", "--component-paths.text_encoder", "--x-path",
               "--model-type", "--config", "--attention-backend-config", "--component-attention-backends"]
PROFILE_BASE = {"platform": "cuda", "device_name": "NVIDIA H200", "compute_capability": "9.0", "gpu_count": 4,
                "gpu_memory_gib": 139.8, "ffmpeg": True, "fa_kernel": True, "description": "lab"}
CONFIG_BASE = {"num_gpus": 4, "ulysses_degree": 2, "ring_degree": 2, "attention_backend": "sage_attn",
               "enable_torch_compile": False, "performance_mode": "speed"}
STUB_OBSERVATIONS = {"plugins": [], "nvidia_procfs": {"gpus": [], "jetson": False},
                     "torch": {"ok": True, "version": "2.13.0+cpu", "cuda": None, "hip": None},
                     "mps": {"available": False}, "xpu": {"available": False, "count": 0},
                     "torch_cuda": {"available": False, "count": 0}, "cuda_devices": [],
                     "amdsmi": {"available": False, "why": "unavailable (stub)", "missing": True},
                     "nvml": {"ok": False, "missing": True, "error": "stub"}, "npu": {"available": False},
                     "musa": {"available": False, "why": "unavailable (stub)"}}


# -- documents and their mutations ------------------------------------------------------------

def yaml_of(value) -> str:
    import yaml

    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True)


def alias_bomb(levels: int) -> str:
    lines = ["b0: &b0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def mutate(rng: random.Random, doc: dict, suffix: str) -> bytes:
    """A document, then zero to three of the ways files go wrong."""
    doc = dict(doc)
    kinds = rng.sample(MUTATIONS, rng.choice([0, 1, 1, 2, 3]))
    for kind in kinds:
        if kind == "wrong_type" and doc:
            doc[rng.choice(list(doc))] = rng.choice([None, [], {}, "abc", 5, -1, 3.5, True, "2001-02-30", 10 ** 30])
        elif kind == "unknown_keys":
            for i in range(rng.choice([1, 3, 50, 20_000])):
                # the file is the user's own: its keys may be echoed (briefly), so no canary here
                doc[f"unknown_{i}_{'marker' if rng.random() < 0.1 else ''}"] = i
        elif kind == "huge_value" and doc:
            doc[rng.choice(list(doc))] = "v" * rng.choice([10_000, 1 << 20, 5 << 20])
        elif kind == "drop_key" and doc:
            doc.pop(rng.choice(list(doc)))
    body = json.dumps(doc) if suffix == ".json" else yaml_of(doc)
    for kind in kinds:
        body = TEXT_MUTATIONS.get(kind, lambda r, b, s: b)(rng, body, suffix)
    data = body.encode("utf-8")
    if "bytes" in kinds:
        data = rng.choice([b"\xff\xfe" + data, data[: len(data) // 2] + b"\xc3\x28" + data[len(data) // 2:],
                           b"\x00" * 100, bytes(rng.randrange(256) for _ in range(200))])
    return data


def _deep(rng, body, suffix):
    depth = rng.choice([65, 200, 1000, 5000, 50_000])
    inner = "[" * depth + "]" * depth
    return body.rstrip("}\n") + f', "deep": {inner}}}' if suffix == ".json" and body.strip().startswith("{") else body + f"deep: {inner}\n"


TEXT_MUTATIONS = {
    "alias_bomb": lambda r, b, s: b + ("description:\n" + "".join("  " + ln + "\n" for ln in alias_bomb(r.choice([3, 6, 8, 9])).splitlines())
                                       if s != ".json" else ""),
    "deep": _deep,
    "non_string_key": lambda r, b, s: b + r.choice(["1: a\n", "~: x\n", "[a, b]: c\n", "? {a: 1}\n: b\n", "3.5: x\n"]) if s != ".json" else b,
    "non_finite": lambda r, b, s: (b.rstrip("}\n") + ', "n": ' + r.choice(["NaN", "Infinity", "-Infinity", "1e400"]) + "}"
                                   if s == ".json" and b.strip().startswith("{") else b + "n: " + r.choice([".nan", ".inf", "-.inf", "1.0e+400"]) + "\n"),
    "timestamp": lambda r, b, s: b + "description: " + r.choice(["2001-02-30", "2001-02-03", "2001-12-14t21:59:43.10-05:00", "9999-99-99"]) + "\n" if s != ".json" else b,
    "truncate": lambda r, b, s: b[: r.randrange(max(len(b), 1))],
    "garbage": lambda r, b, s: b + r.choice(["{\n", "- [\n", "'unterminated\n", "\t- x\n", "!!python/object:os.system x\n",
                                             "*undefined\n", "---\nsecond: doc\n", "%YAML 9.9\n", "a: !!binary xx\n"]),
    "empty": lambda r, b, s: r.choice(["", "\n", "---\n", "null\n", "[]\n", "42\n", '"just text"\n']),
    "big_int": lambda r, b, s: b + ("big: " + "9" * 5000 + "\n" if s != ".json" else ""),
    "many_values": lambda r, b, s: b + "".join(f"k{i}: {i}\n" for i in range(r.choice([1000, 60_000, 200_000]))) if s != ".json" else b,
    "crlf_bom": lambda r, b, s: "\ufeff" + b.replace("\n", "\r\n"),
}
MUTATIONS = ["wrong_type", "unknown_keys", "huge_value", "drop_key", "bytes", *TEXT_MUTATIONS]


# -- cases ------------------------------------------------------------------------------------

class Case:
    def __init__(self, category: str):
        self.category = category
        self.args: list[str] = []
        self.env: dict[str, str] = {}
        self.files: dict[str, bytes] = {}  # relative to the case directory ("../x" for outside)
        self.stdout = "pipe"  # pipe | closed | full | ascii | latin-1
        self.stderr = "pipe"  # pipe | closed
        self.stub_probe = False


def _launch(rng: random.Random, options: list[str]) -> list[str]:
    words = ["sglang", rng.choice(["serve", "serve", "generate"]), rng.choice(MODELS)]
    for _ in range(rng.randint(0, 7)):
        words.append(rng.choice(options))
        words += [rng.choice(VALUES) for _ in range(rng.choice([0, 1, 1, 2]))]
    if rng.random() < 0.1:
        words.insert(0, rng.choice(["CUDA_VISIBLE_DEVICES=0,1", "SGLANG_CACHE_DIT_ENABLED=true", "A=b"]))
    return words


def _check(rng: random.Random, launch: list[str], profile: str | None = "4xH200") -> list[str]:
    args = ["check"]
    if profile is not None:
        args += ["--profile", profile]
    if rng.random() < 0.7:
        args += ["--format", "json"]
    if rng.random() < 0.1:
        args += rng.choice([["--fail-on", "warning"], ["--show-config"], ["--request-quality", "high"],
                            ["--request-steps", rng.choice(["0", "50", "abc", "-3"])], ["--sglang-version", rng.choice(["0.5.23", "0.5.99", "../x", "a" * 3000])]])
    return args + ["--", *launch]


def make_case(rng: random.Random, options: list[str]) -> Case:
    category = rng.choices(CATEGORIES, weights=[w for _, w in CATEGORY_WEIGHTS])[0]
    case = Case(category)
    profile = rng.choice(["4xH200", "1xH100", "m3-max", "cpu", "8xH200", "1xL40S"])
    if category == "argv":
        launch = _launch(rng, options)
        for i, word in enumerate(launch):  # inline values of every size and depth
            if word in ("--component-attention-backends", "--attention-backend-config") and rng.random() < 0.5:
                depth = rng.choice([10, 65, 1000, 20_000])
                launch.insert(i + 1, '{"transformer": ' + "[" * depth + "]" * depth + "}")
                break
        case.args = _check(rng, launch, profile) if rng.random() < 0.9 else ["check", "--profile", profile, *launch[2:]]
    elif category == "profile":
        suffix = rng.choice([".yaml", ".json", ".yml"])
        case.files["p" + suffix] = mutate(rng, PROFILE_BASE, suffix)
        target = rng.choice(["p" + suffix, "p" + suffix, "../secret.yaml", "missing.yaml", "p" * 5000 + ".yaml", ".", "/dev/null"])
        case.args = _check(rng, _launch(rng, options), target)
    elif category == "recipe":
        recipe = {"description": "ci lint", "profile": profile, "command": " ".join(_launch(rng, options)),
                  "env": {"SGLANG_CACHE_DIT_ENABLED": "false"}, "request": {"quality": "high", "steps": 50},
                  "sglang_version": "0.5.23"}
        if rng.random() < 0.4:
            recipe["profile"] = rng.choice(["./p.yaml", "p.yaml", "../secret.yaml", "../../../../../../etc/shadow",
                                            "/etc/passwd", "sub/../p.yaml", "lab\0.yaml", "9xH900", "./missing.yaml"])
            case.files["p.yaml"] = mutate(rng, PROFILE_BASE, ".yaml")
        if rng.random() < 0.2:
            recipe["command"] = rng.choice(['sglang serve "MiniMaxAI/MiniMax-H3', "sglang serve MiniMaxAI/MiniMax-H3 \\",
                                            ["sglang", "serve", 5], [], "", "sglang serve 'a b' \"c\""])
        if rng.random() < 0.1:
            recipe["sglang_version"] = rng.choice(["0.5.23\n", "0.5.99", "x", 0.5, "../../x"])
        case.files["r.yaml"] = mutate(rng, recipe, ".yaml")
        case.args = ["check", "--recipe", "r.yaml"] + (["--format", "json"] if rng.random() < 0.7 else [])
    elif category in ("config", "backend-config"):
        suffix = rng.choice([".yaml", ".json", ".yml", ".toml", ".txt"])
        base = CONFIG_BASE if category == "config" else {"sparsity": 0.5, "enable_x": True}
        case.files["c" + suffix] = mutate(rng, base, suffix)
        flag = "--config" if category == "config" else "--attention-backend-config"
        target = rng.choice(["c" + suffix] * 4 + ["missing.yaml", ".", "c" * 5000 + ".yaml"])
        case.args = _check(rng, [*_launch(rng, options), flag, target], profile)
    elif category == "model-index":
        case.files["local-model/model_index.json"] = mutate(rng, {"_class_name": "MiniMaxH3Pipeline"}, ".json")
        case.args = _check(rng, ["sglang", "serve", "./local-model", *_launch(rng, options)[3:]], profile)
    elif category == "cache":
        case.env["H3DOCTOR_CACHE_DIR"] = "cache"
        which = rng.choice(["rules", "probe"])
        if which == "rules":
            case.files["cache/rules-damaged.json"] = b""  # replaced by the child with a damaged copy of the real entry
            case.env["FUZZ_DAMAGE_RULES_CACHE"] = rng.choice(["drop_rule", "not_json", "wrong_types", "truncate", "empty", "deep"])
            case.args = _check(rng, ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "2",
                                     "--ring-degree", "2", "--attention-backend", "sage_attn"], "4xH200")
        else:
            case.stub_probe = True
            case.env["FUZZ_DAMAGE_PROBE_CACHE"] = rng.choice(["created_null", "created_str", "torch_str", "device_total_str",
                                                             "unknown_step", "not_json", "run_null", "nan_created", "deep"])
            case.args = rng.choice([["probe", "--format", "json"], ["probe"], _check(rng, _launch(rng, options), None)])
    elif category == "env":
        case.env.update(rng.choice([{"H3DOCTOR_CACHE_DIR": "d" * 300 + "/" + "e" * 300}, {"H3DOCTOR_CACHE_DIR": "cachefile"},
                                    {"H3DOCTOR_PROBE_CACHE_TTL": rng.choice(["nan", "-1", "abc", "1e400"])},
                                    {"H3DOCTOR_RULES_DIR": rng.choice(["nowhere", ".", "r" * 5000])},
                                    {"COLUMNS": rng.choice(["abc", "0", "-5", "100000"])}, {"NO_COLOR": ""},
                                    {"TERM": "dumb"}, {"LANG": "C", "LC_ALL": "C"}]))
        if "H3DOCTOR_CACHE_DIR" in case.env and case.env["H3DOCTOR_CACHE_DIR"] == "cachefile":
            case.files["cachefile"] = b"not a directory"
        case.args = _check(rng, _launch(rng, options), profile)
    elif category == "output":
        case.stdout = rng.choice(["closed", "full", "ascii", "latin-1"])
        case.stderr = rng.choice(["pipe", "pipe", "closed"])
        case.args = rng.choice([["rules"], ["rules", "--format", "json"], ["profiles"], ["rule", "H3D305"], ["coverage"],
                                _check(rng, _launch(rng, options), profile)])
    else:  # other commands
        case.args = rng.choice([["rule", rng.choice(["H3D305", "h3d305", "ring-needs-flashatention", "x" * 100_000, ""])],
                                ["rules", "--rules-dir", rng.choice([".", "nowhere", "r" * 5000])],
                                ["coverage", "--write", rng.choice([".", "out/cov.md", "/dev/full", "missing/dir/x.md", "c" * 5000])],
                                ["probe", "--timeout", rng.choice(["nan", "-1", "0", "inf", "abc", "1e-9"])],
                                ["probe", "--save-profile", rng.choice([".", "here.yaml", "/dev/full", "p" * 5000])],
                                ["--help"], [], ["nope"], ["check", "--format", "xml"], ["check"]])
        case.stub_probe = True
    if category in ("profile", "recipe", "cache", "other") or rng.random() < 0.05:
        case.files["../secret.yaml"] = f"password: {CANARY}\nroot: {CANARY}\n".encode()
    return case


CATEGORY_WEIGHTS = [("argv", 30), ("profile", 12), ("recipe", 15), ("config", 14), ("backend-config", 5),
                    ("model-index", 3), ("cache", 6), ("env", 5), ("output", 5), ("other", 5)]
CATEGORIES = [c for c, _ in CATEGORY_WEIGHTS]


# -- running one case (in the forked child) ---------------------------------------------------

def _child(case: Case, workdir: Path, out_path: Path, err_path: Path, shared_cache: Path) -> None:
    os.chdir(workdir)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), "NO_COLOR": "1", "COLUMNS": "160",
           "H3DOCTOR_CACHE_DIR": str(shared_cache), **case.env}
    os.environ.clear()
    os.environ.update(env)
    err_fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(err_fd, 2)
    os.close(err_fd)
    encoding = "utf-8"
    if case.stdout == "closed":
        os.close(1)
    else:
        target = "/dev/full" if case.stdout == "full" else str(out_path)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.close(fd)
        encoding = case.stdout if case.stdout in ("ascii", "latin-1") else "utf-8"
    sys.stdout = None if case.stdout == "closed" else io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    if case.stderr == "closed":
        os.close(2)
        sys.stderr = None
    _damage_caches(case, shared_cache)
    if case.stub_probe:
        from h3doctor.host import probe as probe_mod

        probe_mod.run_child = lambda e, t: (json.loads(json.dumps(STUB_OBSERVATIONS)), {"outcome": "ok", "elapsed_s": 0.01})
    from h3doctor import cli

    sys.argv = ["h3doctor", *case.args]
    code = 99
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - what Python itself would print, then its exit code 1
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):  # Python's own flush at exit: a failure is its exit 120
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001
            code = 120
    os._exit(code)


def _damage_caches(case: Case, shared_cache: Path) -> None:
    how = os.environ.get("FUZZ_DAMAGE_RULES_CACHE")
    if how:
        real = next(shared_cache.glob("rules-*.json"))
        # the cache: a header line, then the rules, then a line of every rule's examples
        header, _, body = real.read_text().partition("\n")
        rules_text, _, examples_text = body.rpartition("\n")
        rules, examples = json.loads(rules_text), json.loads(examples_text)
        if how == "drop_rule":
            kept = [i for i, e in enumerate(rules) if e["data"]["id"] != "H3D305"]
            text = (header + "\n" + json.dumps([rules[i] for i in kept]) + "\n"
                    + json.dumps([examples[i] for i in kept]))
        elif how == "wrong_types":
            rules[0]["data"]["when"] = "x"
            text = header + "\n" + json.dumps(rules) + "\n" + examples_text
        else:
            text = {"not_json": "{no", "truncate": real.read_text()[:1000], "empty": "", "deep": "[" * 100_000}[how]
        os.makedirs("cache", exist_ok=True)
        Path("cache", real.name).write_text(text)
    how = os.environ.get("FUZZ_DAMAGE_PROBE_CACHE")
    if how:
        from h3doctor.host import probe_cache

        env = dict(os.environ)
        parts = probe_cache.key_parts(env)
        entry = {"key": parts, "created": time.time(), "observations": json.loads(json.dumps(STUB_OBSERVATIONS)),
                 "run": {"outcome": "ok", "elapsed_s": 0.1}}
        damage = {"created_null": lambda e: e.update(created=None), "created_str": lambda e: e.update(created="x"),
                  "torch_str": lambda e: e["observations"].update(torch="x"),
                  "device_total_str": lambda e: e["observations"].update(cuda_devices=[{"index": 0, "total": "80"}]),
                  "unknown_step": lambda e: e["observations"].update(surprise=1), "run_null": lambda e: e.update(run=None),
                  "nan_created": lambda e: e.update(created=float("nan"))}
        path = probe_cache.path_for(env, parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        if how in damage:
            damage[how](entry)
            path.write_text(json.dumps(entry))
        else:
            path.write_text({"not_json": "{no", "deep": "[" * 100_000}[how])


# -- the parent -------------------------------------------------------------------------------

def run_case(case: Case, root: Path, shared_cache: Path) -> dict:
    workdir = root / "work" / "case"
    if workdir.parent.exists():
        shutil.rmtree(workdir.parent)
    workdir.mkdir(parents=True)
    for rel, data in case.files.items():
        path = (workdir / rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    out_path, err_path = root / "work" / "stdout", root / "work" / "stderr"
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            _child(case, workdir, out_path, err_path, shared_cache)
        finally:
            os._exit(98)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() - start > TIMEOUT_S:
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            killed = True
            break
        time.sleep(0.002)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    out = out_path.read_bytes() if out_path.exists() and case.stdout in ("pipe", "ascii", "latin-1") else b""
    err = err_path.read_bytes() if err_path.exists() else b""
    return {"code": code, "elapsed_s": elapsed, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
            "killed": killed, "stdout": out, "stderr": err}


def problems_of(case: Case, outcome: dict) -> list[str]:
    found = []
    code, err, out = outcome["code"], outcome["stderr"], outcome["stdout"]
    if outcome["killed"]:
        found.append("timeout")
    elif code == 3:
        found.append("internal-error")
    elif code not in (0, 1, 2):
        found.append(f"exit-{code}")
    if b"Traceback" in err:
        found.append("traceback")
    if outcome["cpu_s"] > SLOW_S:
        found.append("slow")
    if outcome["rss_mb"] > MEMORY_MB:
        found.append("memory")
    if len(err) > STDERR_LIMIT:
        found.append("noisy-stderr")
    if CANARY.encode() in out + err:
        found.append("canary-printed")
    if os.path.exists("/dev/full") and not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        found.append("device-replaced")  # a write replaced /dev/full by a file (restore: mknod -m 666 /dev/full c 1 7)
    if code == 2 and case.category in FILE_CATEGORIES and case.stderr == "pipe" and not _located(case, err):
        found.append("unlocated-usage-error")
    if case.stdout == "pipe" and "json" in case.args and out.strip().startswith(b"{") and code in (0, 1):
        found += _report_problems(case, out)
    return found


FILE_CATEGORIES = ("profile", "recipe", "config", "backend-config", "model-index")


def _located(case: Case, err: bytes) -> bool:
    """A usage error about a file names the file (or the flag that named it)."""
    text = err.decode("utf-8", "replace")
    names = {Path(rel).name[:40] for rel in case.files if not rel.startswith("..")} | {"model_index.json"}
    names |= {a.split("=", 1)[0] for a in case.args if a.startswith("--")}
    names |= {a[:40] for a in case.args if "/" in a or "." in a}
    return any(name and name in text for name in names)


def _report_problems(case: Case, out: bytes) -> list[str]:
    def refuse(name):
        raise ValueError(name)

    try:
        data = json.loads(out, parse_constant=refuse)
    except ValueError:
        return ["json-not-json"]
    if "findings" not in data:
        return []
    proposal = data.get("corrected_argv") or data.get("nearest_argv")
    if proposal is None:
        return []
    original = data["command"]["argv"]
    removed, added = Counter(), Counter()
    reported = {f["rule"] for f in data["findings"]}
    for step in data["fix_steps"]:
        if step["rule"] not in reported and not step["found_after_fix"]:
            return ["unreported-fix"]
        for change in step["changes"]:
            removed.update(change["removed"])
            added.update(change["added"])
    if any(t not in removed for t in Counter(original) - Counter(proposal)) or \
            any(t not in added for t in Counter(proposal) - Counter(original)):
        return ["unnamed-change"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--out", default="fuzz-out")
    parser.add_argument("--only", choices=CATEGORIES, help="one category of cases")
    args = parser.parse_args()
    root = Path(args.out).resolve()
    root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "failures", ignore_errors=True)
    shared_cache = root / "shared-cache"

    # warm the parent with everything a command imports: children start from here
    import jsonschema  # noqa: F401
    import rich.console  # noqa: F401
    import yaml  # noqa: F401

    import h3doctor.engine.check  # noqa: F401
    import h3doctor.host.probe  # noqa: F401
    import h3doctor.inputs.recipe  # noqa: F401
    import h3doctor.output.text  # noqa: F401
    import h3doctor.request  # noqa: F401
    from h3doctor import cli  # noqa: F401
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.sglang.flagtable import load_flag_table

    os.environ["H3DOCTOR_CACHE_DIR"] = str(shared_cache)
    load_rules()  # the shared rules cache the cache cases damage copies of
    options = sorted(load_flag_table("0.5.23").options_for("serve")) + EXTRA_FLAGS
    rng = random.Random(args.seed)
    times, rss = [], []
    failures: Counter = Counter()
    per_category: Counter = Counter()
    codes: Counter = Counter()
    started = time.perf_counter()
    for index in range(args.cases):
        case = make_case(rng, options)
        while args.only and case.category != args.only:
            case = make_case(rng, options)
        outcome = run_case(case, root, shared_cache)
        per_category[case.category] += 1
        codes[outcome["code"]] += 1
        times.append(outcome["elapsed_s"])
        rss.append(outcome["rss_mb"])
        found = problems_of(case, outcome)
        for problem in found:
            failures[problem] += 1
        if found:
            _keep(root, index, case, outcome, found)
        if (index + 1) % 500 == 0:
            print(f"{index + 1} cases, {sum(failures.values())} problems, {time.perf_counter() - started:.0f} s", flush=True)
    times.sort()
    summary = {
        "cases": args.cases, "seed": args.seed, "categories": dict(per_category), "exit_codes": {str(k): v for k, v in sorted(codes.items())},
        "problems": dict(failures), "internal_errors": failures["internal-error"], "tracebacks": failures["traceback"],
        "runs_past_5s": failures["slow"] + failures["timeout"], "peak_rss_mb": round(max(rss), 1),
        "median_rss_mb": round(statistics.median(rss), 1),
        "time_s": {"median": round(statistics.median(times), 3), "p99": round(times[int(len(times) * 0.99) - 1], 3),
                   "max": round(times[-1], 3)},
        "wall_s": round(time.perf_counter() - started, 1), "python": sys.version.split()[0],
    }
    (root / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 1 if failures else 0


def _keep(root: Path, index: int, case: Case, outcome: dict, found: list[str]) -> None:
    folder = root / "failures" / f"{index:05d}-{case.category}"
    shutil.copytree(root / "work" / "case", folder / "case", dirs_exist_ok=True)
    (folder / "case.json").write_text(json.dumps({"problems": found, "args": [a[:300] for a in case.args], "env": case.env,
                                                  "stdout": case.stdout, "stderr": case.stderr, "code": outcome["code"],
                                                  "elapsed_s": outcome["elapsed_s"], "rss_mb": outcome["rss_mb"]}, indent=2))
    (folder / "stderr.txt").write_bytes(outcome["stderr"][-20000:])


if __name__ == "__main__":
    sys.exit(main())
