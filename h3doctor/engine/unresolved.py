"""A launch whose file leaves a flag's value to the shell (`--tp-size "$TP"`, TP set nowhere in
the file): the value is "any value".

sglang is modelled for a few values of the flag's type (its choices, a spread of integers, ...);
every context value that differs between them, and the flag's own `args.*`, is UNRESOLVED, which
the condition language reads as unknown: a rule reading one says "cannot verify" (or does not
fire when its other leaves already say no), and the rules reading none of them are judged as
usual. A word whose meaning decides what the launch is — a flag name, the program, the model, a
`--config` file, a flag of several words, a variable sglang reads from the environment — is not
a value: the launch is not judged (`NotJudged`, at that word).
"""

from __future__ import annotations

from h3doctor.errors import UsageError
from h3doctor.sglang.argv import ParsedCommand, parse_command
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.unresolved import UNRESOLVED, as_written, has_mark

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_TRIES = 6  # evaluations per launch: one per tried value (each a full resolution, ~1 ms)
_INTS = ("1", "2", "3", "4", "8", "16")  # parallel sizes and counts: odd, even, within and past a node
_FLOATS = ("0.1", "0.5", "0.9", "1.0")
# the launch is another launch for each value of these: its model, the file of flags it reads
_WHOLE_LAUNCH = ("model_path", "config")
_SGLANG_ENV = ("SGLANG", "CUDA_", "HIP_", "ROCR_", "ZE_", "ASCEND_", "MUSA_", "NVIDIA_", "PYTORCH_")


class NotJudged(UsageError):
    """The launch's words are not known well enough to judge it; `word` indexes the word."""

    def __init__(self, message: str, word: int) -> None:
        super().__init__(message)
        self.word = word


def unresolved_values(tokens: list[str], table: FlagTable, env: dict[str, str] | None = None,
                      cmd: ParsedCommand | None = None) -> dict[int, str]:
    """Token index -> the flag (dest) whose value it is, for every marked word sglang reads;
    NotJudged when a marked word is anything but one flag's one value. `cmd`: the tokens' parse
    for `table` when the caller has it (lint's session parses a launch once)."""
    try:
        cmd = cmd if cmd is not None else parse_command(tokens, table)
    except UsageError:  # the program or a wrapper is what is not known
        n = next(n for n, t in enumerate(tokens) if has_mark(t))
        raise NotJudged(_decides(tokens[n]), n) from None
    values: dict[int, str] = {}
    for name, value in cmd.form.environment(env or {}).items():  # a container's -e NAME="$X" too
        if has_mark(value) and name.startswith(_SGLANG_ENV):
            raise NotJudged(f"{name} is {as_written(value)!r}, known only when the launch runs, and sglang reads it: "
                            "this launch is not judged", _index_of(tokens, value))
    for occ in cmd.occurrences:
        for k in range(occ.start, occ.end):
            word = cmd.args[k]
            if has_mark(word) and (not occ.inline or not has_mark(word.partition("=")[0])):
                values[cmd.prefix_len + k] = occ.dest or ""
                action = table.by_dest.get(occ.dest or "")
                why = _not_a_value(occ, action)
                if why:
                    raise NotJudged(f"{occ.option} {as_written(word)!r}: {why}, known only when the launch runs; "
                                    "this launch is not judged", cmd.prefix_len + k)
    for n, word in enumerate(tokens):
        if has_mark(word) and n >= cmd.wrapper_len and n not in values:
            raise NotJudged(_decides(word), n)
    return values


def _decides(word: str) -> str:
    return (f"{as_written(word)!r} is known only when the launch runs and decides which flags (or which program) "
            "sglang is given; this launch is not judged")


def _not_a_value(occ, action) -> str | None:
    if action is None:
        return "a flag this release does not know, given a value"
    if occ.dest in _WHOLE_LAUNCH:
        return f"what the launch is depends on {occ.option}"
    if occ.action_nargs_many or action.nargs in ("+", "*"):
        return f"{occ.option} takes several words and the value's words are not known"
    return None


