"""A launch found in a file: its tokens, environment and GPU grant, and where each token sits.

Every input reader (recipes, sglang `--config` files, Kubernetes, compose, shell scripts) returns
`Launch` records and `Note`s (what it saw but did not understand). A `Segment` says where a run
of the launch's tokens comes from — a YAML list, a YAML string, or a span of a text file — so
findings can be located to line and column and `lint --fix` can edit the tokens in place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from dataclasses import dataclass, field
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.located import Document, Pos
from h3doctor.sglang.container_run import SHELLS
from h3doctor.shellwords import is_assignment
from h3doctor.unresolved import as_written, has_mark, marked


def rule_matches(pattern: str, rule_id: str) -> bool:
    """A rule ID against one written pattern: the ID itself (H3D305) or a prefix ending in `*`
    (H3D3*, H3DL*), the one reading of `ignore`/`rules` lists, recipe ignores and inline
    `# h3doctor: ignore[...]` comments."""
    return rule_id.startswith(pattern[:-1]) if pattern.endswith("*") else rule_id == pattern


@dataclass(frozen=True)
class Ignore:
    rule: str  # a rule ID (H3D305) or a prefix pattern (H3D3*)
    reason: str
    pos: Pos

    def matches(self, rule_id: str) -> bool:
        return rule_matches(self.rule, rule_id)


@dataclass
class Segment:
    kind: str  # "list" (a YAML sequence of words), "string" (a YAML string of shell words), "text" (file text)
    path: tuple | None  # YAML path of the list or string; None for "text"
    first: int  # index in Launch.tokens of the segment's first token
    spans: list[tuple[int, int]]  # per token: [start, end) offsets in the string or file text ("list": item index)

    @property
    def count(self) -> int:
        return len(self.spans)


@dataclass
class Launch:
    path: str
    kind: str  # recipe | sglang-config | kubernetes | compose | shell | dockerfile | slurm | skypilot
    label: str  # e.g. "Deployment/h3 container server"
    tokens: list[str]
    pos: Pos  # where the launch is, as a whole
    token_pos: list[Pos] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    doc: Document | None = None
    targets: tuple[str, ...] = ()  # the file's own targets (recipes)
    gpu_count: int | None = None  # GPUs the deployment grants the container (None: not said)
    ignores: list[Ignore] = field(default_factory=list)
    sglang_version: str | None = None
    image: str | None = None  # the container image the launch runs in (its tag is the release)
    image_pos: Pos | None = None  # where the image is named (a manifest's `image:` value): the image-tag finding's word
    intent: dict[str, Any] = field(default_factory=dict)
    key_pos: dict[str, Pos] = field(default_factory=dict)  # sglang config files: key -> where
    # files its deployment mounts from the repository: container path -> (text, where it is held)
    mounts: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the GPU types its pod's node labels allow (inputs/gpu_labels.py GpuChoice): its target's GPU
    gpu_choices: list[Any] = field(default_factory=list)
    # its container's Kubernetes probes (inputs/probes.py Probe by role); None: no manifest read for them
    probes: dict[str, Any] | None = None


@dataclass(frozen=True)
class Note:
    """Something in an input that h3doctor saw and did not (or could not) judge."""

    path: str
    pos: Pos
    message: str
    notice: str = "H3DL002"  # lint's notice ID (h3doctor/engine/notices.py): not understood, by default


class Unsupported(ValueError):
    """Shell syntax the word splitter does not model (the message says which)."""


_OPERATORS = "|&;<>()\n"
_PLAIN = re.compile(r"[^ \t\r|&;<>()\n\\'\"$`]+")  # what the scanner copies as it stands
# A text of plain words and blanks only (no quote, escape, operator, expansion or comment): its
# words are its runs of non-blanks, found in one regex pass (a 1 MiB recipe command is 140k words).
_PLAIN_TEXT = re.compile(r"[^|&;<>()\n\\'\"$`#]*")
_NON_BLANK = re.compile(r"[^ \t\r]+")

Word = tuple[str, int, int]  # the word as the shell reads it, and its [start, end) offsets in the text


SCRIPT_ARGS = marked("$@")  # the word `"$@"` (the script's own arguments), with script_args=True


def shell_commands(text: str, *, script_args: bool = False,
                   variables: Mapping[str, str | None] | None = None, keep_expansions: bool = False) -> list[list[Word]]:
    """The simple commands of a shell text (split at unquoted newlines, `|`, `&&`, `;`, ...), each
    as its words with offsets. A redirection (`> log`, `2>&1`) ends the words of its command.

    Hand-written because shlex gives no offsets. Quotes, backslashes and line continuations as the
    shell reads them; `$` and backticks are not expanded: a command using them raises Unsupported.
    With `script_args`, a whole word `"$@"` (or `$@`) is the word SCRIPT_ARGS: a Docker entrypoint
    passes the container's arguments on with `exec sglang serve ... "$@"`.
    With `variables`, `$NAME` and `${NAME}` of a name it binds are its value (a task file's own
    environment); a name it lacks, or binds to None (declared, given only when it runs), raises
    Unsupported naming it, as does an unquoted value the shell would split or glob.
    With `keep_expansions`, an expansion it cannot give a value (`$HOME`, `$(hostname)`, backquotes,
    a name `variables` lacks) is no error: it is kept in its word as written, marked
    (h3doctor/unresolved.py); whether it matters is decided by where it stands in the launch, not
    here (lint's scripts, the command-line hook's typed line).
    """
    commands: list[list[Word]] = []
    i = 0
    if keep_expansions:
        variables = _Marking(variables or {})
    while i <= len(text):
        words, stop = _scan(text, i, script_args, variables)
        if words:
            commands.append(words)
        if stop >= len(text):
            break
        i = _skip_redirection(text, stop, words)
    return commands


def script_commands(text: str, env: Mapping[str, str]) -> list[list[Word]]:
    """The script's commands as its shell reads them: `$NAME` of the container's environment or of
    an assignment in the script (its last, in file order) is its value; any other expansion is
    kept marked (h3doctor/unresolved.py), judged where it reaches sglang."""
    assigned: dict[str, str] = {}
    for words in shell_commands(text, variables=env, keep_expansions=True):
        texts = [w for w, _s, _e in words]
        if texts and (texts[0] == "export" or all(is_assignment(t) for t in texts)):
            for word in texts[1:] if texts[0] == "export" else texts:
                name, eq, value = word.partition("=")
                if eq:
                    assigned[name] = value
    if not assigned:
        return shell_commands(text, variables=env, keep_expansions=True)
    return shell_commands(text, variables={**env, **assigned}, keep_expansions=True)


def shell_words(text: str) -> list[Word]:
    """The words of the first simple command of `text`."""
    commands = shell_commands(text)
    return commands[0] if commands else []


def _skip_redirection(text: str, stop: int, words: list[Word]) -> int:
    """Past the operator at `stop`; past a redirection's target too, dropping its fd number."""
    op = text[stop]
    if op not in "<>":
        return stop + 1
    if words and words[-1][2] == stop and is_digits(words[-1][0]):
        words.pop()  # the `2` of `2>&1`
    j = stop + 1
    while j < len(text) and text[j] in "<>&":
        j += 1
    while j < len(text) and text[j] in " \t":
        j += 1
    while j < len(text) and text[j] not in " \t\n;|&":  # the target word
        j += 1
    # the rest of the line stays with this command's redirections, not a new command
    rest, _ = _scan(text, j, True)
    return j if not rest else _end_of(text, j)


