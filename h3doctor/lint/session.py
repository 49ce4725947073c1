"""One lint run: every launch of every input, on every target, with the rules, the flag table,
the profiles and identical checks reused across the run (h3doctor/engine/judge.py is pure).

Each launch is judged with the environment its file gives it, not the linting process's: CI's
runner is not the machine the launch runs on. A deployment that grants the container a number
of GPUs (`nvidia.com/gpu` limit, compose device reservation) decides how many it sees; the
target supplies the kind of GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.engine.judge import Judge
from h3doctor.engine.results import CheckResult
from h3doctor.engine.ruleset import load_rules
from h3doctor.engine.target import Target
from h3doctor.engine.unresolved import NotJudged, unresolved_values
from h3doctor.errors import UsageError
from h3doctor.record import replace
from h3doctor.facts import HardwareFacts
from h3doctor.host.gpus import ProfileNameError, catalog_profile, find_gpu
from h3doctor.host.profiles import load_profile
from h3doctor.inputs.launch import Launch, rule_matches
from h3doctor.inputs.probes import deployment_facts
from h3doctor.inputs.read import InputFile, read_input
from h3doctor.lint.config import LintConfig
from h3doctor.engine.locate import Locator
from h3doctor.engine.notices import NOTICES
from h3doctor.lint.extent import with_extents
from h3doctor.lint.othermodel import other_model
from h3doctor.lint.targets import NO_TARGET, labelled_targets, no_target_facts, no_target_message
from h3doctor.sglang.container_facts import with_container
from h3doctor.inputs.markdown import comment_spans
from h3doctor.lint.suppress import Suppression, every_suppression, inline_suppressions
from h3doctor.located import Pos
from h3doctor.output.diagnostic import Diagnostic, Location, Suppressed, from_finding, of_rule
from h3doctor.output.glimpse import glimpsed
from h3doctor.output.verdict import failing
from h3doctor.safeload import LoadError, OutsideRepository, confined, mounted, named_from
from h3doctor.sglang import releases
from h3doctor.sglang.argv import ParsedCommand, attached_parse, parsed_once
from h3doctor.sglang.flagtable import DEFAULT_SGLANG_VERSION, FlagTable, load_flag_table
from h3doctor.sglang.launch_forms import LaunchWords
from h3doctor.unresolved import has_mark

# A real script or manifest holds a few launches; judging one costs ~1 ms and a few KB per target,
# so 10,000 (under the 1 MiB input limit) took 16 s and 187 MB. Past this many the rest of a file is
# not judged, and H3DL010 says so where the first one unjudged is.
MAX_LAUNCHES_PER_FILE = 1000



@dataclass
class LaunchResult:
    launch: Launch
    target: str
    hardware: HardwareFacts
    result: CheckResult
    records: list[Diagnostic] = field(default_factory=list)  # its findings' diagnostics, suppressions applied


@dataclass
class FileResult:
    path: str
    kind: str | None
    launches: list[Launch] = field(default_factory=list)
    results: list[LaunchResult] = field(default_factory=list)
    text: str = ""
    holds: list[frozenset[str]] = field(default_factory=list)  # per launch: the rules its fixes leave alone
    identity: tuple[int, int] | None = None  # (device, inode) of the file as read: `--fix` writes only that file
    skipped: str | None = None  # why a file lint was given is no launch input (`lint --verbose`)


@dataclass
class LintRun:
    files: list[FileResult]
    records: list[Diagnostic]
    checks: int
    fail_on: str

    def failing(self) -> list[Diagnostic]:
        return failing(self.records, self.fail_on)


class LintSession:
    def __init__(self, config: LintConfig, *, cli_targets: tuple[str, ...] = (), rules_dir: str | None = None,
                 sglang_version: str | None = None, fail_on: str | None = None,
                 roots: tuple[str, ...] | None = None) -> None:
        self.config = config
        self.roots = roots  # lint reads no file outside them (None: not confined, tests of the session alone)
        self.cli_targets = cli_targets
        self.rules = load_rules(Path(rules_dir) if rules_dir else None)
        config.check_rule_ids({r.id for r in self.rules})  # not lint's notices: what it could not read stays said
        self.version = sglang_version or config.sglang_version or DEFAULT_SGLANG_VERSION
        self.version_option = sglang_version  # the command line's: it wins over a launch's image
        self.fail_on = fail_on or config.fail_on
        self._tables: dict[str, FlagTable] = {}
        self._profiles: dict[tuple[str, int | None], HardwareFacts] = {}
        self._memo: dict[tuple, CheckResult] = {}
        self._words: dict[tuple, LaunchWords] = {}  # each launch read and parsed once (launch_words)
        # per naming directory and mounted files: the run's judges, each with the evaluations its checks share (engine/judge.py)
        self._judges: dict[tuple, Judge] = {}
        self._names: dict[str, str] = {}  # a linted file -> the name the user gave it (`--stdin-filename`)
        self.checks = 0
        self.table = self.table_for(self.version)
        self.locator = Locator(self.table)
        self.known_fields = set(self.table.dataclass_defaults)

    # --- shared, loaded once per run -------------------------------------------------------
    def table_for(self, version: str) -> FlagTable:
        # a release whose rules are not verified is judged by its parser; rule H3D921 says what it cannot verify
        if version not in self._tables:
            self._tables[version] = load_flag_table(releases.target(version, None).table_version)
        return self._tables[version]

    def hardware(self, target: str, granted: int | None) -> HardwareFacts:
        """The target's facts; with `granted`, the number of GPUs the deployment gives the container."""
        key = (target, granted)
        if target == NO_TARGET:
            return no_target_facts(granted)
        if key not in self._profiles:
            try:
                hw = load_profile(target)
            except UsageError:
                if find_gpu(target) is None:
                    raise
                try:  # a bare GPU name: as many as the deployment grants (one if it does not say)
                    hw = load_profile_mapping(target, granted or 1)
                except ProfileNameError as exc:
                    raise UsageError(f"no such hardware profile {target!r}: {exc}") from None
            if granted is not None and hw.gpu_count != granted:
                hw = dataclasses.replace(hw, gpu_count=granted,
                                         description=f"{hw.description}; {granted} granted by the deployment")
            self._profiles[key] = hw
        return self._profiles[key]

    def release_for(self, launch: Launch) -> releases.Release:
        """The command line's release > the launch's own (a recipe's) > its container image's tag >
        the configuration's (or the newest verified)."""
        if self.version_option or launch.sglang_version:
            return releases.target(self.version_option, launch.sglang_version, image=launch.image)
        if launch.image:
            return releases.image_target(launch.image)
        if self.config.sglang_version:  # the configuration's: said as such, not as the command line's
            return dataclasses.replace(releases.target(self.config.sglang_version, None), source="config")
        return releases.target(None, None)  # none given: the newest verified release ("default")

    def check(self, launch: Launch, target: str, hold: frozenset[str] = frozenset()) -> tuple[HardwareFacts, CheckResult]:
        """One launch on one target; the findings of rules in `hold` are reported, never fixed."""
        if launch.container is not None:  # a manifest's container: its /dev/shm is the file's to change, not the words'
            hold = hold | self._container_fixed
        hw = self.hardware(target, launch.gpu_count)
        release = self.release_for(launch)
        directory = self.naming_dir(launch)
        files = tuple(sorted(launch.mounts.items()))  # a --config mounted from the repository (a ConfigMap's key)
        key = (tuple(launch.tokens), target, launch.gpu_count, launch.container, tuple(sorted(launch.env.items())), _probe_key(launch),
               tuple(sorted((k, v) for k, v in launch.intent.items() if v is not None)), release, hold, directory, files)
        result = self._memo.get(key)
        if result is None:
            with named_from(directory), mounted(launch.mounts):
                result = self.judge(directory, files).check(self.launch_words(launch), self.target(launch, hw, release), hold)
            self._memo[key] = result
        self.checks += 1
        return hw, result

    @functools.cached_property
    def _container_fixed(self) -> frozenset[str]:
        """The rules fixed only in a `docker run` line's own words (`container_option`): a compose
        service or pod template says the same in its keys, which the rule's fix_note names."""
        return frozenset(r.id for r in self.rules if r.fix and all("container_option" in op for op in r.fix))

    def judge(self, directory: str = "", files: tuple = ()) -> Judge:
        """The run's rules, with the evaluations shared by the checks of launches that name files
        from the same directory and mount the same files."""
        judge = self._judges.get((directory, files))
        if judge is None:
            judge = self._judges[(directory, files)] = Judge(self.rules, memo={})
        return judge

    def target(self, launch: Launch, hw: HardwareFacts, release: releases.Release) -> Target:
        """What the launch is judged against: `hw` as its compose service's or pod's container sees
        it (its /dev/shm, memory cap and image's facts), never the target's own where it says them."""
        if launch.container is not None:
            hw = with_container(hw, launch.container)
        return Target.of(hw, self.table_for(release.table_version), launch.env, launch.intent, release,
                         deployment_facts(launch.probes) if launch.probes is not None else None)

    def naming_dir(self, launch: Launch) -> str:
        """What a relative path the launch names (--config, --env-file) is relative to: the directory
        of its file, as the user named the file (`--stdin-filename` for standard input). An sglang
        --config file's own launch names the file by the path lint was given: as it stands."""
        if launch.kind == "sglang-config":
            return ""
        return os.path.dirname(self._names.get(launch.path, launch.path))

    def launch_words(self, launch: Launch) -> LaunchWords:
        """The launch's words read and parsed once, for its release's flag table and where its
        check reads them (its naming directory, its mounted files): the pre-checks read this parse
        and the judge's first evaluation takes it (argv.parsed_once). UsageError: an unknown release."""
        table = self.table_for(self.release_for(launch).table_version)
        directory, files = self.naming_dir(launch), tuple(sorted(launch.mounts.items()))
        key = (tuple(launch.tokens), table.sglang_version, directory, files)
        words = self._words.get(key)
        if words is None:
            with named_from(directory), mounted(launch.mounts):
                words = self._words[key] = parsed_once(launch.tokens, table)
        return words

    def _parse(self, launch: Launch) -> ParsedCommand | None:
        try:
            return attached_parse(self.launch_words(launch), self.table_for(self.release_for(launch).table_version))
        except UsageError:  # an unknown release is the checks' to report (H3DL005)
            return None

    def other_model(self, launch: Launch) -> str | None:
        """Why the launch's model is not a MiniMax-H3 family member, when its words say so."""
        return other_model(self._parse(launch))

    def not_judged(self, launch: Launch) -> NotJudged | None:
        """Why a launch with words its file leaves to the shell cannot be judged (engine/unresolved.py)."""
        if not any(has_mark(t) for t in launch.tokens):
            return None
        try:
            unresolved_values(list(launch.tokens), self.table_for(self.release_for(launch).table_version),
                              dict(launch.env), self._parse(launch))
        except NotJudged as exc:
            return exc
        except UsageError:  # an unreadable launch or release is the checks' to report
            return None
        return None

    def held_rules(self, launch: Launch, inline: dict[int, list[Suppression]], select: tuple[str, ...],
                   ignore: tuple[str, ...]) -> frozenset[str]:
        """The rules whose findings in this launch are not the fixer's to touch: not selected,
        ignored by the configuration or the recipe, or suppressed by a comment on one of its lines."""
        lines = [p.line for p in launch.token_pos] or [launch.pos.line]
        comments = [s for line in range(min(lines + [launch.pos.line]), max(lines) + 1) for s in inline.get(line, ())]
        held = set()
        for rule in self.rules:
            rid = rule.id
            if (_dropped(select, ignore, rid)
                    or any(ig.matches(rid) for ig in launch.ignores) or any(s.matches(rid) for s in comments)):
                held.add(rid)
        return frozenset(held)

    # --- one run ---------------------------------------------------------------------------
    def targets_for(self, launch: Launch) -> tuple[str, ...]:
        """The command line's > the file's own (a recipe's, SkyPilot's, Slurm's, a pod's GPU node
        labels) > the configuration's; () when none is found."""
        # per-path targets match the file as the user named it (`--stdin-filename`), not its copy
        name = self._names.get(launch.path, launch.path)
        return (self.cli_targets or launch.targets or labelled_targets(launch.gpu_choices)
                or self.config.override_for(name).targets or self.config.targets)

    def judged_on(self, launch: Launch) -> tuple[str, ...]:
        """lint's targets for the launch: with none found, NO_TARGET (what does not depend on the GPU)."""
        return self.targets_for(launch) or (NO_TARGET,)

    def run(self, paths: list[str], *, named: dict[str, str] | None = None) -> LintRun:
        """Lint `paths`; `named` gives a file the name the configuration's per-path settings match
        (`lint - --stdin-filename NAME`: the text is read from a file of another name)."""
        files: list[FileResult] = []
        records: list[Diagnostic] = []
        roots = self.roots if self.roots is not None else tuple(dict.fromkeys(map(_tree_of, paths)))
        self._names = dict(named or {})
        with confined(roots, tuple(paths)):
            for path in paths:
                files.append(self._lint_file(path, records, (named or {}).get(path, path)))
        # the configuration's severity, for the report and --fail-on alike (a Diagnostic is frozen)
        records = [replace(r, severity=self.config.severity[r.rule]) if r.rule in self.config.severity else r
                   for r in records]
        # by file, line and column (stable: on one word, sglang's order and then the targets')
        records.sort(key=lambda r: (r.location.path, r.location.line, r.location.column))
        return LintRun(files, records, self.checks, self.fail_on)

    def _lint_file(self, path: str, records: list[Diagnostic], name: str) -> FileResult:
        override = self.config.override_for(name)
        try:
            with named_from(os.path.dirname(name)):  # a script's --env-file is read with its launch
                found: InputFile = read_input(path, known_fields=self.known_fields, kind=override.kind)
        except LoadError as exc:  # a linked input that leaves the repository is not opened (H3DL006)
            where, pos = _split_location(exc.location or path)
            records.append(_notice("H3DL006" if isinstance(exc, OutsideRepository) else "H3DL003", exc.message,
                                   where, pos))
            return FileResult(path, None)
        launches = list(found.launches[:MAX_LAUNCHES_PER_FILE])
        out = FileResult(path, found.kind, launches, text=found.text, identity=_identity(path), skipped=found.skipped)
        first_record = len(records)
        for note in found.notes:
            records.append(_notice(note.notice, note.message, note.path, note.pos or Pos(1, 1)))
        if len(found.launches) > MAX_LAUNCHES_PER_FILE:
            records.append(_notice("H3DL010", f"not judged past launch {MAX_LAUNCHES_PER_FILE:,} of this file "
                                   f"({len(found.launches):,} launches)", path, found.launches[MAX_LAUNCHES_PER_FILE].pos))
        inline = inline_suppressions(found.text, comment_spans(found.text) if found.kind == "markdown" else None)
        select = self.config.select + override.select
        ignore = self.config.ignore + override.ignore
        for launch in launches:
            hold = self.held_rules(launch, inline, select, ignore)
            why = self.other_model(launch)
            if why is not None:  # not judged, on any target, and never rewritten (no result to fix)
                out.holds.append(hold)
                records.append(_notice("H3DL020", f"{launch.label}: not judged: {why}", path, launch.pos,
                                       launch=launch.label, input_kind=launch.kind))
                continue
            unread = self.not_judged(launch)
            if unread is not None:  # a word the shell computes decides what the launch is: noted, never passed
                out.holds.append(hold)
                records.append(_notice("H3DL002", f"{launch.label}: {unread.message}", path,
                                       launch.token_pos[unread.word] if unread.word < len(launch.token_pos)
                                       else launch.pos, launch=launch.label, input_kind=launch.kind))
                continue
            targets = self.judged_on(launch)
            unverified: list[str] = []  # with no target: the rules that depend on the GPU, not judged
            first_result, launch_records = len(out.results), len(records)
            for target in targets:
                try:
                    hw, result = self.check(launch, target, hold)
                except OutsideRepository as exc:  # the file is not opened: the launch is not judged, on any target
                    records.append(_notice("H3DL006", exc.message, path, _naming(launch, exc.path),
                                           launch=launch.label, input_kind=launch.kind))
                    break
                except UsageError as exc:
                    records.append(_notice("H3DL005", f"target {target!r}: {exc.message}", path, launch.pos,
                                           target=target, launch=launch.label, input_kind=launch.kind))
                    continue
                lr = LaunchResult(launch, target, hw, result)
                out.results.append(lr)
                ev = result.evaluation
                for f in ev.findings:
                    rid = f.rule.id
                    if _dropped(select, ignore, rid):
                        continue
                    if target == NO_TARGET and f.cannot_verify:  # one notice names them all (H3DL004)
                        unverified.append(rid)
                        continue
                    rec = from_finding(f, ev, _at(launch.path, self.locator.locate(f, ev, launch, result)),
                                       target=target, hardware=hw.description or target, launch=launch.label,
                                       input_kind=launch.kind)
                    rec = _apply_suppressions(rec, launch, inline)
                    records.append(rec)
                    lr.records.append(rec)
                # what sglang reports once the first errors are fixed: only while every earlier round
                # fixed an error (after a fixed warning the command is h3doctor's, not the user's)
                for n, step in enumerate(result.fix_steps):
                    if any(_severity(s) != "error" for s in result.fix_steps[:n]):
                        break
                    if not step.found_after_fix or not step.changes or step.evaluation is None:
                        continue
                    rid = step.rule.id
                    if _dropped(select, ignore, rid):
                        continue
                    rec = of_rule(step.rule, _severity(step) or step.rule.severity,
                                  glimpsed(step.message, step.evaluation),
                                  _at(path, self.locator.locate_step(step, step.evaluation, launch)), target=target,
                                  hardware=hw.description or target, launch=launch.label, input_kind=launch.kind,
                                  found_after_fix=True)
                    rec = _apply_suppressions(rec, launch, inline)
                    records.append(rec)
                    lr.records.append(rec)
            if targets == (NO_TARGET,):
                records.append(_notice("H3DL004", no_target_message(launch, unverified), path, launch.pos,
                                       target=NO_TARGET, launch=launch.label, input_kind=launch.kind))
            # a finding suppressed where it is located (off the launch's own lines) is held too;
            # the first evaluation does not depend on what is held, only the corrected command does
            extra = {r.rule for r in records[launch_records:] if r.suppressed} - hold
            if extra:
                hold = hold | frozenset(extra)
                for lr in out.results[first_result:]:
                    lr.result = self.check(launch, lr.target, hold)[1]
            out.holds.append(hold)
        records[first_record:] = with_extents(records[first_record:], found.text, path, launches)
        for s in every_suppression(inline):
            if not s.used:
                records.append(_notice("H3DL001", f"unused suppression ignore[{','.join(s.rules)}]", path, s.pos))
        mine = records[first_record:]
        for launch in launches:
            used = _used_ignores(mine, launch)
            for ig in launch.ignores:
                if ig.rule not in used:
                    records.append(_notice("H3DL001", f"unused recipe ignore of {ig.rule}", path, ig.pos))
        return out


