"""One `h3doctor explain`: the text in, the rules its errors name, and — when the launch is
known — the same check `check` runs on it, with its corrected command. The report is data;
renderers (output/explain_text.py, JSON) only read it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from h3doctor.explain import crashes, logread, match, oom, patterns, unfilled
from h3doctor.explain.launch import from_log
from h3doctor.explain.source import Text
from h3doctor.errors import UsageError

SCHEMA_VERSION = 1


@dataclass
class ExplainRequest:
    source: Text
    launch: list[str] = field(default_factory=list)  # the words after `--`
    profile: str | None = None
    sglang_version: str | None = None
    rules_dir: str | None = None
    use_probe_cache: bool = True
    intent: dict[str, Any] = field(default_factory=dict)
    rules: list[Any] | None = None  # already loaded (a caller explaining many texts); else from rules_dir


@dataclass
class ExplainReport:
    source: Text
    lines: int
    matches: list[match.Match]
    unmatched: list[logread.ErrorLine]
    rules: dict[str, Any]  # rule id -> Rule, for every match
    release: dict[str, Any]  # {version, inferred, why}
    launch: dict[str, Any] | None  # {argv, source, line}
    check: Any = None  # request.Outcome of the launch, when there is one
    notes: list[str] = field(default_factory=list)
    causes: list[crashes.Hit] = field(default_factory=list)  # what killed it, where no rule judges it (causes.json)

    @property
    def explained(self) -> bool:
        """A rule or a cause is named (a pointer to the lines to paste names nothing)."""
        return bool(self.matches) or any(not crashes.causes()[h.signature.cause].get("alone") for h in self.causes)

    @property
    def corrected_argv(self) -> list[str] | None:
        return self.check.result.corrected_argv if self.check is not None else None

    @property
    def fix_status(self) -> str | None:
        return self.check.result.fix_status if self.check is not None else None

    def confirmed(self, rule_id: str) -> bool | None:
        """Whether the check of the launch reports this rule too (None: no launch checked)."""
        if self.check is None:
            return None
        return any(f.rule.id == rule_id for f in self.check.result.evaluation.findings)

    def as_dict(self) -> dict[str, Any]:
        result = self.check.result if self.check is not None else None
        return {
            "schema_version": SCHEMA_VERSION,
            "input": {"origin": self.source.origin, "bytes": self.source.size, "lines": self.lines,
                      "notes": list(self.source.notes)},
            "explained": self.explained,
            "matches": [self._match(m) for m in self.matches],
            "unmatched": [{"line": e.line, "text": e.text} for e in self.unmatched[:20]],
            "release": self.release,
            "launch": self.launch,
            "corrected_argv": self.corrected_argv,
            "corrected_command": result.corrected_command if result is not None else None,
            "corrected_unverified": result.corrected_unverified if result is not None else [],
            "fix_status": self.fix_status,
            "check_findings": [{"rule": f.rule.id, "severity": f.severity, "message": f.message}
                               for f in result.evaluation.findings] if result is not None else None,
            "check_summary": _headline(result),
            "notes": self.notes,
            "causes": [_cause(h) for h in self.causes],
        }

    def _match(self, m: match.Match) -> dict[str, Any]:
        rule = self.rules[m.rule]
        # the rule's why and fix_note have placeholders: filled from the check of the launch where
        # it gives the values (its finding's rule reads as for the check's release), else neutral words
        finding = next((f for f in self.check.result.evaluation.findings if f.rule.id == m.rule), None) \
            if self.check is not None else None
        version = self.release.get("version")
        text = finding.rule if finding is not None else rule.for_version(version) if version else rule
        context = self.check.result.evaluation.context if self.check is not None else \
            ({"release.version": version} if version else {})
        return {"rule": m.rule, "title": rule.title, "severity": rule.severity, "stage": rule.stage,
                "exact": m.exact, "how": m.how, "releases": list(m.releases), "captured": m.captured,
                "line": m.line, "text": m.text, "count": m.count, "why": unfilled.fill(text.why, context),
                "fix_note": unfilled.fill(text.fix_note, context) if text.fix_note else text.fix_note,
                "confirmed": self.confirmed(m.rule), "notes": m.notes, "by": m.by}


def _headline(result: Any) -> dict[str, str] | None:
    """The check's first line as `check` prints it (output/verdict.summary): its verdict and text."""
    if result is None:
        return None
    from h3doctor.output.json_report import effective_config, launch_summary

    said = launch_summary(result, effective_config(result))
    return {"verdict": said["verdict"], "text": said["text"]}


