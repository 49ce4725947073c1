"""`h3doctor export vap`: a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) whose CEL
judges the launch-word rules that need neither the hardware nor sglang's resolution, generated from
each release's flag table (docs/kubernetes.md, "Without a webhook").

What CEL can judge is a container whose words (command + args) are `sglang serve MODEL …` for a
MiniMax-H3 model, with no `--` and no `$(VAR)` (the kubelet expands those after admission). Each
check below only ever reports what lint reports on the same container: a word it cannot read for
certain (an abbreviation with `=value`, a `--component-*.<c>` map, a value starting with `-`) is
left alone, never called clean. The policy sees no comments, so lint's `# h3doctor: ignore[...]`
does not reach it.

CEL used: the standard language, RE2 `matches`, and Kubernetes' list library `indexOf` (in the
CEL environment of every release with ValidatingAdmissionPolicy v1, Kubernetes 1.30 on).
"""

from __future__ import annotations

import json
import re
from typing import Any

from h3doctor.engine.ruleset import load_rules
from h3doctor.errors import UsageError
from h3doctor.integrations.vap_rules import Untranslatable, applies_somewhere, translate
from h3doctor.integrations.vap_values import Values
from h3doctor.sglang import release_files
from h3doctor.sglang.argv import DYNAMIC_MAPS
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.images import sglang_repositories, tag_pattern
from h3doctor.verified import NEWEST_VERIFIED

API_VERSION = "admissionregistration.k8s.io/v1"
_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\Z")  # objects are named NAME-errors, NAME-warnings
# The kinds lint's Kubernetes reader takes a pod spec from, and where (inputs/kubernetes.py).
_TEMPLATES = {
    "Pod": "object.spec",
    "Deployment": "object.spec.template.spec",
    "StatefulSet": "object.spec.template.spec",
    "ReplicaSet": "object.spec.template.spec",
    "DaemonSet": "object.spec.template.spec",
    "Job": "object.spec.template.spec",
    "CronJob": "object.spec.jobTemplate.spec.template.spec",
}
_LWS = "object.spec.leaderWorkerTemplate"
RESOURCE_RULES = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]},
    {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
     "resources": ["deployments", "statefulsets", "replicasets", "daemonsets"]},
    {"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["jobs", "cronjobs"]},
    {"apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
     "resources": ["leaderworkersets"]},
]
# An int argparse takes is one Python's int() reads: spaces, a sign, any script's digits, underscores.
# Broader than int() (a lone "_" passes), so a value this refuses int() refuses too.
_INT = r"^\s*[+-]?[\p{Nd}_]+\s*$"
_INLINE_INT = r"^[^=]*=\s*[+-]?[\p{Nd}_]+\s*$"


def _lit(value: Any) -> str:
    """A CEL literal: strings, lists and maps of them (JSON's escapes are CEL's)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return json.dumps(value)


def _var(release: str, what: str) -> str:
    return f"variables.{what}_{release.replace('.', '_')}"


def _containers_of(spec: str) -> str:
    return (f"(has({spec}.initContainers) ? {spec}.initContainers : []) + "
            f"(has({spec}.containers) ? {spec}.containers : [])")


# Bounds on what the policy reads, so a hostile object cannot run it past Kubernetes' CEL budgets
# (a PerCallLimit of 1,000,000 per expression, a RuntimeCELCostBudget of 10,000,000 per policy
# evaluation; docs/kubernetes.md "Cost and size"). An object past them gets no
# verdict from the policy (lint still judges it): more containers than MAX_CONTAINERS, a launch of
# more than MAX_WORDS words or with a word longer than MAX_WORD characters.
MAX_CONTAINERS = 8
MAX_WORDS = 96
MAX_WORD = 512


def _containers() -> str:
    listed = f"({_all_containers()})"
    return f"size({listed}) <= {MAX_CONTAINERS} ? ({listed}) : []"


def _all_containers() -> str:
    by_kind = [f"object.kind in {_lit([k for k, v in _TEMPLATES.items() if v == path])} ? {_containers_of(path)}"
               for path in dict.fromkeys(_TEMPLATES.values())]
    # a LeaderWorkerSet: the leader's template where it has one, and the workers' (lint reads both)
    lws = (f"object.kind == 'LeaderWorkerSet' && has({_LWS}.workerTemplate) ? "
           f"(has({_LWS}.leaderTemplate) ? {_containers_of(_LWS + '.leaderTemplate.spec')} : []) + "
           f"{_containers_of(_LWS + '.workerTemplate.spec')}")
    return " : ".join([*by_kind, lws, "[]"])


_WORDS = "(has(c.command) ? c.command : []) + (has(c.args) ? c.args : [])"


def _image_pattern(version: str | None) -> str:
    """An RE2 pattern for sglang's images (images.json) whose tag names `version` (None: any release)."""
    repositories = sglang_repositories()
    tag = tag_pattern("release").strip("^$")
    if version is not None:
        tag = re.sub(r"\(\?P<version>[^)]*\)", re.escape(version).replace("\\.", "\\."), tag)
    names = "|".join(re.escape(r) for r in sorted(repositories))
    # a registry host in front (docker.io/, a mirror's host:port) is not part of the name; a digest follows
    return rf"^(?:[^/]*[.:][^/]*/|localhost/)?(?i:{names}):{tag}(?:@.*)?$"