def _severity(step) -> str | None:
    """The severity of the finding a fix round fixed, in the command it started from."""
    found = next((f for f in step.evaluation.findings if f.rule.id == step.rule.id), None) if step.evaluation else None
    return found.severity if found else None


def load_profile_mapping(name: str, count: int) -> HardwareFacts:
    from h3doctor.facts import facts_from_mapping

    data = catalog_profile(name, count=count)
    return facts_from_mapping(data, f"catalog:{count}x{name}")


def _matches(patterns: tuple[str, ...], rule_id: str) -> bool:
    return any(rule_matches(p, rule_id) for p in patterns)


def _dropped(select: tuple[str, ...], ignore: tuple[str, ...], rule_id: str) -> bool:
    """The configuration leaves the rule out: not selected (when `select` names any), or ignored."""
    return (bool(select) and not _matches(select, rule_id)) or _matches(ignore, rule_id)


def _apply_suppressions(rec: Diagnostic, launch: Launch, inline: dict[int, list[Suppression]]) -> Diagnostic:
    """`rec`, accepted by the first inline suppression or recipe ignore that names its rule."""
    # the finding's line, or the first or last line of its launch (a shell comment can only end
    # a command that continues over several lines)
    lines = [p.line for p in launch.token_pos] or [launch.pos.line]
    for line in dict.fromkeys((rec.location.line, launch.pos.line, max(lines))):
        for s in inline.get(line, ()):
            if s.matches(rec.rule):
                s.used = True
                return replace(rec, suppression=Suppressed("comment", s.reason or "suppressed inline"))
    for ig in launch.ignores:
        if ig.matches(rec.rule):
            return replace(rec, suppression=Suppressed("recipe", f"recipe ignore: {ig.reason}"))
    return rec


