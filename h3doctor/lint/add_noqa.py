"""`lint --add-noqa`: accept today's findings in place (ruff's `--add-noqa`), so a repository can
adopt lint and fail only on what is new.

Each launch with unsuppressed findings gets `# h3doctor: ignore[ID,…] added by --add-noqa` at the
end of its last line — a line suppressions are read on (lint/suppress.py) where a shell comment
can end the command — or its IDs added to the `h3doctor: ignore[…]` comment already there. Only
where such a comment is a comment: shell scripts, Slurm batch files, YAML (manifests, compose,
recipes, SkyPilot) and Markdown's shell blocks. Not in a Dockerfile (a `#` after an instruction is
part of it), a notebook or a JSON file (a comment would break them): those are named in a note.

Every edited file is read back before it is written: its launches must keep their words and the
findings must now be suppressed; otherwise (the line ends inside a quoted string, a heredoc, ...)
the file is left as it is and a note says so. Written like `--fix` (lint/fix.write_within): atomic,
never through a link out of the linted trees, never over an edit made while lint ran.
"""

from __future__ import annotations

import re

from h3doctor.lint.session import FileResult, LintRun, LintSession

# the kinds whose files take a `#` comment at the end of a launch's last line
COMMENTABLE = ("shell", "slurm", "kubernetes", "compose", "recipe", "skypilot", "markdown", "sglang-config")
_NOTE = "added by --add-noqa"
_EXISTING = re.compile(r"(#\s*h3doctor:\s*ignore\[)([^\]]*)(\])")
_NOT_ACCEPTED = ("H3DL001",)  # an unused suppression is removed, never suppressed


def _ids_by_line(f: FileResult) -> dict[int, list[str]]:
    """The launch's last line -> the rules of its unsuppressed findings there, in report order."""
    out: dict[int, list[str]] = {}
    for result in f.results:
        launch = result.launch
        line = max([p.line for p in launch.token_pos] or [launch.pos.line])
        for rec in result.records:
            if rec.suppression is None and rec.rule not in _NOT_ACCEPTED:
                ids = out.setdefault(line, [])
                if rec.rule not in ids:
                    ids.append(rec.rule)
    return out


def _commented(line: str, ids: list[str]) -> str:
    """`line` with `ids` accepted: added to its h3doctor comment, or a new comment after it."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    m = _EXISTING.search(body)
    if m:
        have = [r.strip() for r in m.group(2).split(",") if r.strip()]
        merged = ",".join(have + [r for r in ids if r not in have])
        return body[: m.start(2)] + merged + body[m.end(2):] + ending
    return f"{body.rstrip()}  # h3doctor: ignore[{','.join(ids)}] {_NOTE}{ending}"


def with_noqa(text: str, ids_by_line: dict[int, list[str]]) -> str:
    lines = text.splitlines(keepends=True)
    for number, ids in ids_by_line.items():
        if 1 <= number <= len(lines):
            lines[number - 1] = _commented(lines[number - 1], ids)
    return "".join(lines)


def add_noqa(run: LintRun, session: LintSession, roots: tuple[str, ...], *, write: bool) -> tuple[list, list[str]]:
    """The files changed (lint/fix.Change) and notes; with `write`, each is rewritten in place."""
    from h3doctor.lint.fix import Change, write_within

    changes, notes = [], []
    for f in run.files:
        ids = _ids_by_line(f)
        if not ids:
            continue
        if f.kind not in COMMENTABLE or f.path.endswith(".json"):
            notes.append(f"{f.path}: no suppression added: a {f.kind or 'file of this kind'} does not take a "
                         "comment after a launch; add an `ignore:` to .h3doctor.yaml for it")
            continue
        after = with_noqa(f.text, ids)
        if _reads_back(session, f, after, ids):
            # not all together: each launch's comment on its own, then the good ones together; one
            # that would land inside a string is left out (and said), the others are added
            kept = {}
            for line, rules in ids.items():
                why = _reads_back(session, f, with_noqa(f.text, {line: rules}), {line: rules})
                if why:
                    notes.append(f"{f.path}:{line}: no suppression added: {why}; add it by hand")
                else:
                    kept[line] = rules
            if not kept:
                continue
            after = with_noqa(f.text, kept)
            why = _reads_back(session, f, after, kept)
            if why:
                notes.append(f"{f.path}: no suppression added: {why}")
                continue
            ids = kept
        if write:
            refused = write_within(f.path, after, roots, read=f.text, identity=f.identity)
            if refused:
                notes.append(f"{f.path}: no suppression added: {refused}")
                continue
        count = sum(len(v) for v in ids.values())
        changes.append(Change(f.path, f.text, after, f"{count} suppression(s) added"))
    return changes, notes


def _reads_back(session: LintSession, f: FileResult, after: str, ids: dict[int, list[str]]) -> str | None:
    """Why `after` is not `f` with its findings accepted: a launch's words changed (the comment
    landed inside a string or a heredoc), or a comment is not read as a suppression of its rules
    on that line. None when it reads back right. Read from a private copy of the same name (the
    kind forced), so nothing is written into the repository before it is known to be right."""
    import os
    import tempfile

    from h3doctor.errors import H3DoctorError
    from h3doctor.inputs.read import read_input
    from h3doctor.lint.suppress import inline_suppressions
    from h3doctor.paths import replace_file

    with tempfile.TemporaryDirectory(prefix="h3doctor-noqa-") as folder:
        copy = os.path.join(folder, os.path.basename(f.path))
        replace_file(folder, os.path.basename(f.path), after, mode=0o600)  # a fresh file in a folder of ours
        try:
            again = read_input(copy, known_fields=session.known_fields, kind=f.kind)
        except H3DoctorError as exc:
            return f"the file would not read back ({exc.message})"
    if [launch.tokens for launch in again.launches] != [launch.tokens for launch in f.launches]:
        return "a comment at the end of a launch's last line would change its words (inside a string?)"
    inline = inline_suppressions(after)
    for line, rules in ids.items():
        unread = [r for r in rules if not any(s.matches(r) for s in inline.get(line, ()))]
        if unread:
            return f"line {line}: the comment would not be read as a suppression of {', '.join(unread)}"
    return None