def _index_of(tokens: list[str], value: str) -> int:
    return next((n for n, t in enumerate(tokens) if t.endswith(value)), 0)


def tries(dest: str, table: FlagTable) -> list[str]:
    """The values the flag is modelled with: its choices, or a spread of its type's values."""
    action = table.by_dest[dest]
    if action.choices:
        return list(action.choices)[:MAX_TRIES]
    if action.action == "store_boolean":
        return ["true", "false"]
    if action.type == "int":
        return list(_INTS)
    if action.type == "float":
        return list(_FLOATS)
    # a free-form value (a backend name, a path): the flag's default — or the flag left out, when
    # sglang picks the value itself — and a value no release knows. Anything the rules read from it
    # then differs between the two and is UNRESOLVED ("cannot verify"); one stand-in alone would
    # be judged as if it were the launch's value (`KeyError: 'H3DOCTOR-UNRESOLVED'`, a false block)
    # (the first try keeps the launch's shape: the evaluation's parse is the first try's, and the
    # fix loop edits the launch's own words at its positions)
    default = table.default_of(dest)
    return [str(default), "h3doctor-unresolved"] if default not in (None, "") else ["h3doctor-unresolved", ABSENT]


ABSENT = object()  # a try that leaves the flag and its value out of the launch


def _substituted(word: str, value: str) -> str:
    """The word with its value replaced: `--port=$PORT` keeps `--port=`, a whole value is replaced."""
    return f"{word.partition('=')[0]}={value}" if _inline(word) else value


def swept(tokens: list[str], table: FlagTable, env: dict[str, str],
          resolve: Callable[[list[str]], tuple[Any, dict[str, Any]]],
          cmd: ParsedCommand | None = None) -> tuple[Any, dict[str, Any], dict[int, str]]:
    """`resolve(argv)` -> (what it resolved, its context) for each tried value; the first tried
    value's resolution, and the context with what depends on the unresolved values UNRESOLVED."""
    values = unresolved_values(tokens, table, env, cmd)
    per_word = {n: tries(dest, table) for n, dest in values.items()}
    if not per_word:  # marked words sglang does not read (a container's -v "$HOME/…"): they do not matter
        return (*resolve(tokens), values)
    rounds = max(len(v) for v in per_word.values())
    first, contexts = None, []
    for r in range(rounds):
        argv = _tried(tokens, {n: tried[r % len(tried)] for n, tried in per_word.items()})
        resolved, ctx = resolve(argv)
        first = first if first is not None else resolved
        contexts.append(ctx)
    merged = dict(contexts[0])
    for other in contexts[1:]:
        for key in merged.keys() | other.keys():
            if merged.get(key) is not UNRESOLVED and not _same(merged.get(key), other.get(key)):
                merged[key] = UNRESOLVED
    for dest in values.values():
        merged["args." + dest] = UNRESOLVED
    merged["unresolved.words"] = ", ".join(
        f"{table.primary_option(dest) or dest} {as_written(tokens[n].partition('=')[2] if _inline(tokens[n]) else tokens[n])!r}"
        for n, dest in values.items())
    return first, merged, values


def _tried(tokens: list[str], values: dict[int, Any]) -> list[str]:
    """The launch with each unresolved word given its tried value; ABSENT drops the word, and the
    flag word before it when the value is a word of its own (`--attention-backend "$B"`)."""
    dropped = set()
    for n, value in values.items():
        if value is ABSENT:
            dropped.add(n)
            if not _inline(tokens[n]) and n > 0:
                dropped.add(n - 1)
    return [_substituted(t, values[n]) if n in values else t
            for n, t in enumerate(tokens) if n not in dropped]


def _inline(word: str) -> bool:
    flag, eq, _rest = word.partition("=")
    return bool(eq) and word.startswith("-") and not has_mark(flag)


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # a value with no equality of its own: not known to be the same
        return False