def _used_ignores(records: list[Diagnostic], launch: Launch) -> set[str]:
    used: set[str] = set()
    for rec in records:
        if rec.location.path == launch.path and rec.suppression is not None and rec.suppression.by == "recipe":
            for ig in launch.ignores:
                if ig.matches(rec.rule):
                    used.add(ig.rule)
    return used


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) right after the read; the text read is compared too before a fix is written,
    so a change between the read and this look is caught as well."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _tree_of(path: str) -> str:
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def _naming(launch: Launch, name: str) -> Pos:
    """Where the launch names the file `name` (its word, or `--flag=name`); the launch's start otherwise."""
    for n, word in enumerate(launch.tokens):
        if (word == name or word.endswith("=" + name)) and n < len(launch.token_pos):
            return launch.token_pos[n]
    return launch.pos


def _at(path: str, pos: Pos) -> Location:
    return Location(path, pos.line, pos.col)


def _notice(rule: str, message: str, path: str, pos: Pos, **about: Any) -> Diagnostic:
    """A lint notice (engine/notices.py) at `pos`; `about`: Diagnostic's fields from `target` on."""
    name, severity, title, why = NOTICES[rule]
    return Diagnostic(rule, name, title, severity, message, _at(path, pos), why=why, **about)


def _split_location(location: str) -> tuple[str, Pos]:
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and is_digits(parts[1]) and is_digits(parts[2]):
        return parts[0], Pos(int(parts[1]), int(parts[2]))
    parts = location.rsplit(":", 1)
    if len(parts) == 2 and is_digits(parts[1]):
        return parts[0], Pos(int(parts[1]), 1)
    return location, Pos(1, 1)


def _probe_key(launch: Launch) -> tuple | None:
    """What the launch's probes add to a memo key (the same words under other probes judge differently)."""
    return None if launch.probes is None else tuple(sorted(deployment_facts(launch.probes).items()))