def _selects(version: str) -> str:
    """CEL: container c runs `version` as lint reads its image (sglang/releases.py image_target):
    a release tag is that release; `latest`, dev builds and other images are judged as the newest
    verified release; a tag naming a release without a flag table is not judged here."""
    pinned = f"has(c.image) && c.image.matches({_lit(_image_pattern(version))})"
    if version != NEWEST_VERIFIED:
        return pinned
    return f"(!has(c.image) || ({pinned}) || !c.image.matches({_lit(_image_pattern(None))}))"


class _Release:
    """One release's flag facts, as the CEL lists the checks read."""

    def __init__(self, version: str, every: set[str]) -> None:
        table = load_flag_table(version)
        options = table.options_for("serve")
        self.version = version
        self.flags = sorted(options)
        self.models = self.models_of(version)
        one = {o: a for o, a in options.items() if a.action == "store" and a.nargs is None}
        self.choices = {o: [str(c) for c in a.choices] for o, a in one.items()
                        if a.choices and a.type in (None, "str")}
        self.ints = sorted(o for o, a in one.items() if a.type == "int" and not a.choices)
        self.no_value = sorted(o for o, a in options.items() if a.action in ("store_true", "store_false"))
        self.strs = sorted(o for o, a in one.items() if a.type in (None, "str") and not a.choices)
        self.others = sorted(every - set(options))  # flags only other releases have (rule H3D012)
        self.values = Values(version, self.models)

    @staticmethod
    def models_of(version: str) -> list[str]:
        serve = _raw_serve(version)
        return sorted(m for m, v in (serve.get("model_extra") or {}).items() if "H3" in v.get("pipeline", ""))

    def variables(self) -> list[dict[str, str]]:
        v = self.version
        inline = [f"--model-path={m}" for m in self.models]
        judged = (f"size(ws) > 2 && size(ws) <= {MAX_WORDS} && ws.all(w, size(w) <= {MAX_WORD}) && "
                  f"ws[0] == 'sglang' && ws[1] == 'serve' && "
                  f"!ws.exists(w, w == '--' || w.contains('$(')) && "
                  f"(ws[2] in {_lit(self.models)} || ws.exists(w, w in {_lit(inline)}) || "
                  f"(ws.exists(w, w == '--model-path') && ws.exists(w, w in {_lit(self.models)})))")
        launches = (f"variables.containers.filter(c, {_selects(v)}).map(c, {_WORDS})"
                    f".filter(ws, {judged})")
        lists = {"flags": self.flags, "joined": "\n" + "\n".join(self.flags), "others": self.others, "choices": self.choices, "ints": self.ints,
                 "novalue": self.no_value, "strs": self.strs}
        # each set once, as a variable (a literal inside a comprehension is built again for every
        # word), and as a map: `in` on a map is a lookup, on a list a scan
        sets = {k: dict.fromkeys(x, True) if isinstance(x, list) else x for k, x in lists.items()}
        values = self.values.expression(_var(v, "launches"), _var(v, "flags"))  # fills self.values.constants
        constants = [{"name": k, "expression": x} for k, x in self.values.constants.items()]
        return [{"name": _var(v, k).split(".")[1], "expression": _lit(x)} for k, x in sets.items()] + constants + [
            {"name": _var(v, "launches").split(".")[1], "expression": launches},
            {"name": _var(v, "values").split(".")[1], "expression": values}]


