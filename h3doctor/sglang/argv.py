"""A proposed launch command, read exactly the way sglang 0.5.23 reads it.

Catalog section 1: the `sglang serve` dispatcher (positional model, `--model-type`), then
argparse's `parse_known_args` over the parser in the flag table (long options, `--x=v`,
abbreviations, nargs, StoreBoolean), then the dynamic `--component-*.<c>` flags that
`ServerArgs.from_cli_args` pulls out of the leftovers, then `get_provided_args`, which only
counts flags typed in full. We re-implement argparse's matching rather than running argparse
itself because we need every problem at once (argparse stops at the first) and the token span
of every flag, so fixes can edit the user's own command without disturbing anything else.
"""

from __future__ import annotations

import bisect
import re

from h3doctor.errors import UsageError
from h3doctor.record import field, record, replace
from h3doctor.sglang.flagtable import FlagAction, FlagTable
from h3doctor.sglang.launch_forms import (BARE, DIFFUSION_CLI, DIFFUSION_LAUNCH_SERVER, LLM_LAUNCH_SERVER, LaunchForm,
                                          LaunchWords, read_launch_form)

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")

# Order in which ServerArgs.from_cli_args extracts the dynamic maps (server_args.py:3689-3705).
# (dest, prefixes, alias suffix, how values are taken)
DYNAMIC_MAPS: tuple[tuple[str, tuple[str, ...], str | None, str], ...] = (
    ("component_quantizations", ("--component-quantizations.", "--component_quantizations."), "-quantization", "one"),
    ("component_precisions", ("--component-precisions.", "--component_precisions."), None, "one"),
    (
        "component_direct_gpu_weight_loading",
        ("--component-direct-gpu-weight-loading.", "--component_direct_gpu_weight_loading."),
        None,
        "bool",
    ),
    (
        "component_quantization_ignored_layers",
        ("--component-quantization-ignored-layers.", "--component_quantization_ignored_layers."),
        None,
        "many",
    ),
    ("component_weights_paths", ("--component-weights-paths.", "--component_weights_paths."), "-weights-path", "one"),
    ("component_paths", ("--component-paths.", "--component_paths."), "-path", "one"),
    (
        "component_attention_backends",
        ("--component-attention-backends.", "--component_attention_backends."),
        None,
        "one",
    ),
)


@record
class Occurrence:
    """One flag as typed: tokens args[start:end]."""

    start: int
    end: int
    option: str
    dest: str | None
    values: list[str]
    inline: bool = False
    abbreviated: bool = False
    dynamic_component: str | None = None
    action_nargs_many: bool = False  # the flag takes several words (nargs + or *)


# the problem kinds that rule H3D010 reports together, as argparse's own errors
PARSE_KIND = {"ambiguous": "argparse", "arity": "argparse", "invalid_value": "argparse"}


@record
class ParseProblem:
    """A problem sglang's dispatcher or parser would report (catalog A1-A6) or hide (abbrev)."""

    kind: str
    message: str
    start: int
    end: int
    option: str = ""
    suggestion: str | None = None


@record
class ParsedCommand:
    """A launch command as sglang's argument parser sees it: the entry point, every occurrence of a
    flag, the values, the problems."""
    tokens: list[str]  # the whole command as the user gave it
    prefix_len: int  # tokens before the flag arguments (env assignments, program, subcommand)
    entry: str  # serve | generate | launch_server
    program_given: bool
    env: dict[str, str]
    args: list[str]
    occurrences: list[Occurrence] = field(default_factory=list)
    provided: dict[str, Any] = field(default_factory=dict)
    dynamic: dict[str, dict[str, Any]] = field(default_factory=dict)  # --component-*.<c> maps
    problems: list[ParseProblem] = field(default_factory=list)
    model_positional_index: int | None = None  # index into args
    model_type: str = "auto"  # sglang serve's --model-type (removed before parsing)
    form: LaunchForm = field(default_factory=lambda: LaunchForm(0, 0, "serve", BARE))  # wrapper and program

    @property
    def wrapper_len(self) -> int:
        """tokens[:wrapper_len] is what stands in front of the program (kept as typed)."""
        return self.form.wrapper_len

    @property
    def launcher(self) -> str:
        return self.form.launcher


