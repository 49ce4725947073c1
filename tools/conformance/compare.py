"""Compare h3doctor with sglang's recorded verdicts (goldens). No sglang needed.

Used by tests/sglang/test_conformance.py and by record.py (summary after recording, drift reports).
Needs h3doctor importable.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from cases import case_key

REPO = Path(__file__).resolve().parents[2]
GOLDENS_DIR = REPO / "tests" / "conformance"


def goldens_path(version: str = "0.5.23") -> Path:
    return GOLDENS_DIR / f"sglang-{version}.jsonl"


def corrected_path(version: str = "0.5.23") -> Path:
    return GOLDENS_DIR / f"sglang-{version}-corrected.jsonl"


def read_jsonl(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, records) of a goldens file; the first line may be {"_meta": {...}}."""
    meta: dict[str, Any] = {}
    records = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            obj = json.loads(line)
            if "_meta" in obj:
                meta = obj["_meta"]
            else:
                records.append(obj)
    return meta, records


def command_of(argv: list[str]) -> str:
    return shlex.join(["sglang", "serve", *argv])


_EXC_PREFIX = re.compile(r"^(?:[A-Z]\w*(?:Error|Exception|Exit)): ")


def normalize_message(msg: str | None) -> str:
    """sglang's text and h3doctor's rendering of it, compared modulo the `error: ` prefix that
    argparse/SystemExit add, an `ExceptionType: ` prefix, and whitespace."""
    text = (msg or "").strip()
    for _ in range(2):
        if text.startswith("error: "):
            text = text[len("error: "):]
        text = _EXC_PREFIX.sub("", text)
    return " ".join(text.split())


# h3doctor's way of naming a number sglang draws at random (settle_port's start port, H3D142):
# "A-B or C" -- sglang's message agrees when it prints a number from A to B, or C
_DRAWN = re.compile(r"\b(\d+)-(\d+) or (\d+)\b")


def same_message(ours: str | None, theirs: str | None) -> bool:
    """h3doctor's message is sglang's (normalize_message), where h3doctor names a randomly drawn
    number as "A-B or C" and sglang printed one of those numbers."""
    a, b = normalize_message(ours), normalize_message(theirs)
    if a == b:
        return True
    m = _DRAWN.search(a)
    if m is None:
        return False
    head, tail = a[:m.start()], a[m.end():]
    got = re.fullmatch(re.escape(head) + r"(\d+)" + re.escape(tail), b)
    if got is None:
        return False
    n, low, high, other = int(got.group(1)), int(m.group(1)), int(m.group(2)), int(m.group(3))
    return low <= n <= high or n == other


def message_template(msg: str | None) -> str:
    """A grouping key: sglang's message with numbers and quoted values blanked."""
    text = normalize_message(msg)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\[[^\]]*\]", "[…]", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    text = re.sub(r"cfg-\S+", "FILE", text)
    return text[:150]


@contextlib.contextmanager
def case_files(files: Iterable[dict[str, str]] | None):
    """Write a case's config files into a fresh temporary directory and chdir into it."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="h3conf-") as tmp:
        for f in files or ():
            Path(tmp, f["name"]).write_text(f["text"], encoding="utf-8")
        os.chdir(tmp)
        try:
            yield Path(tmp)
        finally:
            os.chdir(old)


@dataclass
class Outcome:
    """h3doctor's view of one case."""

    case: dict[str, Any]
    rejects: bool
    first: Any  # first launch-stage error Finding, or None
    errors: list[Any]
    corrected: list[str] | None  # argv after `sglang serve`, or None
    fix_status: str
    crash: str | None = None
    gives_up: list[str] = field(default_factory=list)
    corrected_kind: str | None = None  # "corrected" (corrected_argv) or "nearest" (nearest_argv)
    unfixable_launch: list[str] = field(default_factory=list)  # launch-stage rules h3doctor says no flag fixes
    alternatives: list[list[str]] = field(default_factory=list)  # with no-fix: its alternatives (argv after `sglang serve`)
    finding_ids: frozenset[str] = frozenset()  # every rule in the report, of any stage and severity

    @property
    def cannot_verify(self) -> bool:
        """The report says which of this release's rule groups it could not run (rule H3D921)."""
        return CANNOT_VERIFY in self.finding_ids


# h3doctor's "cannot verify for sglang X: ... are verified only for other releases" warning
CANNOT_VERIFY = "H3D921"