def _raw_serve(version: str) -> dict[str, Any]:
    data = json.loads(release_files.shipped_text(version, "flags"))
    return data["parsers"]["serve"]


def _dynamic(w: str) -> str:
    prefixes = [p for _d, ps, _a, _m in DYNAMIC_MAPS for p in ps]
    suffixes = [a for _d, _p, a, _m in DYNAMIC_MAPS if a]
    return " || ".join([f"{w}.startsWith({_lit(p)})" for p in prefixes] + [f"{w}.endsWith({_lit(s)})" for s in suffixes])


def _then(cheap: str, costly: str) -> str:
    """`cheap && costly`, with `costly` evaluated only where `cheap` holds: CEL's && may evaluate
    both sides (cel-python does; a conditional evaluates one branch everywhere)."""
    return f"(({cheap}) ? ({costly}) : false)"


def _flag_word(w: str) -> str:
    """A word argparse reads as an option name, with no `=value` and no space (read for certain)."""
    return f"{w}.startsWith('--') && !{w}.contains('=') && !{w}.contains(' ')"


def _checks(r: _Release) -> list[tuple[str, str, str, str]]:
    """(rule, severity, CEL: the launch `ws` breaks it, CEL: the message's subject) for one release."""
    flags, joined, foreign, choices, ints, no_value, strs = (
        _var(r.version, k) for k in ("flags", "joined", "others", "choices", "ints", "novalue", "strs"))
    # Whether a word begins some flag is a substring test on the flags joined by newlines (a word
    # holding a newline is left alone); only an abbreviation then scans the flags, for its count.
    # A scan per word would cost the API server's CEL budget 300 steps a word.
    begins = f"!w.contains('\\n') && {joined}.contains('\\n' + w)"
    word = f"{_flag_word('w')} && !(w in {flags})"  # an option name typed other than in full
    unknown = _then(word, f"!({_dynamic('w')}) && !w.contains('\\n') && !{joined}.contains('\\n' + w)")
    prefix = f"{flags}.filter(f, f.startsWith(w))"
    next_of = "ws[ws.indexOf(w) + 1]"
    has_value = f"ws.indexOf(w) + 1 < size(ws) && !{next_of}.startsWith('-')"
    abbrev = _then(f"{word} && {begins}", _then(
        f"size({prefix}) == 1",
        f"{prefix}[0] in {no_value} || " + _then(
            has_value, f"{prefix}[0] in {strs} || ({prefix}[0] in {ints} && {next_of}.matches('^[0-9]+$'))")))
    ambiguous = _then(f"{word} && {begins}", f"size({prefix}) > 1")
    inline = "w.startsWith('--') && w.contains('=')"
    bad_choice = (_then(f"w in {choices}", _then(has_value, f"!({next_of} in {choices}[w])")) + " || " +
                  _then(inline, f"{choices}.exists(g, w.startsWith(g + '=') && !(w in {choices}[g].map(x, g + '=' + x)))"))
    bad_int = (_then(f"w in {ints}", _then(has_value, f"!{next_of}.matches({_lit(_INT)})")) + " || " +
               _then(inline, f"{ints}.exists(g, w.startsWith(g + '=') && !w.matches({_lit(_INLINE_INT)}))"))
    return [
        ("H3D020", "error", _then(unknown, f"!(w in {foreign})"), "'error: unrecognized arguments: ' + {w}"),
        ("H3D012", "error", _then(unknown, f"w in {foreign}"),
         f"'error: unrecognized arguments: ' + {{w}} + ' (a flag of another sglang release than {r.version})'"),
        ("H3D010", "error", ambiguous, "'error: ambiguous option: ' + {w}"),
        ("H3D010", "error", f"({bad_choice})", "'error: argument ' + {w} + ': invalid choice'"),
        ("H3D010", "error", f"({bad_int})", "'error: argument ' + {w} + ': invalid int value'"),
        ("H3D021", "warning", abbrev,
         "{w} + ' is accepted by argparse as an abbreviation, but sglang only counts flags typed in full, "
         "so the value is silently dropped'"),
    ]


