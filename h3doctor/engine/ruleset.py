"""Find, load and schema-validate the rule files (top-level `rules/`, shipped in the wheel).

A malformed rule file is a RuleFileError naming the file and the line (exit 2).
"""

from __future__ import annotations

import functools
import json
import os

from h3doctor.engine.conditions import Compiled, compile_condition, paths_of, placeholders
from h3doctor.engine.strategy_reads import STRATEGY_READS
from h3doctor.errors import RuleFileError, UsageError
from h3doctor.paths import (package_path, path_text, read_cache_entry, read_package_text, read_shipped_text,
                            trusted_cache_dir, write_cache_entry)
from h3doctor.record import field, from_fields, record, replace
from h3doctor.sglang import release_files
from h3doctor.sglang.releases import in_range
from h3doctor.sglang.releases import key as release_key

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

RULES_DIR_ENV = "H3DOCTOR_RULES_DIR"
MAX_RULE_FILE_BYTES = 256 * 1024
_CONTEXT_ROOTS = ("args", "hw", "env", "derived", "parse", "events", "intent", "deployment", "config", "family", "entry", "launcher",
                  "explicit", "release")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}  # the rule schema's severities, least first (--fail-on)
# the memory model's per-GPU verdicts: a rule reading one judges whether the launch fits its GPUs
GPU_MEMORY_VERDICTS = ("derived.memory.load_over", "derived.memory.warmup_over", "derived.memory.warmup_fails_open_over",
                       "derived.memory.likely_over")
# what a per-release entry (`releases:`) may override (its sglang line is in releasedata/X/where.json)
_OVERRIDABLE = ("message", "why", "stage", "sglang_stage", "order", "severity")


