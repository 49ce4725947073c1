"""Where in its file a finding points: the token of the word it is about.

In order: the rule's `position` (the parse error's token); the token of the parse problem its
condition reads (an unrecognized or abbreviated flag); the first flag its fix names and the user
typed; the first token its fix changed (a strategy's change, mapped back to the user's command);
the first `args.*` its condition reads, or flag its alternatives set, that the user typed; for a
recipe's planned request (`intent.*`), the key of its `request:` the condition reads; for an
sglang `--config` file, the key of the file the finding is about; else the start of the launch.
A finding met only while fixing is located the same way in the command the fix loop had then,
and mapped back to the word of the user's command it came from.

A finding about a host fact a compose service or pod template gives its container (its /dev/shm,
its memory cap) points at the key that gives it (`container_pos`).

`launch` is a launch read from a file (inputs/launch.py `Launch`: its `tokens` and their
`token_pos`, `pos`, `image_pos`, `key_pos`, `container_pos`); it is not imported, as the engine reads no input files.
Lint locates its diagnostics here, and `check` locates a recipe's findings the same way.
"""

from __future__ import annotations

import difflib

from h3doctor.engine.conditions import paths_of
from h3doctor.engine.context import position_token
from h3doctor.engine.derivations import ORDER
from h3doctor.engine.derivations.registry import flags_of
from h3doctor.engine.results import CheckResult, Evaluation, Finding, FixStep
from h3doctor.engine.ruleset import Rule
from h3doctor.located import Pos
from h3doctor.sglang.argv import PARSE_KIND
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.tokendiff import opcodes

_CONFIG_KEY_LISTS = ("config.removed_keys", "config.string_booleans", "config.mistyped_keys", "config.ignored_keys")
# Derived values a condition reads, and the flags (or --config key lists) they are made from, as
# each derivation declares them (`points_at`): where a finding that reads only derived values points
_DERIVED_FROM = flags_of(ORDER)
_IMAGE_PATHS = ("release.image",)  # the image and what its tag does not say (release.image_note)
# lists of --config keys in the context (a finding that reads one points at its first key in the file)
_KEY_LISTS = _CONFIG_KEY_LISTS + ("derived.config_string_false_keys",)