def launch_errors(result) -> list[Any]:
    return [f for f in result.evaluation.findings if f.rule.stage == "launch" and f.severity == "error"]


class Doctor:
    """h3doctor judging for one sglang release, as `h3doctor check --sglang-version VERSION` does:
    that release's flag table, the shipped rules that apply to it, and the release as the target
    (`release.*` facts: registered models, flags of other releases, "cannot verify"). Profiles cached."""

    def __init__(self, version: str = "0.5.23"):
        from h3doctor.engine.ruleset import load_rules
        from h3doctor.sglang import releases
        from h3doctor.sglang.flagtable import load_flag_table

        self.version = version
        self.release = releases.target(version, None)
        self.table = load_flag_table(self.release.table_version)
        # check() selects the rules by the table's release: a newer release would be judged with
        # the newest table's rules, which is not a conformance result for it
        if self.table.sglang_version != version:
            raise ValueError(f"h3doctor has no flag table for sglang {version} (it would judge with "
                             f"{self.table.sglang_version}'s)")
        self.rules = load_rules()
        self._profiles: dict[str, Any] = {}

    def check(self, tokens: list[str], hw: Any, env: dict[str, str] | None = None, intent: dict[str, Any] | None = None):
        from h3doctor.engine.check import check

        return check(tokens, hw, self.rules, self.table, env or {}, intent, release=self.release)

    def profile(self, name: str):
        from h3doctor.host.profiles import load_profile

        if name not in self._profiles:
            self._profiles[name] = load_profile(name)
        return self._profiles[name]

    def run(self, case: dict[str, Any]) -> Outcome:
        tokens = ["sglang", "serve", *case["argv"]]
        with case_files(case.get("files")):
            try:
                result = self.check(tokens, self.profile(case["profile"]))
            except Exception as exc:  # noqa: BLE001 - an h3doctor crash is a disagreement too
                return Outcome(case, True, None, [], None, "crash", crash=f"{type(exc).__name__}: {exc}")
        errors = launch_errors(result)
        # h3doctor's proposal for the launch: its corrected command, or, when it gives up on a
        # finding it cannot fix (no-fix), the "nearest" command with every fixable finding fixed
        proposal, kind = result.corrected_argv, "corrected"
        if proposal is None and getattr(result, "nearest_argv", None) is not None:
            proposal, kind = result.nearest_argv, "nearest"
        corrected = _after_serve(proposal) if proposal is not None else None
        alternatives = [_after_serve(alt.argv) for alt in getattr(result, "alternatives", ())]
        unfixable = set(getattr(result, "unfixable", ()) or ())
        unfixable_launch = sorted({f.rule.id for f in result.evaluation.findings
                                   if f.rule.id in unfixable and f.rule.stage == "launch"})
        return Outcome(case, bool(errors), errors[0] if errors else None, errors, corrected, result.fix_status,
                       gives_up=list(result.gives_up or []), corrected_kind=kind if corrected else None,
                       unfixable_launch=unfixable_launch, alternatives=alternatives,
                       finding_ids=frozenset(f.rule.id for f in result.evaluation.findings))


def _after_serve(argv: list[str]) -> list[str]:
    argv = list(argv)
    if argv[:2] == ["sglang", "serve"]:
        return argv[2:]
    return ["<unexpected form>", *argv]  # h3doctor answers in the form it was given, always `sglang serve`


def example_alternatives(doctor: Doctor) -> list[dict[str, Any]]:
    """The alternatives `check` offers on the rule files' failing examples (`sglang serve` ones),
    as cases (id `<rule>::<example>~alt<N>`): the recorder runs them through sglang too, so each
    no-fix class a rule answers with alternatives is covered even where no generated case meets it."""
    import shlex as _shlex

    out = []
    for rule in doctor.rules:
        if not rule.alternatives:
            continue
        for ex in rule.examples:
            argv = _shlex.split(ex["argv"])
            if ex["expect"] != "fail" or argv[:2] != ["sglang", "serve"] or "{" in ex["argv"]:
                continue  # a config or checkpoint file of the example is not a recorded case
            hw = doctor.profile(ex["profile"])
            if ex.get("hw"):
                from dataclasses import replace

                hw = replace(hw, **ex["hw"])
            result = doctor.check(argv, hw, ex.get("env", {}), ex.get("intent", {}))
            for n, alt in enumerate(result.alternatives, 1):
                out.append({"id": f"{rule.id}::{ex['name']}~alt{n}", "kind": "example-alternative",
                            "profile": ex["profile"], "argv": _after_serve(alt.argv)})
    return out