def run(request: ExplainRequest) -> ExplainReport:
    from h3doctor.engine.ruleset import load_rules
    from pathlib import Path

    from h3doctor.sglang import releases
    from h3doctor.sglang.flagtable import load_flag_table

    rules = request.rules if request.rules is not None else load_rules(Path(request.rules_dir) if request.rules_dir else None)
    by_id = {r.id: r for r in rules}
    compiled = patterns.compiled(rules)
    log = logread.read_log(request.source.text, patterns.quoted(compiled))
    found, unmatched = match.match_errors(log.errors, compiled)
    found += [m for m in match.oom_matches(oom.find(log.lines)) if m.rule in by_id]
    found, causes = _crashes(found, crashes.scan(log.lines, crashes.signatures(rules)))
    release = _release(request.sglang_version, found, rules, log.lines)
    notes = list(log.notes)
    launch, words = None, list(request.launch)
    if words:
        launch = {"argv": words, "source": "given after --", "line": None}
    else:
        words, where, problem = from_log(log, load_flag_table(releases.target(release["version"], None).table_version))
        if problem:
            notes.append(f"a launch in the log could not be read: {problem}")
        if words:
            launch = {"argv": words, "source": where.source, "line": where.line}
            if where.source == "server_args":
                how = "generate's own frames are in the log" if words[1] == "generate" else "no frame of generate's is"
                notes.append(f"the launch was rebuilt from the server_args line as `sglang {words[1]}` ({how}): sglang "
                             "logs resolved values, so the corrected command is of that rebuilt launch, not of the "
                             "command as typed")
    shared = sorted({m.line for m in found if m.how != "oom" and sum(o.line == m.line and o.how != "oom" for o in found) > 1})
    if shared and not words:
        notes.append(f"several rules print the words of line(s) {', '.join(map(str, shared[:5]))}: give the launch "
                     "after `--` and the check says which one this is (`confirmed`)")
    outcome = None
    if words:
        outcome = _check(request, words, release["version"], from_log=launch["source"] != "given after --", notes=notes)
    if outcome is not None and release["version"] is None:
        ctx = outcome.result.evaluation.context
        release = {**release, "version": ctx.get("release.version"),
                   "why": f"the check's release ({ctx.get('release.source', 'default')})"}
    confirmed = {f.rule.id for f in outcome.result.evaluation.findings} if outcome is not None else None
    found = first_things_first(match.oom_as_checked(found, confirmed), confirmed, release["version"])
    return ExplainReport(request.source, len(log.lines), found, unmatched, by_id, release, launch, outcome, notes,
                         causes)


FOREIGN_FLAG_RULE = "H3D012"  # "a flag of another release": its words are argparse's, shared with H3D020 and H3D010


def first_things_first(found: list[match.Match], confirmed: set[str] | None, version: str | None) -> list[match.Match]:
    """The matches a user reads first first: with the launch checked, the rules its check reports
    (in line order) before the rest; H3D012 only where the check reports it, or, without a check,
    where a flag the words name exists in another release and not in this one (unknown release:
    not in every release)."""
    if confirmed is not None:
        found = [m for m in found if m.rule != FOREIGN_FLAG_RULE or m.rule in confirmed]
        return sorted(found, key=lambda m: (m.rule not in confirmed, m.line, m.rule))
    return [m for m in found if m.rule != FOREIGN_FLAG_RULE or _foreign(m, version)]


def _foreign(m: match.Match, version: str | None) -> bool:
    """Whether H3D012's `unrecognized arguments` words name a flag of another release. Its other
    wordings (an ambiguous prefix, an invalid choice) turn on the release's choices and prefixes,
    not on a flag's existence: kept."""
    from h3doctor.sglang.releases import history, known_releases

    if "arguments" not in m.captured:
        return True
    options = history()["options"]
    everywhere = set(known_releases())
    for value in (m.captured["arguments"],):
        for word in value.replace(",", " ").split():
            flag = word.strip("'\"[]()").split("=", 1)[0]
            having = set(options.get(flag, {}).get("releases", ())) & everywhere
            if having and (version not in having if version else having != everywhere):
                return True
    return False


