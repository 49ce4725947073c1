"""`lint --fix` / `--diff`: rewrite each launch to the command that passes on all its targets,
editing only the tokens that change, where they are.

* a YAML list of words (recipe `command: [...]`, Kubernetes `command`/`args`, compose lists):
  items are replaced, inserted or deleted in place;
* a YAML string of shell words (or an `sh -c` script): the changed words are replaced in the
  file's text where they stand (textedit.py), so a multi-line string keeps its lines, backslash
  continuations and quoting; the edited file must read back as the corrected words;
* a shell script: the file text is edited at the words' offsets;
* an sglang `--config` file: the keys the corrected launch sets are set in the file.

Lists (and strings whose words are not in the source verbatim) go through ruamel.yaml's
round-trip mode (comments, key order, quoting kept); a result that would change any line outside
the launch is refused rather than written. CRLF files keep CRLF. Writes are atomic (a new file
renamed over the old one in its folder), and never go through a link to a file outside the trees
`lint` was given: such a file is left as it is and the report says so.
"""

from __future__ import annotations

import dataclasses
import difflib
import io
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h3doctor.errors import UsageError
from h3doctor.inputs.launch import Launch, Segment
from h3doctor.inputs.script_launch import as_line
from h3doctor.inputs.script_line import NotWritten
from h3doctor.lint.applicability import unsafe_reasons, unsafe_steps
from h3doctor.lint.deployment_values import notes as deployment_notes
from h3doctor.lint.deployment_values import overwritten
from h3doctor.lint.discover import lint_roots
from h3doctor.lint.probe_fixes import apply as apply_probe_edits
from h3doctor.lint.probe_fixes import edited_rules, probe_edits
from h3doctor.lint.session import FileResult, LintRun, LintSession
from h3doctor.lint.textedit import LineIndex, edit_words, scalar_spans
from h3doctor.paths import replace_file
from h3doctor.safeload import excerpt, read_bounded
from h3doctor.tokendiff import opcodes

MAX_ROUNDS = 4


@dataclass
class Change:
    path: str
    before: str
    after: str
    summary: str

    @property
    def diff(self) -> str:
        """A unified diff `git apply` takes: paths relative to the working directory, normalised
        (`a/configs/x.yaml`, not `a/./configs/x.yaml`), and git's marker after a last line
        without a newline."""
        name = diff_path(self.path)
        out = []
        for line in difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True),
                                         f"a/{name}", f"b/{name}"):
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)


def diff_path(path: str) -> str:
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    return (absolute if rel.startswith("..") else rel).replace(os.sep, "/")


@dataclass
class Correction:
    """One launch's fix: the command to write, and why it is unsafe (empty: safe)."""

    launch: Launch
    argv: list[str]
    unsafe: list[str]
    per_target: dict[str, list[str] | None]  # each target's own correction (None: clean there)
    kept: list[str] = dataclasses.field(default_factory=list)  # fixes not made: they would write over a deployment's value


def _outside(target: str, roots: tuple[str, ...]) -> bool:
    return not any(os.path.commonpath([target, root]) == root for root in roots)


CHANGED_WHILE_RUNNING = "the file changed while lint ran"


class _Changed(Exception):
    pass


def write_within(path: str, text: str, roots: tuple[str, ...], *, read: str | None = None,
                 identity: tuple[int, int] | None = None) -> str | None:
    """Write the fixed text to `path` by a new file renamed over it in its own folder; through a
    link only when the link's target lies inside the linted trees. With `read` (the text lint read)
    and `identity` (its device and inode), only while the file is still that file with that text,
    checked once the new file is written, right before the rename: an edit made while lint ran is
    never overwritten. None when written, else why not."""
    target = os.path.realpath(path)
    if _outside(target, roots):
        return f"{path} is a link to a file outside the linted tree ({excerpt(target, 120)}); not written"

    def unchanged() -> None:
        if read is not None and not _still(target, read, identity):
            raise _Changed

    try:
        info = os.stat(target)
        if not stat.S_ISREG(info.st_mode):
            return f"{path} is no longer a regular file; not written"
        replace_file(Path(target).parent, os.path.basename(target), text, mode=stat.S_IMODE(info.st_mode),
                     before_rename=unchanged)
    except _Changed:
        return CHANGED_WHILE_RUNNING
    except OSError as exc:
        return f"{path}: cannot write it ({exc.strerror or type(exc).__name__})"
    return None


