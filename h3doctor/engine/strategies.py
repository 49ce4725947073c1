"""The named fix strategies rule files can ask for (`fix: [{strategy: NAME}]`).

Each takes the FixContext of one failing rule and returns edits to the user's command. They are
code because what they do depends on the command's problems, not on one flag: what argparse
rejected, which words sglang did not recognise, which layout fits the GPUs.
"""

from __future__ import annotations

import os

from h3doctor.engine.fixes import PROGRAM, Edit, FixContext, Strategy, inline_config
from h3doctor.engine.layout import parallel_layout
from h3doctor.sglang.argv import PARSE_KIND
from h3doctor.sglang.releases import describe_foreign
_BOOLEAN_WORDS = {"1": "true", "yes": "true", "on": "true", "y": "true", "0": "false", "no": "false", "off": "false", "n": "false"}


def _strategy_drop_unrecognized(fx: FixContext):
    edits = []
    for p in fx.cmd.problems:
        if p.kind == "unrecognized":
            edits.append(Edit(p.start, p.end, [p.suggestion] + fx.cmd.args[p.start + 1 : p.end] if p.suggestion and p.suggestion.startswith("--") else []))
    return edits


def _strategy_model_as_flag(fx: FixContext):
    """A model given as the first word where sglang takes it only as --model-path (`sglang
    generate MODEL`, `python -m sglang.multimodal_gen.runtime.launch_server MODEL`: only the
    `sglang serve` dispatcher reads a positional model): the same word, behind --model-path, in
    its place. Not when --model-path is given too: then the word is only dropped."""
    args = fx.cmd.args
    if (not args or args[0].startswith("-") or fx.cmd.model_positional_index is not None
            or "model_path" in fx.cmd.provided):
        return []
    if not any(p.kind == "unrecognized" and p.start == 0 for p in fx.cmd.problems):
        return []
    return [Edit(0, 1, ["--model-path", args[0]])]


def _strategy_translate_release_flags(fx: FixContext):
    """Flags of another release: this release's spelling where the cited equivalents table has
    one (flagdata/flag-equivalents.json), else dropped; every change is named in the notes."""
    version = fx.context.get("release.table") or fx.table.sglang_version
    edits = []
    for p in fx.cmd.problems:
        if p.kind not in ("unrecognized", "ambiguous") or not p.option:
            continue
        info = describe_foreign(p.option, fx.cmd.entry, version)
        if info is None:
            continue
        words = fx.cmd.args[p.start:p.end]
        head, _, inline = words[0].partition("=")
        value = (inline or (words[1] if len(words) > 1 else "true")).lower()
        eq = info["equivalent"]
        mapped = eq["values"].get(value) if eq else None
        if mapped is not None:
            edits.append(Edit(p.start, p.end, [eq["replacement"], mapped]))
            fx.notes.append(f"{' '.join(words)} -> {eq['replacement']} {mapped}: {info['when']}; sglang {version} "
                            f"spells it {eq['replacement']} ({eq['where']})")
        else:
            edits.append(Edit(p.start, p.end, []))
            fx.notes.append(f"dropped {' '.join(words)}: {info['when']}; sglang {version} has no equivalent")
    return edits


def _strategy_expand_abbreviation(fx: FixContext):
    edits = []
    for p in fx.cmd.problems:
        if p.kind == "abbreviation" and p.suggestion:
            head = fx.cmd.args[p.start]
            tail = head.split("=", 1)[1:] if "=" in head else []
            edits.append(Edit(p.start, p.start + 1, [p.suggestion + ("=" + tail[0] if tail else "")]))
    return edits


def _strategy_drop_parse_error(fx: FixContext):
    """A4/A5: map yes/no/0/1 to true/false for booleans; drop other unparseable flags."""
    edits = []
    for p in fx.cmd.problems:
        if p.kind == "invalid_boolean":
            raw = fx.cmd.args[p.end - 1].split("=", 1)[-1]
            word = _BOOLEAN_WORDS.get(raw.strip().lower())
            option = fx.cmd.args[p.start].split("=", 1)[0]
            edits.append(Edit(p.start, p.end, [option, word] if word else []))
        elif p.kind == "ambiguous" and p.option == "--model":
            # the dispatcher read it as the model path: spell that out
            head = fx.cmd.args[p.start]
            edits.append(Edit(p.start, p.start + 1, ["--model-path" + head[len("--model"):]]))
        elif p.kind in PARSE_KIND:
            edits.append(Edit(p.start, p.end, []))
    return edits