def _classify(token: str, options: dict[str, FlagAction], allow_abbrev: bool):
    """argparse's _parse_optional: ('A', None) or ('O', (action, option, inline, matches))."""
    if not token or token[0] != "-" or token == "-":
        return "A", None
    if token in options:
        return "O", (options[token], token, None, None)
    if len(token) == 1:
        return "A", None
    option, sep, inline = token.partition("=")
    if sep and option in options:
        return "O", (options[option], option, inline, None)
    if allow_abbrev and token.startswith("--"):
        matches = _prefixed(options, option)
        if len(matches) > 1:
            return "O", (None, option, inline if sep else None, matches)
        if len(matches) == 1:
            return "O", (options[matches[0]], option, inline if sep else None, "abbrev")
    if _NEGATIVE_NUMBER.match(token):
        return "A", None
    if " " in token:
        return "A", None
    return "O", (None, option, inline if sep else None, None)


def _convert(action: FlagAction, raw: str) -> tuple[Any, str | None]:
    """Apply the action's type and choices. Returns (value, argparse error or None)."""
    value: Any = raw
    try:
        if action.type == "int":
            value = int(raw)
        elif action.type == "float":
            value = float(raw)
    except ValueError:
        return None, f"argument {action.display_name}: invalid {action.type} value: {raw!r}"
    choices = _typed_choices(action)
    if choices is not None and value not in choices:
        # argparse's _check_value: the converted value's repr and the choices' reprs (3, not '3')
        listed = ", ".join(repr(c) for c in choices)
        return None, f"argument {action.display_name}: invalid choice: {value!r} (choose from {listed})"
    return value, None


def _typed_choices(action: FlagAction) -> tuple[Any, ...] | None:
    """The action's choices as argparse holds them: the flag table keeps them as strings, and the
    choices of a numeric flag are numbers there (an int flag's `choices=[0, 1]`)."""
    if action.choices is None or action.type not in ("int", "float"):
        return action.choices
    convert = int if action.type == "int" else float
    try:
        return tuple(convert(c) for c in action.choices)
    except ValueError:
        return action.choices


# Per options dict (a flag table's, held for the process): its options sorted, for prefix search,
# and each option's place in argparse's own order, for the "could match" list.
_PREFIX_INDEX: dict[int, tuple[dict[str, FlagAction], list[str], dict[str, int]]] = {}


def _prefixed(options: dict[str, FlagAction], prefix: str) -> list[str]:
    """The options starting with `prefix`, in argparse's order (the dict's), found by bisection in
    the sorted options rather than a scan of all of them for every word."""
    index = _PREFIX_INDEX.get(id(options))
    if index is None or index[0] is not options:
        index = _PREFIX_INDEX[id(options)] = (options, sorted(options), {o: n for n, o in enumerate(options)})
    _, ordered, place = index
    k = bisect.bisect_left(ordered, prefix)
    if k == len(ordered) or not ordered[k].startswith(prefix):
        return []  # the common case for an unknown flag: no option starts with it
    found = []
    for k in range(k, len(ordered)):
        if not ordered[k].startswith(prefix):
            break
        found.append(ordered[k])
    return sorted(found, key=place.__getitem__)


# Did-you-mean compares a word with every option (~1-2 ms each); a launch with thousands of unknown
# flags is no typo, so only the first SUGGEST_LIMIT distinct words get the fuzzy search (the
# underscore spelling is a lookup and is always offered).
SUGGEST_LIMIT = 64
# The argument list echoed in "unrecognized arguments" is sglang's own text up to this many
# characters, then cut with how much more there is: a launch of 60,000 unknown words must not give
# a message (and a finding per word) of 900 KB each.
ECHO_LIMIT = 400


def suggest(option: str, candidates: list[str], *, fuzzy: bool = True) -> str | None:
    """Did-you-mean for a flag sglang does not know (`fuzzy=False`: only the underscore spelling)."""
    dashed = "--" + option.lstrip("-").replace("_", "-")
    if dashed != option and _contains(candidates, dashed):
        return dashed
    if not fuzzy:
        return None
    import difflib  # only for an unknown option: kept off the import path of every check

    close = difflib.get_close_matches(option, candidates, n=1, cutoff=0.75)
    return close[0] if close else None


def _contains(candidates: list[str], word: str) -> bool:
    """`word in candidates` for a sorted list, by bisection."""
    k = bisect.bisect_left(candidates, word)
    return k < len(candidates) and candidates[k] == word


