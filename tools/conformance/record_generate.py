#!/usr/bin/env python3
"""Record sglang's real verdicts on generated `sglang generate` commands with sampling flags.

Maintainer tool (README.md beside this file, section "sglang generate"). Run it with the Python
that has h3doctor installed; it drives a venv that has sglang (the same venv as record.py):

    python tools/conformance/record_generate.py --venv $VENV

writes tests/conformance/sglang-0.5.23-generate.jsonl: the cases with sglang's verdict (up to
the request hand-off: argparse, ServerArgs, the sampling class and its _validate, the H3 request
validation; generate_worker.py), then h3doctor's corrected command for every case it corrects,
recorded through the same path (`kind` corrected or nearest, id `<case>~fix`).

    record_generate.py --summary      # h3doctor vs these goldens (what the CI test checks)

The case generator, h3doctor's side and the comparison are here too (the CI test imports them).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import compare  # noqa: E402
import record  # noqa: E402

GOLDENS = compare.GOLDENS_DIR / "sglang-{version}-generate.jsonl"
GENERATOR_VERSION = 4
DEFAULT_SEED = 20260723
DEFAULT_COUNT = 340
PROFILES = ("1xH200", "4xH200")
RESULT_FIELDS = ("ok", "exc", "msg", "stage", "step", "at", "env", "network", "hub", "requests")

MODELS = {
    "h3": ("MiniMaxAI/MiniMax-H3", "MiniMax/MiniMax-H3"),
    "fh3": ("FastVideo/FastVideo-FastH3-8-Step-V2",),
    "fh3o": ("FastVideo/FastVideo-FastH3-Omni-8-Step-V1",),
    "vdn": ("OpenVDN/vdn-minimax-h3",),
}
FAMILY_WEIGHTS = (("h3", 40), ("fh3", 20), ("fh3o", 20), ("vdn", 20))
# the fields every H3 sampling class declares init=False, with values a user might type
NON_INIT_FLAGS = {
    "--num-frames": ("121", "61", "1"), "--fps": ("24", "30"), "--negative-prompt": ("blurry", ""),
    "--guidance-scale": ("5.0", "1"), "--guidance-scale-2": ("3",), "--true-cfg-scale": ("4",),
    "--guidance-rescale": ("0.7",), "--cfg-normalization": ("1.0",),
}
STEP_VALUES = ("1", "2", "4", "5", "8", "9", "12", "20", "30", "50", "0", "-1", "-8")
SWITCHES = (["--enable-frame-interpolation"], ["--enable-upscaling"], ["--enable-teacache"], ["--enable-spectrum"],
            ["--taylor-order", "2"], ["--enable-cache-dit"], ["--enable-spectrum", "--enable-cache-dit"])
TARGETS = (
    {"short_edge": 768, "aspect_ratio": "16:9", "duration_seconds": 5.0},
    {"short_edge": 512, "aspect_ratio": "1:1", "duration_seconds": 4},
    {"short_edge": 768, "aspect_ratio": "9:16", "duration_seconds": 10.0},
)


# --------------------------------------------------------------------------
# the cases
# --------------------------------------------------------------------------

# what users get wrong in a target (request_validation.py `_validate_target`)
TARGET_MISTAKES = (
    ("short_edge", "768"), ("short_edge", 0), ("short_edge", 512), ("short_edge", -1), ("short_edge", None),
    ("aspect_ratio", "5:4"), ("aspect_ratio", "2:1"), ("aspect_ratio", "auto"), ("aspect_ratio", None),
    ("duration_seconds", 30.0), ("duration_seconds", 2), ("duration_seconds", 0), ("duration_seconds", "5s"),
    ("duration_seconds", None), ("duration_seconds", 15),
)


def _target(rng: random.Random) -> dict[str, Any]:
    target = dict(rng.choice(TARGETS))
    if rng.random() < 0.3:
        key, value = rng.choice(TARGET_MISTAKES)
        if value is None:
            target.pop(key)
        else:
            target[key] = value
    return target


def _config(rng: random.Random, family: str, case_id: str) -> tuple[list[str], list[dict[str, str]]]:
    """A --config file with the request fields (task, target, conditions), or none."""
    target = _target(rng)
    roll = rng.random()
    if family == "fh3o":  # ref2va by default: a target, and (sometimes) a reference that is not there
        data = ({"target": target} if roll < 0.5 else
                {"target": target, "conditions": [{"type": "image", "uri": "reference.png", "role": "reference"}]}
                if roll < 0.7 else {"task": "t2va", "target": target} if roll < 0.78 else None)
    elif roll < 0.65:
        data = {"task": "t2va", "target": target}
    elif roll < 0.72:
        data = {"task": "fl2va", "target": target}  # no keyframes (and not a FastH3 task)
    elif roll < 0.75 and family != "h3":
        data = {"task": "ref2va", "target": target}  # not a FastH3 or VDN-H3 task
    elif roll < 0.80:
        data = {"task": "t2va"}
    elif roll < 0.86:
        data = {"target": target}
    else:
        data = None
    if data is None:
        return [], []
    if rng.random() < 0.3:
        name = f"req-{case_id}.yaml"
        text = _yaml(data)
        if rng.random() < 0.3:  # typed by hand: YAML 1.1 reads an unquoted 16:9 as the number 969
            text = text.replace("'16:9'", "16:9")
    else:
        name = f"req-{case_id}.json"
        text = json.dumps(data)
    return ["--config", name], [{"name": name, "text": text}]


def _yaml(data: dict[str, Any]) -> str:
    import yaml  # h3doctor's own dependency: the recorder runs with h3doctor's Python

    return yaml.safe_dump(data, sort_keys=False)


def _sampling(rng: random.Random, family: str) -> list[str]:
    argv: list[str] = []
    if rng.random() < 0.6:
        default = {"h3": "50", "fh3": "8", "fh3o": "8", "vdn": "8"}[family]
        argv += ["--num-inference-steps", default if rng.random() < 0.3 else rng.choice(STEP_VALUES)]
    if rng.random() < 0.3:
        for flag in rng.sample(sorted(NON_INIT_FLAGS), rng.choice((1, 1, 2))):
            argv += [flag, rng.choice(NON_INIT_FLAGS[flag])]
    roll = rng.random()
    if roll < 0.15:
        argv += ["--seed", rng.choice(("0", "42", "7", "-1"))]
    elif roll < 0.22:
        argv += ["--seed", *rng.choice((("1", "2"), ("3", "-4")))]
    if rng.random() < 0.15:
        argv += [rng.choice(("--num-outputs-per-prompt", "--num-outputs")), rng.choice(("1", "2", "0", "-1"))]
    if rng.random() < 0.3:
        argv += ["--quality", rng.choice(("exact", "lossless", "high", "extra-high"))]
    if rng.random() < 0.06:
        argv += ["--flow-shift", "5"]
    if rng.random() < 0.1:  # switches the H3 sampling class refuses, or refuses together
        argv += rng.choice(SWITCHES)
    return argv


def _serve(rng: random.Random, profile: str) -> list[str]:
    argv: list[str] = []
    gpus = int(profile.split("x", 1)[0])
    roll = rng.random()
    if gpus == 4 and roll < 0.4:
        argv += ["--num-gpus", "4", "--ulysses-degree", "4"]
    elif roll < 0.5:
        argv += ["--num-gpus", "1"]
    elif roll < 0.54:
        argv += ["--num-gpus", "8"]  # more than the profile has: a launch-time rejection
    if rng.random() < 0.25:
        argv += ["--performance-mode", rng.choice(("speed", "memory", "auto"))]
    if rng.random() < 0.15:
        argv += ["--attention-backend", rng.choice(("fa", "fa", "flash"))]  # flash: argparse's choice
    return argv


def generate_one(rng: random.Random, case_id: str) -> dict[str, Any]:
    profile = rng.choice(PROFILES)
    family = rng.choices([f for f, _ in FAMILY_WEIGHTS], [w for _, w in FAMILY_WEIGHTS])[0]
    prompt = ["a cat"] if rng.random() < 0.85 else ["a", "cat"]  # unquoted: two prompts
    parts = [_serve(rng, profile), _sampling(rng, family)]
    rng.shuffle(parts)
    config, files = _config(rng, family, case_id)
    argv = ["--model-path", rng.choice(MODELS[family]), "--prompt", *prompt, *parts[0], *parts[1], *config]
    case = {"id": case_id, "profile": profile, "argv": argv}
    if files:
        case["files"] = files
    return case


T2VA = json.dumps({"task": "t2va", "target": TARGETS[0]})
OMNI = json.dumps({"target": TARGETS[0]})


def anchors() -> list[dict[str, Any]]:
    """Hand-picked: each rule's class on each family, and the pure command line."""
    t2va = [{"name": "req-t2va.json", "text": T2VA}]
    h3, fh3, fh3o, vdn = (MODELS[k][0] for k in ("h3", "fh3", "fh3o", "vdn"))
    rows = [
        (h3, [], None), (fh3, [], None), (fh3o, [], None), (vdn, [], None),
        (h3, [], t2va), (fh3, [], t2va), (vdn, [], t2va),
        (h3, ["--num-inference-steps", "0"], t2va), (fh3, ["--num-inference-steps", "4"], t2va),
        (fh3, ["--num-inference-steps", "5"], t2va), (vdn, ["--num-inference-steps", "9"], t2va),
        (fh3o, ["--num-inference-steps", "4"], None), (h3, ["--num-frames", "121"], t2va),
        (fh3, ["--guidance-scale", "5", "--negative-prompt", "blurry"], t2va),
        (h3, ["--seed", "-1"], t2va), (h3, ["--seed", "1", "-2"], t2va), (h3, ["--num-outputs", "0"], t2va),
        (h3, ["--quality", "high", "--num-gpus", "4", "--ulysses-degree", "4", "--performance-mode", "speed"], t2va),
    ]
    for key, value in TARGET_MISTAKES:  # each target check, on a request that reaches it
        target = {k: v for k, v in TARGETS[0].items() if k != key}
        if value is not None:
            target[key] = value
        text = json.dumps({"task": "t2va", "target": target})
        rows.append((h3, [], [{"name": "req-target.json", "text": text}]))
    no_length = {k: v for k, v in TARGETS[0].items() if k != "duration_seconds"}
    for conditions in ([{"type": "image", "uri": "reference.png", "role": "reference"}],
                       [{"type": "audio", "uri": "voice.wav", "role": "reference"},
                        {"type": "audio", "uri": "music.wav", "role": "reference"}]):
        text = json.dumps({"target": no_length, "conditions": conditions})  # ref2va: the length from audio
        rows.append((fh3o, [], [{"name": "req-ref.json", "text": text}]))
    for switch in SWITCHES:
        rows.append((h3, list(switch), t2va))
    rows.append((h3, ["--quality", "high", "--enable-spectrum"], t2va))
    for model, task in ((fh3, "fl2va"), (vdn, "ref2va"), (fh3o, "t2va")):  # the distilled families' tasks
        rows.append((model, [], [{"name": "req-task.json", "text": json.dumps({"task": task, "target": TARGETS[0]})}]))
    out = []
    for n, (model, extra, files) in enumerate(rows, 1):
        case = {"id": f"a{n:02d}", "profile": "4xH200" if "--ulysses-degree" in extra else "1xH200",
                "argv": ["--model-path", model, "--prompt", "a cat", *extra]}
        if files:
            case["argv"] += ["--config", files[0]["name"]]
            case["files"] = files
        elif model == fh3o:
            case["argv"] += ["--config", "req-omni.json"]
            case["files"] = [{"name": "req-omni.json", "text": OMNI}]
        out.append(case)
    return out