def _strategy_override_config_types(fx: FixContext):
    """Give each mistyped --config value on the command line, where argparse converts it (the CLI wins)."""
    edits = []
    for key in fx.context.get("config.mistyped_keys") or []:
        flag = fx.table.primary_option(key)
        value = fx.context.get(f"args.{key}")
        if flag and value is not None:
            edits += fx.op_set(flag, value)
    return edits


def _strategy_config_false_on_command_line(fx: FixContext):
    """Pass each --config boolean that is the string "false" as `--FLAG false` (the command line
    wins), in the order of the target release's flag table, with that release's option names."""
    keys = set(fx.context.get("derived.config_string_false_keys") or ())
    edits, seen = [], set()
    for action in fx.table.actions:
        if action.dest in keys and action.dest not in seen:
            seen.add(action.dest)
            flag = fx.table.primary_option(action.dest)
            if flag:
                edits += fx.op_set(flag, "false")
    return edits


def _strategy_drop_layerwise_unsupported(fx: FixContext):
    """Drop the words naming non-layerwise components from --layerwise-offload-components (L24)."""
    bad = fx.context.get("derived.layerwise_unsupported_components") or ()
    return fx.op_remove_values("--layerwise-offload-components", list(bad)) if bad else []


def _strategy_memory_fit(fx: FixContext):
    """The least disruptive change that fits by the memory model (derivations/memory.py)."""
    ops = fx.context.get("derived.memory.fix_ops") or []
    why = fx.context.get("derived.memory.fix_why")
    if why and why not in fx.notes:
        fx.notes.append(why)
    return [e for op in ops for e in fx.edits_for(op)]


def _strategy_sglang_entrypoint(fx: FixContext):
    """Start the launch with sglang's own entry point: the program words become `sglang serve`
    (or `sglang generate`); the wrapper in front and every flag stay as typed, except `--model`,
    the LLM launcher's alias, which `sglang serve` would call ambiguous: it becomes --model-path."""
    cmd = fx.cmd
    if cmd.form.script_at is not None and cmd.form.script_program is None:
        # the program is in a `-c` script whose words are not found as written: a fix placed
        # anywhere else would leave it running, and the loop would find it again
        fx.gives_up.append("no automatic sglang_entrypoint fix: the program is written inside the `-c` script, "
                           "where its words are not found as written; change it to `sglang serve` there")
        return []
    subcommand = cmd.entry if cmd.entry in ("serve", "generate") else "serve"
    edits = [Edit(PROGRAM, PROGRAM, ["sglang", subcommand])]
    for occ in cmd.occurrences:
        if occ.option == "--model" and occ.dest == "model_path":
            value = occ.values[0]
            edits.append(Edit(occ.start, occ.end, [f"--model-path={value}"] if occ.inline else ["--model-path", value]))
    interpreter = cmd.form.program_head(cmd.tokens)
    if os.sep in interpreter:
        fx.notes.append(f"the corrected command runs the `sglang` found on PATH; to keep the environment of "
                        f"`{interpreter}`, use {os.path.join(os.path.dirname(interpreter), 'sglang')} "
                        "(where a virtual environment installs it)")
    return edits


STRATEGIES: dict[str, Strategy] = {
    "memory_fit": _strategy_memory_fit,
    "sglang_entrypoint": _strategy_sglang_entrypoint,
    "parallel_layout": parallel_layout,
    "inline_config": inline_config,
    "drop_unrecognized": _strategy_drop_unrecognized,
    "model_as_flag": _strategy_model_as_flag,
    "translate_release_flags": _strategy_translate_release_flags,
    "expand_abbreviation": _strategy_expand_abbreviation,
    "drop_parse_error": _strategy_drop_parse_error,
    "override_config_types": _strategy_override_config_types,
    "config_false_on_command_line": _strategy_config_false_on_command_line,
    "drop_layerwise_unsupported": _strategy_drop_layerwise_unsupported,
}
