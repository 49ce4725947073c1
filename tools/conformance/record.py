#!/usr/bin/env python3
"""Record sglang's real verdicts on generated `sglang serve` launches (conformance goldens).

Maintainer tool (see README.md beside this file). Run it with the Python that has h3doctor
installed; it drives a throwaway venv that has the sglang wheel:

    python tools/conformance/record.py --venv $VENV \\
        --wheel path/to/sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl

writes tests/conformance/sglang-0.5.23.jsonl (the cases and sglang's verdicts) and
tests/conformance/sglang-0.5.23-corrected.jsonl (h3doctor's corrected command for every case
where it proposes one, also run through sglang). Other modes:

    record.py --venv V --corrected-only [--sglang-version X]
                                              # re-record only h3doctor's corrected commands (for X, through V's sglang X)
    record.py --compare OTHER.jsonl [--against tests/conformance/sglang-0.5.23.jsonl]
                                              # drift report: cases whose verdict changed
    record.py --summary [--details] [--sglang-version X]
                                              # h3doctor vs the goldens (what the CI test checks)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import cases as casegen  # noqa: E402
import compare  # noqa: E402

WORKER = HERE / "sglang_worker.py"
EXTRACT = REPO / "tools" / "flagtable" / "extract.py"
FORMAT_VERSION = 1
RESULT_FIELDS = ("ok", "exc", "msg", "stage", "code", "at", "env", "network", "hub", "resolved")


# --------------------------------------------------------------------------
# the venv: the flag-table extractor's bootstrap, reused
# --------------------------------------------------------------------------

def _load_extract():
    spec = importlib.util.spec_from_file_location("h3doctor_flagtable_extract", EXTRACT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _BootstrapDone(Exception):
    pass


_PATH_OPTIONS = {"--venv": "VENV", "--wheel": "WHEEL", "--log-dir": "LOG_DIR", "--output": "OUTPUT"}


def _portable(argv: list[str]) -> list[str]:
    """The command as recorded in the goldens: this machine's paths replaced by placeholders."""
    out, i = [], 0
    while i < len(argv):
        opt = argv[i].split("=", 1)[0]
        if opt in _PATH_OPTIONS:
            out.append(f"{opt}={_PATH_OPTIONS[opt]}" if "=" in argv[i] else opt)
            if "=" not in argv[i]:
                out.append(_PATH_OPTIONS[opt])
                i += 1
        else:
            out.append(argv[i])
        i += 1
    return out


def ensure_venv(venv: str, sglang_version: str, wheel: str | None) -> Path:
    """Create/update the venv exactly as tools/flagtable/extract.py does (pinned torch from the
    local disk, the sglang wheel with --no-deps, extract.import_requirements(version): 0.5.23's list
    with that release's pins, extract.RELEASE_REQUIREMENTS). The extractor's
    `bootstrap` ends by re-executing the extractor inside the venv; that final exec is stopped
    here, so only its installation steps run."""
    extract = _load_extract()
    py = extract._venv_python(Path(venv).resolve())
    if py.exists() and extract._installed_sglang_version(py) == sglang_version:
        return py
    ns = argparse.Namespace(venv=venv, wheel=wheel, sglang_version=sglang_version,
                            output=os.devnull)

    def stop(*_a, **_k):
        raise _BootstrapDone

    orig = extract.os.execv
    extract.os.execv = stop
    try:
        extract.bootstrap(ns)
    except _BootstrapDone:
        pass
    finally:
        extract.os.execv = orig
    if extract._installed_sglang_version(py) != sglang_version:
        raise SystemExit(f"venv {venv} does not have sglang {sglang_version} after bootstrap")
    return py


# --------------------------------------------------------------------------
# running sglang
# --------------------------------------------------------------------------

def _profile_mapping(name: str) -> dict[str, Any]:
    from h3doctor.host.profiles import profile_mapping

    data, _ = profile_mapping(name)
    return {**data, "name": name}


def worker_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SGLANG_", "HF_", "CUDA_", "HIP_", "ROCR_", "TRANSFORMERS_", "PYTHON"))}
    env.update({
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp / "hf"),
        "SGLANG_CACHE_DIR": str(tmp / "sglang-cache"), "PYTHONHASHSEED": "0",
        "TOKENIZERS_PARALLELISM": "false",
    })
    return env