def _rule_checks(r: _Release, rules: Any) -> list[tuple[str, str, str, str]]:
    """(rule, severity, CEL over `l`: it fires, CEL: its message) for every rule the policy can
    judge on the launch's values in this release (vap_rules.py)."""
    out = []
    for rule in rules:
        try:
            fires, message = translate(rule, r.values)
        except Untranslatable:
            continue
        out.append((rule.id, rule.severity, fires, message))
    return out


def _findings(r: _Release, checks: list[tuple[str, str, str, str]]) -> dict[str, str]:
    """The variable of each launch's findings: one message per check, '' where it does not fire.
    Each condition is written once, and evaluated once per launch whichever policy reads it."""
    messages = ", ".join(f"({fires}) ? ({message}) : ''" for _r, _s, fires, message in checks)
    return {"name": _var(r.version, "findings").split(".")[1],
            "expression": f"{_var(r.version, 'values')}.map(l, [{messages}])"}


def _value_validation(r: _Release, rule: str, index: int) -> dict[str, str]:
    found = _var(r.version, "findings")
    return {
        "expression": f"{found}.all(f, f[{index}] == '')",
        "messageExpression": f"'h3doctor {rule}: ' + {found}.filter(f, f[{index}] != '')[0][{index}]",
        "reason": "Invalid",
    }


def _validation(r: _Release, rule: str, breaks: str, subject: str) -> dict[str, str]:
    launches = _var(r.version, "launches")
    first = f"{launches}.filter(ws, ws.exists(w, {breaks})).map(ws, ws.filter(w, {breaks})[0])[0]"
    return {
        "expression": f"{launches}.all(ws, !ws.exists(w, {breaks}))",
        "messageExpression": f"'h3doctor {rule}: ' + " + subject.format(w=first),
        "reason": "Invalid",
    }


def policies(*, deny: bool = False, name: str = "h3doctor") -> list[dict[str, Any]]:
    """The policy of errors (Warn+Audit, or Deny with `deny`) and the policy of warnings (Warn+Audit:
    sglang starts, so it never refuses), each with its binding."""
    if not _NAME.match(name) or len(name) > 63:
        raise UsageError(f"must be a lowercase DNS label (a-z, 0-9, '-'), at most 63 characters: "
                         f"{name[:80]!r}", location="--name")
    releases = release_files.known()
    every = {o for v in releases for o in load_flag_table(v).options_for("serve")}
    # A release with no MiniMax-H3 model has no launch to judge. Its variables would only hold empty
    # literals, and an empty map is typed dyn: the API server's type check then refuses the whole
    # policy at create (an int slot of `l` found dyn; tools/vap_cost measures it).
    facts = [r for r in (_Release(v, every) for v in releases) if r.models]
    rules = load_rules()
    variables = [{"name": "containers", "expression": _containers()}]
    by_severity: dict[str, list[dict[str, str]]] = {"error": [], "warning": []}
    for r in facts:
        variables += r.variables()
        for rule, severity, breaks, subject in _checks(r):
            by_severity[severity].append(_validation(r, rule, breaks, subject))
        checks = [c for c in _rule_checks(r, rules) if c[1] in by_severity]
        variables.append(_findings(r, checks))
        for index, (rule, severity, _fires, _message) in enumerate(checks):
            by_severity[severity].append(_value_validation(r, rule, index))
    judged = sorted({v["messageExpression"].split()[1].rstrip(":") for vs in by_severity.values() for v in vs})
    annotations = {
        "h3doctor/judged": " ".join(judged),
        "h3doctor/left-out": (
            "every other rule: it reads the GPU or its count, the host, the environment, a --config file, or a "
            "value the policy does not compute from the words; docs/integrations/vap-coverage.md gives each rule's "
            f"reason. Not judged either: more than {MAX_CONTAINERS} containers, more than {MAX_WORDS} words or a "
            f"word over {MAX_WORD} characters, and words not read for certain (docs/kubernetes.md)."),
    }
    documents = []
    for severity, validations in by_severity.items():
        policy = f"{name}-{'errors' if severity == 'error' else 'warnings'}"
        actions = ["Deny"] if deny and severity == "error" else ["Warn", "Audit"]
        documents += [
            {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
             "metadata": {"name": policy, "labels": {"app.kubernetes.io/name": "h3doctor"},
                          "annotations": annotations},
             "spec": {"failurePolicy": "Ignore", "matchConstraints": {"resourceRules": RESOURCE_RULES},
                      "variables": variables, "validations": validations}},
            {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
             "metadata": {"name": policy, "labels": {"app.kubernetes.io/name": "h3doctor"}},
             "spec": {"policyName": policy, "validationActions": actions}},
        ]
    return documents