def _end_of(text: str, j: int) -> int:
    while j < len(text) and text[j] not in "\n;|&":
        j += 1
    return j


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_SPLIT_OR_GLOB = re.compile(r"[\s*?\[]")


class _Marking(dict):
    """The variables of `shell_commands(keep_expansions=True)`: what they do not give is marked, not refused."""


def _expansion_end(text: str, i: int) -> int:
    """The offset after the expansion at `text[i]` (`$NAME`, `${…}`, `$(…)`, `$((…))`, a backtick
    command, `$1`, `$?`); nested parentheses and braces counted, quotes inside not read."""
    if text[i] == "`":
        close = text.find("`", i + 1)
        return len(text) if close < 0 else close + 1
    m = _VARIABLE.match(text, i)
    if m:
        return m.end()
    if i + 1 < len(text) and text[i + 1] in "({":
        pair = {"(": ")", "{": "}"}[text[i + 1]]
        depth, j = 0, i + 1
        while j < len(text):
            depth += text[j] == text[i + 1]
            depth -= text[j] == pair
            j += 1
            if depth == 0:
                return j
        return len(text)
    return min(i + 2, len(text))  # $1, $?, $#, $$


def _known(value: str | None) -> bool:
    return value is not None and not has_mark(value)


def _variable(text: str, i: int, variables: Mapping[str, str | None] | None, quoted: bool) -> tuple[str, int]:
    """The value of the `$NAME` / `${NAME}` at `text[i]` and the offset after it; Unsupported when
    it is another expansion or its value is not known here (marked, with `_Marking` variables)."""
    m = _VARIABLE.match(text, i) if variables is not None else None
    if isinstance(variables, _Marking) and (m is None or not _known(variables.get(m.group(1) or m.group(2)))):
        end = _expansion_end(text, i)  # kept as written: `$PORT` of a Secret stays `$PORT`, not its stand-in
        return marked(text[i:end]), end
    if m is None:
        raise Unsupported(f"shell expansion in {text[i:i + 8]!r}")
    name = m.group(1) or m.group(2)
    value = variables.get(name)
    if value is None:
        said = "is declared without a value (given when it runs)" if name in variables else "has no value here"
        raise Unsupported(f"${name} {said}")
    if not quoted and (not value or _SPLIT_OR_GLOB.search(value)):
        raise Unsupported(f"${name} unquoted: the shell splits or globs its value {value!r}")
    return value, m.end()


