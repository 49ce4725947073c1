"""Launches in Dockerfiles / Containerfiles: what the built image runs — the final stage's
`ENTRYPOINT` + `CMD` as the builder combines them, with the stage's `ENV` as its environment.

Read as BuildKit reads the file: parser directives (`# escape=`), continuation lines (comment and
empty lines inside them dropped), the exec form (a JSON array; anything that is not one is the
shell form, run by `/bin/sh -c`), `ENV`/`ARG`/`FROM` variable substitution (`$V`, `${V}`,
`${V:-word}`, `${V:+word}`) with `ARG` defaults — which reach `ENV` and `FROM` but not the running
container. A stage built `FROM` an earlier one inherits its environment, entrypoint and command;
an `ENTRYPOINT` resets a `CMD` the stage did not set itself. `FROM` names the image (its tag is
the sglang release); a Dockerfile grants no GPUs (`docker run --gpus` does), so the target decides.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from h3doctor import shellsplit
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
from h3doctor.inputs.shell import Lines

_NAMES = ("dockerfile", "containerfile")
_INSTRUCTION = re.compile(r"[ \t]*([A-Za-z]+)(?:[ \t]+|$)")
_DIRECTIVE = re.compile(r"#[ \t]*(\w+)[ \t]*=[ \t]*(\S*)[ \t]*$")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def is_dockerfile_name(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name in _NAMES or name.endswith(tuple("." + n for n in _NAMES)) or name.startswith(
        tuple(n + "." for n in _NAMES))


def looks_like_dockerfile(text: str) -> bool:
    """The shape: a `FROM` instruction; an input only when the file also mentions sglang."""
    return mentions_sglang(text) and any(i.keyword == "FROM" for i in _instructions(text))


@dataclass
class _Text:
    """A run of characters as the builder sees them, and each one's offset in the file."""

    text: str
    offsets: list[int]  # per character; one more entry: the end

    def end_offset(self, start: int, end: int) -> int:
        """The file offset just past text[start:end] (its start when it is empty)."""
        return self.offsets[end - 1] + 1 if end > start else self.offsets[start]

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.offsets[start], self.end_offset(start, end)

    def part(self, start: int, end: int) -> _Text:
        """text[start:end], its characters still mapped to the file."""
        return _Text(self.text[start:end], self.offsets[start:end] + [self.end_offset(start, end)])


@dataclass
class _Instruction:
    keyword: str
    args: _Text
    offset: int  # of the keyword


@dataclass
class _Stage:
    image: str | None
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)
    shell: list[str] = field(default_factory=lambda: ["/bin/sh", "-c"])  # SHELL: what runs the shell form
    entrypoint: list | None = None  # its words (the shell form: the shell's words and the text)
    entrypoint_shell: bool = False
    cmd: list | None = None
    cmd_set: bool = False


Word = tuple[str, _Text, int, int]  # the word, the text it is in, its [start, end) in that text


def read_dockerfile(path: str, text: str) -> tuple[list[Launch], list[Note]]:
    pos = Lines(text).pos
    notes: list[Note] = []
    stages: dict[str, _Stage] = {}
    global_args: dict[str, str] = {}
    stage: _Stage | None = None
    for ins in _instructions(text):
        if ins.keyword == "FROM":
            stage = _from(ins.args.text, global_args, stages)
            continue
        if ins.keyword == "ARG":
            _arg(ins.args.text, global_args if stage is None else stage.args, global_args, stage)
        if stage is None:
            continue
        if ins.keyword == "ENV":
            stage.env.update(_env(ins.args.text, {**stage.args, **stage.env}))
        elif ins.keyword == "SHELL":
            words = _exec_form(ins.args)
            if words:
                stage.shell = [w[0] for w in words]
        elif ins.keyword in ("CMD", "ENTRYPOINT"):
            words = _exec_form(ins.args)
            shell_form = words is None
            if shell_form:
                script = _trimmed(ins.args)
                words = [(w, script, 0, 0) for w in stage.shell] + [(script.text, script, 0, len(script.text))]
            if ins.keyword == "CMD":
                stage.cmd, stage.cmd_set = words, True
            else:
                stage.entrypoint, stage.entrypoint_shell = words, shell_form
                if not stage.cmd_set:
                    stage.cmd = None
    if stage is None:
        return [], notes
    words = _runs(stage)
    if not words:
        return [], notes
    texts = [w[0] for w in words]
    if is_shell_c(texts):
        # exec form: the words after the script are its $0, $1… (ENTRYPOINT's, then CMD's)
        after = [_Placed(w, (t.offsets[0] - 1, t.offsets[-1] + 1) if t.offsets else (0, 0)) for w, t, _s, _e in words[3:]]
        return _script(path, _inner(words[2]), stage, pos, notes, after, shell_form=words[2][1] is words[0][1])
    found = launch_start(texts)
    if found is None:
        if any(mentions_sglang(t) for t in texts):
            notes.append(Note(path, pos(words[0][1].offsets[words[0][2]]),
                              "the image's command mentions sglang but runs no `sglang serve|generate` launch "
                              "h3doctor understands; not judged"))
        return [], notes
    start, prefix_env = found
    mine = words[start:]
    # an exec-form word is located at its opening quote, as a YAML list item is
    quoted = [(w, (t.offsets[0] - 1, t.offsets[-1] + 1)) for w, t, _s, _e in mine]
    return [_launch(path, quoted, stage, prefix_env, pos, text_form=False)], notes


