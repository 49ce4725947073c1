"""Apply a rule's fix operations to the user's own command, token by token.

Every token no fix names stays as the user wrote it, in the user's order and form. A flag the
user typed is edited in place (keeping the spelling they used, e.g. `--mode` for
`--performance-mode`); a flag they did not type is appended at the end.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable

from h3doctor.engine.conditions import evaluate
from h3doctor.sglang.argv import Occurrence, ParsedCommand
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.shellwords import join
from h3doctor.unresolved import UNRESOLVED

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

Strategy = Callable[["FixContext"], list["Edit"]]


ENV = -2  # Edit.start for an environment assignment in front of the command
PROGRAM = -3  # Edit.start for the program words (`sglang serve`, `python -m ...`); the wrapper stays
RUNTIME = -4  # Edit.start for a container runtime's own option (`docker run --shm-size 16g …`)


class Edit:
    """Replace args[start:end] with tokens (start == end inserts; start == -1 appends; start == ENV
    sets a `NAME=value` word in front of the command; start == PROGRAM replaces the program words)."""

    __slots__ = ("start", "end", "tokens")

    def __init__(self, start: int, end: int, tokens: list[str]):
        self.start, self.end, self.tokens = start, end, tokens


class FixContext:
    def __init__(self, cmd: ParsedCommand, table: FlagTable, context: dict[str, Any], strategies: dict[str, Strategy],
                 passes: Callable[[list[Edit]], bool] | None = None):
        self.cmd = cmd
        self.passes = passes  # whether the command with these edits re-checks with the finding fixed (one_of)
        self.table = table
        self.context = context
        self.strategies = strategies
        self.notes: list[str] = []
        self.gives_up: list[str] = []

    def dest_of(self, flag: str) -> str:
        action = self.table.options_for(self.cmd.entry).get(flag) or self.table.options_for("serve").get(flag)
        return action.dest if action else flag.lstrip("-").replace("-", "_")

    def occurrences(self, flag: str) -> list[Occurrence]:
        dest = self.dest_of(flag)
        return [o for o in self.cmd.occurrences if o.dest == dest and o.dynamic_component is None]

    def value_of(self, value: Any) -> str:
        if isinstance(value, dict) and "ref" in value:
            value = self.context.get(value["ref"])
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    def _is_boolean(self, flag: str) -> bool:
        action = self.table.options_for("serve").get(flag)
        return action is not None and action.action == "store_boolean"

    def op_set(self, flag: str, value: Any) -> list[Edit]:
        text = self.value_of(value)
        occs = self.occurrences(flag)
        bare_true = self._is_boolean(flag) and text == "true"
        if not occs:
            return [Edit(-1, -1, [flag] if bare_true else [flag, text])]
        first, rest = occs[0], occs[1:]
        if first.inline:
            tokens = [f"{first.option}={text}"]
        elif bare_true:
            tokens = [first.option]
        else:
            tokens = [first.option, text]
        return [Edit(first.start, first.end, tokens)] + [Edit(o.start, o.end, []) for o in rest]

    def op_set_key(self, flag: str, key: str, value: Any) -> list[Edit]:
        """Set `key` inside a flag whose value is a JSON object or `k=v,...` pairs
        (--attention-backend-config); a file path cannot be edited here (no edit)."""
        text = self.value_of(value)
        occs = self.occurrences(flag)
        if not occs:
            return [Edit(-1, -1, [flag, f"{key}={text}"])]
        occ = occs[-1]
        raw = " ".join(occ.values).strip()
        if raw.startswith("{"):
            try:
                mapping = json.loads(raw)
            except ValueError:
                return []
            mapping[key] = value if not isinstance(value, dict) else text
            new = json.dumps(mapping, separators=(",", ":"))
        elif "=" in raw:
            pairs = [p for p in raw.split(",") if p.split("=", 1)[0].strip() != key]
            new = ",".join([*pairs, f"{key}={text}"])
        else:
            return []
        return [Edit(occ.start, occ.end, [f"{occ.option}={new}"] if occ.inline else [occ.option, new])]

    def op_set_env(self, name: str, value: Any) -> list[Edit]:
        return [Edit(ENV, ENV, [f"{name}={self.value_of(value)}"])]

    def op_container_option(self, option: str, value: Any) -> list[Edit]:
        """Set an option of the launch's `docker|podman|nerdctl run` (a launch in no container: no edit)."""
        if self.cmd.form.container is None:
            return []
        return [Edit(RUNTIME, RUNTIME, [option, self.value_of(value)])]

    def op_remove(self, flag: str, config_override: Any = None) -> list[Edit]:
        """Drop the flag. A value that only the --config file gives cannot be removed from the
        command line, but the command line wins: override it (booleans with false)."""
        edits = [Edit(o.start, o.end, []) for o in self.occurrences(flag)]
        if self.dest_of(flag) in self.context.get("config.keys", ()):  # dropping the flag would let the file's value through
            if config_override is not None:
                return self.op_set(flag, config_override)
            if self._is_boolean(flag):
                return self.op_set(flag, "false")
            # No flag unsets a --config value: pass the file's other settings as flags instead.
            self.notes.append(f"`{self.dest_of(flag)}` is set in the --config file, which no flag can unset: "
                              "the corrected command passes the file's other settings as flags (or edit the file)")
            return edits + inline_config(self, exclude=frozenset({self.dest_of(flag)}))
        return edits

    def op_append(self, flag: str, values: list[str]) -> list[Edit]:
        occs = self.occurrences(flag)
        if not occs:
            return [Edit(-1, -1, [flag, *values])]
        last = occs[-1]  # argparse keeps the last occurrence; the earlier ones do not count
        present = {v.strip().lower() for raw in last.values for v in raw.split(",")}
        missing = [v for v in values if v.lower() not in present]
        if not missing:
            return []
        if last.inline:
            return [Edit(last.start, last.end, [f"{last.option}={last.values[0]},{','.join(missing)}"])]
        return [Edit(last.end, last.end, missing)]

    def op_remove_values(self, flag: str, values: list[str]) -> list[Edit]:
        """Drop the words `values` names (any case, `-` or `_`) from a list flag's value
        (`--layerwise-offload-components text_encoder,dit`), the words kept as words of the flag;
        a flag left with none is dropped."""
        names = {v.replace("-", "_").lower() for v in values}
        edits = []
        for occ in self.occurrences(flag):
            words = [w for v in occ.values for w in v.split(",") if w.strip()]
            kept = [w for w in words if w.strip().replace("-", "_").lower() not in names]
            if len(kept) == len(words):
                continue
            tokens = ([f"{occ.option}={','.join(kept)}"] if occ.inline else [occ.option, *kept]) if kept else []
            edits.append(Edit(occ.start, occ.end, tokens))
        return edits

    def op_one_of(self, options: list[list[dict[str, Any]]]) -> list[Edit]:
        """The first option that edits the command and passes (`passes`: the finding gone, nothing new
        failing), in the rule's order; when none passes, the last that edits anything."""
        found = [edits for option in options if (edits := [e for op in option for e in self.edits_for(op)])]
        for edits in found[:-1]:
            if self.passes is None or self.passes(edits):
                return edits
        return found[-1] if found else []

    def op_remove_component(self, flag: str, component: str, config_override: Any = None) -> list[Edit]:
        """Drop one component's entry: a `--flag.<c> X` word pair, or `c=X` in a `k=v,...` or JSON
        map value. An entry only the --config file sets is overridden with `--flag.<c> VALUE`
        (sglang merges the dynamic per-component flags over the file's map)."""
        dest = self.dest_of(flag)
        edits = [Edit(o.start, o.end, []) for o in self.cmd.occurrences if o.dest == dest and o.dynamic_component == component]
        for occ in self.occurrences(flag):
            tokens = _without_component(occ, component)
            if tokens is not None:
                edits.append(Edit(occ.start, occ.end, tokens))
        in_config = component in (self.context.get(f"config.map.{dest}") or ())
        if config_override is not None and in_config and not edits:
            edits.append(Edit(-1, -1, [f"{flag}.{component}", self.value_of(config_override)]))
        return edits

    def edits_for(self, op: dict[str, Any]) -> list[Edit]:
        if "when" in op and evaluate(op["when"], self.context) is not True:
            return []
        if "set" in op:
            return self.op_set(op["set"]["flag"], op["set"]["value"])
        if "remove" in op:
            return self.op_remove(op["remove"]["flag"], op["remove"].get("config_override"))
        if "append" in op:
            return self.op_append(op["append"]["flag"], op["append"]["values"])
        if "remove_component" in op:
            spec = op["remove_component"]
            return self.op_remove_component(spec["flag"], spec["component"], spec.get("config_override"))
        if "set_key" in op:
            spec = op["set_key"]
            return self.op_set_key(spec["flag"], spec["key"], spec["value"])
        if "one_of" in op:
            return self.op_one_of(op["one_of"])
        if "remove_values" in op:
            return self.op_remove_values(op["remove_values"]["flag"], op["remove_values"]["values"])
        if "set_env" in op:
            return self.op_set_env(op["set_env"]["name"], op["set_env"]["value"])
        if "container_option" in op:
            return self.op_container_option(op["container_option"]["option"], op["container_option"]["value"])
        if "strategy" in op:
            from h3doctor.engine.strategy_reads import STRATEGY_READS

            if any(self.context.get(path) is UNRESOLVED for path in STRATEGY_READS.get(op["strategy"], ())):
                # a strategy weighs the launch's values together (a layout, a memory fit): with one
                # the shell gives only when the launch runs, it has nothing certain to weigh
                self.gives_up.append(f"no automatic {op['strategy']} fix: it depends on "
                                     f"{self.context.get('unresolved.words')}, known only when the launch runs")
                return []
            return self.strategies[op["strategy"]](self)
        raise ValueError(f"unknown fix operation {op}")