def _scan(text: str, i: int, script_args: bool = False,
          variables: Mapping[str, str | None] | None = None) -> tuple[list[Word], int]:
    if _PLAIN_TEXT.fullmatch(text, i):
        return [(m.group(), m.start(), m.end()) for m in _NON_BLANK.finditer(text, i)], len(text)
    words: list[Word] = []
    end = len(text)
    while i < end:
        c = text[i]
        if script_args and c in '"$':
            form = '"$@"' if c == '"' else "$@"
            after = i + len(form)
            if text.startswith(form, i) and (after >= end or text[after] in " \t\r" + _OPERATORS):
                words.append((SCRIPT_ARGS, i, after))
                i = after
                continue
        if c in " \t\r":
            i += 1
            continue
        if c == "\\" and i + 1 < end and text[i + 1] == "\n":  # line continuation
            i += 2
            continue
        if c == "#":  # a comment runs to the end of the line
            while i < end and text[i] != "\n":
                i += 1
            return words, i
        if c in _OPERATORS:
            return words, i
        word_start, buf = i, []
        while i < end and text[i] not in " \t\r" and text[i] not in _OPERATORS:
            c = text[i]
            if c == "\\":
                if i + 1 < end and text[i + 1] != "\n":
                    buf.append(text[i + 1])
                i += 2
            elif c == "'":
                close = text.find("'", i + 1, end)
                if close < 0:
                    raise Unsupported("unterminated single quote")
                buf.append(text[i + 1:close])
                i = close + 1
            elif c == '"':
                j = i + 1
                while j < end and text[j] != '"':
                    if text[j] == "\\" and j + 1 < end and text[j + 1] in '"\\$`\n':
                        if text[j + 1] != "\n":
                            buf.append(text[j + 1])
                        j += 2
                        continue
                    if (text[j] == "$" and variables is not None) or (text[j] == "`" and isinstance(variables, _Marking)):
                        value, j = _variable(text, j, variables, quoted=True)
                        buf.append(value)
                        continue
                    if text[j] in "$`":
                        raise Unsupported(f"shell expansion in {text[word_start:j + 8]!r}")
                    buf.append(text[j])
                    j += 1
                if j >= end:
                    raise Unsupported("unterminated double quote")
                i = j + 1
            elif (c == "$" and variables is not None) or (c == "`" and isinstance(variables, _Marking)):
                value, i = _variable(text, i, variables, quoted=False)
                buf.append(value)
            elif c in "$`":
                raise Unsupported(f"shell expansion in {text[word_start:i + 8]!r}")
            else:  # a run of plain characters at once (a 1 MiB launch is 1M characters)
                run = _PLAIN.match(text, i, end)
                buf.append(run.group())
                i = run.end()
        words.append(("".join(buf), word_start, i))
    return words, i