def run_sglang(py: Path, batch: list[dict[str, Any]], jobs: int, log_dir: Path,
               reverse: bool = False) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Run every case of `batch` through sglang, one worker process per profile."""
    by_profile: dict[str, list[dict[str, Any]]] = {}
    for c in batch:
        by_profile.setdefault(c["profile"], []).append(c)
    results: dict[str, dict[str, Any]] = {}
    platforms: dict[str, Any] = {}
    tmp = Path(tempfile.mkdtemp(prefix="h3conf-rec-"))
    env = worker_env(tmp)

    def one(profile: str):
        work = tmp / profile
        work.mkdir(parents=True, exist_ok=True)
        (work / "profile.json").write_text(json.dumps(_profile_mapping(profile)))
        todo = by_profile[profile][::-1] if reverse else by_profile[profile]
        (work / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in todo))
        out = work / "results.jsonl"
        log = log_dir / f"worker-{profile}.log"
        t0 = time.time()
        with open(log, "w") as lf:
            proc = subprocess.run([str(py), str(WORKER), "--profile-json", str(work / "profile.json"),
                                   "--cases", str(work / "cases.jsonl"), "--out", str(out),
                                   "--workdir", str(work / "cwd")],
                                  stdout=lf, stderr=subprocess.STDOUT, env=env, cwd=str(work))
        if proc.returncode != 0:
            raise SystemExit(f"sglang worker for {profile} failed (exit {proc.returncode}); see {log}")
        lines = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
        print(f"[record] {profile}: {len(lines) - 1} cases in {time.time() - t0:.1f}s", file=sys.stderr)
        return profile, lines

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for profile, lines in pool.map(one, sorted(by_profile)):
            platforms[profile] = {"simulation": lines[0]["simulation"], "platform": lines[0]["platform"]}
            for r in lines[1:]:
                results[r["id"]] = r
    missing = [c["id"] for c in batch if c["id"] not in results]
    if missing:
        raise SystemExit(f"no sglang result for {len(missing)} case(s), e.g. {missing[:5]}")
    return results, platforms


# an installed file named in a message (e.g. an ImportError's "(.../site-packages/sglang/x.py)")
_SITE_PACKAGES = re.compile(r"/[^\s'\"()]*?/site-packages/")


def portable_text(text: Any) -> Any:
    """`text` without this machine's venv path: `.../site-packages/sglang/x.py` -> `sglang/x.py`."""
    return _SITE_PACKAGES.sub("", text) if isinstance(text, str) else text


def merge(case: dict[str, Any], result: dict[str, Any], keep_case_fields: bool = True) -> dict[str, Any]:
    out = {k: case[k] for k in ("id", "of", "kind", "profile", "argv", "files") if k in case}
    if not keep_case_fields:
        out.pop("profile", None)
        out.pop("files", None)
    for k in RESULT_FIELDS:
        if k in result:
            out[k] = portable_text(result[k]) if k in ("msg", "env") else result[k]
    return out


def write_jsonl(path: Path, meta: dict[str, Any], records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"_meta": meta}, sort_keys=True, separators=(",", ":")) + "\n")
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------
# h3doctor's corrected commands
# --------------------------------------------------------------------------

def corrected_cases(all_cases: list[dict[str, Any]], doctor: compare.Doctor) -> list[dict[str, Any]]:
    """Every corrected command h3doctor proposes for `doctor`'s sglang release (its
    `corrected_argv`, or with no-fix its `nearest_argv`), as a case to record (id `<case>~fix`),
    and with no-fix every alternative it offers (id `<case>~alt<N>`, kind `alternative`)."""
    out = []
    for c in all_cases:
        o = doctor.run(c)
        proposals = [] if o.corrected is None else [(f"{c['id']}~fix", o.corrected, o.corrected_kind)]
        proposals += [(f"{c['id']}~alt{n}", argv, "alternative") for n, argv in enumerate(o.alternatives, 1)]
        for case_id, argv, kind in proposals:
            fix = {"id": case_id, "of": c["id"], "profile": c["profile"], "argv": argv}
            if kind in ("nearest", "alternative"):
                # nearest: h3doctor's nearest_argv, it gave up on a finding it cannot fix; alternative:
                # one of the commands it offers instead, each giving something up
                fix["kind"] = kind
            if c.get("files"):
                fix["files"] = c["files"]
            out.append(fix)
    return out