@dataclass
class Report:
    n_cases: int = 0
    judged: int = 0
    env_skipped: list[dict[str, Any]] = field(default_factory=list)
    verdict_agree: int = 0
    verdict_disagreements: list[dict[str, Any]] = field(default_factory=list)
    both_reject: int = 0
    first_error_agree: int = 0
    first_error_stage_agree: int = 0
    first_error_disagreements: list[dict[str, Any]] = field(default_factory=list)
    corrected_needed: int = 0
    corrected_accepted: int = 0
    corrected_env_skipped: int = 0
    corrected_failures: list[dict[str, Any]] = field(default_factory=list)
    no_fix_offered: list[dict[str, Any]] = field(default_factory=list)
    alternatives_offered: int = 0
    alternatives_accepted: int = 0
    alternatives_env_skipped: int = 0
    alternative_failures: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)  # every case h3doctor crashed on, judged or not

    @staticmethod
    def pct(a: int, b: int) -> float:
        return 100.0 * a / b if b else 100.0

    @property
    def false_blocks(self) -> list[dict[str, Any]]:
        """sglang accepts, h3doctor rejects (or crashes): the second-worst bug."""
        return [d for d in self.verdict_disagreements if d["case"]["ok"]]

    @property
    def false_all_clears(self) -> list[dict[str, Any]]:
        """sglang rejects, h3doctor finds no launch-stage error."""
        return [d for d in self.verdict_disagreements if not d["case"]["ok"] and d["outcome"].crash is None]

    @property
    def unmarked_misses(self) -> list[dict[str, Any]]:
        """False all-clears whose report does not even say "cannot verify": the worst bug."""
        return [d for d in self.false_all_clears if not d["outcome"].cannot_verify]

    def corrected_failure_kinds(self) -> dict[str, int]:
        kinds = {"rejected by sglang": 0, "none proposed": 0, "not recorded": 0}
        for d in self.corrected_failures:
            if d["fixed"] is not None:
                kinds["rejected by sglang"] += 1
            elif d["outcome"].corrected is None:
                kinds["none proposed"] += 1
            else:
                kinds["not recorded"] += 1
        return kinds

    @property
    def corrected_unrecorded(self) -> list[dict[str, Any]]:
        return [d for d in self.corrected_failures if d["fixed"] is None and d["outcome"].corrected is not None]

    def summary(self) -> str:
        return (
            f"cases {self.n_cases} (judged {self.judged}, {len(self.env_skipped)} left out: sglang's verdict "
            f"depends on the recording environment: optional kernel packages, or the offline hub for a model id "
            f"the release does not register)\n"
            f"verdict agreement: {self.verdict_agree}/{self.judged} = "
            f"{self.pct(self.verdict_agree, self.judged):.1f}% (false blocks: {len(self.false_blocks)}; "
            f"false all-clears: {len(self.false_all_clears)}, {len(self.unmarked_misses)} of them without "
            f"\"cannot verify\"; h3doctor crashes: {len(self.crashes)})\n"
            f"first-error agreement (both reject, same message): {self.first_error_agree}/{self.both_reject} = "
            f"{self.pct(self.first_error_agree, self.both_reject):.1f}% "
            f"(same stage: {self.pct(self.first_error_stage_agree, self.both_reject):.1f}%)\n"
            f"corrected commands accepted by sglang: {self.corrected_accepted}/{self.corrected_needed} = "
            f"{self.pct(self.corrected_accepted, self.corrected_needed):.1f}%"
            + (f" ({self.corrected_env_skipped} not judged: kernel-package dependent)"
               if self.corrected_env_skipped else "")
            + ("" if not self.corrected_failures else " (not accepted: " + ", ".join(
                f"{n} {k}" for k, n in self.corrected_failure_kinds().items() if n) + ")")
            + f"\nno fix offered (h3doctor: no change of flags passes sglang's launcher): {len(self.no_fix_offered)} "
            + f"({', '.join(sorted({r for d in self.no_fix_offered for r in d['outcome'].unfixable_launch}))})"
            + f"\nalternatives (with no-fix) accepted by sglang: {self.alternatives_accepted}/{self.alternatives_offered}"
            + (f" ({self.alternatives_env_skipped} not judged: kernel-package dependent)" if self.alternatives_env_skipped else "")
        )


