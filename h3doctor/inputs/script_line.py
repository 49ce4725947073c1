"""A command line whose shell script holds sglang's flags, read as the shell reads it, for `check`.

    docker run --gpus all IMAGE bash -lc 'exec sglang serve --model-path M "$@"' -- --num-gpus 4

runs sglang with the script's words and then the line's arguments (`"$@"`). Lint reads such a
script through inputs/launch.py's word reader and inputs/positional.py; `check` reads it through
the same two, here, and judges it as the cookbook's form the launch-form reader already knows
(sglang/launch_forms.py: the script's sglang command ends in `"$@"`, its flags are the script's
arguments): the script's launch command keeps its program words and ends in `"$@"`, and the
words it passes sglang (its own flags, the arguments its `"$@"` and `$1` give, in the shell's
order) follow the line. The words before them stay where they were, so a fix of a container's
`-e` word or of an argument an `export NAME="$1"` reads is at the same index in both.

The corrected command is then written back where each word is written (`ScriptLine.written_back`):
a flag the line gives after the script is edited there, a flag written in the script is edited in
the script's text, quoted so the shell reads the same words. A word the shell computes — a
positional parameter (`$1`: the script may read it elsewhere), `$VAR`, `$(…)` — is never
replaced by a literal: the change is not made, and the reason is given.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from h3doctor.errors import UsageError
from h3doctor.safeload import excerpt
from h3doctor.inputs.launch import launch_start, script_commands
from h3doctor.inputs.positional import Positional
from h3doctor.sglang.container_run import SHELLS, bind_positional, is_container_run, read_container_run, read_shell_c
from h3doctor.sglang.launch_forms import MAX_LAUNCH_WORDS, read_launch_form
from h3doctor.shellsplit import Unsupported
from h3doctor.shellwords import is_assignment, quote
from h3doctor.tokendiff import changed_span, opcodes
from h3doctor.unresolved import has_mark

ARGS = '"$@"'
_NUMBERED = re.compile(r"\$(?:[1-9#]|\{[0-9]+\}|\{#\})")  # bash: $1…$9, ${10}, $#
_HINT = "the container forms h3doctor reads are listed in the README (Launch forms)"
_COUNTED = re.compile(r"\$(?:#|\{#\})")


@dataclass(frozen=True)
class _Word:
    """A word sglang is given and where the line writes it: `arg` (line word `at`), or `script`
    (the script's text [start, end)); `computed` when the shell computes it (not edited)."""

    text: str
    where: str  # arg | script
    at: int = -1
    span: tuple[int, int] = (0, 0)
    computed: str = ""  # why it is not edited: a positional parameter, an expansion


class NotWritten(Exception):
    """The corrected command cannot be written back into the line: the message says why."""


@dataclass(frozen=True)
class ScriptLine:
    tokens: tuple[str, ...]  # the line as given
    judged: tuple[str, ...]  # the line read as the cookbook's form (see the module's doc)
    script_at: int  # tokens[script_at] is the script
    moved_from: int  # judged[moved_from:] are the words the script's launch passes sglang, `words`
    words: tuple[_Word, ...]
    # the script reads its arguments by number ($1, ${10}, $#, or shifts them): a line argument
    # removed or added in front of another renumbers them, so only an append is written back
    numbered: bool = False
    counted: bool = False  # ... and it reads $#: not even an append
    # judged[script_at][start:end) is the script's own text from `at` on (its launch's program words):
    # a fix of the program (H3D040) is made there in the script as written
    program_text: tuple[int, int, int] = (0, 0, 0)  # (start, end, at)

    def written_back(self, corrected: list[str] | tuple[str, ...]) -> list[str]:
        """The line with the changes that make `judged` into `corrected`, each made where its words
        are written; NotWritten when one is to a word the shell computes or to the script's program."""
        tokens = list(self.tokens)
        script = tokens[self.script_at]
        line_edits: list[tuple[int, int, list[str]]] = []  # (start, end, words) of the line
        text_edits: list[tuple[int, int, str]] = []  # (start, end, text) of the script
        for tag, i1, i2, j1, j2 in opcodes(self.judged, corrected):
            if tag == "equal":
                continue
            new = list(corrected[j1:j2])
            if i2 <= self.moved_from and i1 < self.moved_from:  # in front of the script's words
                if (i1, i2, j2 - j1) == (self.script_at, self.script_at + 1, 1):
                    text_edits.append(self._program_edit(new[0]))
                    continue
                if i1 <= self.script_at < i2:
                    raise NotWritten("the change is to the script's program, written inside the script")
                if i1 > len(tokens):  # the `--` the judged line adds as the script's $0
                    raise NotWritten("the change is to the script's name ($0)")
                line_edits.append((i1, i2, new))
                continue
            if i1 < self.moved_from:
                raise NotWritten("the change spans the script's program and its flags")
            self._moved_edit(i1 - self.moved_from, i2 - self.moved_from, new, line_edits, text_edits)
        for start, end, text in sorted(text_edits, reverse=True):
            if not text:  # a word removed takes the blanks in front of it along
                start = len(script[:start].rstrip(" \t")) if script[:start].strip(" \t") else start
            script = script[:start] + text + script[end:]
        tokens[self.script_at] = script
        for start, end, new in sorted(line_edits, key=lambda e: (e[0], e[1]), reverse=True):
            tokens[start:end] = new
        return tokens

    def _program_edit(self, corrected: str) -> tuple[int, int, str]:
        """The change of the judged script to `corrected` as an edit of the script as written: only
        within its launch's program words (the rest of the judged script is h3doctor's)."""
        start, end, at = self.program_text
        change = changed_span(self.judged[self.script_at], corrected)
        if change is None or not start <= change[0] <= change[1] <= end:
            raise NotWritten("the change is to the script's text beyond its launch's program words, written inside "
                             "the script")
        return change[0] - start + at, change[1] - start + at, change[2]

    def _moved_edit(self, i1: int, i2: int, new: list[str], line_edits: list, text_edits: list) -> None:
        """One change of the script launch's words [i1, i2) to `new`, at each word's place."""
        changed = self.words[i1:i2]
        computed = next((w for w in changed if w.computed), None)
        if computed is not None:
            raise NotWritten(f"the change is to {computed.text!r}, {computed.computed}; change it where it is given")
        if self.numbered and self._renumbers(i1, i2):
            raise NotWritten("the change moves the line's arguments, which the script reads by position "
                             f"({'$#, ' if self.counted else ''}$1, …); change them yourself")
        if not changed:  # an insertion: after the word in front of it, else before the first
            if i1 > 0:
                self._insert_after(self.words[i1 - 1], new, line_edits, text_edits)
            else:
                self._insert_before(self.words[0], new, line_edits, text_edits)
            return
        # the new words take the first changed word's place; the other changed words are removed
        first, rest = changed[0], changed[1:]
        self._replace(first, new, line_edits, text_edits)
        for w in rest:
            self._replace(w, [], line_edits, text_edits)

    def _renumbers(self, i1: int, i2: int) -> bool:
        """A change of the launch's words [i1, i2) moves a line argument: it removes or replaces one,
        or adds words in front of one (or after the last, when the script counts them)."""
        args = [k for k, w in enumerate(self.words) if w.where == "arg"]
        if any(i1 <= k < i2 for k in args):
            return True
        return i1 == i2 and (any(k >= i1 for k in args) or (self.counted and bool(args)))

    @staticmethod
    def _replace(w: _Word, new: list[str], line_edits: list, text_edits: list) -> None:
        if w.where == "arg":
            line_edits.append((w.at, w.at + 1, new))
        else:
            text_edits.append((*w.span, " ".join(quote(n) for n in new)))

    def _insert_after(self, w: _Word, new: list[str], line_edits: list, text_edits: list) -> None:
        if w.where == "arg":
            line_edits.append((w.at + 1, w.at + 1, new))
        else:
            text_edits.append((w.span[1], w.span[1], "".join(" " + quote(n) for n in new)))

    def _insert_before(self, w: _Word, new: list[str], line_edits: list, text_edits: list) -> None:
        if w.where == "arg":
            line_edits.append((w.at, w.at, new))
        else:
            text_edits.append((w.span[0], w.span[0], "".join(quote(n) + " " for n in new)))


def read(tokens: list[str], env: dict[str, str]) -> ScriptLine | None:
    """The line read as the shell runs it when its `-c` script's sglang command has words other
    than its program and a closing `"$@"` (flags written inside, `$1`, `"$@"` in the middle); None
    for any other line (the launch-form reader reads or refuses it as before). `env`: the
    environment the line starts in (the container's is its `-e` words)."""
    shell, shift, caller = _shell_at(tokens, env)
    if shell is None:
        return None
    sh = read_shell_c(shell)  # a script too long, or that shlex cannot read: its usage error
    if sh is None:
        return None
    script_at = shift + sh.args_start - (2 if sh.zero else 1)
    script = tokens[script_at]
    try:
        commands = script_commands(script, caller)
    except Unsupported as exc:
        try:
            read_launch_form(list(tokens))  # the cookbook's form, which that reader reads on its own
            return None
        except UsageError:
            raise UsageError(f"the `-c` script is not understood ({exc}): not checked", hint=_HINT) from None
    after = [_Word(t, "arg", at=k) for k, t in enumerate(tokens[script_at + 1:], script_at + 1)]
    index = _last_launch(commands)
    if index is None:
        return None
    positional = Positional(after)
    for command in commands[:index]:
        texts = [w for w, _s, _e in command]
        before = len(positional.args)
        if positional.shifted(texts):
            if texts[1:] != ["0"] and len(positional.args) == before:  # as the launch-form reader says it
                raise UsageError(f"the `-c` script's `{excerpt(' '.join(texts))}` shifts past the arguments the "
                                 f"line gives ({before})", hint=_HINT)
            continue
        if texts and (texts[0] == "export" or all(is_assignment(t) for t in texts)):
            args = [w.text for w in positional.args]
            for word in texts:  # a parameter past the line's arguments: the reader's own usage error
                bind_positional(word, args, after[0].text if after else None)
    command = commands[index]
    words: list[_Word] = []
    for w, s, e in command:
        words.extend(_bound(script, w, s, e, positional))
    program = _program_length(words)
    if program is None:
        return None
    moved = words[program:]
    if len(moved) == len(positional.args) and all(m.where == "arg" for m in moved) and _ends_in_args(script, command):
        return None  # the cookbook's form: the reader reads it as it is
    # the program's words are script words, one per word of the command
    prefix_end = command[program][1] if program < len(command) else command[-1][2]
    rest = len(positional.args)
    shift = f"shift {rest}; " if rest else ""
    launch_at = command[0][1]
    program_text = script[launch_at:prefix_end].rstrip()
    rewritten = script[:launch_at] + shift + program_text + " " + ARGS + script[command[-1][2]:]
    copied = (launch_at + len(shift), launch_at + len(shift) + len(program_text), launch_at)
    judged = list(tokens)
    judged[script_at] = rewritten
    if not sh.zero:
        judged.append("--")  # the script's $0: the words after it are its "$@"
    moved_from = len(judged)
    judged.extend(w.text for w in moved)
    numbered = _NUMBERED.search(script) is not None or any(c and c[0][0] == "shift" for c in commands)
    return ScriptLine(tuple(tokens), tuple(judged), script_at, moved_from, tuple(moved), numbered,
                      _COUNTED.search(script) is not None, copied)


def _shell_at(tokens: list[str], env: dict[str, str]) -> tuple[list[str] | None, int, dict[str, str]]:
    """The shell's words (a container's command, or the whole line), what to add to an index of
    them for the line's, and the environment its script starts in."""
    if is_container_run(list(tokens)):
        try:
            run = read_container_run(list(tokens))
        except UsageError:
            return None, 0, env
        if run.entrypoint:  # `--entrypoint bash IMAGE -lc …`: the shell is the option's value
            return [run.entrypoint, *tokens[run.command_start:]], run.command_start - 1, run.environment(env)
        return list(tokens[run.command_start:]), run.command_start, run.environment(env)
    if tokens and os.path.basename(tokens[0]) in SHELLS:
        return list(tokens), 0, env
    return None, 0, env


def _last_launch(commands: list) -> int | None:
    """The index of the script's last command that runs sglang (its words in front of the program,
    `exec`, `env X=1`, are the program's: the launch-form reader reads them)."""
    found = None
    for k, command in enumerate(commands):
        if launch_start([w for w, _s, _e in command]) is not None:
            found = k
    return found


def _bound(script: str, text: str, s: int, e: int, positional: Positional) -> list[_Word]:
    """One script word as sglang gets it: `"$@"` the line's arguments (edited there), `$1` the
    argument it names (not edited: the script may read it elsewhere), any other word its own text
    (not edited when the shell computes it)."""
    word = _Word(text, "script", span=(s, e))
    bound = positional.bind([word], [script[s:s + 1] == '"'])
    written = script[s:e]
    if bound and all(b.where == "arg" for b in bound) and written.strip('"') in ("$@", "${@}"):
        return bound
    out = []
    for b in bound:
        if b.where == "arg" or b.text != text:
            out.append(_Word(b.text, "script", span=(s, e), computed=f"the script's positional parameter {written}"))
        elif "$" in written or "`" in written or has_mark(text):
            out.append(_Word(b.text, "script", span=(s, e), computed=f"written {written} and expanded by the shell"))
        else:
            out.append(b)
    return out


def _program_length(words: list[_Word]) -> int | None:
    """How many of the launch's words are its program (`exec sglang serve`), as the launch-form
    reader reads it; None when a word of it is not written plainly in the script."""
    if len(words) > MAX_LAUNCH_WORDS:  # the reader's own word budget, said as it says it
        read_launch_form([w.text for w in words])
    try:
        form = read_launch_form([w.text for w in words])
    except UsageError:
        return None
    program = words[:form.prefix_len]
    if not form.program_given or any(w.where != "script" or w.computed for w in program):
        return None
    return form.prefix_len


def _ends_in_args(script: str, command: list) -> bool:
    return bool(command) and script[command[-1][1]:command[-1][2]] in ('"$@"', '"${@}"')
