"""The values a launch's words give sglang's rules, as CEL for `h3doctor export vap`: each flag
a covered rule reads, read from the words where the words say it for certain, and the parallel
layout sglang resolves from them (sglang/resolve.py `Resolver._parallelism`, on a GPU platform).

One launch becomes one list of ints (`l`): a slot per value, `NONE` where Python has None. The
slots are filled in steps (`.map(l, l + [...])`), each reading only earlier slots, because CEL has
no `let`. A launch whose layout words are not certain — a `--config` file, a flag given twice
(aliases count), an abbreviation or `=value` of a flag read here, a value that is not 1-6 ASCII
digits — has no list: the policy says nothing of these rules there and lint judges it.
Six digits keep every product the rules form (dp x tp x cfg) inside CEL's int64: CEL raises on
overflow, and a raised error is no verdict.
"""

from __future__ import annotations

import re
from typing import Any

from h3doctor.sglang.argv import parse_command
from h3doctor.sglang.flagtable import load_flag_table
from h3doctor.sglang.server_args import config_for, family_of, server_args

NONE = -1_000_000_000  # Python's None: no value of 1-6 digits comes near it
INT = r"^-?[0-9]{1,6}$"
BOOL = r"^(?i)(true|false)$"  # store_boolean takes 'true'/'false' in any case (sglang/argv.py)
ZERO_DIVISION = "ZeroDivisionError: integer modulo by zero"
# Flags read as given: the resolver never changes them on a GPU platform (tests/integrations/
# test_vap_rules.py holds this against sglang/resolve.py for every release).
AS_GIVEN = ("num_gpus", "dp_size", "nnodes", "node_rank", "hsdp_replicate_dim", "dist_init_addr", "lora_alpha")
# Flags the layout reads as given and then resolves, as `_parallelism` does.
RESOLVED = ("tp_size", "sp_degree", "ulysses_degree", "ring_degree", "kv_gather_degree",
            "enable_cfg_parallel", "cfg_parallel_degree", "hsdp_shard_dim")


