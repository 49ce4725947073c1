"""Launches from a deployment's command words (Kubernetes `command`/`args`, compose `entrypoint`/
`command`): YAML lists of words, strings of shell words, and `sh -c SCRIPT` wrappers.

Shared by kubernetes.py and compose.py; each word keeps where it came from, so a finding points
at its line and column and `lint --fix` edits the list (or the string) in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from h3doctor.inputs.launch import (
    Launch,
    Note,
    Segment,
    is_shell_c,
    launch_start,
    mentions_sglang,
    script_commands,
)
from h3doctor.inputs.positional import Positional
from h3doctor.located import Document, Pos
from h3doctor.shellsplit import Unsupported, shell_commands
from h3doctor.unresolved import MARK, as_written

@dataclass(frozen=True)
class _Word:
    text: str
    kind: str  # list | string
    path: tuple
    span: tuple[int, int]  # list: (index, index + 1); string: offsets in the string


@dataclass
class Context:
    """What the deployment says around the words: who they belong to, env and GPU grant."""

    doc: Document
    kind: str
    label: str
    env: dict[str, str]
    gpu_count: int | None
    image: str | None = None  # the container's image (its tag is the release)
    image_path: tuple | None = None  # the YAML path of its `image:` value
    mounts: dict[str, tuple[str, str]] | None = None  # files mounted from the repository (Launch.mounts)

    @property
    def image_pos(self) -> Pos | None:
        return self.doc.pos(self.image_path) if self.image and self.image_path is not None else None


def launches_from_parts(parts: list[tuple[tuple, object]], ctx: Context, notes: list[Note]) -> list[Launch]:
    """`parts`: (YAML path, value) pairs in the order the runtime joins them; a value is a list of
    words or a string of shell words."""
    words: list[_Word] = []
    for path, value in parts:
        if isinstance(value, list):
            for i, item in enumerate(value):
                words.append(_Word(item if isinstance(item, str) else str(item), "list", path + (i,), (i, i + 1)))
        elif isinstance(value, str):
            try:
                commands = shell_commands(value, keep_expansions=True)
            except Unsupported as exc:
                if mentions_sglang(value):
                    notes.append(Note(ctx.doc.origin, ctx.doc.pos(path), f"{ctx.label}: not understood ({exc}); not judged"))
                return []
            for w, s, e in (commands[0] if commands else []):
                words.append(_Word(w, "string", path, (s, e)))
    if not words:
        return []
    texts = [w.text for w in words]
    if is_shell_c(texts) and words[2].kind == "list":
        # `bash -lc SCRIPT -- ARGS…`: the words after the script are its $0, $1… (and "$@")
        return _script_launches(words[2], ctx, notes, words[3:])
    found = launch_start(texts)
    if found is None:
        if any(mentions_sglang(t) for t in texts):
            notes.append(Note(ctx.doc.origin, ctx.doc.pos(words[0].path),
                              f"{ctx.label}: mentions sglang but runs no `sglang serve|generate` launch h3doctor "
                              "understands (an image entrypoint is not known); not judged"))
        return []
    start, prefix_env = found
    mine = words[start:]
    launch = Launch(
        path=ctx.doc.origin, kind=ctx.kind, label=ctx.label, tokens=[w.text for w in mine],
        pos=ctx.doc.pos(mine[0].path), env={**ctx.env, **prefix_env}, doc=ctx.doc, gpu_count=ctx.gpu_count, image=ctx.image,
        image_pos=ctx.image_pos, mounts=dict(ctx.mounts or {}),
        token_pos=[_word_pos(ctx.doc, w) for w in mine],
    )
    launch.segments = _segments(mine)
    return [launch]


def _word_pos(doc: Document, w: _Word) -> Pos:
    return doc.pos(w.path) if w.kind == "list" else doc.offset_pos(w.path, w.span[0])


def _segments(words: list[_Word]) -> list[Segment]:
    segments: list[Segment] = []
    for n, w in enumerate(words):
        container = w.path[:-1] if w.kind == "list" else w.path
        last = segments[-1] if segments else None
        if last is not None and last.path == container and last.kind == w.kind:
            last.spans.append(w.span)
        else:
            segments.append(Segment(w.kind, container, n, [w.span]))
    return segments


_MARKED_NAME = re.compile(re.escape(MARK) + r"\$[({]?([A-Za-z_][A-Za-z0-9_]*)")


def _unshadowed(text: str, env: dict[str, str]) -> dict[str, str]:
    """The container's environment less the names an earlier layer left unknown in the script's
    text (compose's `${TP}` is the host's TP, not the container's): the shell reads them unknown."""
    unknown = set(_MARKED_NAME.findall(text))
    return {k: v for k, v in env.items() if k not in unknown} if unknown else env


def _script_launches(script: _Word, ctx: Context, notes: list[Note], after: list[_Word]) -> list[Launch]:
    """The sglang launches of a container's `sh -c SCRIPT [$0 ARGS…]`, read as the shell reads
    them: the script's own words (flags written in it included), its positional parameters bound
    to the words after it (`after`: $0 then $1…), shifted by a `shift [N]` before the launch."""
    doc, path = ctx.doc, script.path
    try:
        # the text as the kubelet hands it to the shell: a `$(VAR)` it could not give stays `$(VAR)`,
        # which the shell reads as an expansion (so the words' offsets are the text's)
        commands = script_commands(as_written(script.text), _unshadowed(script.text, ctx.env))
    except Unsupported as exc:
        if mentions_sglang(script.text):
            notes.append(Note(doc.origin, doc.pos(path), f"{ctx.label}: not understood ({exc}); not judged"))
        return []
    out: list[Launch] = []
    positional = Positional(after)
    for words in commands:
        texts = [w for w, _s, _e in words]
        if positional.shifted(texts):
            continue
        found = launch_start(texts)
        if found is None:
            continue
        start, prefix_env = found
        written = as_written(script.text)
        bound = positional.bind([_Word(w, "string", path, (s, e)) for w, s, e in words[start:]],
                                [written[s:s + 1] == '"' for _w, s, _e in words[start:]])
        out.append(Launch(
            path=doc.origin, kind=ctx.kind, label=ctx.label, tokens=[w.text for w in bound],
            pos=doc.offset_pos(path, words[start][1]), env={**ctx.env, **prefix_env}, doc=doc,
            gpu_count=ctx.gpu_count, image=ctx.image, image_pos=ctx.image_pos, mounts=dict(ctx.mounts or {}),
            token_pos=[_word_pos(doc, w) for w in bound], segments=_segments(bound),
        ))
    if not out and mentions_sglang(script.text):
        notes.append(Note(doc.origin, doc.pos(path), f"{ctx.label}: the shell script mentions sglang but runs no "
                                                     "`sglang serve|generate` launch h3doctor understands; not judged"))
    return out
