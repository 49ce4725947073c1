"""A compiled condition's leaf calls its operator directly (engine/conditions.py `_UNARY`,
`_BINARY`), not `_compare` by name: every operator, with a constant and with a `ref`, on a plain
path and on a hardware fact, answers as the interpreter (`evaluate`) on a grid of values,
unknown facts included."""

from __future__ import annotations

import itertools

import pytest

from h3doctor.engine.conditions import OPERATORS, compile_condition, evaluate
from h3doctor.unresolved import UNRESOLVED

VALUES = [None, 0, 1, 2, -3, 2.5, True, False, "", "a", "ab", "fa", [], [1, 2], ["a", "fa"], (), (2,), {}, {"a": 1},
          UNRESOLVED]


def _answer(fn, *args):
    """The answer and the unknown facts, or the exception's type (both must raise alike)."""
    unknowns: set[str] = set()
    try:
        return fn(*args, unknowns), unknowns
    except Exception as exc:  # noqa: BLE001 - the interpreter's exception is the expected one
        return type(exc), unknowns


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("path", ["args.x", "hw.x"])
def test_every_operator_compiled_answers_as_the_interpreter(op, path):
    for left, right in itertools.product(VALUES, VALUES):
        ctx = {path: left, "args.y": right}
        for cond in ({"path": path, "op": op, "value": right}, {"path": path, "op": op, "ref": "args.y"}):
            if right is UNRESOLVED and "value" in cond:
                continue  # a rule's constant is never the shell's mark
            assert _answer(compile_condition(cond), ctx) == _answer(lambda c, u: evaluate(cond, c, u), ctx), \
                (cond, left, right)


def test_an_unknown_operator_is_refused_when_read_as_before():
    from h3doctor.engine.conditions import ConditionError

    leaf = compile_condition({"path": "args.x", "op": "near", "value": 1})
    with pytest.raises(ConditionError):
        leaf({"args.x": 1}, set())