def _without_component(occ: Occurrence, component: str) -> list[str] | None:
    """The occurrence's tokens with `component`'s entry dropped; None when it has no such entry."""
    def key(entry: str) -> str:
        return entry.split("=", 1)[0].strip().replace("-", "_")

    raw = " ".join(occ.values).strip()
    if raw.startswith("{"):  # a JSON map (server_args.py:1427)
        try:
            mapping = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(mapping, dict) or not any(key(k) == component for k in mapping):
            return None
        kept_map = {k: v for k, v in mapping.items() if key(k) != component}
        value = json.dumps(kept_map, separators=(",", ":")) if kept_map else None
    else:
        entries = [e for v in occ.values for e in v.split(",") if e.strip()]
        kept = [e for e in entries if key(e) != component]
        if len(kept) == len(entries):
            return None
        if occ.action_nargs_many:
            return [occ.option, *kept] if kept else []
        value = ",".join(kept) if kept else None
    if value is None:
        return []
    return [f"{occ.option}={value}"] if occ.inline else [occ.option, value]


class _Chosen:
    """The edits taken so far, for the clash test in time logarithmic in their number: disjoint
    replaced ranges (sorted starts and their ends) and insertion points (sorted). Two ranges clash
    when they share a token, two insertions at the same point, and an insertion with a range it
    falls strictly inside (at a range's edge it goes before or after the range)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.points: list[int] = []

    def take(self, e: Edit) -> bool:
        """Take the edit unless it clashes with one already taken."""
        k = bisect.bisect_left(self.starts, e.end if e.start != e.end else e.start)
        if k and self.ends[k - 1] > e.start:  # the last range starting before this one ends reaches into it
            return False
        if e.start == e.end:
            k = bisect.bisect_left(self.points, e.start)
            if k < len(self.points) and self.points[k] == e.start:
                return False
            self.points.insert(k, e.start)
            return True
        k = bisect.bisect_right(self.points, e.start)
        if k < len(self.points) and self.points[k] < e.end:
            return False
        k = bisect.bisect_left(self.starts, e.start)
        self.starts.insert(k, e.start)
        self.ends.insert(k, e.end)
        return True


def apply_edits(cmd: ParsedCommand, edits: list[Edit]) -> list[str]:
    """Apply edits to the command. When two edits touch the same tokens the first one wins
    (rules are applied in sglang's order); appended flags are added once each. Linear in the
    tokens plus n log n in the edits: a command of 60,000 words and one edit per word is fine."""
    taken = _Chosen()
    chosen = [e for e in edits if e.start >= 0 and taken.take(e)]
    args: list[str] = []
    at = 0
    for e in sorted(chosen, key=lambda e: (e.start, e.end)):
        args.extend(cmd.args[at : e.start])
        args.extend(e.tokens)
        at = max(at, e.end, e.start)
    args.extend(cmd.args[at:])
    appended: list[str] = []
    appended_flags: set[str] = set()
    for e in edits:
        if e.start == -1 and e.tokens and e.tokens[0] not in appended_flags:
            appended_flags.add(e.tokens[0])
            appended.extend(e.tokens)
    program = next((e.tokens for e in edits if e.start == PROGRAM), cmd.tokens[cmd.wrapper_len : cmd.prefix_len])
    wrapper = _with_env(cmd, [e for e in edits if e.start == ENV])
    at = cmd.form.entrypoint_at
    span = cmd.form.script_program
    if span is not None and any(e.start == PROGRAM for e in edits):
        # `bash -lc 'exec python3 -m sglang.launch_server "$@"'`: the program is written in the script
        k = cmd.form.script_at + len(wrapper) - cmd.wrapper_len  # new `-e` words go in front of it
        wrapper[k] = wrapper[k][:span[0]] + join(program) + wrapper[k][span[1]:]
        program = []
    if at is not None and any(e.start == PROGRAM for e in edits) and program:
        # `--entrypoint python3 IMAGE -m …`: the new program's first word is the entrypoint's value
        # (env words go in at the image, after it, so `at` still points at the option)
        wrapper[at] = f"--entrypoint={program[0]}" if wrapper[at].startswith("--entrypoint=") else program[0]
        program = program[1:]
    return _with_runtime_options(cmd, wrapper, [e for e in edits if e.start == RUNTIME]) + list(program) + args + appended


def _with_runtime_options(cmd: ParsedCommand, wrapper: list[str], edits: list[Edit]) -> list[str]:
    """The wrapper with a runtime option set: its value replaced where the line gives it (the one
    the runtime keeps), else the option put right after `run`, where no word of the image or its
    command can be taken for its value. Applied last: the env words go in at the image, after
    every option, so the options' positions are still the line's."""
    if not edits:
        return wrapper
    from h3doctor.sglang.container_run import runtime_option_span

    run = cmd.form.container
    head = list(cmd.tokens[: run.image_index])
    for e in edits:
        option, value = e.tokens
        span = runtime_option_span(head, option)
        if span is None:
            at = 2 if head[1] == "run" else 3
            wrapper[at:at] = [option, value]
            head[at:at] = [option, value]
        else:
            start, end = span
            new = [f"{option}={value}"] if end - start == 1 else [option, value]
            wrapper[start:end] = new
            head[start:end] = new
    return wrapper


def _with_env(cmd: ParsedCommand, env_edits: list[Edit]) -> list[str]:
    """The wrapper with `NAME=value` words replaced or added: a word the user typed is replaced
    where it stands (the last one, which is the one that counts); a new one goes where the
    program will see it (after `env` and its options, else first). Every other word stays."""
    wrapper = list(cmd.tokens[: cmd.wrapper_len])
    slots = sorted(cmd.form.env_word_indices)
    at = cmd.form.env_insert_at
    for e in env_edits:
        word = e.tokens[0]
        name = word.split("=", 1)[0]
        if name in cmd.form.env_value_at:  # the script's `export NAME="$1"`: its argument is the value
            wrapper[cmd.form.env_value_at[name]] = word.split("=", 1)[1]
            continue
        for i in reversed(slots):
            if wrapper[i].split("=", 1)[0] == name:
                wrapper[i] = word
                break
        else:
            new = ["-e", word] if cmd.form.env_as_option else [word]  # a container's: `-e VAR=value`
            wrapper[at:at] = new
            slots = sorted([i + len(new) if i >= at else i for i in slots] + [at + len(new) - 1])
    return wrapper


# --- inline_config: replace `--config FILE` by the file's settings as command-line flags.
# Used where sglang refuses the file itself (A8: retired keys) and where a fix must unset a value
# only the file gives. The command line is what sglang would have built from the file
# ({**config, **cli}, the CLI winning), so flags the user also typed are left alone; retired keys
# are translated to their replacements. It lives beside FixContext because both the `remove`
# operation and a named strategy use it.

# server_args.py:3814-3825, with the value each replacement takes
_RETIRED = {
    "decoder_tp": lambda v: ("decoder_sp", v),
    "warmup": lambda v: ("warmup_mode", "request" if v else "off"),
    "server_warmup": lambda v: ("warmup_mode", "server" if v else "off"),
}
_DYNAMIC_MAPS = ("component_paths", "component_weights_paths", "component_quantizations", "component_precisions")


def _words(fx: FixContext, key: str, value: Any) -> list[str] | None:
    """The flag words for one setting, or None when it has no command-line form."""
    if key in _DYNAMIC_MAPS and isinstance(value, dict):
        prefix = "--" + key.replace("_", "-")
        return [w for c, v in value.items() for w in (f"{prefix}.{c}", str(v))]
    flag = fx.table.primary_option(key)
    action = fx.table.by_dest.get(key)
    if flag is None or action is None:
        return None
    if action.action == "store_boolean":
        return [flag, "true" if value else "false"]
    if action.action in ("store_true", "store_false"):
        return [flag] if bool(value) == (action.action == "store_true") else []
    if isinstance(value, dict):
        entries = [f"{k}={v}" for k, v in value.items()]
        return [flag, *entries] if action.nargs in ("+", "*") else [flag, ",".join(entries)]
    if isinstance(value, list):
        return [flag, *map(str, value)] if action.nargs in ("+", "*") else [flag, ",".join(map(str, value))]
    return [flag, str(value)]


def inline_config(fx: FixContext, exclude: frozenset[str] = frozenset()) -> list[Edit]:
    """Replace --config FILE by its settings as flags, leaving out `exclude` (the ones to unset)."""
    occs = fx.occurrences("--config")
    path = fx.context.get("config.path")
    values: dict[str, Any] = {k: v for k, v in (fx.context.get("config.values") or {}).items() if k not in exclude}
    if not occs or not path or not (values or exclude):
        return []  # nothing read from the file: dropping it would lose its settings
    words: list[str] = []
    typed = set(fx.cmd.provided) | set(fx.cmd.dynamic)
    for key, value in values.items():
        if key in _RETIRED:
            retired = key
            key, value = _RETIRED[key](value)
            fx.notes.append(f"--config: retired `{retired}` replaced by --{key.replace('_', '-')} {value}")
        if key in typed or value is None:
            continue
        flag_words = _words(fx, key, value)
        if flag_words is None:
            fx.notes.append(f"--config: `{key}` has no command-line flag; it is dropped with the file")
            continue
        words += flag_words
    first = occs[0]
    return [Edit(first.start, first.end, words)] + [Edit(o.start, o.end, []) for o in occs[1:]]