def _still(target: str, read: str, identity: tuple[int, int] | None) -> bool:
    """Whether `target` is the file lint read (same device and inode) holding the same text."""
    try:
        info = os.stat(target)
        now = read_bounded(target, max_bytes=max(len(read.encode("utf-8")) * 2, 1 << 16), what="input")
    except (OSError, UsageError):
        return False
    return (identity is None or (info.st_dev, info.st_ino) == identity) and now == read


def correct(session: LintSession, launch: Launch, hold: frozenset[str] = frozenset()) -> tuple[Correction | None, str | None]:
    """The launch's correction on its targets, or (None, why not). The fixer leaves the rules in
    `hold` alone (suppressed, ignored, unselected), and those whose fix would write over a value
    the deployment gives (lint/deployment_values.py): the correction is then searched again
    without them, and names them in `kept`."""
    given: dict[str, str] = {}  # rule -> the deployment's word its fix would write over
    for _ in range(len(session.rules) + 1):  # each round holds at least one more rule back
        held = hold | frozenset(given)
        found = {rule: word for target in session.judged_on(launch)
                 for rule, word in overwritten(session.check(launch, target, held)[1]).items()}
        if not found:
            break
        given.update(found)
    fix, why = _correct(session, launch, hold | frozenset(given))
    kept = deployment_notes(given)
    if fix is None:
        return None, "; ".join(filter(None, [why, *kept])) or None
    return dataclasses.replace(fix, kept=kept), None


def _correct(session: LintSession, launch: Launch, hold: frozenset[str]) -> tuple[Correction | None, str | None]:
    """The correction with the rules in `hold` left alone. Each target is corrected on its own first;
    when they agree the correction is that one; when they differ, one command that passes on all
    of them is searched for, and is unsafe: it is none of the targets' own corrections."""
    targets = session.judged_on(launch)
    per_target: dict[str, list[str] | None] = {}
    for target in targets:
        _hw, result = session.check(launch, target, hold)
        if result.fix_status in ("no-fix", "not-converged"):
            return None, f"{launch.label}: no corrected command on {target} ({result.fix_status})"
        per_target[target] = list(result.corrected_argv) if result.corrected_argv is not None else None
    distinct = {tuple(v) if v is not None else None for v in per_target.values()}
    if distinct == {None}:
        return None, None
    unsafe: list[str] = []
    if len(distinct) == 1:
        current = next(v for v in per_target.values() if v is not None)
    else:
        current, why = _agreed(session, launch, targets, hold)
        if current is None:
            return None, why
        unsafe.append("the targets need different corrections (" + "; ".join(
            f"{t}: {'none' if v is None else shlex.join(v)}" for t, v in per_target.items()) + ")")
    where: dict[str, list[str]] = {}  # what the correction takes away -> the targets it does so on
    for target in targets:
        for reason in _taken_away(session, launch, target, hold, current, per_target[target]):
            where.setdefault(reason, []).append(target)
    unsafe += [f"{reason} (on {', '.join(on)})" for reason, on in where.items()]
    return Correction(launch, current, unsafe, per_target), None


def _taken_away(session: LintSession, launch: Launch, target: str, hold: frozenset[str], current: list[str],
                own: list[str] | None) -> list[str]:
    """What the correction takes away on `target`: change by change along the target's own fix
    steps when the correction is the target's own, else the launch against the correction whole."""
    first = session.check(launch, target, hold)[1]
    last = session.check(dataclasses.replace(launch, tokens=current), target, hold)[1].evaluation.effective
    if own == current:
        return unsafe_steps(first.fix_steps, last)
    return unsafe_reasons(first.evaluation.effective, last)