_WRAPPERS = {"exec", "nohup", "time", "command", "stdbuf", "taskset", "numactl"}
_LAUNCH_MODULES = ("sglang.multimodal_gen.runtime.launch_server", "sglang.multimodal_gen.runtime.entrypoints.cli.main",
                   "sglang.launch_server")  # the LLM launcher: sglang's docs launch with it (a MiniMax-H3 model there is H3D040)


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isascii() and name.replace("_", "a").isalnum() and not is_digits(name[0])


def is_shell_c(words: list[str]) -> bool:
    """`sh -c SCRIPT …` (`bash -lc`, `/bin/sh -ec`): words[2] is the script the shell runs."""
    return (len(words) >= 3 and words[0].rsplit("/", 1)[-1] in SHELLS and words[1].startswith("-")
            and "c" in words[1])


def launch_start(words: list[str]) -> tuple[int, dict[str, str]] | None:
    """Index of the program word of an sglang diffusion launch (`sglang serve|generate` or
    `python -m sglang.multimodal_gen...`) and the `VAR=value` words in front of it (wrappers such
    as `exec`, `env`, `nohup` skipped), or None."""
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        is_sglang = base == "sglang" and i + 1 < len(words) and words[i + 1] in ("serve", "generate")
        is_module = base.startswith("python") and _module_of(words, i + 1) in _LAUNCH_MODULES
        if is_sglang or is_module:
            env: dict[str, str] = {}
            j = i
            while j > 0 and (_is_assignment(words[j - 1]) or words[j - 1] in _WRAPPERS or words[j - 1] == "env"):
                j -= 1
                if _is_assignment(words[j]):
                    name, _, value = words[j].partition("=")
                    env.setdefault(name, value)
            return i, env
    return None


def _module_of(words: list[str], i: int) -> str | None:
    """The MODULE of `python [options] -m MODULE` from words[i] on (`python3 -u -m …`, `-um MODULE`,
    `-mMODULE`); None when the words do not run a module."""
    while i < len(words) and words[i].startswith("-") and not words[i].startswith("--"):
        letters = words[i][1:]
        if letters[:1] in ("X", "W"):  # -X opt, -W arg, or their value attached
            i += 1 if letters[1:] else 2
            continue
        if "m" in letters:
            before, _m, after = letters.partition("m")
            if not before.isalpha() and before:
                return None
            return after or (words[i + 1] if i + 1 < len(words) else None)
        i += 1
    return None


def mentions_sglang(text: str) -> bool:
    return "sglang" in text and ("serve" in text or "generate" in text or "launch_server" in text)


_SAYS_ONLY = {"echo", "printf", "pip", "pip3", "which", "type", "hash", "test", "[", "grep", "cat", ":", "true",
              "false", "export", "unset", "alias", "source", ".", "pkill", "pgrep", "killall"}  # name a command without running it
_UNREAD = re.compile(r"^\$\{?\w+\}?$|^\$\(|^`")  # a program word the shell computes: $S, ${S}, $(…), `…`


def unread_launch(words: list[str]) -> str | None:
    """Why a command the launch reader found no launch in may still start sglang, or None: a word
    names sglang's launch (`eval "sglang serve …"`, `torchrun -m sglang.launch_server`, `sudo -E
    sglang serve`), or its program is computed (`$S serve …`). lint notes it, never passes it."""
    words = [as_written(w) for w in words]  # an expansion the reader kept (h3doctor/unresolved.py) as written
    if not words or os.path.basename(words[0]) in _SAYS_ONLY:
        return None
    if _UNREAD.match(words[0]) and len(words) > 1 and words[1] in ("serve", "generate"):
        return f"the program {words[0][:40]!r} is computed when the script runs"
    if any("sglang" in w for w in words) and mentions_sglang(" ".join(words)):
        return f"`{os.path.basename(words[0])[:40]} …` starts sglang in a way h3doctor does not read"
    return None
