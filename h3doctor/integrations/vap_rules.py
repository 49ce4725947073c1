"""Which rules `h3doctor export vap` judges on a launch's values, translated from the rule files.

A rule is covered in a release where it applies to every MiniMax-H3 model's family on every GPU
platform (so neither the GPU nor MPS-or-not decides it: lint judges a pod on a GPU platform), and
every path its condition and message read is a value `vap_values.Values` computes, with an
operator translated below. The condition becomes CEL over one launch's list `l` as the engine's
`conditions._compare` reads it (None compares false, `not_multiple_of` is true for a zero or None
divisor); the message is filled as `conditions.said` fills it. Anything else is left out, with the
first thing that could not be translated as the reason (docs/kubernetes.md, "Without a webhook").
"""

from __future__ import annotations

from typing import Any

from h3doctor.engine.conditions import _PLACEHOLDER
from h3doctor.engine.ruleset import Rule
from h3doctor.integrations.vap_values import NONE, Values

FAMILIES = ("h3", "fh3", "fh3o", "vdn")  # the families of every MiniMax-H3 model (sglang/families.py)
GPU_PLATFORMS = ("cuda", "rocm", "mps", "xpu", "npu", "musa")


class Untranslatable(Exception):
    """What keeps a rule out of the policy, in words."""


def applies_everywhere(rule: Rule, version: str) -> bool:
    return all(rule.applies(f, p, "serve", version) for f in FAMILIES for p in GPU_PLATFORMS)


def applies_somewhere(rule: Rule, version: str) -> bool:
    return any(rule.applies(f, p, "serve", version) for f in FAMILIES for p in (*GPU_PLATFORMS, "cpu"))


def translate(rule: Rule, values: Values) -> tuple[str, str]:
    """(CEL over `l`: the rule fires, CEL: its message) in `values`' release, or Untranslatable."""
    if not applies_everywhere(rule, values.version):
        raise Untranslatable("depends on the family or the platform (its applies_to)")
    rule = rule.for_version(values.version)
    return _condition(rule.when, values), _message(rule.message, values)


def _condition(cond: dict[str, Any], v: Values) -> str:
    if "all" in cond or "any" in cond:
        joiner = " && " if "all" in cond else " || "
        return "(" + joiner.join(_condition(c, v) for c in cond["all" if "all" in cond else "any"]) + ")"
    if "not" in cond:
        return f"!({_condition(cond['not'], v)})"
    op, path = cond["op"], cond["path"]
    if path == "explicit" and op in ("contains", "not_contains"):
        given = _value(f"given.{cond['value']}", v)[0]
        return f"{given} {'==' if op == 'contains' else '!='} 1"
    left, kind = _value(path, v)
    if "ref" in cond:
        right, right_kind = _value(cond["ref"], v)
        if right_kind != kind:
            raise Untranslatable(f"compares {path} with {cond['ref']}")
    else:
        right = _constant(cond.get("value"), kind, path, op)
    if kind == "text":
        if op in ("is_null", "falsy") or (op == "eq" and cond.get("value") is None):
            return f"{left} == ''"
        if op in ("not_null", "truthy"):
            return f"{left} != ''"
        raise Untranslatable(f"{op} on the text {path}")
    if kind == "present":
        if op in ("is_null", "not_null"):
            return f"{left} {'==' if op == 'is_null' else '!='} {NONE}"
        raise Untranslatable(f"{op} on the value of {path}, a string")
    return _compare(op, left, right, path)


def _compare(op: str, left: str, right: str, path: str) -> str:
    known = f"{left} != {NONE} && {right} != {NONE}"
    if op in ("eq", "ne"):
        return f"{left} {'==' if op == 'eq' else '!='} {right}"  # None == None as in Python
    if op in ("gt", "ge", "lt", "le"):
        sign = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}[op]
        return f"({known} && {left} {sign} {right})"
    if op in ("truthy", "falsy"):
        truthy = f"({left} != {NONE} && {left} != 0)"
        return truthy if op == "truthy" else f"!{truthy}"
    if op in ("is_null", "not_null"):
        return f"{left} {'==' if op == 'is_null' else '!='} {NONE}"
    if op in ("multiple_of", "not_multiple_of"):
        # a conditional, so the modulo is never evaluated with a zero divisor
        divisible = f"({known} && {right} != 0 ? {left} % {right} == 0 : false)"
        return divisible if op == "multiple_of" else f"!{divisible}"
    raise Untranslatable(f"the operator {op} on {path}")


def _value(path: str, v: Values) -> tuple[str, str]:
    if path not in v.exprs:
        if path.startswith("hw."):
            raise Untranslatable(f"reads the hardware ({path}), which a pod's words do not give")
        if path.startswith("given."):
            raise Untranslatable(f"reads whether {path[6:]} was given, which the policy does not read")
        raise Untranslatable(f"reads {path}, which the policy does not compute")
    return v.exprs[path], v.kinds[path]


def _constant(value: Any, kind: str, path: str, op: str) -> str:
    if value is None:
        return str(NONE)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int) and abs(value) < 10**6:
        return str(value)
    if op in ("truthy", "falsy", "is_null", "not_null"):
        return "0"
    raise Untranslatable(f"compares {path} with {value!r}")


def _message(template: str, v: Values) -> str:
    parts, last = [], 0
    for m in _PLACEHOLDER.finditer(template):
        if m.group(2):
            raise Untranslatable(f"its message shows {m.group(1)} as repr")
        expr, kind = _value(m.group(1), v)
        if kind == "present":
            raise Untranslatable(f"its message shows {m.group(1)}, a string")
        parts += [_string(template[last:m.start()]), _shown(expr, kind)]
        last = m.end()
    parts.append(_string(template[last:]))
    return " + ".join(p for p in parts if p != "''") or "''"


def _shown(expr: str, kind: str) -> str:
    """As Python's str() shows the value: None, True/False, the int."""
    if kind == "text":
        return expr
    if kind == "bool":
        return f"({expr} == {NONE} ? 'None' : ({expr} != 0 ? 'True' : 'False'))"
    return f"({expr} == {NONE} ? 'None' : string({expr}))"


def _string(text: str) -> str:
    import json

    return json.dumps(text)