def _agreed(session: LintSession, launch: Launch, targets, hold) -> tuple[list[str] | None, str | None]:
    """One command that passes on every target: each target's correction applied in turn."""
    current = list(launch.tokens)
    for _ in range(MAX_ROUNDS):
        changed = False
        for target in targets:
            _hw, result = session.check(dataclasses.replace(launch, tokens=current), target, hold)
            if result.fix_status in ("no-fix", "not-converged"):
                return None, f"{launch.label}: no corrected command on {target} ({result.fix_status})"
            if result.corrected_argv is not None:
                current, changed = list(result.corrected_argv), True
        if not changed:
            return current, None
    return None, f"{launch.label}: the targets' corrections do not agree on one command"


def fix_files(run: LintRun, session: LintSession, *, write: bool, roots: tuple[str, ...] = (),
              unsafe_fixes: bool = False, show_unsafe: bool = False) -> tuple[list[Change], list[str]]:
    """The changes the fixes make, and notes; with `write`, each file is rewritten in place
    (`write_within`): never through a link to a file outside `roots` (default: the files' own folders).
    Unsafe fixes are applied with `unsafe_fixes`, shown (not written) with `show_unsafe`, and
    otherwise only named in a note."""
    changes: list[Change] = []
    notes: list[str] = []
    for f in run.files:
        edits: list[tuple[Launch, list[str]]] = []
        found = probe_edits(f, session)
        probes = []  # each within its line: the launches' words keep their places
        for e in found:
            where = f"{f.path}:{e.pos.line}: {e.rule} fix: {e.what}"
            if e.unsafe and not unsafe_fixes:
                notes.append(f"{where}: unsafe fix {'shown, ' if show_unsafe else ''}not applied "
                             f"(apply with --unsafe-fixes): {e.unsafe}")
                if not show_unsafe:
                    continue
            else:
                notes.append(where)
            probes.append(e)
        if f.kind == "notebook":  # JSON whose cells' lines are strings: not rewritten
            if f.launches:
                notes.append(f"{f.path}: not fixed: a notebook is not rewritten; fix its cells by hand")
            continue
        for launch, fix, why in launch_corrections(f, session, edited_rules(found)):
            if why:
                notes.append(f"{f.path}: not fixed: {why}")
                continue
            if fix is None:
                continue
            notes += [f"{f.path}:{launch.pos.line}: not fixed: {kept}" for kept in fix.kept]
            if fix.unsafe:
                where = f"{f.path}:{launch.pos.line}"
                if unsafe_fixes:
                    notes.append(f"{where}: unsafe fix applied (--unsafe-fixes): {'; '.join(fix.unsafe)}")
                else:
                    notes.append(f"{where}: unsafe fix {'shown, ' if show_unsafe else ''}not applied "
                                 f"(apply with --unsafe-fixes): {'; '.join(fix.unsafe)}")
                    if not show_unsafe:
                        continue
            try:  # each launch on its own first: one whose change cannot be written is refused alone
                _apply(f.path, f.text, f.kind, [(launch, fix.argv)], session)
            except Refused as exc:
                notes.append(f"{f.path}:{launch.pos.line}: not fixed: {exc}")
                continue
            edits.append((launch, fix.argv))
        if not edits and not probes:
            continue
        text = apply_probe_edits(f.text, probes)
        try:
            after = _apply(f.path, text, f.kind, edits, session) if edits else text
        except Refused as exc:
            notes.append(f"{f.path}: not fixed: {exc}")
            continue
        after = _keep_newlines(f.text, after)
        if after != f.text:
            if write:
                refused = write_within(f.path, after, roots or lint_roots([f.path]), read=f.text, identity=f.identity)
                if refused:
                    notes.append(f"{f.path}: not fixed: {refused}")
                    continue
            changes.append(Change(f.path, f.text, after, f"{len(edits)} launch(es)"
                                  + (f", {len(probes)} probe field(s)" if probes else "")))
    return changes, notes