@record(frozen=True)
class Rule:
    """One validated rule file (rules/H3D*.yaml), as the engine reads it."""
    id: str
    name: str
    title: str
    catalog: tuple[str, ...]
    where: str
    versions: str
    severity: str
    stage: str
    sglang_stage: str
    order: int
    order_by_family: dict[str, int]
    families: tuple[str, ...]
    platforms: tuple[str, ...] | None
    entries: tuple[str, ...] | None
    when: dict[str, Any]
    message: str
    why: str
    fix: tuple[dict[str, Any], ...] | None
    fix_note: str
    gives_up: str
    examples: tuple[dict[str, Any], ...]
    path: str
    raw: dict[str, Any]
    position: str | None = None
    releases: tuple[dict[str, Any], ...] = ()  # per-release overrides, first match wins
    absent: str | None = None  # releases verified to have no such check (sglang.absent)
    # who wrote `message`: sglang (its own text, quoted) or h3doctor (where sglang prints nothing
    # that says what is wrong, e.g. a release without the model)
    message_by: str = "sglang"
    # `check --exec` does not start a launch with this finding unless --allow-unsafe-exec: it is
    # about what the command runs besides sglang, not about sglang (rules H3D960-H3D963)
    refuses_exec: bool = False
    # a finding says the launch will fail, whatever its severity (`predicts_failure: true`):
    # the fix loop goes on past it and no corrected command it fires on is called clean
    predicts_failure: bool = False

    @property
    def says(self) -> str:
        """The words in front of the message: a quote of sglang only where it is sglang's own text."""
        return "sglang says" if self.message_by == "sglang" else "h3doctor says"

    def for_version(self, version: str) -> "Rule":
        """This rule as it reads for one release: its `releases:` entry for it applied, and its
        sglang line in that release (releasedata/X/where.json)."""
        resolved = self
        for entry in self.releases:
            if version_in_range(version, entry["versions"]):
                resolved = replace(self, **{k: entry[k] for k in _OVERRIDABLE if k in entry})
                break
        where = self.where_by_release.get(version, self.where)
        if where != resolved.where:
            resolved = replace(resolved, where=where)
        return resolved
    # with `fix: none` (or a fix that finds no edit): what the user can choose instead, each
    # {gives_up, fix, when?}; engine/alternatives.py applies and re-checks them
    alternatives: tuple[dict[str, Any], ...] = ()
    # release -> the sglang file:line of this check there (releasedata/X/where.json, merged at load)
    where_by_release: dict[str, str] = field(default_factory=dict)
    # every context path the rule reads (`reads_of_rule`, checked when it was validated; the rules
    # cache entry keeps it): what a check computes for it, the derivations of its `derived.*` values
    reads: frozenset[str] = frozenset()

    def where_spans(self) -> list[tuple[str, str]]:
        """(release span, file:line) per run of releases with the same line, oldest first."""
        spans: list[tuple[list[str], str]] = []
        for version in sorted(self.where_by_release, key=release_key):
            text = self.where_by_release[version]
            if spans and spans[-1][1] == text:
                spans[-1][0].append(version)
            else:
                spans.append(([version], text))
        return [(vs[0] if len(vs) == 1 else f"{vs[0]}-{vs[-1]}", text) for vs, text in spans]

    @functools.cached_property
    def judges_gpu_memory(self) -> bool:
        """Whether this rule is a verdict of the per-GPU memory model (its condition reads one):
        the text report then draws the memory bar, and suggest rejects a launch it fires on."""
        return any(p in GPU_MEMORY_VERDICTS for p in paths_of(self.when))

    def order_for(self, family: str | None) -> int:
        return self.order_by_family.get(family or "", self.order)

    def applies(self, family: str | None, platform: str, entry: str, version: str) -> bool:
        if "any" not in self.families and family not in self.families:
            return False
        if self.platforms is not None and platform not in self.platforms:
            return False
        if self.entries is not None and entry not in self.entries:
            return False
        return self.in_release(version)

    def in_release(self, version: str) -> bool:
        """Whether this rule judges release `version`: inside `sglang.versions` (its first release,
        and its last only where sglang dropped the check) and with its sglang line recorded for
        that release (the release's where.json, carried by tools/release.py or reviewed by a
        person). The upper end is the where lines: a release added later judges the rule once its
        line there is recorded, and until then the rule is "not verified" there, never passed."""
        return version in self.where_by_release and version_in_range(version, self.versions)

    @property
    def verified_versions(self) -> str:
        """The releases this rule judges, as reports and docs show them: `sglang.versions` closed
        by the newest release with its line (`>=0.5.17` with lines up to 0.5.23: `>=0.5.17,<=0.5.23`)."""
        lined = [v for v in self.where_by_release if version_in_range(v, self.versions)]
        if not lined or "<" in self.versions or "==" in self.versions:
            return self.versions
        last = max(lined, key=release_key)
        return f"=={last}" if self.versions == f">={last}" else f"{self.versions},<={last}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "title": self.title, "catalog": list(self.catalog),
            "sglang_where": self.where, "sglang_where_by_release": dict(self.where_by_release),
            "sglang_versions": self.verified_versions, "severity": self.severity,
            "stage": self.stage, "sglang_stage": self.sglang_stage, "families": list(self.families),
            "platforms": list(self.platforms) if self.platforms else None, "message": self.message,
            "message_by": self.message_by, "refuses_exec": self.refuses_exec,
            "why": self.why, "fix": list(self.fix) if self.fix else None, "fix_note": self.fix_note,
            "gives_up": self.gives_up, "alternatives": list(self.alternatives), "examples": list(self.examples),
        }


# every rule asks it on every check, with a handful of distinct arguments
version_in_range = functools.lru_cache(maxsize=4096)(in_range)


def rules_dir() -> Path:
    """--rules-dir / $H3DOCTOR_RULES_DIR, then the wheel's copy, then the checkout's `rules/`."""
    from pathlib import Path

    return Path(_rules_dir_text())