class Locator:
    """Per lint run: which option dests each rule is about, computed once per rule."""

    def __init__(self, table: FlagTable) -> None:
        self.table = table
        self._dests: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._parse_kinds: dict[str, frozenset[str]] = {}
        self._about_image: dict[str, bool] = {}
        self._request_keys: dict[str, tuple[str, ...]] = {}

    def about_image(self, rule: Rule) -> bool:
        """Whether the rule is about the container image's tag (its condition reads what the tag
        does not say): such a finding points at where the image is named."""
        if rule.id not in self._about_image:
            self._about_image[rule.id] = any(p.startswith(_IMAGE_PATHS) for p in paths_of(rule.when))
        return self._about_image[rule.id]

    @staticmethod
    def container_key(rule: Rule, launch) -> Pos | None:
        """Where the launch's container definition gives a host fact the rule reads (`hw.shm_gib`:
        the service's `shm_size`/`ipc`, the pod's /dev/shm volume or its container); None: none."""
        at = getattr(launch, "container_pos", None)
        if not at:
            return None
        return next((at[p[3:]] for p in paths_of(rule.when) if p.startswith("hw.") and p[3:] in at), None)

    def dests(self, rule: Rule) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(option dests the rule's fix names, dests and config lists its condition reads)."""
        if rule.id not in self._dests:
            options = self.table.options_for("serve")
            fixed = _flag_dests(rule.fix or (), options, [])
            read: list[str] = []
            for p in paths_of(rule.when):
                if p.startswith("args."):
                    dest = p.removeprefix("args.")
                    if dest not in fixed and dest not in read:
                        read.append(dest)
                elif p in _CONFIG_KEY_LISTS:
                    read.append(p)
                for dest in _DERIVED_FROM.get(p, ()):
                    if dest not in fixed and dest not in read:
                        read.append(dest)
            # a rule without a fix (or whose fix names no flag) is about the flags its alternatives set
            for alt in rule.alternatives:
                read = _flag_dests(alt.get("fix") or (), options, read, skip=fixed)
            self._dests[rule.id] = (tuple(fixed), tuple(read))
        return self._dests[rule.id]

    def request_keys(self, rule: Rule) -> tuple[str, ...]:
        """The planned request's values the rule's condition reads (`intent.quality` -> "quality"): a
        recipe's finding about one points at that key of its `request:` (`quality: hihg`)."""
        if rule.id not in self._request_keys:
            self._request_keys[rule.id] = tuple(dict.fromkeys(
                p.split(".")[1] for p in paths_of(rule.when) if p.startswith("intent.") and p.count(".") == 1))
        return self._request_keys[rule.id]

    def parse_kinds(self, rule: Rule) -> frozenset[str]:
        """The parse-problem kinds (`parse.<kind>`) the rule's condition reads."""
        if rule.id not in self._parse_kinds:
            kinds = set()
            for p in paths_of(rule.when):
                if p.startswith("parse."):
                    kind = p.removeprefix("parse.")
                    for suffix in ("_message", "_position"):
                        kind = kind.removesuffix(suffix)
                    kinds.add(kind)
            self._parse_kinds[rule.id] = frozenset(kinds)
        return self._parse_kinds[rule.id]

    def token_index(self, finding: Finding, ev: Evaluation, step: FixStep | None = None) -> int | None:
        """Index in the evaluated command of the token the finding is about, or None."""
        rule = finding.rule
        cmd = ev.cmd
        if rule.position:
            value = ev.context.get(rule.position)
            token = position_token(value) if isinstance(value, int) else None
            if token is not None:
                return cmd.prefix_len + token
        kinds = self.parse_kinds(rule)
        if kinds:
            problems = [p for p in cmd.problems if PARSE_KIND.get(p.kind, p.kind) in kinds]
            said = [p for p in problems if p.message in finding.message]
            chosen = min(said or problems, key=lambda p: p.start, default=None)
            if chosen is not None:
                return cmd.prefix_len + chosen.start
        fixed, read = self.dests(rule)
        index = self._typed(cmd, fixed)
        if index is not None:
            return index
        if step is not None:
            # the tokens its fix changed (a changed value: the flag in front of it), the one of a
            # flag the condition reads first
            changed = [c.at - 1 if c.context and c.at > 0 else c.at for c in step.changes
                       if c.removed and 0 <= c.at < len(cmd.tokens)]
            options = self.table.options_for("serve")
            about = [i for i in changed if getattr(options.get(cmd.tokens[i].split("=", 1)[0]), "dest", None) in read]
            if about or changed:
                return (about or changed)[0]
        return self._typed(cmd, read)

    @staticmethod
    def _typed(cmd, dests) -> int | None:
        for dest in dests:
            occ = next((o for o in cmd.occurrences if o.dest == dest and o.option != "<model>"), None)
            if occ is not None:
                return cmd.prefix_len + occ.start
        return None

    def locate_step(self, step: FixStep, ev: Evaluation, launch) -> Pos:
        """A finding met only while fixing: located in the command the round started from (`ev`,
        that command's evaluation), mapped back to the user's word it came from."""
        finding = next((f for f in ev.findings if f.rule.id == step.rule.id), None)
        index = self.token_index(finding, ev, step) if finding is not None else None
        if index is None:
            index = next((c.at for c in step.changes if c.removed), None)
        if index is not None:
            original = map_index(list(step.argv), launch.tokens, index)
            if original is not None and 0 <= original < len(launch.token_pos):
                return launch.token_pos[original]
        return launch.pos

    def locate(self, finding: Finding, ev: Evaluation, launch, result: CheckResult | None = None) -> Pos:
        if launch.image_pos is not None and self.about_image(finding.rule):
            return launch.image_pos  # a manifest's `image:` (or `docker run`'s IMAGE): a suppression there holds
        said = self.container_key(finding.rule, launch)
        if said is not None:
            return said  # a compose service's or pod's key that gives the container the fact (its /dev/shm)
        probe = _probe_about(finding.rule, ev, launch)
        if probe is not None:
            return probe.pos  # the manifest's probe the finding is about: a suppression there holds
        step = None
        if result is not None and not launch.key_pos:  # the first round's step: the tokens its fix changed
            # (not for an sglang --config file, whose launch words are made up: its keys are located)
            step = next((s for s in result.fix_steps if s.rule.id == finding.rule.id and not s.found_after_fix
                         and s.argv == tuple(launch.tokens)), None)
        index = self.token_index(finding, ev, step)
        fixed, read = self.dests(finding.rule)
        if index is not None and 0 <= index < len(launch.token_pos):
            return launch.token_pos[index]
        if launch.kind == "recipe" and launch.doc is not None:  # a recipe's request: the key of the value read
            for key in self.request_keys(finding.rule):
                if ("request", key) in launch.doc.keys:
                    return launch.doc.key_pos(("request", key))
        if launch.key_pos:  # an sglang --config file: the key the finding is about
            for name in read:
                for key in ev.context.get(name) or () if name in _KEY_LISTS else ():
                    if key in launch.key_pos:
                        return launch.key_pos[key]
            for dest in fixed + read:
                if dest in launch.key_pos:
                    return launch.key_pos[dest]
        return launch.pos


def _probe_about(rule: Rule, ev: Evaluation, launch):
    """The container probe (inputs/probes.py) a finding is about: the one whose `deployment.<role>.*`
    the rule reads, the readinessProbe for readiness, or for the start-up budget the probe that would kill
    the pod (`derived.probe.killer`)."""
    probes = getattr(launch, "probes", None)
    if not probes:
        return None
    paths = paths_of(rule.when)
    if "derived.probe.readiness_on_health" in paths:
        return probes.get("readiness")  # none: the finding is the launch's
    if any(p.startswith("derived.probe.") for p in paths):
        return probes.get(ev.context.get("derived.probe.killer"))
    roles = [p.split(".")[1] for p in paths if p.startswith("deployment.") and p.count(".") == 2]
    return next((probes[r] for r in roles if r in probes), None)


def _flag_dests(ops, options, into: list[str], skip=()) -> list[str]:
    """`into` plus the option dests of the flags the fix operations name."""
    for op in ops:
        for spec in op.values():
            flag = spec.get("flag") if isinstance(spec, dict) else None
            action = options.get(flag) if flag else None
            if action is not None and action.dest not in into and action.dest not in skip:
                into.append(action.dest)
    return into


_MAX_ALIKE = 16  # the most words of one change compared for likeness: each costs a difflib ratio


def map_index(argv: list[str], original: list[str], index: int) -> int | None:
    """Where token `index` of `argv` (a command the fix loop made from `original`) came from in
    `original`: the same token, or the first of the tokens a change replaced."""
    if argv == original:
        return index
    for tag, i1, i2, j1, j2 in opcodes(original, argv):
        if j1 <= index < j2 or (j1 == j2 == index):
            if tag == "equal" or (i2 - i1 == j2 - j1 and index < j2):
                return i1 + (index - j1)
            if i1 >= len(original):
                return None
            if i1 == i2 or index >= j2:
                return i1
            if i2 - i1 > _MAX_ALIKE:  # a long run rewritten whole (tokendiff): the word at the same place
                return i1 + min(index - j1, i2 - i1 - 1)
            # several words became others (a flag respelt, its neighbour dropped): the most alike
            word = argv[index]
            return max(range(i1, i2), key=lambda i: difflib.SequenceMatcher(None, original[i], word).ratio())
    return None