def unrecognized_message(words: list[str]) -> str:
    """sglang's SystemExit text for leftover words, the word list cut at ECHO_LIMIT characters."""
    shown: list[str] = []
    size = 0
    for n, word in enumerate(words):
        size += len(word) + (1 if shown else 0)
        if size > ECHO_LIMIT:
            rest = len(words) - n
            head = " ".join(shown) if shown else word[:ECHO_LIMIT] + "..."
            more = rest - (0 if shown else 1)
            return f"error: unrecognized arguments: {head}" + (f" ... ({more} more words)" if more else "")
        shown.append(word)
    return f"error: unrecognized arguments: {' '.join(shown)}"


class _Parser:
    def __init__(self, cmd: ParsedCommand, table: FlagTable) -> None:
        self.cmd = cmd
        self.table = table
        self.options = table.options_for(cmd.entry)
        self.extras: list[int] = []  # indices of args left over for from_cli_args
        self.other_entries = [(e, table.options_for(e)) for e in ("serve", "generate", "launch_server") if e != cmd.entry]

    def problem(self, kind: str, message: str, start: int, end: int, option: str = "", suggestion=None):
        self.cmd.problems.append(ParseProblem(kind, message, start, end, option, suggestion))

    def run(self) -> None:
        args = self.cmd.args
        kinds = [_classify(t, self.options, self.table.allow_abbrev) for t in args]
        i = 0
        while i < len(args):
            kind, info = kinds[i]
            if args[i] == "--":
                self.extras.extend(range(i + 1, len(args)))
                break
            if kind == "A":
                self.extras.append(i)
                i += 1
                continue
            action, option, inline, matches = info
            if isinstance(matches, list):
                # argparse stops here; the values that follow belong to whichever flag was meant
                end = i + 1
                while end < len(args) and kinds[end][0] == "A" and args[end] != "--":
                    end += 1
                self.problem(
                    "ambiguous", f"ambiguous option: {option} could match {', '.join(matches)}", i, end, option
                )
                i = end
                continue
            if action is None:
                self.extras.append(i)
                i += 1
                continue
            i = self._consume(action, option, inline, matches == "abbrev", i, kinds)
        self._extract_dynamic()

    def _consume(self, action: FlagAction, option: str, inline, abbreviated: bool, i: int, kinds) -> int:
        args = self.cmd.args
        following = 0
        while i + 1 + following < len(args) and kinds[i + 1 + following][0] == "A" and args[i + 1 + following] != "--":
            following += 1
        nargs = action.nargs
        if not action.takes_value:
            take = 0
        elif inline is not None:
            take = 0
        elif nargs is None:
            take = min(1, following)
        elif nargs == "?":
            take = min(1, following)
        elif nargs in ("*", "+"):
            take = following
        else:
            take = min(int(nargs), following)
        values = [inline] if inline is not None else args[i + 1 : i + 1 + take]
        end = i + 1 + take
        occ = Occurrence(i, end, option, action.dest, values, inline is not None, abbreviated,
                         action_nargs_many=action.nargs in ("+", "*"))
        self.cmd.occurrences.append(occ)
        error = self._arity_error(action, values, inline)
        if error:
            self.problem("arity", error, i, end, option)
            return end
        value, error = self._value(action, values)
        if error:
            kind = "invalid_boolean" if action.action == "store_boolean" else "invalid_value"
            self.problem(kind, error, i, end, option)
            return end
        if abbreviated:
            full = next(o for o in action.option_strings if o.startswith(option))
            self.problem(
                "abbreviation",
                f"{option} is accepted by argparse as an abbreviation of {full}, but sglang only "
                f"counts flags typed in full, so the value is silently dropped",
                i,
                end,
                option,
                full,
            )
            return end
        self.cmd.provided[action.dest] = value
        return end

    @staticmethod
    def _arity_error(action: FlagAction, values: list[str], inline) -> str | None:
        if not action.takes_value:
            return f"argument {action.display_name}: ignored explicit argument {inline!r}" if inline is not None else None
        if action.nargs is None and not values:
            return f"argument {action.display_name}: expected one argument"
        if action.nargs == "+" and not values:
            return f"argument {action.display_name}: expected at least one argument"
        if isinstance(action.nargs, int) and len(values) != action.nargs:
            return f"argument {action.display_name}: expected {action.nargs} arguments"
        return None

    def _value(self, action: FlagAction, values: list[str]) -> tuple[Any, str | None]:
        if action.action == "store_true":
            return True, None
        if action.action == "store_false":
            return False, None
        if action.action == "store_boolean":
            if not values:
                return True, None
            if values[0].lower() in ("true", "false"):
                return values[0].lower() == "true", None
            return None, f"Invalid boolean value: {values[0]}. Expected 'true' or 'false'."
        converted = []
        for raw in values:
            value, error = _convert(action, raw)
            if error:
                return None, error
            converted.append(value)
        if action.nargs in ("*", "+") or isinstance(action.nargs, int):
            return converted, None
        return (converted[0] if converted else action.default), None

    def _extract_dynamic(self) -> None:
        """ServerArgs.from_cli_args: pull the --component-*.<c> maps out of the leftovers."""
        args = self.cmd.args
        remaining = list(self.extras)
        # the words any map could take, found once (most leftovers are none of them)
        maybe = {idx for idx in remaining if args[idx].startswith("--") and _maybe_dynamic(args[idx].split("=", 1)[0])}
        known = self.table.component_maps  # a later release's map is an unrecognized argument here
        maps = [m for m in DYNAMIC_MAPS if known is None or m[0] in known] if maybe else []
        for dest, prefixes, alias_suffix, mode in maps:
            kept: list[int] = []
            j = 0
            while j < len(remaining):
                idx = remaining[j]
                if idx not in maybe:
                    kept.append(idx)
                    j += 1
                    continue
                arg = args[idx]
                key = arg.split("=", 1)[0]
                component = _component_of(key, prefixes, alias_suffix)
                if component is None:
                    kept.append(idx)
                    j += 1
                    continue
                inline = "=" in arg
                nxt = remaining[j + 1] if j + 1 < len(remaining) else None  # the next leftover word
                value_idx: list[int] = []
                if inline:
                    value: Any = arg.split("=", 1)[1]
                elif mode == "many":
                    while j + 1 + len(value_idx) < len(remaining) and not args[remaining[j + 1 + len(value_idx)]].startswith("-"):
                        value_idx.append(remaining[j + 1 + len(value_idx)])
                    value = [args[k] for k in value_idx]
                elif mode == "bool":
                    # Only a literal true/false is taken; otherwise the flag alone means true.
                    if nxt is not None and args[nxt].lower() in ("true", "false"):
                        value_idx.append(nxt)
                        value = args[nxt].lower() == "true"
                    else:
                        value = True
                elif nxt is not None and not args[nxt].startswith("-"):
                    value_idx.append(nxt)
                    value = args[nxt]
                else:
                    value = None
                if mode == "bool" and isinstance(value, str):
                    value = value.lower() == "true" if value.lower() in ("true", "false") else None
                if value is None or value == []:
                    kept.append(idx)
                    j += 1
                    continue
                end = (value_idx[-1] if value_idx else idx) + 1
                self.cmd.occurrences.append(
                    Occurrence(idx, end, key, dest, [args[k] for k in value_idx] or [str(value)], inline, False, component)
                )
                self.cmd.dynamic.setdefault(dest, {})[component] = value
                j += 1 + len(value_idx)
            remaining = kept
        if remaining:
            self._unrecognized(remaining)

    def _unrecognized(self, remaining: list[int]) -> None:
        """Catalog A6: SystemExit("error: unrecognized arguments: ...") (server_args.py:3709)."""
        args = self.cmd.args
        message = unrecognized_message([args[k] for k in remaining])  # one string, shared by every group
        candidates = sorted(self.options)
        groups: list[list[int]] = []
        for k in remaining:
            if args[k].startswith("-") or not groups or groups[-1][-1] != k - 1:
                groups.append([k])
            else:
                groups[-1].append(k)
        hints: dict[str, str | None] = {}  # did-you-mean once per distinct word
        for group in groups:
            head = args[group[0]]
            option = head.split("=", 1)[0]
            if option not in hints and option.startswith("-"):
                hint = suggest(option, candidates, fuzzy=len(hints) < SUGGEST_LIMIT)
                hints[option] = hint if hint is not None else self._other_entry_hint(option)
            self.problem("unrecognized", message, group[0], group[-1] + 1, option, hints.get(option))

    def _other_entry_hint(self, option: str) -> str | None:
        for entry, options in self.other_entries:
            if option in options:
                return f"(only accepted by sglang {entry.replace('_', ' ')})"
        return None