def launch_corrections(f: FileResult, session: LintSession, manifest: dict[str, frozenset[str]] | None = None):
    """Each judged launch of the file with its correction, or why it has none (None, None: clean).
    `manifest`: per launch label, the rules an edit of its manifest fixes (its probes): no change
    of the command is searched for them."""
    for n, launch in enumerate(f.launches):
        if session.other_model(launch) is not None:  # not judged: H3DL020
            continue
        hold = (f.holds[n] if n < len(f.holds) else frozenset()) | (manifest or {}).get(launch.label, frozenset())
        try:
            yield (launch, *correct(session, launch, hold))
        except UsageError as exc:  # a target that is no profile: reported as H3DL005 already
            yield launch, None, f"{launch.label}: {exc.message}"


def edited_text(f: FileResult, launch: Launch, argv: list[str], session: LintSession) -> str:
    """The file's text with this one launch corrected, as `--fix` would write it (Refused: it cannot)."""
    return _keep_newlines(f.text, _apply(f.path, f.text, f.kind, [(launch, argv)], session))


class Refused(Exception):
    """A correction that cannot be written where the launch's words stand (the message says why)."""


def _opcodes(old: list[str], new: list[str]):
    return [op for op in opcodes(old, new) if op[0] != "equal"]


def segment_edits(launch: Launch, new: list[str]) -> dict[int, list[tuple[int, int, list[str]]]]:
    """Per segment index: (local start, local end, new tokens), right to left."""
    out: dict[int, list[tuple[int, int, list[str]]]] = {}
    segs = launch.segments
    if not segs:
        raise Refused("the launch's words could not be located for editing")
    shared, rebound = _bound_twice(segs)
    for _tag, i1, i2, j1, j2 in _opcodes(launch.tokens, new):
        for n, seg in enumerate(segs):
            lo, hi = seg.first, seg.first + seg.count
            last = n == len(segs) - 1
            if lo <= i1 < hi or (i1 == hi and last):
                if i2 > hi:
                    raise Refused("a change spans two parts of the command (command and args)")
                if seg.kind == "list" and seg.path in rebound and (
                        i2 - i1 != j2 - j1 or any(k in shared for k in range(i1, i2))):
                    raise Refused("the script reads these arguments by position ($1, \"$@\"): a change to them "
                                  "would move or change another of its words; fix it by hand: see the corrected command")
                out.setdefault(n, []).append((i1 - lo, i2 - lo, new[j1:j2]))
                break
        else:
            raise Refused("a change falls outside the launch's words")
    for edits in out.values():
        edits.sort(key=lambda e: -e[0])
    return out


def _bound_twice(segs: list[Segment]) -> tuple[set[int], set[tuple]]:
    """A container script's positional parameters (inputs/positional.py) make one list item a word
    of the launch twice (`"$1"` and `"$@"`) or a list's items words in separate places: the token
    indices of an item used twice, and the lists read so, whose items must keep their positions."""
    places: dict[tuple, list[int]] = {}
    seen: dict[tuple, int] = {}
    for seg in segs:
        if seg.kind == "list":
            seen[seg.path] = seen.get(seg.path, 0) + 1
            for k, span in enumerate(seg.spans):
                places.setdefault((seg.path, span), []).append(seg.first + k)
    shared = {k for tokens in places.values() if len(tokens) > 1 for k in tokens}
    rebound = {path for path, n in seen.items() if n > 1} | {path for (path, _span), t in places.items() if len(t) > 1}
    return shared, rebound


def _all_crlf(text: str) -> bool:
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


def _keep_newlines(before: str, after: str) -> str:
    """A file written with CRLF throughout stays CRLF throughout (the YAML writer emits LF)."""
    return after.replace("\r\n", "\n").replace("\n", "\r\n") if _all_crlf(before) else after


def _apply(path: str, text: str, kind: str | None, edits: list[tuple[Launch, list[str]]], session: LintSession) -> str:
    edits = [_as_written(edit) for edit in edits]
    if kind in ("shell", "slurm", "dockerfile", "markdown", "makefile"):  # launches located by file offsets
        flat = []
        for launch, new in edits:
            for _n, seg_edits in segment_edits(launch, new).items():
                flat.append((launch.segments[0].spans, seg_edits))
        # apply all launches right to left
        flat.sort(key=lambda x: -x[0][0][0])
        for spans, seg_edits in flat:
            text = edit_words(text, spans, seg_edits)
        return text
    if kind == "sglang-config":
        return _keeping_line_ends(text, lambda lf: _fix_config(path, lf, edits[0][0], edits[0][1], session))
    return _in_text(path, text, edits) or _keeping_line_ends(text, lambda lf: _fix_yaml(path, lf, edits))