def _rules_dir_text() -> str:
    """`rules_dir()` as text (pathlib is not imported on the check's path)."""
    override = os.environ.get(RULES_DIR_ENV)
    if override:
        return path_text(override)
    packaged = package_path("h3doctor", "_rules")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))), "rules")


def _load_file(path: Path, validator: Any) -> Rule:
    from h3doctor.safeload import load_yaml, read_bounded
    from h3doctor.yamlpos import schema_message, yaml_line

    try:
        text = read_bounded(path, max_bytes=MAX_RULE_FILE_BYTES, what="rule file")
        data = load_yaml(text, origin=str(path))
    except UsageError as exc:
        raise RuleFileError(exc.message, location=exc.location) from None
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        line = yaml_line(text, list(err.absolute_path))
        key = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise RuleFileError(f"at {key}: {schema_message(err)}", location=f"{path}:{line}" if line else str(path))
    if path.stem != data["id"]:
        raise RuleFileError(f"file name must equal the rule id {data['id']!r}", location=f"{path}:1")
    _check_paths(path, text, data)
    return _rule_from(data, path)


def _check_paths(path: Path, text: str, data: dict[str, Any]) -> None:
    """Every context path the rule reads names a root the context has, and a `derived.*` or
    `events.*` path one that a derivation declares (or the adjust phase records): a misspelt name
    would otherwise read as None and the rule silently never fire."""
    from h3doctor.yamlpos import yaml_line

    for p, where in reads_of_rule(data):
        root = p.split(".")[0]
        if root not in _CONTEXT_ROOTS:
            raise RuleFileError(f"unknown context path {p!r}", location=f"{path}:{yaml_line(text, where)}")
        if root in ("derived", "events") and p not in _declared():
            raise RuleFileError(f"no derivation declares {p!r} (engine/derivations; events: sglang/resolve.py EVENTS)",
                                location=f"{path}:{yaml_line(text, where)}")