_DYNAMIC_PREFIXES = tuple(p for _d, prefixes, _a, _m in DYNAMIC_MAPS for p in prefixes)
_DYNAMIC_SUFFIXES = tuple(a for _d, _p, a, _m in DYNAMIC_MAPS if a)


def _maybe_dynamic(key: str) -> bool:
    """Whether some map's `_component_of` could take this flag."""
    return key.startswith(_DYNAMIC_PREFIXES) or key.endswith(_DYNAMIC_SUFFIXES)


def _component_of(key: str, prefixes: tuple[str, ...], alias_suffix: str | None) -> str | None:
    for prefix in prefixes:
        if key.startswith(prefix):
            return key[len(prefix) :].replace("-", "_")
    if alias_suffix and key.startswith("--") and key.endswith(alias_suffix):
        return key[2 : -len(alias_suffix)].replace("-", "_")
    return None


def _dispatch(cmd: ParsedCommand) -> set[int]:
    """`sglang serve`'s dispatcher (cli/serve.py:30-66): remove every `--model-type X` /
    `--model-type=X` (A2 when the value is missing or empty), then take a leading non-dash token
    as the model. Returns the indices of the removed tokens."""
    args = cmd.args
    removed: set[int] = set()
    # Only the `sglang` console script's dispatcher (sglang/cli/serve.py) reads a positional model and
    # --model-type; `python -m sglang.multimodal_gen.runtime.entrypoints.cli.main serve` hands every
    # word to the diffusion parser, which has no positional (0.5.17-0.5.23): MODEL is unrecognized.
    if cmd.entry != "serve" or cmd.launcher == DIFFUSION_CLI:
        return removed
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--model-type":
            if i + 1 >= len(args):
                cmd.problems.append(ParseProblem("model_type", "Error: --model-type requires a value.", i, i + 1, tok))
                cmd.occurrences.append(Occurrence(i, i + 1, tok, "model_type", []))
                removed.add(i)
                break
            cmd.model_type = args[i + 1]
            cmd.occurrences.append(Occurrence(i, i + 2, tok, "model_type", [args[i + 1]]))
            removed |= {i, i + 1}
            i += 2
            continue
        if tok.startswith("--model-type="):
            cmd.model_type = tok.split("=", 1)[1]
            cmd.occurrences.append(Occurrence(i, i + 1, "--model-type", "model_type", [cmd.model_type], inline=True))
            removed.add(i)
        i += 1
    if cmd.model_type == "":
        cmd.problems.append(ParseProblem("model_type", "Error: --model-type requires a non-empty value.", 0, 0))
    remaining = [k for k in range(len(args)) if k not in removed]
    if remaining and not args[remaining[0]].startswith("-"):
        cmd.model_positional_index = remaining[0]
    return removed