def _as_written(edit: tuple[Launch, list[str]]) -> tuple[Launch, list[str]]:
    """A correction of a line whose `-c` script holds sglang's flags, written back where each of
    its words is written (inputs/script_launch.py); Refused when a change cannot be written there."""
    launch, new = edit
    if launch.script_line is None:
        return edit
    try:
        return as_line(launch, new)
    except NotWritten as why:
        raise Refused(str(why)) from None


def _keeping_line_ends(text: str, rewrite) -> str:
    """`rewrite` on the text with LF line ends, the result given the file's CRLF back (the
    round-trip writer writes LF)."""
    return _keep_newlines(text, rewrite(text.replace("\r\n", "\n") if _all_crlf(text) else text))


def _in_text(path: str, text: str, edits: list[tuple[Launch, list[str]]]) -> str | None:
    """Launches whose words are all in YAML strings, edited in the file's text where the words
    stand (layout, continuations, quoting and line ends kept). None when a word cannot be found
    there, or the edited file does not read back as the corrected words: the round-trip writer
    then does it."""
    from h3doctor.shellsplit import Unsupported
    from h3doctor.located import load_yaml
    from h3doctor.safeload import LoadError

    lines = LineIndex(text)
    planned: list[tuple[list[tuple[int, int]], list, str | None]] = []
    expected: dict[tuple[int, tuple], str] = {}
    for launch, new in edits:
        doc = launch.doc
        if doc is None:
            return None
        for n, seg_edits in segment_edits(launch, new).items():
            seg = launch.segments[n]
            scalar = doc.scalar(seg.path) if seg.kind == "string" else None
            value = _node_value(doc.data, seg.path)
            spans = scalar_spans(text, lines, scalar, value, seg.spans) if scalar and isinstance(value, str) else None
            if spans is None:
                return None
            planned.append((spans, seg_edits, scalar.style))
            expected[(doc.index, tuple(seg.path))] = edit_words(value, seg.spans, seg_edits)
    planned.sort(key=lambda p: -p[0][0][0])
    after = text
    for spans, seg_edits, style in planned:
        after = edit_words(after, spans, seg_edits, style)
    try:
        docs = load_yaml(after, path)
        for (index, seg_path), value in expected.items():
            got = _node_value(docs[index].data, seg_path)
            if not isinstance(got, str) or _words(got) != _words(value):
                return None
    except (LoadError, Unsupported, IndexError, KeyError, TypeError):
        return None
    return after


def _words(script: str) -> list[list[str]]:
    from h3doctor.shellsplit import shell_commands

    return [[w for w, _s, _e in command] for command in shell_commands(script)]


def _node_value(data, path):
    """The value at `path` (keys and indexes) inside `data`: a loaded document or a round-trip one."""
    for key in path:
        data = data[key]
    return data


def _yaml():
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1 << 16
    return y


def _guess_indent(text: str) -> tuple[int, int]:
    """(mapping indent, block sequence dash offset) as the file writes them; ruamel's own guess
    reads one document and conflates the two."""
    rows = [(len(ln) - len(ln.lstrip(" ")), ln.strip()) for ln in text.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]
    mapping = offset = None
    for (ind, line), (nxt, nline) in zip(rows, rows[1:]):
        if not line.split(" #")[0].rstrip().endswith(":") or nxt <= ind and not nline.startswith("- "):
            continue
        if nline.startswith("- "):
            offset = nxt - ind if offset is None else offset
        elif mapping is None:
            mapping = nxt - ind
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset or 0


def _load_all(text: str):
    mapping, offset = _guess_indent(text)
    y = _yaml()
    y.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    y.explicit_start = text.lstrip().startswith("---")
    return y, list(y.load_all(text))


