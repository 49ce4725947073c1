"""h3doctor/record.py: records behave as the dataclasses they replace, to h3doctor and to dataclasses' own functions."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math

import pytest

from h3doctor.record import FrozenInstanceError, field, fields_of, record, replace


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def norm(self) -> float:
        return math.hypot(self.x, self.y)


@record
class Box:
    items: dict[str, int] = field(default_factory=dict)
    label: str = "box"


@record(frozen=True)
class Defaulted:
    version: str
    table: str = ""

    def __post_init__(self) -> None:
        if not self.table:
            object.__setattr__(self, "table", self.version)


def test_init_defaults_factories_and_argument_errors():
    p = Point(1)
    assert (p.x, p.y, p.tags, p.note) == (1, 0, [], None)
    assert Point(1).tags is not Point(1).tags  # a factory per record
    assert Point(1, 2, ["a"], "n") == Point(x=1, y=2, tags=["a"], note="other")  # note is not compared
    with pytest.raises(TypeError, match="missing"):
        Point()
    with pytest.raises(TypeError, match="unexpected keyword"):
        Point(1, z=3)
    with pytest.raises(TypeError, match="multiple values"):
        Point(1, x=2)
    with pytest.raises(TypeError, match="positional"):
        Point(1, 2, [], None, 5)


def test_frozen_records_refuse_assignment_and_hash_by_compared_fields():
    p = Point(3, 4, ("a",))  # a hashable value in the list field, as a frozen dataclass would need
    with pytest.raises(FrozenInstanceError):
        p.x = 5
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(FrozenInstanceError):
        p.other = 1  # as a frozen dataclass: no new attribute either
    assert p.norm == 5.0  # cached_property still writes its cache
    assert hash(p) == hash(Point(3, 4, ("a",), note="ignored"))
    assert p != (3, 4, ("a",))


def test_mutable_records_are_unhashable_and_assignable():
    b = Box()
    b.label = "crate"
    b.items["a"] = 1
    assert b == Box({"a": 1}, "crate")
    with pytest.raises(TypeError):
        hash(b)


def test_repr_post_init_replace_and_nan_equality():
    assert repr(Point(1, 2)) == "Point(x=1, y=2, tags=[])"
    assert Defaulted("0.5.23").table == "0.5.23"
    assert Defaulted("0.5.24", "0.5.23").table == "0.5.23"
    moved = replace(Point(1, 2, ["t"]), y=7)
    assert (moved.x, moved.y, moved.tags) == (1, 7, ["t"])
    nan = float("nan")
    assert Point(1, 2, [nan]) != Point(1, 2, [float("nan")])
    same = [nan]
    assert Point(1, 2, same) == Point(1, 2, same)  # identical values compare equal, as in a tuple
    assert fields_of(Point) == ("x", "y", "tags", "note") == fields_of(Point(1))


def test_a_record_is_a_dataclass_to_dataclasses_functions():
    p = Point(1, 2, ["t"], note="n")
    assert dataclasses.is_dataclass(p) and dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tags", "note"]
    moved = dataclasses.replace(p, x=9)
    assert isinstance(moved, Point) and (moved.x, moved.y, moved.note) == (9, 2, "n")
    assert dataclasses.asdict(Box({"a": 1})) == {"items": {"a": 1}, "label": "box"}
    assert copy.deepcopy(p) == p and copy.copy(Box({"a": 1})) == Box({"a": 1})


def test_a_non_default_field_after_a_default_is_refused():
    with pytest.raises(TypeError, match="non-default"):
        @record
        class Bad:
            a: int = 0
            b: int


def test_records_made_from_their_fields_are_the_records_init_makes():
    """The rules and the flag table's actions are made by `from_fields` (every field given, no
    checks): each has exactly its record's fields and equals the one `__init__` makes."""
    from h3doctor.engine.ruleset import Rule, load_rules
    from h3doctor.record import fields_of
    from h3doctor.sglang.flagtable import FlagAction, load_flag_table

    made = [*load_rules(use_cache=False), *load_flag_table().actions]
    assert {type(r) for r in made} == {Rule, FlagAction}
    for record_ in made:
        fields = fields_of(record_)
        assert tuple(vars(record_)) == fields, type(record_)
        again = type(record_)(**{name: getattr(record_, name) for name in fields})
        assert again == record_ and vars(again) == vars(record_)


def _fresh_classes():
    """A record class with every kind of field and a __post_init__, made anew (its records not yet counted)."""
    @record(frozen=True)
    class Made:
        x: int
        y: int = 0
        tags: list[str] = field(default_factory=list)
        note: str | None = None

        def __post_init__(self) -> None:
            object.__setattr__(self, "seen", (self.x, self.y))

    return Made


# (args, kwargs): each way to call __init__, right or wrong
_CALLS = [((1,), {}), ((1, 2, ["a"], "n"), {}), ((), {"x": 1, "note": "n"}), ((1,), {"tags": ["t"]}),
          ((), {}), ((), {"y": 2}), ((1,), {"z": 3}), ((1,), {"x": 2}), ((1, 2, [], None, 5), {}),
          ((1, 2, [], None, 5, 6), {})]


def _outcome(cls, args, kwargs):
    try:
        made = cls(*args, **kwargs)
    except TypeError as exc:
        return "TypeError", str(exc)
    return made.x, made.y, made.tags, made.note, made.seen


def test_a_class_made_often_gets_a_compiled_init_that_does_what_the_generic_one_does():
    """After _COMPILE_AFTER records a class's __init__ is compiled for its fields (a long-running
    process: the API's checks make ~35 records each); every call, right or wrong, gives the
    record, or the error text, the generic __init__ gave."""
    from h3doctor import record as record_module

    generic, compiled = _fresh_classes(), _fresh_classes()
    before = [_outcome(generic, a, k) for a, k in _CALLS]
    for _ in range(record_module._COMPILE_AFTER):
        compiled(1)
    assert compiled.__init__.__code__.co_filename.startswith("<record ")  # compiled
    assert not generic.__init__.__code__.co_filename.startswith("<record ")  # len(_CALLS) < _COMPILE_AFTER
    after = [_outcome(compiled, a, k) for a, k in _CALLS]
    assert after == before  # the two classes have one qualname: the error texts are comparable
    assert compiled(1).tags is not compiled(1).tags  # a factory per record, still
    with pytest.raises(FrozenInstanceError):
        compiled(1).x = 2