def _crashes(found: list[match.Match], hits: list[crashes.Hit]) -> tuple[list[match.Match], list[crashes.Hit]]:
    """The matches with the crash signatures' added (a rule's, unless its message matched already),
    and the causes no rule judges: a cause that `shadows` a rule drops that rule's match when the
    captured value lies in its range; an `alone` cause only when nothing else is explained."""
    known = {m.rule for m in found}
    causes = [h for h in hits if h.signature.cause]
    for hit in hits:
        sig = hit.signature
        if sig.rule and sig.rule not in known:
            notes = [f"probe check: {sig.probe}"] if sig.probe else []
            found.append(match.Match(sig.rule, False, "crash", (), {"signature": sig.text}, hit.line, hit.text,
                                     hit.count, notes))
            known.add(sig.rule)
    for hit in list(causes):
        shadow = crashes.causes()[hit.signature.cause].get("shadows")
        if shadow:
            found = [m for m in found if not (m.rule == shadow["rule"] and _within(m.captured.get(shadow["hole"]), shadow))]
            if any(m.rule == shadow["rule"] for m in found):  # the rule's own case (a port no socket binds)
                causes.remove(hit)
    alone = [h for h in causes if crashes.causes()[h.signature.cause].get("alone")]
    if found or len(alone) < len(causes):
        causes = [h for h in causes if h not in alone]
    found.sort(key=lambda m: (m.line, m.rule))
    return found, causes


def _within(value: str | None, bounds: dict[str, int]) -> bool:
    try:
        return bounds["min"] <= int(value or "") <= bounds["max"]
    except ValueError:
        return False


def _cause(hit: crashes.Hit) -> dict[str, Any]:
    cause = crashes.causes()[hit.signature.cause]
    return {"cause": cause["id"], "title": cause["title"], "severity": cause["severity"], "line": hit.line, "text": hit.text, "count": hit.count,
            "signature": hit.signature.text, "why": cause["why"], "probe": cause["probe"] or None, "fix": cause["fix"]}


def _check(request: ExplainRequest, words: list[str], version: str | None, *, from_log: bool, notes: list[str]):
    from h3doctor.request import CheckRequest, run

    check = CheckRequest(tokens=words, profile=request.profile, sglang_version=version, rules_dir=request.rules_dir,
                         use_probe_cache=request.use_probe_cache, intent=dict(request.intent))
    if not from_log:
        return run(check)
    try:
        return run(check)
    except UsageError as exc:  # a launch read from a log is not the user's option: say so, go on
        notes.append(f"the launch in the log could not be checked: {exc}")
        return None


def _release(option: str | None, found: list[match.Match], rules: list[Any], lines: list[str]) -> dict[str, Any]:
    """The release to judge with: the option, else the one the log names (its version line, an
    image tag, an install path in a traceback: placed.py), else the one the wording says (when only
    some releases print the words that matched, the span said when it cannot be narrowed), else
    none (check then picks its default)."""
    if option:
        return {"version": option, "inferred": False, "why": "--sglang-version"}
    from h3doctor.explain.placed import named_release
    from h3doctor.sglang.releases import key, known_releases

    version, named_why = named_release(lines, known_releases())
    if version:
        return {"version": version, "inferred": True, "why": named_why}
    worded = [m for m in found if m.releases]
    if not worded:
        return {"version": None, "inferred": False, "why": named_why or "no wording to tell the release by"}
    common = set.intersection(*(set(m.releases) for m in worded))
    by_id = {r.id: r for r in rules}
    universe = {v for m in worded for v in known_releases() if by_id[m.rule].in_release(v)}
    if not common or common == universe:
        ordered = sorted(universe, key=key)
        return {"version": None, "inferred": False,
                "why": (f"every release these rules cover (sglang {ordered[0]} to {ordered[-1]}) prints these words: "
                        "give --sglang-version to judge with one" if common else
                        "the matched words come from different releases")}
    newest = max(common, key=key)
    span = ", ".join(sorted(common, key=key))
    return {"version": newest, "inferred": True,
            "why": f"inferred from the wording: only sglang {span} print{'s' if len(common) == 1 else ''} these words"}