def _runs(stage: _Stage) -> list[Word]:
    """What the container runs: an exec-form ENTRYPOINT followed by CMD; a shell-form ENTRYPOINT
    alone; CMD alone when there is no ENTRYPOINT."""
    if stage.entrypoint is None:
        return list(stage.cmd or [])
    words = list(stage.entrypoint)
    if stage.entrypoint_shell or stage.cmd is None:
        return words
    return words + list(stage.cmd)


def _launch(path: str, words: list[tuple[str, tuple[int, int]]], stage: _Stage, prefix_env: dict[str, str], pos,
            *, text_form: bool) -> Launch:
    first = pos(words[0][1][0])
    launch = Launch(path=path, kind="dockerfile", label=f"line {first.line}", tokens=[w for w, _ in words], pos=first,
                    token_pos=[pos(span[0]) for _w, span in words], env={**stage.env, **prefix_env})
    launch.image = stage.image
    if text_form:  # the exec form's words are JSON strings: `lint --fix` does not rewrite them
        launch.segments = [Segment("text", None, 0, [span for _w, span in words])]
    return launch


@dataclass(frozen=True)
class _Placed:
    """A word of the launch and its [start, end) in the file (inputs/positional.py binds them)."""

    text: str
    span: tuple[int, int]


def _script(path: str, script: _Text, stage: _Stage, pos, notes: list[Note], after: list[_Placed], *,
            shell_form: bool) -> tuple[list[Launch], list[Note]]:
    try:  # the shell of the container: the stage's ENV is its environment (ARG is not)
        commands = script_commands(script.text, stage.env)
    except shellsplit.Unsupported as exc:
        if mentions_sglang(script.text):
            notes.append(Note(path, pos(script.offsets[0]), f"not understood ({exc}); this launch is not judged"))
        return [], notes
    launches = []
    positional = Positional(after)
    for words in commands:
        texts = [w for w, _s, _e in words]
        if positional.shifted(texts):
            continue
        found = launch_start(texts)
        if found is None:
            continue
        start, prefix_env = found
        bound = positional.bind([_Placed(w, script.span(s, e)) for w, s, e in words[start:]],
                                [script.text[s:s + 1] == '"' for _w, s, _e in words[start:]])
        launches.append(_launch(path, [(w.text, w.span) for w in bound], stage, prefix_env, pos,
                                text_form=shell_form))
    if not launches and mentions_sglang(script.text):
        notes.append(Note(path, pos(script.offsets[0]), "the image's shell command mentions sglang but runs no "
                                                        "`sglang serve|generate` launch h3doctor understands; not judged"))
    return launches, notes


def _inner(word: Word) -> _Text:
    text, source, start, end = word
    return _Text(text, source.part(start, end).offsets)


# --- the file's instructions ---------------------------------------------------------------------