def generate(seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out, seen = anchors(), set()
    for c in out:
        seen.add(record.casegen.case_key(c["profile"], c["argv"], c.get("files")))
    n = 0
    while n < count:
        case = generate_one(rng, f"g{n + 1:04d}")
        key = record.casegen.case_key(case["profile"], case["argv"], case.get("files"))
        if key in seen:
            continue
        seen.add(key)
        out.append(case)
        n += 1
    return out


# --------------------------------------------------------------------------
# h3doctor's side
# --------------------------------------------------------------------------

@dataclass
class Outcome:
    launch: list[Any]  # h3doctor's launch-stage errors (sglang's steps 1-2)
    sampling: list[Any]  # its errors from the generate rules (catalog gen-*): steps 5 and 6, in order
    non_init: list[str]  # the init=False fields the command gives
    proposal: list[str] | None  # corrected_argv, or nearest_argv with no-fix (after `sglang generate`)
    kind: str | None
    fix_status: str
    crash: str | None = None


def _gen_step(finding) -> int:
    """sglang's step of a generate rule: gen-5 is the request (6), the others the sampling class (5)."""
    return 6 if "gen-5" in finding.rule.catalog else 5


class Doctor(compare.Doctor):
    """compare.Doctor (that release's table, rules and facts, as `h3doctor check --sglang-version
    VERSION`), judging `sglang generate` launches."""

    def run(self, case: dict[str, Any]) -> Outcome:
        tokens = ["sglang", "generate", *case["argv"]]
        with compare.case_files(case.get("files")):
            try:
                result = self.check(tokens, self.profile(case["profile"]))
            except Exception as exc:  # noqa: BLE001 - an h3doctor crash is a disagreement too
                return Outcome([], [], [], None, None, "crash", crash=f"{type(exc).__name__}: {exc}")
        findings = [f for f in result.evaluation.findings if f.severity == "error"]
        launch = [f for f in findings if f.rule.stage == "launch"]
        sampling = [f for f in findings if any(str(c).startswith("gen-") for c in f.rule.catalog)]
        proposal, kind = result.corrected_argv, "corrected"
        if proposal is None and result.nearest_argv is not None:
            proposal, kind = result.nearest_argv, "nearest"
        if proposal is not None:
            proposal = list(proposal)[2:] if list(proposal)[:2] == ["sglang", "generate"] else ["<form>", *proposal]
            if proposal == case["argv"]:
                proposal, kind = None, None
        else:
            kind = None
        non_init = list(result.evaluation.context.get("derived.sampling_non_init") or [])
        return Outcome(launch, sampling, non_init, proposal, kind, result.fix_status)


def _same_message(sglang_msg: str | None, finding, non_init: list[str]) -> bool:
    ours, theirs = compare.normalize_message(finding.message), compare.normalize_message(sglang_msg)
    if ours == theirs:
        return True
    # the TypeError names whichever init=False field comes first in a set's order (run-dependent)
    marker = "got an unexpected keyword argument "
    if marker in ours and marker in theirs:
        head, _, name = theirs.partition(marker)
        return ours.partition(marker)[0] == head and name.strip("'") in non_init
    return False


def judge(rec: dict[str, Any], o: Outcome) -> str | None:
    """None when h3doctor agrees with sglang's recorded verdict on this command, else why not."""
    if o.crash:
        return f"h3doctor crashed: {o.crash}"
    step = rec.get("step")
    if not rec["ok"] and step in (1, 2, 3):
        if not o.launch:
            return f"sglang rejects at step {step} ({rec['msg']}); h3doctor has no launch error"
        if compare.normalize_message(o.launch[0].message) != compare.normalize_message(rec["msg"]):
            return f"both reject at launch, other message: sglang {rec['msg']!r}; h3doctor {o.launch[0].rule.id} {o.launch[0].message!r}"
        return None
    if o.launch:
        return f"h3doctor rejects at launch ({o.launch[0].rule.id}: {o.launch[0].message}); sglang passes the launch"
    if rec["ok"]:
        return None if not o.sampling else f"sglang accepts; h3doctor: {o.sampling[0].rule.id}: {o.sampling[0].message}"
    if not o.sampling:
        return f"sglang rejects at step {step}: {rec['msg']}; h3doctor has no generate finding"
    first = o.sampling[0]
    if _gen_step(first) != step:
        return f"sglang rejects at step {step}: {rec['msg']}; h3doctor's first is step {_gen_step(first)}: {first.rule.id}: {first.message}"
    if not _same_message(rec["msg"], first, o.non_init):
        return f"same step {step}, other message: sglang {rec['msg']!r}; h3doctor {first.rule.id} {first.message!r}"
    return None


def judge_corrected(rec: dict[str, Any], o: Outcome) -> str | None:
    """h3doctor's corrected command (kind `corrected`) must be accepted by sglang up to the hand-off.
    Its nearest command after a no-fix (kind `nearest`) may stop only where h3doctor said it would:
    at the step and with the message of the first generate finding h3doctor still reports on it,
    one it has no fix for (a task, a target, conditions or a file that only --config can give)."""
    if rec["ok"]:
        return None
    if (rec.get("kind") == "nearest" and o.fix_status == "no-fix" and o.sampling
            and rec.get("step") == _gen_step(o.sampling[0]) and _same_message(rec["msg"], o.sampling[0], o.non_init)):
        return None
    return f"{rec.get('kind')} command rejected at step {rec.get('step')}: {rec.get('exc')}: {rec.get('msg')}"


@dataclass
class Report:
    cases: int = 0
    accepted: int = 0
    rejected_by_step: dict[int, int] = field(default_factory=dict)
    agree: int = 0
    disagreements: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    corrected: int = 0  # kind corrected: h3doctor fixed every finding
    corrected_accepted: int = 0
    nearest: int = 0  # kind nearest: h3doctor fixed what it could and reported a no-fix
    nearest_as_said: int = 0
    corrected_failures: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    env: int = 0  # cases not judged: sglang's verdict is the offline hub's (marked `env`)
    corrected_env: int = 0

    @property
    def judged(self) -> int:
        return self.cases - self.env

    def summary(self) -> str:
        steps = ", ".join(f"step {k}: {v}" for k, v in sorted(self.rejected_by_step.items()))
        pct = (lambda a, b: 100.0 * a / b if b else 100.0)
        return (f"cases {self.cases}: sglang accepts {self.accepted}, rejects {self.cases - self.accepted} ({steps})\n"
                + (f"not judged (offline hub: a model id this release does not register): {self.env} cases, "
                   f"{self.corrected_env} corrected commands\n" if self.env or self.corrected_env else "")
                + f"h3doctor agrees (step and message): {self.agree}/{self.judged} = {pct(self.agree, self.judged):.1f}%\n"
                f"corrected commands accepted by sglang (up to the request hand-off): {self.corrected_accepted}/"
                f"{self.corrected} = {pct(self.corrected_accepted, self.corrected):.1f}%\n"
                f"nearest commands (no-fix) that stop exactly at h3doctor's no-fix finding, or pass: "
                f"{self.nearest_as_said}/{self.nearest} = {pct(self.nearest_as_said, self.nearest):.1f}%")


def compare_all(records: list[dict[str, Any]], doctor: Doctor | None = None) -> Report:
    doctor = doctor or Doctor()
    cases = [r for r in records if "of" not in r]
    by_id = {r["id"]: r for r in cases}
    rep = Report(cases=len(cases))
    for rec in cases:
        if rec["ok"]:
            rep.accepted += 1
        else:
            rep.rejected_by_step[rec.get("step", 0)] = rep.rejected_by_step.get(rec.get("step", 0), 0) + 1
        if rec.get("env"):  # the offline hub's verdict (a model id the release does not register)
            rep.env += 1
            continue
        why = judge(rec, doctor.run(rec))
        if why is None:
            rep.agree += 1
        else:
            rep.disagreements.append((rec, why))
    for rec in records:
        if "of" not in rec:
            continue
        src = by_id[rec["of"]]
        if rec.get("env"):
            rep.corrected_env += 1
            continue
        nearest = rec.get("kind") == "nearest"
        rep.nearest += nearest
        rep.corrected += not nearest
        why = judge_corrected(rec, doctor.run({**src, "argv": rec["argv"]}))
        if why is not None:
            rep.corrected_failures.append((rec, why))
        elif nearest:
            rep.nearest_as_said += 1
        else:
            rep.corrected_accepted += 1
    return rep


def corrected_cases(cases: list[dict[str, Any]], doctor: Doctor) -> list[dict[str, Any]]:
    out = []
    for c in cases:
        o = doctor.run(c)
        if o.proposal is None:
            continue
        fix = {"id": f"{c['id']}~fix", "of": c["id"], "kind": o.kind, "profile": c["profile"], "argv": o.proposal}
        if c.get("files"):
            fix["files"] = c["files"]
        out.append(fix)
    return out


# --------------------------------------------------------------------------

def _merge(case: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    out = {k: case[k] for k in ("id", "of", "kind", "profile", "argv", "files") if k in case}
    if "of" in case:  # a corrected command: its case's profile and files
        out.pop("profile", None)
        out.pop("files", None)
    for k in RESULT_FIELDS:
        if k in result:
            out[k] = record.portable_text(result[k]) if k in ("msg", "env") else result[k]
    return out


def main(argv: list[str] | None = None) -> int:
    argv_used = ["python", "tools/conformance/record_generate.py", *record._portable(sys.argv[1:] if argv is None else argv)]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", default=str(Path(tempfile.gettempdir()) / "h3doctor-sglang-venv"))
    ap.add_argument("--wheel", help="sglang wheel for a new venv (record.py's bootstrap)")
    ap.add_argument("--sglang-version", default="0.5.23")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=DEFAULT_COUNT, help="random cases (anchors come on top)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at once (one per profile)")
    ap.add_argument("--output", help="default tests/conformance/sglang-<version>-generate.jsonl")
    ap.add_argument("--summary", action="store_true", help="compare h3doctor with the goldens and print figures")
    ap.add_argument("--details", action="store_true", help="--summary: also list every disagreement")
    ap.add_argument("--log-dir", default=None)
    args = ap.parse_args(argv)
    output = Path(args.output) if args.output else Path(str(GOLDENS).format(version=args.sglang_version))

    if args.summary:
        rep = compare_all(compare.read_jsonl(output)[1], Doctor(args.sglang_version))
        print(rep.summary())
        if args.details:
            for rec, why in rep.disagreements + rep.corrected_failures:
                print(f"\n{rec['id']}: {shlex.join(['sglang', 'generate', *rec['argv']])}\n  {why}")
        return 0

    log_dir = Path(args.log_dir or tempfile.mkdtemp(prefix="h3gen-logs-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    py = record.ensure_venv(args.venv, args.sglang_version, args.wheel)
    record.WORKER = HERE / "generate_worker.py"  # record.run_sglang's per-profile workers, this worker
    t0 = time.time()
    cases = generate(args.seed, args.count)
    results, platforms = record.run_sglang(py, cases, args.jobs, log_dir)
    records = [_merge(c, results[c["id"]]) for c in cases]
    fixes = corrected_cases(records, Doctor(args.sglang_version))
    fix_results, _ = record.run_sglang(py, fixes, args.jobs, log_dir) if fixes else ({}, {})
    records += [_merge(f, fix_results[f["id"]]) for f in fixes]
    meta = {
        "format_version": record.FORMAT_VERSION, "sglang_version": args.sglang_version,
        "generator": {"version": GENERATOR_VERSION, "seed": args.seed, "count": args.count},
        "cases": len(cases), "corrected": len(fixes), "record_command": shlex.join(argv_used),
        "entry": "sglang.cli.main:main with sys.argv = ['sglang', 'generate', *argv], up to the request hand-off",
        "h3doctor_commit": record._git_head(), "profiles": platforms,
    }
    record.write_jsonl(output, meta, records)
    n_ok = sum(1 for r in records[:len(cases)] if r["ok"])
    print(f"[record_generate] wrote {output}: {len(cases)} cases ({n_ok} accepted), {len(fixes)} corrected "
          f"commands, {time.time() - t0:.0f}s", file=sys.stderr)
    nets = [r["id"] for r in records if r.get("network")]
    if nets:
        print(f"[record_generate] WARNING: network was attempted in {len(nets)} case(s): {nets[:10]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