def render(documents: list[dict[str, Any]]) -> str:
    """The documents as one YAML stream."""
    import yaml

    header = ("# Generated by `h3doctor export vap` from sglang's flag tables; regenerate, do not edit.\n"
              "# Covers unknown flags (H3D020, H3D012), ambiguous abbreviations and invalid choices/ints (H3D010)\n"
              "# and abbreviations sglang drops (H3D021); see docs/kubernetes.md.\n")
    return header + yaml.safe_dump_all(documents, sort_keys=False, width=1 << 20)


# The rules the policy judges on the launch's words (docs/kubernetes.md says which it cannot);
# `covered()` adds those judged on the launch's values (vap_rules.py).
COVERED = ("H3D010", "H3D012", "H3D020", "H3D021")


def coverage() -> dict[str, dict[str, str]]:
    """rule ID -> release -> '' where the policy judges it there, else why not; for every rule that
    applies to a MiniMax-H3 model in some release with a flag table."""
    rules = load_rules()
    out: dict[str, dict[str, str]] = {}
    for version in release_files.known():
        values = Values(version, _Release.models_of(version))
        for rule in rules:
            if rule.id in COVERED or not applies_somewhere(rule, version):
                continue
            try:
                translate(rule, values)
                out.setdefault(rule.id, {})[version] = ""
            except Untranslatable as exc:
                out.setdefault(rule.id, {})[version] = str(exc)
    return out


def coverage_markdown() -> str:
    """docs/integrations/vap-coverage.md: each rule that applies to a MiniMax-H3 model, the releases
    the policy judges it in, and why not elsewhere (tools/vap_coverage.py writes it)."""
    lines = ["# What `h3doctor export vap` judges", "",
             "Generated by `python tools/vap_coverage.py` from the rule files and each release's flag table;",
             "`tests/integrations/test_vap_rules.py` fails when it differs. H3D010, H3D012, H3D020 and H3D021",
             "(flags, choices, ints, abbreviations) are judged on the words in every release with a flag table",
             "(docs/kubernetes.md, \"Without a webhook\"); the rules below are judged on the launch's values",
             "where the words say them for certain. A rule left out is lint's and the webhook's.", "",
             "| rule | judged in | left out, and why |", "|---|---|---|"]
    for rule, by in sorted(coverage().items()):
        judged = [v for v, why in by.items() if not why]
        reasons = sorted({why for why in by.values() if why})
        span = f"{judged[0]}-{judged[-1]}" if len(judged) > 1 else (judged[0] if judged else "-")
        lines.append(f"| {rule} | {span} | {'; '.join(reasons)} |")
    return "\n".join(lines) + "\n"


def covered() -> set[str]:
    """Every rule the policy judges in some release."""
    return set(COVERED) | {r for r, by in coverage().items() if "" in by.values()}


__all__ = ["COVERED", "coverage", "coverage_markdown", "covered", "policies", "render"]