def reads_of_rule(data: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """Every context path a rule's data reads, each with where it is: its condition (`path:` and
    `ref:`), the placeholders of its texts (and of its per-release ones), its `position`, its fix
    operations (their conditions, placeholders and `{ref: path}` values, and what a named
    strategy reads) and its alternatives'. What rule loading checks and the check computes from."""
    texts = [(data["message"], ["message"]), (data["why"], ["why"])]
    texts += [(e.get(k, ""), ["releases", i]) for i, e in enumerate(data.get("releases", [])) for k in ("message", "why")]
    texts += [(data.get(k, ""), [k]) for k in ("fix_note", "gives_up")]
    used = [(p, ["when"]) for p in paths_of(data["when"])]
    used += [(p, where) for t, where in texts for p in placeholders(t)]
    if data.get("position"):
        used.append((data["position"], ["position"]))
    if isinstance(data["fix"], list):  # a fix operation's conditions and values read the same context
        used += _reads_of(data["fix"], ["fix"])
    for i, alt in enumerate(data.get("alternatives", ())):  # an alternative's conditions read the same context
        if "when" in alt:
            used += [(p, ["alternatives", i, "when"]) for p in paths_of(alt["when"])]
        used += _reads_of(alt["fix"], ["alternatives", i, "fix"])
    return used


def _reads_of(value: Any, where: list[Any]) -> list[tuple[str, list[Any]]]:
    """The context paths a fix operation reads, each with where it is: its conditions, the
    placeholders in its values, a `{ref: path}` value, and what a strategy it names reads."""
    if isinstance(value, dict):
        found = [(p, where + ["when"]) for p in paths_of(value["when"])] if isinstance(value.get("when"), dict) else []
        if isinstance(value.get("ref"), str):
            found.append((value["ref"], where + ["ref"]))
        if isinstance(value.get("strategy"), str):
            found += [(p, where + ["strategy"]) for p in STRATEGY_READS.get(value["strategy"], ())]
        return found + [r for k, v in value.items() if k not in ("when", "ref") for r in _reads_of(v, where + [k])]
    if isinstance(value, list):
        return [r for i, v in enumerate(value) for r in _reads_of(v, where + [i])]
    return [(p, where) for p in placeholders(value)] if isinstance(value, str) else []


@functools.lru_cache(maxsize=1)
def _declared() -> frozenset[str]:
    """Every `derived.*` path a derivation declares and every `events.*` path the adjust phase records."""
    from h3doctor.engine.derivations import declared_paths  # importing the package registers every derivation
    from h3doctor.sglang.resolve import EVENTS

    return declared_paths() | {f"events.{e}" for e in EVENTS}


def _rule_from(data: dict[str, Any], path: Path | str, reads: list[str] | None = None) -> Rule:
    """The rule of validated data; `reads`: what it reads, as the cache entry kept it (else worked out)."""
    applies = data.get("applies_to", {})
    fix = data["fix"]
    # every field (tests/ground/test_record.py holds it equal to Rule(...)): ~2x quicker, ~200 times a launch
    return from_fields(Rule, {
        "id": data["id"],
        "name": data["name"],
        "title": data["title"],
        "catalog": tuple(data["catalog"]),
        "where": data["sglang"]["where"],
        "versions": data["sglang"]["versions"],
        "severity": data["severity"],
        "stage": data["stage"],
        "sglang_stage": data["sglang_stage"],
        "order": data["order"],
        "order_by_family": dict(data.get("order_by_family", {})),
        "families": tuple(applies.get("families", ["any"])),
        "platforms": tuple(applies["platforms"]) if "platforms" in applies else None,
        "entries": tuple(applies["entries"]) if "entries" in applies else None,
        "when": data["when"],
        "message": data["message"],
        "why": data["why"],
        "fix": None if fix == "none" else tuple(fix),
        "fix_note": data.get("fix_note", ""),
        "gives_up": data.get("gives_up", ""),
        "examples": tuple(data.get("examples", ())),
        "path": str(path),
        "raw": data,
        "position": data.get("position"),
        "releases": tuple(data.get("releases", ())),
        "absent": data["sglang"].get("absent"),
        "message_by": data.get("message_by", "sglang"),
        "refuses_exec": bool(data.get("refuses_exec", False)),
        "predicts_failure": bool(data.get("predicts_failure", False)),
        "alternatives": tuple(data.get("alternatives", ())),
        "where_by_release": {},
        "reads": frozenset(p for p, _ in reads_of_rule(data)) if reads is None else frozenset(reads),
    })


def _digest(files: list[Path], schema_text: str) -> str:
    import hashlib

    from h3doctor.safeload import read_bounded_bytes

    h = hashlib.sha256(schema_text.encode())
    for path in files:
        try:
            data = read_bounded_bytes(path, max_bytes=MAX_RULE_FILE_BYTES, what="rule file")
        except UsageError as exc:
            raise RuleFileError(exc.message, location=exc.location) from None
        h.update(os.path.basename(path).encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:32]


# 3: a header line, then the rules (the hash covers the bytes as written); 4: with their lines;
# 5: each rule's data on a line of its own; 6: the examples in a last line of their own, parsed
# only for a caller that reads them; 8: validated with the reads of fix `ref:` values and of
# alternatives' fix operations checked, and each rule's reads kept beside its data (Rule.reads)
CACHE_FORMAT = 8
INDEX_FORMAT = 2
_SCHEMA_FILE = "rule.schema.json"
# a rule, where or schema file changed less than this long before an index entry would be
# written may change again within the file system's timestamp tick, unseen by its status: no
# index entry then (git's "racily clean" rule); the bytes are digested again on the next launch
_SETTLED_NS = 2_000_000_000


def load_rules(directory: Path | str | None = None, *, use_cache: bool = True, examples: bool = True) -> "RuleSet":
    """Load and validate every rule file. Validation is the slow part (jsonschema), so the
    validated rules are cached under a digest of the schema and every file's bytes: an edited,
    added or removed rule file is validated again.

    Reading and hashing every file on each launch is itself ~15% of a check, so a second, small
    entry (`ruleindex-<crc>.json`) maps the files' status (name, size, modification and change
    time, inode), recorded whole, to that digest and to the CRC-32 of the rules entry's body: while
    no file changes, a launch reads only the index and the rules entry, and checks the entry for
    damage by that CRC (hashlib's import, OpenSSL's, is not on the path). The index is written only
    once every file is older than the file system's timestamp tick can hide (`_SETTLED_NS`); a file
    changed in any way changes its change time.

    The cache is a file in the user's cache directory, so it is not trusted: an entry counts
    only when its digest, its content hash and its rule IDs (one per rule file) all match;
    anything else is a miss and is rebuilt, never a verdict.

    `examples=False` (a check: it never reads them): rules read from the cache come without their
    examples (`Rule.examples` empty, none in `Rule.raw`), about a third of the entry's JSON left
    unparsed."""
    directory = path_text(os.fspath(directory)) if directory else _rules_dir_text()
    try:  # the names `directory.glob("*.yaml")` finds, in its order, without a Path per file
        names = sorted(n for n in os.listdir(directory) if n.endswith(".yaml")) if os.path.isdir(directory) else None
    except (OSError, ValueError) as exc:
        raise RuleFileError(f"cannot read the rules directory ({type(exc).__name__})", location=str(directory)[:200]) from None
    if names is None:
        raise RuleFileError("rules directory not found", location=str(directory)[:200])
    schema_path = package_path("h3doctor.schema", _SCHEMA_FILE)
    lines = where_files()
    # a renamed derivation, or a strategy that reads another value, re-validates (a rule's reads hold both)
    declared = "\n".join(sorted(_declared())) + "\n" + repr(sorted(STRATEGY_READS.items()))
    folder = trusted_cache_dir(os.environ) if use_cache else None
    ids = [n[:-5] for n in names]
    status = None
    if folder is not None:
        status = _status_key([os.path.join(directory, n) for n in names] + [os.fspath(p) for p in lines] + [schema_path],
                             declared)
    if status is not None:
        found = _read_indexed(folder, status, ids, examples)
        if found is not None:
            return RuleSet(found[0])
    from pathlib import Path  # a miss: the files are read and validated

    files = [Path(directory, n) for n in names]
    schema_text = read_package_text("h3doctor.schema", _SCHEMA_FILE)
    digest = _digest(files + lines, f"{CACHE_FORMAT}\n{schema_text}{declared}")  # another format: another name
    name = f"rules-{digest}.json"
    where_data = [json.loads(read_shipped_text(path)) for path in lines]
    where = _where_lines(where_data)
    found = _read_cache(folder, name, digest, ids, _sha256_matches, examples=examples) if folder is not None else None
    rules, body = found if found is not None else (None, None)
    if rules is None:
        rules = _validate_all(files, json.loads(schema_text))
        _check_where_lines(rules, where, [data["sglang_version"] for data in where_data])  # before the cache: a cached rule set is a complete one
        body = _write_cache(folder, name, digest, rules, where) if folder is not None else None
    if status is not None and status[1] and body is not None:
        _write_index(folder, status[0], digest, body)
    return RuleSet(_with_where_lines(rules, where))


def _status_key(files: list[str], declared: str) -> tuple[str, bool] | None:
    """(every file's status and the declared paths, as text; whether every file is settled), or
    None when a file cannot be looked at (the content digest then says what it can)."""
    import time

    lines = [f"{INDEX_FORMAT} {CACHE_FORMAT}", declared]
    settled_before = time.time_ns() - _SETTLED_NS
    settled = True
    for path in files:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        lines.append(f"{path}\0{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} {st.st_ino} {st.st_dev}")
        settled = settled and max(st.st_mtime_ns, st.st_ctime_ns) < settled_before
    return "\n".join(lines), settled


def _index_name(status: str) -> str:
    return f"ruleindex-{_crc_of(status):08x}.json"  # the index holds the status whole


def _crc_of(body: str) -> int:
    import zlib

    return zlib.crc32(body.encode())


def _read_indexed(folder: str, status: tuple[str, bool], ids: list[str], examples: bool) -> tuple[list[Rule], str] | None:
    """The rules the index entry for these files' status names, if it and that entry are sound."""
    from h3doctor.safeload import load_json

    name = _index_name(status[0])
    try:
        if not os.path.lexists(os.path.join(folder, name)):
            return None
        text = read_cache_entry(folder, name, max_bytes=len(status[0]) * 2 + 4096, what="rules cache index")
        index = load_json(text, origin=name)
    except (OSError, UsageError, ValueError, RecursionError):
        return None
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT or index.get("status") != status[0]:
        return None  # another index (or a damaged one): the rules are digested again
    digest, crc = index.get("digest"), index.get("body_crc32")
    if not isinstance(digest, str) or not isinstance(crc, int) or not digest.isalnum():
        return None
    return _read_cache(folder, f"rules-{digest}.json", digest, ids, lambda _header, body: _crc_of(body) == crc,
                       with_where=True, examples=examples)


def _write_index(folder: str, status: str, digest: str, body: str) -> None:
    entry = {"format": INDEX_FORMAT, "status": status, "digest": digest, "body_crc32": _crc_of(body)}
    try:
        write_cache_entry(folder, _index_name(status), json.dumps(entry))
    except OSError:
        pass  # a read-only or full cache directory only costs speed


def where_files() -> list[str]:
    """The per-release sglang lines of the rules (each release's where.json, written by
    tools/release.py): inputs of the rules' digest beside the rule files."""
    return release_files.where_paths()


def _where_lines(where_data: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """rule ID -> release -> its sglang line there: the lines derived from the previous release
    (`where`) and the ones a person recorded (`reviewed`)."""
    by_rule: dict[str, dict[str, str]] = {}
    for data in where_data:
        for rule_id, text in {**data["where"], **data["reviewed"]}.items():
            by_rule.setdefault(rule_id, {})[data["sglang_version"]] = text
    return by_rule


def _check_where_lines(rules: list[Rule], by_rule: dict[str, dict[str, str]], releases: list[str]) -> None:
    """A rule judges a release only with its sglang line there (`Rule.in_release`). Without it, on
    a release newer than the newest verified one the check says "cannot verify" (H3D921, from the
    rule's line in the newest: `RuleSet.unverified`); anywhere else — the newest release itself, an
    older one, or a rule the newest does not have — the rule would be silent. That is a load error
    naming the rule, the release and what to do."""
    from h3doctor.verified import NEWEST_VERIFIED

    for rule in rules:
        lines = by_rule.get(rule.id, {})
        for version in releases:
            if version in lines or not version_in_range(version, rule.versions):
                continue
            said_unverified = (release_key(version) > release_key(NEWEST_VERIFIED) and NEWEST_VERIFIED in lines
                               and version_in_range(NEWEST_VERIFIED, rule.versions))
            if not said_unverified:
                raise RuleFileError(f"{rule.id} applies to sglang {version} (sglang.versions {rule.versions!r}) but "
                                    f"{version}'s where.json has no sglang line for it: the rule would be silent "
                                    "there; record its line (tools/release.py add carries the previous release's) "
                                    "or narrow sglang.versions", location=f"{rule.path}:1")


def _with_where_lines(rules: list[Rule], by_rule: dict[str, dict[str, str]]) -> list[Rule]:
    """Each rule with its line per release."""
    for rule in rules:  # just built by this load, so nobody holds them yet (replace() costs ~20 ms)
        object.__setattr__(rule, "where_by_release", by_rule.get(rule.id, {}))
    return rules


def _sha256_matches(header: dict[str, Any], body: str) -> bool:
    import hashlib

    return header.get("content_sha256") == hashlib.sha256(body.encode()).hexdigest()


def _read_cache(folder: str, name: str, digest: str, ids: list[str], undamaged: Any, *,
                with_where: bool = False, examples: bool = True) -> tuple[list[Rule], str] | None:
    """The cached rules and the entry's body if the entry is a regular file (no link, no FIFO:
    `paths.read_cache_entry`) for this digest, `undamaged(header, body)` (its content hash, or the
    index's CRC of it) and for these rule IDs; else None. `with_where`: each with its sglang line
    per release as the entry recorded it (the where files are part of the digest). `examples`: with
    each rule's examples (the entry's last line), else without them (unparsed)."""
    from h3doctor.safeload import load_json

    path = os.path.join(folder, name)
    try:
        if not os.path.lexists(path):
            return None
        text = read_cache_entry(folder, name, max_bytes=MAX_RULE_FILE_BYTES * max(len(ids), 1), what="rules cache")
        # line 1: a small header; the rest: the rules, hashed as the bytes written (no re-encoding),
        # their examples on the last line
        header_text, _, body = text.partition("\n")
        header = load_json(header_text, origin=str(path))
        if not isinstance(header, dict) or header.get("format") != CACHE_FORMAT or header.get("digest") != digest:
            return None
        if not undamaged(header, body):
            return None
        # the content hash checked every byte: only the parser's own depth cap here (speed)
        rules_text, _, examples_text = body.rpartition("\n")
        entries = load_json(rules_text, origin=str(path), max_depth=None, finite=False)
        if not isinstance(entries, list):
            return None
        if examples:
            listed = load_json(examples_text, origin=str(path), max_depth=None, finite=False)
            if not isinstance(listed, list) or len(listed) != len(entries):
                return None
            for e, given in zip(entries, listed):
                e["data"]["examples"] = given
        if [e.get("data", {}).get("id") if isinstance(e, dict) else None for e in entries] != ids:
            return None  # a rule missing, added or renamed: a rule set that is not this one
        if not all(isinstance(e.get("reads"), list) and all(isinstance(p, str) for p in e["reads"]) for e in entries):
            return None
        rules = [_rule_from(e["data"], e["path"], e["reads"]) for e in entries]
        if with_where:
            wheres = [e["where"] for e in entries]  # as written: the body was checked for damage
            if not all(isinstance(w, dict) for w in wheres):
                return None
            for rule, where in zip(rules, wheres):
                object.__setattr__(rule, "where_by_release", where)
        return rules, body
    except (OSError, UsageError, KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return None  # a damaged entry is rebuilt


def _validate_all(files: list[Path], schema: dict[str, Any]) -> list[Rule]:
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for path in files:
        rule = _load_file(path, validator)
        for key in (rule.id, rule.name):
            if key in seen:
                raise RuleFileError(f"{key!r} is already used by {seen[key]}", location=f"{path}:1")
            seen[key] = path.name
        rules.append(rule)
    return rules


def _write_cache(folder: str, name: str, digest: str, rules: list[Rule], where: dict[str, dict[str, str]]) -> str | None:
    """Write the rules entry; its body, or None when it could not be written."""
    import hashlib

    # a JSON list of {path, where, reads, data} with newlines between tokens, every rule's data but its
    # examples on a line of its own; then a line of every rule's examples
    entries = [json.dumps({"path": r.path, "where": where.get(r.id, {}), "reads": sorted(r.reads)})[:-1] + ', "data":\n'
               + json.dumps(_without_examples(r.raw)) + "}" for r in rules]
    body = "[\n" + ",\n".join(entries) + "\n]\n" + json.dumps([r.raw["examples"] for r in rules])
    header = {"format": CACHE_FORMAT, "digest": digest, "content_sha256": hashlib.sha256(body.encode()).hexdigest()}
    try:
        write_cache_entry(folder, name, json.dumps(header) + "\n" + body)
    except OSError:
        return None  # a read-only or full cache directory only costs speed
    return body


def _without_examples(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "examples"}


_STAGE_ORDER = "DPFAVMWLR-"
_STAGE_NAMES = {"D": "dispatch", "P": "argument parsing", "F": "--config files", "A": "the adjust phase (auto-tuner, residency, parallelism, backends)",
                "V": "argument validation", "M": "the H3 model hook", "W": "worker start", "L": "model load",
                "R": "first request / forward", "-": "h3doctor's own advice (memory fit, GPUs)"}


class RuleSet(tuple):
    """The loaded rules, with what every check asks of them worked out once per combination of
    family, platform, entry and release (not per check: a lint run makes thousands): the rules
    that apply, as that release reads them, with their compiled conditions; the text they can read;
    and the sglang stages that are not verified for the release."""

    def __new__(cls, rules: Any = ()) -> "RuleSet":
        self = super().__new__(cls, rules)
        self._compiled: dict[str, Compiled] = {}
        self._applicable: dict[tuple, list[tuple[Rule, Compiled]]] = {}
        self._unverified: dict[tuple, list[str]] = {}
        self._reads: dict[tuple, frozenset[str]] = {}
        return self

    def applicable(self, family: str | None, platform: str, entry: str, version: str) -> list[tuple[Rule, Compiled]]:
        """The rules that apply to this family, platform, entry and release, each as that release
        reads it (its `releases:` entry applied), with its compiled condition."""
        return self._applying(family, platform, entry, version)

    def reads(self, family: str | None, platform: str, entry: str, version: str) -> frozenset[str]:
        """Every context path a rule that applies here reads (`Rule.reads`): the values the check
        computes (the derivations they come from, `release.needs_at_least`), the others not."""
        key = (family, platform, entry, version)
        found = self._reads.get(key)
        if found is None:
            found = self._reads[key] = frozenset().union(*(rule.reads for rule, _ in self._applying(*key)))
        return found

    def _applying(self, family: str | None, platform: str, entry: str, version: str) -> list:
        key = (family, platform, entry, version)
        chosen = self._applicable.get(key)
        if chosen is None:
            chosen = []
            for rule in self:
                if rule.applies(family, platform, entry, version):
                    compiled = self._compiled.get(rule.id)
                    if compiled is None:  # `when` is the same in every release of a rule
                        compiled = self._compiled[rule.id] = compile_condition(rule.when)
                    chosen.append((rule.for_version(version), compiled))
            self._applicable[key] = chosen
        return chosen

    def unverified(self, family: str | None, platform: str, entry: str, version: str, newest: str) -> list[str]:
        """The rule groups (by sglang stage) that apply on the newest verified release but are not
        verified for `version`: h3doctor cannot say whether this release raises them."""
        if family is None or version == newest:
            return []
        key = (family, platform, entry, version, newest)
        if key not in self._unverified:
            missing: dict[str, int] = {}
            for rule in self:
                if rule.absent and in_range(version, rule.absent):
                    continue  # checked: this release has no such check, so there is nothing to verify
                if rule.applies(family, platform, entry, newest) and not rule.applies(family, platform, entry, version):
                    missing[rule.sglang_stage] = missing.get(rule.sglang_stage, 0) + 1
            order = sorted(missing.items(), key=lambda kv: _STAGE_ORDER.index(kv[0]) if kv[0] in _STAGE_ORDER else 99)
            self._unverified[key] = [f"{_STAGE_NAMES.get(s, s)} ({n} rule{'s' if n > 1 else ''})" for s, n in order]
        return list(self._unverified[key])


def rule_set(rules: Any) -> RuleSet:
    """`rules` as a RuleSet: itself when it is one (its worked-out answers kept), else a new one."""
    return rules if isinstance(rules, RuleSet) else RuleSet(rules)
