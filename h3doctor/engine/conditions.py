"""Rule conditions: a closed set of operators over the flat check context. No eval, no code.

Why not CEL: the anchors measured `import celpy` at 53-109 ms and `import cel` at ~220 ms, and
a whole check must reach a verdict in 0.25 s including Python, Typer and PyYAML start-up; this
evaluator imports nothing and costs microseconds per rule (see benchmarks/README.md). The
vocabulary is what sglang's checks need: comparisons, membership, divisibility, and/all/any/not.

Logic is three-valued: a leaf that reads an unknown hardware fact (`hw.*` is None) is UNKNOWN,
and a rule whose condition is UNKNOWN yields a "cannot verify" finding instead of passing. So is
a leaf reading a value a launch's file leaves to the shell (`unresolved.UNRESOLVED`, any path).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Mapping

from h3doctor.unresolved import UNRESOLVED

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

UNKNOWN = None  # three-valued: True / False / None (unknown)

OPERATORS = (
    "eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "truthy", "falsy", "is_null", "not_null",
    "contains", "not_contains", "empty", "nonempty", "multiple_of", "not_multiple_of",
)


class ConditionError(ValueError):
    pass


def lookup(context: Mapping[str, Any], path: str) -> Any:
    return context.get(path)


def _is_fact(path: str) -> bool:
    # hardware facts, the memory model's verdicts (None where the model cannot tell) and what is
    # worked out from the host's disks and caches (`derived.host.*`, what the launch downloads) and
    # from its CUDA stack (`derived.cuda.*`: driver, kernels):
    # all "cannot verify" when unknown, never a pass
    # and whether a manifest's probes leave the launch time to load (`derived.probe.`)
    return path.startswith(("hw.", "derived.memory.", "derived.host.", "derived.download_", "derived.probe.", "derived.cuda."))


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "eq":
        return left == right
    if op == "ne":
        return left != right
    if op in ("gt", "ge", "lt", "le"):
        if left is None or right is None:
            return False
        try:
            return {"gt": left > right, "ge": left >= right, "lt": left < right, "le": left <= right}[op]
        except TypeError:
            return False
    if op == "in":
        return left in (right or ())
    if op == "not_in":
        return left not in (right or ())
    if op == "truthy":
        return bool(left)
    if op == "falsy":
        return not left
    if op == "is_null":
        return left is None
    if op == "not_null":
        return left is not None
    if op == "contains":
        return left is not None and right in left
    if op == "not_contains":
        return left is None or right not in left
    if op == "empty":
        return not left
    if op == "nonempty":
        return bool(left)
    if op in ("multiple_of", "not_multiple_of"):
        try:
            divisible = int(right) != 0 and int(left) % int(right) == 0
        except (TypeError, ValueError):
            divisible = False
        return divisible if op == "multiple_of" else not divisible
    raise ConditionError(f"unknown operator {op!r}")


def evaluate(cond: Mapping[str, Any], context: Mapping[str, Any], unknowns: set[str] | None = None) -> bool | None:
    """True, False, or None when the answer depends on an unknown hardware fact."""
    if "all" in cond:
        results = [evaluate(c, context, unknowns) for c in cond["all"]]
        if any(r is False for r in results):
            return False
        return UNKNOWN if any(r is None for r in results) else True
    if "any" in cond:
        results = [evaluate(c, context, unknowns) for c in cond["any"]]
        if any(r is True for r in results):
            return True
        return UNKNOWN if any(r is None for r in results) else False
    if "not" in cond:
        inner = evaluate(cond["not"], context, unknowns)
        return UNKNOWN if inner is None else not inner
    path = cond["path"]
    left = lookup(context, path)
    if "ref" in cond:
        right = lookup(context, cond["ref"])
        refs = [path, cond["ref"]]
    else:
        right = cond.get("value")
        refs = [path]
    unresolved = [p for p in refs if lookup(context, p) is UNRESOLVED]  # any value: unknown, null tests too
    missing = unresolved or [p for p in refs if _is_fact(p) and lookup(context, p) is None]
    if unresolved or (missing and cond["op"] not in ("is_null", "not_null")):
        if unknowns is not None:
            unknowns.update(missing)
        return UNKNOWN
    return _compare(cond["op"], left, right)


Compiled = Callable[[Mapping[str, object], "set[str] | None"], "bool | None"]


def compile_condition(cond: Mapping[str, Any]) -> Compiled:
    """`evaluate` as a closure built once per rule: the same three-valued answers and the same
    unknown facts (every child of all/any is still evaluated), without re-reading the condition's
    structure on every check. A lint run evaluates every rule thousands of times."""
    if "all" in cond or "any" in cond:
        branch = cond["all" if "all" in cond else "any"]
        children = [compile_condition(c) for c in branch]
        # `evaluate` reads every child, so the unknown facts it reports include those of children
        # after the deciding one. Stopping early is the same answer only when no later child can
        # report an unknown fact: precomputed per position, so most rules (no hardware or memory
        # fact) stop at the first deciding child.
        quiet_after = [not any(_may_be_unknown(c) for c in branch[i + 1:]) for i in range(len(branch))]
        steps = list(zip(children, quiet_after))
        # all and any are each other's mirror image: `decisive` is the child answer that settles
        # the whole (False for all, True for any); without one the answer is its opposite.
        decisive = "all" not in cond

        def all_or_any(context, unknowns):
            unknown = False
            decided = False
            for child, quiet in steps:
                value = child(context, unknowns)
                if value is decisive:
                    decided = True
                    if quiet:
                        return decisive
                elif value is None:
                    unknown = True
            if decided:
                return decisive
            return UNKNOWN if unknown else not decisive
        return all_or_any
    if "not" in cond:
        inner = compile_condition(cond["not"])

        def not_(context, unknowns):
            value = inner(context, unknowns)
            return UNKNOWN if value is None else not value
        return not_
    path, op = cond["path"], cond["op"]
    ref = cond.get("ref")
    value = cond.get("value")
    facts = [p for p in ([path, ref] if "ref" in cond else [path]) if _is_fact(p)]
    checks_unknown = bool(facts) and op not in ("is_null", "not_null")
    # the operator as one call, chosen here rather than by name on every evaluation (`_compare`
    # reads the operator's name down a chain of ifs: ~200 leaves an evaluation)
    unary = _UNARY.get(op)
    binary = _BINARY.get(op, lambda left, right: _compare(op, left, right))  # an unknown name: ConditionError when read

    if ref is None and not checks_unknown:
        # the usual leaf: one launch value against the rule's constant, None an answer like any other
        if unary is not None:
            def plain_unary(context, unknowns):
                left = context.get(path)
                if left is UNRESOLVED:  # a value the launch's file leaves to the shell: any value
                    if unknowns is not None:
                        unknowns.add(path)
                    return UNKNOWN
                return unary(left)
            return plain_unary

        def plain(context, unknowns):
            left = context.get(path)
            if left is UNRESOLVED:
                if unknowns is not None:
                    unknowns.add(path)
                return UNKNOWN
            return binary(left, value)
        return plain

    # the two values are read once each (a check evaluates ~180 leaves, a lint run millions)
    fact_path, fact_ref = path in facts, ref is not None and ref in facts

    def leaf(context, unknowns):
        left = context.get(path)
        right = context.get(ref) if ref is not None else value
        if left is UNRESOLVED or (ref is not None and right is UNRESOLVED):
            if unknowns is not None:  # a value the launch's file leaves to the shell: any value
                unknowns.update(p for p, v in ((path, left), (ref, right)) if p is not None and v is UNRESOLVED)
            return UNKNOWN
        if checks_unknown and ((fact_path and left is None) or (fact_ref and right is None)):
            if unknowns is not None:
                unknowns.update(p for p, v, fact in ((path, left, fact_path), (ref, right, fact_ref)) if fact and v is None)
            return UNKNOWN
        return binary(left, right)
    return leaf


def _ordered(compare: Callable[[Any, Any], Any]) -> Callable[[Any, Any], bool]:
    """gt/ge/lt/le as `_compare` answers them: False for None or values that do not compare."""
    def test(left: Any, right: Any) -> bool:
        if left is None or right is None:
            return False
        try:
            return compare(left, right)
        except TypeError:
            return False
    return test


def _multiple(left: Any, right: Any) -> bool:
    try:
        return int(right) != 0 and int(left) % int(right) == 0
    except (TypeError, ValueError):
        return False


# Each operator of `_compare` as one function (C where the operator module has it), for compiled
# leaves. tests/engine/test_condition_operators.py holds every one to `_compare` on a grid of values.
_UNARY: dict[str, Callable[[Any], bool]] = {
    "truthy": bool, "nonempty": bool, "falsy": operator.not_, "empty": operator.not_,
    "is_null": lambda left: left is None, "not_null": lambda left: left is not None,
}
_BINARY: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne,
    "gt": _ordered(operator.gt), "ge": _ordered(operator.ge), "lt": _ordered(operator.lt), "le": _ordered(operator.le),
    "in": lambda left, right: left in (right or ()), "not_in": lambda left, right: left not in (right or ()),
    "contains": lambda left, right: left is not None and right in left,
    "not_contains": lambda left, right: left is None or right not in left,
    "multiple_of": _multiple, "not_multiple_of": lambda left, right: not _multiple(left, right),
}
_BINARY.update({name: (lambda one: lambda left, _right: one(left))(one) for name, one in _UNARY.items()})


def _may_be_unknown(cond: Mapping[str, Any]) -> bool:
    """Whether evaluating `cond` can add an unknown fact (a fact leaf that is not a null test)."""
    if "all" in cond or "any" in cond:
        return any(_may_be_unknown(c) for c in cond["all" if "all" in cond else "any"])
    if "not" in cond:
        return _may_be_unknown(cond["not"])
    refs = [cond["path"]] + ([cond["ref"]] if "ref" in cond else [])
    return cond["op"] not in ("is_null", "not_null") and any(_is_fact(p) for p in refs)


def paths_of(cond: Mapping[str, Any]) -> list[str]:
    """Every context path a condition reads (for validation and evidence)."""
    if "all" in cond or "any" in cond:
        return [p for c in cond.get("all", cond.get("any", [])) for p in paths_of(c)]
    if "not" in cond:
        return paths_of(cond["not"])
    return [cond["path"]] + ([cond["ref"]] if "ref" in cond else [])


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)(!r)?\}")


def _text(value: Any, use_repr: bool) -> str:
    if use_repr:
        return repr(value)
    if isinstance(value, (list, tuple, dict)):
        return repr(list(value) if isinstance(value, tuple) else value)
    return "None" if value is None else str(value)


def render(template: str, context: Mapping[str, Any], missing: Callable[[str], str] | None = None) -> str:
    """Fill `{path}` / `{path!r}` placeholders the way sglang's f-strings render them; with
    `missing`, a placeholder with no value (None, empty) is its words for that path instead."""
    def one(m: re.Match[str]) -> str:
        value = lookup(context, m.group(1))
        if missing is not None and (value is None or (isinstance(value, (str, list, tuple, dict)) and not value)):
            return missing(m.group(1))
        return _text(value, bool(m.group(2)))

    return _PLACEHOLDER.sub(one, template)


UNKNOWN_WORD = "unknown"


def said(template: str, context: Mapping[str, Any], unknown: Collection[str] = ()) -> str:
    """A rule's text as a finding says it: filled as sglang's f-strings render it (`render`), but a
    fact h3doctor does not know — a None hardware fact or memory verdict (`_is_fact`: h3doctor's
    own, never a value sglang prints), or a path the rule's condition found unknown (`unknown`) —
    is the word "unknown", never `None` ("None GiB free"). A None of sglang's own args stays `None`,
    as sglang's f-string prints it."""
    def one(m: re.Match[str]) -> str:
        path = m.group(1)
        value = lookup(context, path)
        if value is None and (path in unknown or _is_fact(path)):
            return UNKNOWN_WORD
        return _text(value, bool(m.group(2)))

    return _PLACEHOLDER.sub(one, template)


def render_generic(template: str) -> str:
    """A template with no launch to fill it (a rule's help): each placeholder shown as `<name>`,
    the last part of its path (`{args.dp_size}` -> `<dp_size>`)."""
    return _PLACEHOLDER.sub(lambda m: f"<{m.group(1).rsplit('.', 1)[-1]}>", template)


def placeholders(template: str) -> list[str]:
    return [m.group(1) for m in _PLACEHOLDER.finditer(template)]