def _instructions(text: str):
    escape = "\\"
    physical = text.split("\n")
    offsets = [0]
    for line in physical:
        offsets.append(offsets[-1] + len(line) + 1)
    n = 0
    for n, line in enumerate(physical):  # parser directives: only before anything else
        m = _DIRECTIVE.match(line)
        if not m:
            break
        if m.group(1).lower() == "escape" and m.group(2) in ("\\", "`"):
            escape = m.group(2)
    while n < len(physical):
        line = physical[n]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            n += 1
            continue
        m = _INSTRUCTION.match(line)
        if not m:
            n += 1
            continue
        chars: list[str] = []
        where: list[int] = []
        start = m.end()
        base = offsets[n]
        while True:
            body = physical[n][start:].rstrip("\r")
            cont = body.rstrip().endswith(escape)
            if cont:
                body = body.rstrip()[:-1]
            chars.extend(body)
            where.extend(range(base + start, base + start + len(body)))
            n += 1
            if not cont:
                break
            while n < len(physical) and (not physical[n].strip() or physical[n].lstrip().startswith("#")):
                n += 1  # inside a continuation: empty and comment lines are dropped
            if n >= len(physical):
                break
            start, base = 0, offsets[n]
        where.append(where[-1] + 1 if where else base + start)
        yield _Instruction(m.group(1).upper(), _Text("".join(chars), where), offsets[n - 1])


def _exec_form(args: _Text) -> list[Word] | None:
    """The exec form's strings, each with its characters' offsets in the file; None for the
    shell form (anything that is not a JSON array of strings)."""
    stripped = args.text.strip()
    if not stripped.startswith("["):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return _json_strings(args)


def _trimmed(args: _Text) -> _Text:
    text = args.text
    lead = len(text) - len(text.lstrip())
    return args.part(lead, max(len(text.rstrip()), lead))


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_strings(args: _Text) -> list[Word]:
    """Each string of a JSON array as a `_Text` of its decoded characters, mapped to the file."""
    out: list[Word] = []
    text, i = args.text, 0
    while i < len(text):
        if text[i] != '"':
            i += 1
            continue
        chars: list[str] = []
        where: list[int] = []
        i += 1
        while text[i] != '"':
            at = args.offsets[i]
            if text[i] == "\\":
                code = text[i + 1]
                if code == "u":
                    chars.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                else:
                    chars.append(_ESCAPES[code])
                    i += 2
            else:
                chars.append(text[i])
                i += 1
            where.append(at)
        where.append(args.offsets[i])
        word = _Text("".join(chars), where)
        out.append((word.text, word, 0, len(word.text)))
        i += 1
    return out


# --- FROM, ARG, ENV --------------------------------------------------------------------------------

def _substitute(value: str, variables: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(4)
        have = variables.get(name)
        if m.group(2) == "-":
            return have if have else m.group(3)
        if m.group(2) == "+":
            return m.group(3) if have else ""
        return have or ""

    return _VAR.sub(sub, value)


def _split(value: str) -> list[str]:
    try:
        return shellsplit.split(value)
    except ValueError:
        return value.split()


def _from(args: str, global_args: dict[str, str], stages: dict[str, _Stage]) -> _Stage:
    words = [w for w in _split(_substitute(args, global_args)) if not w.startswith("--")]
    image = words[0] if words else None
    written = [w for w in _split(args) if not w.startswith("--")]
    if written and any(not (m.group(2) or global_args.get(m.group(1) or m.group(4)))
                       for m in _VAR.finditer(written[0])):
        image = written[0]  # an ARG with no value: the image (and its release) is known only at build time
    parent = stages.get(image.lower()) if image else None
    if parent is not None:
        stage = _Stage(parent.image, dict(parent.env), {}, list(parent.shell), parent.entrypoint,
                       parent.entrypoint_shell, parent.cmd)
    else:
        stage = _Stage(image)
    if len(words) >= 3 and words[1].lower() == "as":
        stages[words[2].lower()] = stage
    return stage


def _arg(args: str, into: dict[str, str], global_args: dict[str, str], stage: _Stage | None) -> None:
    for word in _split(args):
        name, eq, default = word.partition("=")
        if eq:
            into[name] = _substitute(default, {**global_args, **(stage.args if stage else {}), **(stage.env if stage else {})})
        elif stage is not None and name in global_args:
            into[name] = global_args[name]  # a global ARG re-declared in the stage takes its value


def _env(args: str, variables: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    words = _split(args)
    if words and "=" not in words[0]:  # the legacy form: ENV NAME value with spaces
        name, _, rest = args.strip().partition(" ")
        out[name] = _substitute(rest.strip(), variables)
        return out
    for word in _split(args):
        name, eq, value = word.partition("=")
        if eq:
            out[name] = _substitute(value, {**variables, **out})
    return out
