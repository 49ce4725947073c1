"""A container's `sh -c SCRIPT [$0 [ARGS…]]`: the script's positional parameters bound to the words
the runtime gives after it, as the shell binds them.

`bash -lc 'exec sglang serve --model-path M "$@"' -- --num-gpus 2` runs sglang with the script's
words and then `--num-gpus 2`: `$0` is the first word after the script (the cookbook's `--`),
`$1`… the ones after it, `"$@"` all of those, `$#` their count, bash's `"${@:N}"` those from $N
on; `shift [N]` before the launch drops the first N. The readers mark every expansion they cannot give a value (h3doctor/unresolved.py);
here a positional one is given the word it names, which keeps where it is written (a list item of
`args`, a word of a string), so a finding points there and `--fix` edits it there.

What the shell would split again (an unquoted `$@` or `$1` whose value holds a blank or a glob
character) or join (`"$*"`) stays marked: judged as "any value" or not judged, never guessed.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Protocol, TypeVar

from h3doctor.digits import is_digits
from h3doctor.unresolved import MARK


class _Word(Protocol):  # a dataclass with the word's text (and where it is written)
    text: str


W = TypeVar("W", bound=_Word)

_ALL = re.compile(re.escape(MARK) + r"\$(?:@|\{@\}|\{@:([0-9]+)\})")  # "$@", "${@}", bash's "${@:N}"
# one positional parameter, marked: $0…$9, ${N}, $#, ${#}
_ONE = re.compile(re.escape(MARK) + r"\$(?:\{([0-9]+|#)\}|([0-9#]))")
_SPLIT = re.compile(r"[\s*?\[]")  # what an unquoted expansion's value is split or globbed at


class Positional:
    """The positional parameters of one `sh -c` script: `after` is $0 and then $1…"""

    def __init__(self, after: list[W]) -> None:
        self.zero = after[0] if after else None
        self.args = list(after[1:])

    def shifted(self, words: list[str]) -> bool:
        """Whether `words` is a `shift [N]` command (then the parameters are shifted, as bash does:
        not at all when N is more than there are)."""
        if not words or words[0] != "shift" or len(words) > 2:
            return False
        n = int(words[1]) if len(words) == 2 and is_digits(words[1]) else 1 if len(words) == 1 else None
        if n is not None and n <= len(self.args):
            self.args = self.args[n:]
        return True

    def bind(self, words: list[W], quoted: list[bool]) -> list[W]:
        """`words` (a launch's) with each positional expansion given its value: a whole `"$@"` is
        the argument words themselves, a whole `"$1"` the one word. `quoted[k]`: words[k] is
        written in double quotes (a whole quoted expansion is one word, whatever its value)."""
        out: list[W] = []
        for w, quoted in zip(words, quoted):
            every = _ALL.fullmatch(w.text)
            if every:
                args = self._from(int(every.group(1) or 1))
                if quoted:
                    out.extend(args)
                elif any(_SPLIT.search(a.text) for a in args):
                    out.append(w)  # split again by the shell: not guessed
                else:
                    out.extend(a for a in args if a.text)  # an unquoted empty argument is no word
                continue
            whole = _ONE.fullmatch(w.text)
            if whole:
                value = self._value(whole, w)
                if not quoted and _SPLIT.search(value.text):
                    out.append(w)
                elif value.text or quoted:
                    out.append(value)
                continue
            values = [self._value(m, w).text for m in _ONE.finditer(w.text)]
            if values and not any(_SPLIT.search(v) for v in values):
                out.append(dataclasses.replace(w, text=_ONE.sub(lambda m: self._value(m, w).text, w.text)))
            else:
                out.append(w)
        return out

    def _from(self, n: int) -> list[W]:
        """The parameters from $n on (`${@:0}` starts at $0)."""
        return ([self.zero] if n == 0 and self.zero is not None else []) + self.args[max(n - 1, 0):]

    def _value(self, m: re.Match, w: W) -> W:
        """The word the parameter `m` (written in `w`) names: `$#` their count, `$0` the first word
        after the script; a parameter past the last argument is empty, as bash gives it."""
        name = m.group(1) or m.group(2)
        if name == "#":
            return dataclasses.replace(w, text=str(len(self.args)))
        n = int(name)
        given = self.zero if n == 0 else self.args[n - 1] if n <= len(self.args) else None
        return given if given is not None else dataclasses.replace(w, text="")