def parse_command(tokens: list[str], table: FlagTable, *, entry: str | None = None,
                  form: LaunchForm | None = None) -> ParsedCommand:
    """`form`: the launch form of `tokens` when the caller has read it already (the engine reads it
    once per evaluation, launch_forms.LaunchWords)."""
    form = form if form is not None else read_launch_form(tokens)
    cmd = ParsedCommand(
        tokens=list(tokens),
        prefix_len=form.prefix_len,
        entry=entry or form.entry,
        program_given=form.program_given,
        env=dict(form.env),
        args=list(tokens[form.prefix_len:]),
        form=form,
    )
    hidden = _dispatch(cmd) | _llm_model_alias(cmd)
    positional = cmd.model_positional_index
    if positional is not None:
        # The dispatcher rewrites the positional to --model-path (cli/serve.py:62-66).
        cmd.provided["model_path"] = cmd.args[positional]
        cmd.occurrences.append(Occurrence(positional, positional + 1, "<model>", "model_path", [cmd.args[positional]]))
        hidden.add(positional)
    parser = _Parser(cmd, table)
    _run_with_hidden(parser, hidden)
    _check_model_path(cmd)
    return cmd


def attached_parse(words: LaunchWords, table: FlagTable) -> ParsedCommand | None:
    """The parse `parsed_once` attached to the words for this very table, else None."""
    return words.parsed[1] if words.parsed is not None and words.parsed[0] is table else None


def parse_words(words: LaunchWords, table: FlagTable) -> ParsedCommand:
    """The flags of words whose form is read: the parse attached for `table`, else parsed now
    (a launch h3doctor cannot read raises its error here)."""
    cmd = attached_parse(words, table)
    return cmd if cmd is not None else parse_command(list(words.tokens), table, form=words.form_or_raise())