def sglang_says(rec: dict[str, Any]) -> str:
    if rec.get("ok"):
        return "accepts"
    return f"rejects at {rec.get('code')} ({rec.get('stage')}): {rec.get('exc')}: {rec.get('msg')}"


def doctor_says(o: Outcome) -> str:
    if o.crash:
        return f"h3doctor crashed: {o.crash}"
    if not o.rejects:
        return "accepts"
    f = o.first
    return f"rejects, first {f.rule.id} [{','.join(map(str, f.rule.catalog))}] at {f.rule.sglang_stage}: {f.message}"


def build_lookup(goldens: list[dict[str, Any]], corrected: list[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """(profile, argv, files) -> recorded sglang result, over the cases and the corrected commands."""
    by_id = {r["id"]: r for r in goldens}
    lookup = {case_key(r["profile"], r["argv"], r.get("files")): r for r in goldens}
    for r in corrected:
        src = by_id.get(r.get("of"))  # a rule example's alternative (no `of`) is looked up by its own profile
        if src is None:
            continue
        lookup.setdefault(case_key(src["profile"], r["argv"], src.get("files")), r)
    return lookup


def compare(goldens: list[dict[str, Any]], corrected: list[dict[str, Any]], doctor: Doctor | None = None) -> Report:
    doctor = doctor or Doctor()
    lookup = build_lookup(goldens, corrected)
    rep = Report(n_cases=len(goldens))
    for rec in goldens:
        o = doctor.run(rec)
        if o.crash is not None:
            rep.crashes.append({"case": rec, "outcome": o})
        if rec.get("env"):
            rep.env_skipped.append(rec)
        else:
            rep.judged += 1
            sglang_rejects = not rec["ok"]
            if o.crash is None and o.rejects == sglang_rejects:
                rep.verdict_agree += 1
            else:
                rep.verdict_disagreements.append({"case": rec, "outcome": o})
            if sglang_rejects and o.rejects and o.first is not None:
                rep.both_reject += 1
                same = same_message(o.first.message, rec.get("msg"))
                if same:
                    rep.first_error_agree += 1
                else:
                    rep.first_error_disagreements.append({"case": rec, "outcome": o})
                if o.first.rule.sglang_stage == rec.get("code"):
                    rep.first_error_stage_agree += 1
        _judge_alternatives(rep, rec, o, lookup)
        # corrected commands: required for every case sglang rejects; every correction
        # h3doctor proposes (also for cases sglang accepts) must be accepted by sglang
        needs = (not rec["ok"] and not rec.get("env")) or o.corrected is not None
        if not needs:
            continue
        if o.corrected_kind != "corrected" and o.unfixable_launch:
            # h3doctor says no change of flags can pass sglang's launcher here (no model given, a
            # --config file it cannot read) and offers no corrected command (its "nearest" launch
            # still carries that error): nothing for sglang to accept
            rep.no_fix_offered.append({"case": rec, "outcome": o})
            continue
        rep.corrected_needed += 1
        if o.corrected is None:
            why = f"no corrected command (fix status {o.fix_status})"
            if o.gives_up:
                why += f"; gives up: {o.gives_up[0]}"
            rep.corrected_failures.append({"case": rec, "outcome": o, "why": why, "fixed": None})
            continue
        fixed = lookup.get(case_key(rec["profile"], o.corrected, rec.get("files")))
        if fixed is None:
            rep.corrected_failures.append({"case": rec, "outcome": o, "fixed": None,
                                           "why": "corrected command not recorded through sglang: rerun "
                                                  "tools/conformance/record.py --corrected-only"})
        elif fixed.get("env"):
            # sglang's verdict on the corrected command depends on optional kernel packages
            rep.corrected_needed -= 1
            rep.corrected_env_skipped += 1
        elif not fixed.get("ok"):
            rep.corrected_failures.append({"case": rec, "outcome": o, "fixed": fixed,
                                           "why": f"sglang {sglang_says(fixed)}"})
        else:
            rep.corrected_accepted += 1
    return rep


def _judge_alternatives(rep: Report, rec: dict[str, Any], o: Outcome, lookup: dict[tuple, dict[str, Any]]) -> None:
    """Every alternative h3doctor offers must pass sglang's launcher too (it judges the launch
    stage only: a worker or first-request finding an alternative answers is h3doctor's word)."""
    for argv in o.alternatives:
        rep.alternatives_offered += 1
        fixed = lookup.get(case_key(rec["profile"], argv, rec.get("files")))
        if fixed is None:
            rep.alternative_failures.append({"case": rec, "argv": argv, "why": "alternative not recorded through sglang: "
                                             "rerun tools/conformance/record.py --corrected-only"})
        elif fixed.get("env"):
            rep.alternatives_offered -= 1
            rep.alternatives_env_skipped += 1
        elif not fixed.get("ok"):
            rep.alternative_failures.append({"case": rec, "argv": argv, "why": f"sglang {sglang_says(fixed)}"})
        else:
            rep.alternatives_accepted += 1


def format_alternatives(rep: Report, limit: int | None = None) -> str:
    return "\n".join(f"{d['case']['id']} [{d['case']['profile']}] {command_of(d['case']['argv'])}"
                     f"\n    alternative: {command_of(d['argv'])}\n    {d['why']}" for d in rep.alternative_failures[:limit])


def format_verdicts(rep: Report, limit: int | None = None) -> str:
    lines = []
    for d in rep.verdict_disagreements[:limit]:
        rec, o = d["case"], d["outcome"]
        cfg = rec.get("files")
        lines.append(f"{rec['id']} [{rec['profile']}] {command_of(rec['argv'])}"
                     + (f"  (config {cfg[0]['name']}: {cfg[0]['text'].strip()!r})" if cfg else "")
                     + f"\n    sglang {sglang_says(rec)}\n    h3doctor {doctor_says(o)}")
    return "\n".join(lines)


def format_first_errors(rep: Report, limit: int | None = None) -> str:
    lines = []
    for d in rep.first_error_disagreements[:limit]:
        rec, o = d["case"], d["outcome"]
        lines.append(f"{rec['id']} [{rec['profile']}] {command_of(rec['argv'])}\n    sglang {sglang_says(rec)}"
                     f"\n    h3doctor {doctor_says(o)}")
    return "\n".join(lines)


def format_corrected(rep: Report, limit: int | None = None) -> str:
    lines = []
    for d in rep.corrected_failures[:limit]:
        rec, o = d["case"], d["outcome"]
        fixed = command_of(o.corrected) if o.corrected is not None else "-"
        lines.append(f"{rec['id']} [{rec['profile']}] {command_of(rec['argv'])}"
                     f"\n    {o.corrected_kind or 'corrected'}: {fixed}\n    {d['why']}")
    return "\n".join(lines)


def grouped(rep: Report, examples: int = 2) -> str:
    """The three disagreement lists grouped by a cause key (sglang's message template and
    h3doctor's first rule), biggest group first, with example commands: the raw material of
    tests/conformance/DISAGREEMENTS.md."""
    out: list[str] = []

    def section(title: str, items, key, show):
        groups: dict[tuple, list] = {}
        for d in items:
            groups.setdefault(key(d), []).append(d)
        out.append(f"## {title} ({len(items)})\n")
        for k, ds in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            out.append(f"- {len(ds)} x " + " | ".join(str(x) for x in k))
            for d in ds[:examples]:
                out.append("    " + show(d).replace("\n", "\n    "))
        out.append("")

    def first_id(o: Outcome) -> str:
        return f"{o.first.rule.id}" if o.first is not None else ("h3doctor crash" if o.crash else "h3doctor accepts")

    section("Verdict disagreements", rep.verdict_disagreements,
            lambda d: ("sglang accepts" if d["case"]["ok"] else f"sglang: {message_template(d['case'].get('msg'))}",
                       first_id(d["outcome"])),
            lambda d: f"{d['case']['id']} [{d['case']['profile']}] {command_of(d['case']['argv'])}")
    section("First-error disagreements (both reject)", rep.first_error_disagreements,
            lambda d: (f"sglang: {message_template(d['case'].get('msg'))}", f"h3doctor {first_id(d['outcome'])}: "
                       f"{message_template(d['outcome'].first.message)}"),
            lambda d: f"{d['case']['id']} [{d['case']['profile']}] {command_of(d['case']['argv'])}")
    section("Corrected commands not accepted", rep.corrected_failures,
            lambda d: (d["why"].split(";")[0] if d["fixed"] is None else
                       f"sglang: {message_template(d['fixed'].get('msg'))}", first_id(d["outcome"]),
                       (d["outcome"].gives_up or [""])[0][:70]),
            lambda d: f"{d['case']['id']} [{d['case']['profile']}] {command_of(d['case']['argv'])}"
                      + (f"\n  -> {command_of(d['outcome'].corrected)}" if d["outcome"].corrected else ""))
    return "\n".join(out)