class Values:
    """One release's launch values: the CEL that makes `l` from `ws`, and what each context path
    a rule reads is in terms of `l`."""

    def __init__(self, version: str, models: list[str]) -> None:
        self.version = version
        table = load_flag_table(version)
        self.options = table.options_for("serve")
        self.defaults, self.classes = _defaults_and_classes(version, table, models)
        self.models = models
        self.slots: dict[str, int] = {}
        self.steps: list[list[str]] = [[]]
        self.kinds: dict[str, str] = {}  # path -> int | bool | text
        self.exprs: dict[str, str] = {}  # path -> CEL over l (text paths: '' is None)
        self.read: dict[str, tuple[str, ...]] = {}  # dest -> its option strings, in this release
        # sets and maps, each a policy variable: a literal inside a comprehension is built again
        # for every word (cel-go and cel-python alike)
        self.constants: dict[str, str] = {}
        self._read_words()
        self._resolve()
        self._derived()

    # -- building ---------------------------------------------------------------------------
    def _slot(self, name: str, expr: str) -> str:
        """A new slot computed by `expr` ({name} reads an earlier slot); returns its CEL."""
        text = self._fill(expr)
        if any(f"l[{self.slots[n]}]" in text for n in self._pending()):
            self.steps.append([])  # it reads a slot of this step: the next step computes it
        self.slots[name] = len(self.slots)
        self.steps[-1].append(text)
        return f"l[{self.slots[name]}]"

    def _const(self, what: str, literal: str) -> str:
        name = f"{what}_{self.version.replace('.', '_')}"
        self.constants[name] = literal
        return f"variables.{name}"

    def _pending(self) -> list[str]:
        first = sum(len(s) for s in self.steps[:-1])
        return [n for n, i in self.slots.items() if i >= first]

    def _fill(self, expr: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: f"l[{self.slots[m.group(1)]}]", expr)

    def _read_words(self) -> None:
        """The first step: each read flag's value from the words (or its default), and the model."""
        for dest in (*AS_GIVEN, *RESOLVED, "minimax_h3_adaln_online"):
            opts = tuple(o for o, a in self.options.items() if a.dest == dest)
            if not opts:  # not a flag of this release: sglang's default, or None
                self._slot(f"raw_{dest}", str(_int(self.defaults.get(dest))))
                continue
            self.read[dest] = opts
            action = self.options[opts[0]]
            given = " || ".join(f"{_q(o)} in ws" for o in opts)
            given = f"({given})"
            index = f"ws.indexOf(ws.filter(w, w in {_set(opts)})[0])" if len(opts) > 1 \
                else f"ws.indexOf({_q(opts[0])})"
            word = f"ws[{index} + 1]"
            default = _int(self.defaults.get(dest))
            if action.action == "store_boolean":
                value = (f"(size(ws) <= {index} + 1 || {word}.startsWith('--') || "
                         f"{word}.matches('^(?i)true$') ? 1 : 0)")
                kind = "bool"
            elif action.type == "int" and action.nargs is None:
                value, kind = f"int({word})", "int"
            else:
                value, kind = "1", "present"  # a string's presence only (is_null / not_null)
            self.exprs[f"given.{dest}"] = self._slot(f"given_{dest}", f"{given} ? 1 : 0")
            self.kinds[f"given.{dest}"] = "bool"
            self._slot(f"raw_{dest}", f"{given} ? {value} : {default}")
            if dest in AS_GIVEN or dest == "minimax_h3_adaln_online":
                self.exprs[f"args.{dest}"], self.kinds[f"args.{dest}"] = f"l[{self.slots['raw_' + dest]}]", kind
        words = self._const("modelindex", _map({m: i for i, m in enumerate(self.models)}))
        inline = self._const("modelinline", _map({f"--model-path={m}": i for i, m in enumerate(self.models)}))
        self._slot("model", f"ws[2] in {words} ? {words}[ws[2]] : "
                            f"ws.exists(w, w in {inline}) ? {inline}[ws.filter(w, w in {inline})[0]] : "
                            f"{words}[ws.filter(w, w in {words})[0]]")

    def certain(self, flags: str) -> str:
        """CEL over `ws`: the words say every read value for certain (see the module's doc);
        `flags` is the variable of this release's flags as a map."""
        read = [o for opts in self.read.values() for o in opts]
        touch = "^(?:" + "|".join(_prefixes(o) for o in read) + ")(?:=.*)?$"
        ints = [o for d, opts in self.read.items() for o in opts if self.options[o].type == "int"]
        bools = [o for d, opts in self.read.items() for o in opts if self.options[o].action == "store_boolean"]
        texts = [o for o in read if o not in ints and o not in bools]
        nxt = "ws[ws.indexOf(w) + 1]"
        has_next = "ws.indexOf(w) + 1 < size(ws)"
        dest_of = self._const("readdest", _map({o: d for d, opts in self.read.items() for o in opts}))
        ints, bools, texts = (self._const(k, _set(v)) for k, v in (("readint", ints), ("readbool", bools), ("readtext", texts)))
        return " && ".join([
            "!ws.exists(w, w == '--config' || w.startsWith('--config='))",
            f"!ws.exists(w, w.matches({_q(touch)}) && !(w in {flags}))",
            # one word per read value: the list of their dests has no repeat
            f"ws.filter(w, w in {dest_of}).map(w, {dest_of}[w]).all(d, "
            f"ws.filter(w, w in {dest_of} && {dest_of}[w] == d).size() == 1)",
            f"ws.all(w, !(w in {ints}) || ({has_next} ? {nxt}.matches({_q(INT)}) : false))",
            f"ws.all(w, !(w in {bools}) || !({has_next}) || {nxt}.startsWith('--') || {nxt}.matches({_q(BOOL)}))",
            f"ws.all(w, !(w in {texts}) || ({has_next} ? !{nxt}.startsWith('-') : false))",
        ])

    def _resolve(self) -> None:
        """sglang/resolve.py `_parallelism` on a GPU platform, slot by slot."""
        n = NONE
        self._slot("tp", f"{{raw_tp_size}} == {n} ? 1 : {{raw_tp_size}}")
        cfg = "{raw_cfg_parallel_degree}"
        en = "{raw_enable_cfg_parallel}"
        self._slot("en", f"{cfg} != {n} ? ({cfg} == 1 ? 0 : ({cfg} > 1 ? 1 : {en})) : ({en} == {n} ? 0 : {en})")
        self._slot("cfg", f"{cfg} == {n} ? ({{en}} != {n} && {{en}} != 0 ? 2 : 1) : {cfg}")
        self._slot("hsdp_shard", f"{{raw_hsdp_shard_dim}} == {n} ? {{raw_num_gpus}} : {{raw_hsdp_shard_dim}}")
        group = f"({{raw_dp_size}} * {{tp}} * ({{en}} != {n} && {{en}} != 0 ? {{cfg}} : 1))"
        self._slot("group", group)
        g = "{raw_num_gpus}"
        self._slot("sp", f"{{raw_sp_degree}} != {n} ? {{raw_sp_degree}} : "
                         f"({{group}} != 0 ? ({g} % {{group}} == 0 ? {g} / {{group}} : 1) : 1)")
        u, r, kv = "{raw_ulysses_degree}", "{raw_ring_degree}", "{raw_kv_gather_degree}"
        auto = f"({u} == {n} && {r} == {n} && {kv} == {n} && {{sp}} != 1)"
        self._slot("kv", f"{auto} && {{sp}} == 2 ? 2 : ({kv} == {n} ? 1 : {kv})")
        self._slot("ulysses", f"{{kv}} > 1 ? {{kv}} : ({auto} ? {{sp}} : ({u} == {n} ? 1 : {u}))")
        self._slot("ring", f"{r} == {n} ? 1 : {r}")
        for path, slot, kind in (("tp_size", "tp", "int"), ("enable_cfg_parallel", "en", "bool"),
                                 ("cfg_parallel_degree", "cfg", "int"), ("hsdp_shard_dim", "hsdp_shard", "int"),
                                 ("sp_degree", "sp", "int"), ("kv_gather_degree", "kv", "int"),
                                 ("ulysses_degree", "ulysses", "int"), ("ring_degree", "ring", "int")):
            self.exprs[f"args.{path}"], self.kinds[f"args.{path}"] = f"l[{self.slots[slot]}]", kind

    def _derived(self) -> None:
        """The derived values the covered rules read (engine/derivations/core.py parallel_layout,
        gpus.py _hsdp_error and _dp_size_error, resolve.py's sp_zero_division event)."""
        n = NONE
        on = f"({{en}} != {n} && {{en}} != 0)"
        cfg1 = f"({{cfg}} == {n} || {{cfg}} == 0 ? 1 : {{cfg}})"
        self.exprs["derived.dp_tp_cfg"] = self._slot("dp_tp_cfg", f"{{raw_dp_size}} * {{tp}} * ({on} ? {cfg1} : 1)")
        self.exprs["derived.ring_x_ulysses"] = self._slot("ring_x_ulysses", "{ring} * {ulysses}")
        self.kinds.update({"derived.dp_tp_cfg": "int", "derived.ring_x_ulysses": "int"})
        g = "{raw_num_gpus}"
        texts = {
            "derived.cfg_factor_text": f"{on} ? ' * ' + string({cfg1}) : ''",
            "events.sp_zero_division": f"{g} == 0 ? {_q(ZERO_DIVISION)} : ''",
            "derived.config_class": f"{_list(self.classes)}[{{model}}]",
            "derived.dp_size_error": (f"{{raw_dp_size}} >= 1 ? '' : ({{raw_dp_size}} == 0 ? {_q(ZERO_DIVISION)} : "
                                      f"({g} % {{raw_dp_size}} != 0 ? '' : '--dp-size must be a natural number'))"),
            "derived.hsdp_error": self._hsdp("raw_hsdp_replicate_dim", "hsdp_replicate_dim",
                                             self._hsdp("hsdp_shard", "hsdp_shard_dim", "''")),
        }
        for path, text in texts.items():
            self.exprs[path], self.kinds[path] = "(" + self._fill(text) + ")", "text"

    def _hsdp(self, slot: str, name: str, otherwise: str) -> str:
        h, g, n = f"{{{slot}}}", "{raw_num_gpus}", NONE
        return (f"({h} == {n} || {g} == {n} ? {otherwise} : ({h} == 0 ? {_q(ZERO_DIVISION)} : "
                f"({h} > {g} || {g} % {h} != 0 ? 'num_gpus (' + string({g}) + ') must be >= and divisible by "
                f"{name} (' + string({h}) + ')' : {otherwise})))")

    def expression(self, launches: str, flags: str) -> str:
        """CEL: the list of `l`, one for each launch of `launches` whose words are certain."""
        first, *rest = self.steps
        out = f"{launches}.filter(ws, {self.certain(flags)}).map(ws, [{', '.join(first)}])"
        for step in rest:
            out += f".map(l, l + [{', '.join(step)}])"
        return out