def parsed_once(tokens: list[str] | tuple[str, ...] | LaunchWords, table: FlagTable) -> LaunchWords:
    """The words read and their flags parsed for `table`, the parse attached: lint's pre-checks
    read it, and the judge's first evaluation on that table takes it rather than parsing again. A
    launch that cannot be read or parsed keeps no parse; its error is raised where it always was."""
    words = LaunchWords.read(tokens)
    try:
        return replace(words, parsed=(table, parse_words(words, table)))
    except UsageError:
        return words


def _llm_model_alias(cmd: ParsedCommand) -> set[int]:
    """`python -m sglang.launch_server` reads `--model` as `--model-path` (an alias in its own
    parser, srt/arg_groups/fields/model.py:55); the diffusion parser would call it ambiguous.
    Read it as the LLM launcher does, so the launch is judged (and corrected) for its model."""
    removed: set[int] = set()
    if cmd.launcher != LLM_LAUNCH_SERVER:
        return removed
    args = cmd.args
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            break
        if tok == "--model" and i + 1 < len(args) and not args[i + 1].startswith("-"):
            cmd.provided["model_path"] = args[i + 1]
            cmd.occurrences.append(Occurrence(i, i + 2, "--model", "model_path", [args[i + 1]]))
            removed |= {i, i + 1}
            i += 2
            continue
        if tok.startswith("--model="):
            value = tok.split("=", 1)[1]
            cmd.provided["model_path"] = value
            cmd.occurrences.append(Occurrence(i, i + 1, "--model", "model_path", [value], inline=True))
            removed.add(i)
        i += 1
    return removed


def _run_with_hidden(parser: _Parser, hidden: set[int]) -> None:
    """Run the parser on args minus the dispatcher's tokens, mapping indices back."""
    cmd = parser.cmd
    keep = [i for i in range(len(cmd.args)) if i not in hidden]
    if len(keep) == len(cmd.args):
        parser.run()
        return
    original = cmd.args
    sub = ParsedCommand(cmd.tokens, cmd.prefix_len, cmd.entry, cmd.program_given, cmd.env, [original[i] for i in keep],
                        form=cmd.form)
    sub_parser = _Parser(sub, parser.table)
    sub_parser.run()
    for occ in sub.occurrences:
        occ.start, occ.end = keep[occ.start], keep[occ.end - 1] + 1
        cmd.occurrences.append(occ)
    for prob in sub.problems:
        prob.start, prob.end = keep[prob.start], keep[prob.end - 1] + 1
        cmd.problems.append(prob)
    cmd.provided.update(sub.provided)
    for dest, mapping in sub.dynamic.items():
        cmd.dynamic.setdefault(dest, {}).update(mapping)
    cmd.occurrences.sort(key=lambda o: o.start)


def _check_model_path(cmd: ParsedCommand) -> None:
    """Catalog A1 (cli/utils.py:165): the dispatcher needs the model on the command line. The
    diffusion modules have no dispatcher: without --model-path their ServerArgs.from_cli_args
    raises from PipelineConfig.from_kwargs (configs/pipeline_configs/base.py:1058 in 0.5.23,
    0.5.17-0.5.23 alike), after argparse's own errors."""
    if cmd.launcher in (DIFFUSION_LAUNCH_SERVER, DIFFUSION_CLI) and cmd.entry in ("launch_server", "serve"):
        typed = "model_path" in cmd.provided or any(o.dest == "model_path" for o in cmd.occurrences)
        # a --config file may hold model_path (from_cli_args merges it): not judged here
        config = any(t == "--config" or t.startswith("--config=") for t in cmd.args)
        if not typed and not config:
            cmd.problems.append(ParseProblem("model_path_none", "model_path is required in kwargs", 0, 0))
        return
    if cmd.entry in ("serve", "generate") and cmd.launcher != DIFFUSION_CLI and "model_path" not in cmd.provided:
        # try_get_model_path (cli/utils.py) also takes `--model X` / `--model=X`; argparse then
        # rejects --model as an ambiguous abbreviation (A4), but A1 does not fire.
        typed = any(o.dest == "model_path" for o in cmd.occurrences) or any(
            t == "--model" or t.startswith("--model=") for t in cmd.args
        )
        if not typed:
            cmd.problems.insert(
                0,
                ParseProblem(
                    "model_path_missing",
                    "Error: --model-path is required. Please provide the path to the model.",
                    0,
                    0,
                ),
            )