def _dump_all(y, docs) -> str:
    buf = io.StringIO()
    if len(docs) == 1:
        y.dump(docs[0], buf)
    else:
        y.dump_all(docs, buf)
    return buf.getvalue()


def _typed_like(old: Any, new: str) -> Any:
    """A new list item: quoted like the one it replaces, and quoted whenever YAML would otherwise
    read it as something other than a string (`4`, `true`)."""
    from ruamel.yaml.scalarstring import (
        DoubleQuotedScalarString,
        SingleQuotedScalarString,
    )

    if isinstance(old, (DoubleQuotedScalarString, SingleQuotedScalarString)):
        return type(old)(new)
    from h3doctor.located import load_yaml

    try:
        plain = load_yaml(f"x: {new}\n", "<value>")[0].data
        if not isinstance(plain.get("x"), str) or plain["x"] != new:
            return DoubleQuotedScalarString(new)
    except Exception:
        return DoubleQuotedScalarString(new)
    return new


def _fix_yaml(path: str, text: str, edits: list[tuple[Launch, list[str]]]) -> str:
    y, docs = _load_all(text)
    allowed: set[int] = set()
    for launch, new in edits:
        index = launch.doc.index if launch.doc is not None else 0
        lines = [p.line for p in launch.token_pos]
        allowed |= set(range(min(lines), max(lines) + 2))
        for n, seg_edits in segment_edits(launch, new).items():
            seg: Segment = launch.segments[n]
            if seg.kind == "list":
                seq = _node_value(docs[index], seg.path)
                for a, b, tokens in seg_edits:
                    template = seq[a] if a < len(seq) else (seq[-1] if len(seq) else "")
                    kept = min(b - a, len(tokens))
                    for k in range(kept):  # assigned in place: the item's comment stays
                        seq[a + k] = _typed_like(seq[a + k], tokens[k])
                    for _ in range(b - a - kept):
                        del seq[a + kept]
                    for k, tok in enumerate(tokens[kept:]):
                        seq.insert(a + kept + k, _typed_like(template, tok))
            else:
                parent = _node_value(docs[index], seg.path[:-1])
                old = parent[seg.path[-1]]
                value = edit_words(str(old), seg.spans, seg_edits) if seg.spans else shlex.join(new)
                parent[seg.path[-1]] = type(old)(value) if type(old) is not str else value
    after = _dump_all(y, docs)
    _guard(text, after, allowed)
    return after


def _guard(before: str, after: str, allowed: set[int]) -> None:
    """Refuse a rewrite that touches lines outside the launches (ruamel reformatting them)."""
    for tag, i1, i2, _j1, _j2 in opcodes(before.splitlines(), after.splitlines()):
        if tag == "equal":
            continue
        touched = set(range(i1 + 1, i2 + 1)) or {i1 + 1}
        if not touched <= allowed:
            raise Refused(f"the YAML rewrite would also change line {min(touched - allowed)} (formatting the "
                           "round-trip writer does not keep); fix it by hand: see the corrected command")


def _fix_config(path: str, text: str, launch: Launch, new: list[str], session: LintSession) -> str:
    from h3doctor.sglang.argv import parse_command

    cmd = parse_command(new, session.table)
    if "config" not in cmd.provided:
        raise Refused("the corrected launch does not use the --config file; see the corrected command")
    updates = {k: v for k, v in cmd.provided.items() if k not in ("config", "model_path")}
    if not updates:
        raise Refused("the correction is not a value the file can set; see the corrected command")
    if path.endswith(".json"):
        import json

        data = json.loads(text)
        data.update(updates)
        indent = next((len(ln) - len(ln.lstrip()) for ln in text.splitlines()[1:] if ln.strip()), 2) or None
        return json.dumps(data, indent=indent) + ("\n" if text.endswith("\n") else "")
    y, docs = _load_all(text)
    for key, value in updates.items():
        docs[0][key] = value
    after = _dump_all(y, docs)
    existing = len(text.splitlines())
    allowed = {launch.key_pos[k].line for k in updates if k in launch.key_pos}
    allowed |= set(range(existing + 1, existing + len(updates) + 2))  # new keys go at the end
    _guard(text, after, allowed)
    return after
