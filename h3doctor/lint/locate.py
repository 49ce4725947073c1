"""Where in its file a finding points: the token of the flag it is about.

In order: the rule's `position` (the parse error's token), the first flag its fix names and the
user typed, the first `args.*` its condition reads that the user typed; for an sglang `--config`
file, the key of the file the finding is about; else the start of the launch.
"""

from __future__ import annotations

from h3doctor.engine.conditions import paths_of
from h3doctor.engine.results import Evaluation, Finding
from h3doctor.engine.ruleset import Rule
from h3doctor.inputs.launch import Launch
from h3doctor.located import Pos
from h3doctor.sglang.flagtable import FlagTable

_CONFIG_KEY_LISTS = ("config.removed_keys", "config.string_booleans", "config.mistyped_keys", "config.ignored_keys")
# Derived values a condition reads, and the flags (or --config key lists) they are made from:
# where a finding that reads only derived values points. h3doctor's own derivations, not sglang facts.
_DERIVED_FROM = {
    "derived.local_gpus_needed": ("num_gpus", "nnodes"),
    "derived.visible_gpus": ("num_gpus",),
    "derived.config_removed_message": ("config.removed_keys",),
    # H3D950's fix is a strategy (config_false_on_command_line) that names no flag: point at the key
    "derived.string_false_keys": ("derived.config_string_false_keys",),
}
# lists of --config keys in the context (a finding that reads one points at its first key in the file)
_KEY_LISTS = _CONFIG_KEY_LISTS + ("derived.config_string_false_keys",)


class Locator:
    """Per lint run: which option dests each rule is about, computed once per rule."""

    def __init__(self, table: FlagTable) -> None:
        self.table = table
        self._dests: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def dests(self, rule: Rule) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(option dests the rule's fix names, dests and config lists its condition reads)."""
        if rule.id not in self._dests:
            options = self.table.options_for("serve")
            fixed: list[str] = []
            for op in rule.fix or ():
                for spec in op.values():
                    flag = spec.get("flag") if isinstance(spec, dict) else None
                    action = options.get(flag) if flag else None
                    if action is not None and action.dest not in fixed:
                        fixed.append(action.dest)
            read: list[str] = []
            for p in paths_of(rule.when):
                if p.startswith("args."):
                    dest = p.removeprefix("args.")
                    if dest not in fixed and dest not in read:
                        read.append(dest)
                elif p in _CONFIG_KEY_LISTS:
                    read.append(p)
                for dest in _DERIVED_FROM.get(p, ()):
                    if dest not in fixed and dest not in read:
                        read.append(dest)
            self._dests[rule.id] = (tuple(fixed), tuple(read))
        return self._dests[rule.id]

    def locate(self, finding: Finding, ev: Evaluation, launch: Launch) -> Pos:
        rule = finding.rule
        cmd = ev.cmd
        index = None
        if rule.position:
            value = ev.context.get(rule.position)
            if isinstance(value, int) and value >= 0:
                index = cmd.prefix_len + value
        fixed, read = self.dests(rule)
        if index is None:
            for dest in fixed + read:
                occ = next((o for o in cmd.occurrences if o.dest == dest and o.option != "<model>"), None)
                if occ is not None:
                    index = cmd.prefix_len + occ.start
                    break
        if index is not None and 0 <= index < len(launch.token_pos):
            return launch.token_pos[index]
        if launch.key_pos:  # an sglang --config file: the key the finding is about
            for name in read:
                for key in ev.context.get(name) or () if name in _KEY_LISTS else ():
                    if key in launch.key_pos:
                        return launch.key_pos[key]
            for dest in fixed + read:
                if dest in launch.key_pos:
                    return launch.key_pos[dest]
        return launch.pos