def _git_head() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def record_corrected(py: Path, goldens: list[dict[str, Any]], jobs: int, log_dir: Path,
                     version: str, argv_used: list[str], reuse: bool) -> None:
    """Record h3doctor's corrected commands for sglang `version` (h3doctor judging for that
    release, as `--sglang-version` does) through that release's sglang in `py`. Commands that are
    cases already, or (with `reuse`) that the existing corrected file recorded through the same
    sglang version, are not run again."""
    doctor = compare.Doctor(version)
    fixes = corrected_cases(goldens, doctor) + compare.example_alternatives(doctor)
    known = {casegen.case_key(r["profile"], r["argv"], r.get("files")): r for r in goldens}
    path = compare.corrected_path(version)
    if reuse and path.exists():
        meta, old = compare.read_jsonl(path)
        if meta.get("sglang_version") == version:
            for key, rec in compare.build_lookup(goldens, old).items():
                known.setdefault(key, rec)
            for rec in old:  # the rule examples' alternatives carry their own profile
                if rec.get("kind") == "example-alternative":
                    known.setdefault(casegen.case_key(rec["profile"], rec["argv"], None), rec)
    todo = [f for f in fixes if casegen.case_key(f["profile"], f["argv"], f.get("files")) not in known]
    print(f"[record] {len(fixes)} corrected commands, {len(todo)} to run through sglang", file=sys.stderr)
    results, _ = run_sglang(py, todo, jobs, log_dir) if todo else ({}, {})
    records = []
    for f in fixes:
        key = casegen.case_key(f["profile"], f["argv"], f.get("files"))
        res = results.get(f["id"]) or known[key]
        rec = merge(f, res, keep_case_fields=f.get("kind") == "example-alternative")
        rec.pop("resolved", None)
        records.append(rec)
    meta = {"format_version": FORMAT_VERSION, "sglang_version": version,
            "h3doctor_commit": _git_head(), "record_command": shlex.join(argv_used),
            "note": "h3doctor's corrected command for this sglang release (as `h3doctor check "
                    f"--sglang-version {version}` proposes it; argv after `sglang serve`; kind=nearest: its "
                    "nearest_argv after giving up on an unfixable finding; kind=alternative: one of the "
                    "alternatives it offers with no-fix) for case `of`, recorded "
                    "through sglang on that case's profile and config files; kind=example-alternative: "
                    "an alternative check offers on a rule file's failing example, on its profile"}
    write_jsonl(path, meta, records)
    print(f"[record] wrote {path} ({len(records)} corrected commands)", file=sys.stderr)


# --------------------------------------------------------------------------
# drift report
# --------------------------------------------------------------------------

def drift(other: Path, against: Path, show_messages: bool) -> int:
    m1, base = compare.read_jsonl(against)
    m2, new = compare.read_jsonl(other)
    key = lambda r: casegen.case_key(r["profile"], r["argv"], r.get("files"))  # noqa: E731
    a = {key(r): r for r in base}
    b = {key(r): r for r in new}
    v1, v2 = m1.get("sglang_version", against.name), m2.get("sglang_version", other.name)
    changed, msg_changed = [], []
    for k, r in a.items():
        s = b.get(k)
        if s is None:
            continue
        if bool(r["ok"]) != bool(s["ok"]):
            changed.append((r, s))
        elif not r["ok"] and (compare.normalize_message(r.get("msg")) != compare.normalize_message(s.get("msg"))
                              or r.get("code") != s.get("code")):
            msg_changed.append((r, s))
    only_a = [r for k, r in a.items() if k not in b]
    only_b = [r for k, r in b.items() if k not in a]
    print(f"# verdict drift: sglang {v1} ({against}) -> {v2} ({other})")
    print(f"{len(a)} / {len(b)} cases, {len(a) - len(only_a)} in common; "
          f"{len(changed)} changed verdict; {len(msg_changed)} rejected by both with a different error")
    env_changed = sum(1 for r, s in changed if r.get("env") or s.get("env"))
    if env_changed:
        print(f"({env_changed} of the changed verdicts are marked env on either side: they depend on the "
              "recording environment -- optional kernel packages, or the offline hub for a model id "
              "that release does not register)")
    if only_a or only_b:
        why = ("a smaller --count" if not only_b or not only_a else "different generator seed/version?")
        print(f"(cases only in {v1}: {len(only_a)}; only in {v2}: {len(only_b)} -- {why})")
    for r, s in changed:
        print(f"\n{r['id']} [{r['profile']}] {compare.command_of(r['argv'])}")
        print(f"  {v1}: {compare.sglang_says(r)}")
        print(f"  {v2}: {compare.sglang_says(s)}")
    if show_messages:
        for r, s in msg_changed:
            print(f"\n{r['id']} [{r['profile']}] {compare.command_of(r['argv'])}  (message changed)")
            print(f"  {v1}: {compare.sglang_says(r)}")
            print(f"  {v2}: {compare.sglang_says(s)}")
    return 1 if changed else 0