def _defaults_and_classes(version: str, table: Any, models: list[str]) -> tuple[dict[str, Any], list[str]]:
    """sglang's defaults for a plain `sglang serve MODEL` (server_args.py, as the sglang room
    models them) and each model's pipeline config class (family_of)."""
    classes = []
    defaults: dict[str, Any] = {}
    for model in models:
        cmd = parse_command(["sglang", "serve", model], table)
        args, _explicit = server_args(cmd, config_for(cmd, table), table)
        defaults = args
        family = family_of(cmd, args)
        classes.append(family.family.config_class if family.family else "")
    return defaults, classes


def _int(value: Any) -> int:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, int) else 1  # a string default: present


def _prefixes(option: str) -> str:
    """RE2: `option` or any abbreviation of it past `--` (--tp-size: --t, --tp, --tp-, ...)."""
    body = option[2:]
    pattern = ""
    for ch in reversed(body[1:]):
        pattern = f"(?:{re.escape(ch)}{pattern})?"
    return "--" + re.escape(body[0]) + pattern


def _q(text: str) -> str:
    import json

    return json.dumps(text)


def _set(items: Any) -> str:
    return _map(dict.fromkeys(items, True))


def _map(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{_q(k)}: {_lit(v)}" for k, v in mapping.items()) + "}"


def _list(items: list[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def _lit(v: Any) -> str:
    return "true" if v is True else "false" if v is False else str(v) if isinstance(v, int) else _q(v)