# --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv_used = ["python", "tools/conformance/record.py", *_portable(sys.argv[1:] if argv is None else argv)]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default=str(Path(tempfile.gettempdir()) / "h3doctor-sglang-venv"), help="throwaway venv with the sglang wheel (created if missing)")
    ap.add_argument("--wheel", help="sglang wheel to install into a new venv (else pip download)")
    ap.add_argument("--sglang-version", default=None, help="default: from --wheel, else 0.5.23")
    ap.add_argument("--seed", type=int, default=casegen.DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=casegen.DEFAULT_COUNT, help="random cases (anchors come on top)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes at once")
    ap.add_argument("--output", help="goldens file (default tests/conformance/sglang-<version>.jsonl)")
    ap.add_argument("--suite", choices=sorted(casegen.SUITES), help="record a fixed case suite instead of the "
                    "seeded cases (default output tests/conformance/sglang-<version>-<suite>.jsonl)")
    ap.add_argument("--no-corrected", action="store_true", help="do not (re)record the corrected commands")
    ap.add_argument("--corrected-only", action="store_true",
                    help="keep the goldens; re-record h3doctor's corrected commands only (commands "
                         "already recorded are reused)")
    ap.add_argument("--order-check", action="store_true",
                    help="also run every profile's cases in reverse order and require identical results")
    ap.add_argument("--compare", metavar="OTHER_GOLDENS", help="drift report against --against")
    ap.add_argument("--against", metavar="GOLDENS", help="baseline for --compare (default: 0.5.23 goldens)")
    ap.add_argument("--messages", action="store_true", help="--compare: also list changed error messages")
    ap.add_argument("--summary", action="store_true", help="compare h3doctor with the goldens and print figures")
    ap.add_argument("--details", action="store_true", help="--summary: also list the disagreements grouped by cause")
    ap.add_argument("--log-dir", default=None, help="worker logs (default: a temp dir)")
    args = ap.parse_args(argv)

    if args.wheel and not args.sglang_version:
        args.sglang_version = Path(args.wheel).name.split("-")[1]
    version = args.sglang_version or "0.5.23"

    if args.compare:
        return drift(Path(args.compare), Path(args.against) if args.against else compare.goldens_path(), args.messages)
    if args.summary:
        _, goldens = compare.read_jsonl(compare.goldens_path(version))
        # an older release may have no corrected commands recorded yet: judge the verdicts alone
        cpath = compare.corrected_path(version)
        corrected = compare.read_jsonl(cpath)[1] if cpath.exists() else []
        rep = compare.compare(goldens, corrected, compare.Doctor(version))
        print(rep.summary())
        if args.details:
            print()
            print(compare.grouped(rep))
        return 0

    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="h3conf-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    py = ensure_venv(args.venv, version, args.wheel)
    print(f"[record] sglang {version} in {py}; worker logs in {log_dir}", file=sys.stderr)
    output = Path(args.output) if args.output else compare.goldens_path(version)
    if args.suite and not args.output:
        output = output.with_name(f"sglang-{version}-{args.suite}.jsonl")

    if args.corrected_only:
        _, goldens = compare.read_jsonl(output)
        record_corrected(py, goldens, args.jobs, log_dir, version, argv_used, reuse=True)
        return 0

    t0 = time.time()
    all_cases = casegen.SUITES[args.suite](version) if args.suite else casegen.generate(args.seed, args.count)
    results, platforms = run_sglang(py, all_cases, args.jobs, log_dir)
    if args.order_check:
        again, _ = run_sglang(py, all_cases, args.jobs, log_dir, reverse=True)
        diff = [cid for cid in results if results[cid] != again[cid]]
        if diff:
            raise SystemExit(f"results depend on case order (state leaks between cases): {diff[:10]}")
        print("[record] order check: identical results in reverse order", file=sys.stderr)
    records = [merge(c, results[c["id"]]) for c in all_cases]
    meta = {
        "format_version": FORMAT_VERSION, "sglang_version": version,
        "generator": ({"version": casegen.GENERATOR_VERSION, "suite": args.suite} if args.suite else
                      {"version": casegen.GENERATOR_VERSION, "seed": args.seed, "count": args.count}),
        "cases": len(records), "record_command": shlex.join(argv_used),
        "entry": "sglang.cli.main:main with sys.argv = ['sglang', 'serve', *argv]",
        "profiles": platforms,
    }
    write_jsonl(output, meta, records)
    n_ok = sum(1 for r in records if r["ok"])
    print(f"[record] wrote {output}: {len(records)} cases, {n_ok} accepted, "
          f"{sum(1 for r in records if r.get('env'))} marked env (kernel packages or offline hub), {time.time() - t0:.0f}s", file=sys.stderr)
    nets = [r["id"] for r in records if r.get("network")]
    if nets:
        print(f"[record] WARNING: network was attempted in {len(nets)} case(s): {nets[:10]}", file=sys.stderr)
    if not args.no_corrected:
        record_corrected(py, records, args.jobs, log_dir, version, argv_used, reuse=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
