"""Records: classes of named fields, as `@dataclass` makes them, without importing dataclasses.

Every launch the shell hook checks pays h3doctor's start-up, and `dataclasses` was the largest
part of it: the module imports `inspect` (hence `ast`, `dis`, `tokenize`), and each class it
builds compiles its generated methods with exec() — about twice the interpreter's own start-up
across the ~30 record classes a check loads. A record gets the same methods from closures over
its field list instead:

* `__init__(fields in order, with their defaults)`, `__repr__`, `__eq__` (same class, equal
  fields), `__match_args__`; with `frozen=True` assignment raises `FrozenInstanceError` and the
  record hashes by its fields (without, it is unhashable, as an `eq` dataclass is); methods the
  class defines itself are kept, and `__post_init__` runs after `__init__`;
* `field(default=..., default_factory=..., repr=..., compare=...)` as in dataclasses;
* `replace(obj, **changes)`: a copy with some fields changed, through `__init__`.

It still is a dataclass to dataclasses' own functions (`dataclasses.fields`, `replace`, `asdict`,
`is_dataclass`): their field list is built, with the dataclasses import, on first use only.
"""

from __future__ import annotations

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (dataclasses' error of the same name)."""


class _Field:
    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default: object, default_factory: object, repr: bool, compare: bool) -> None:  # noqa: A002
        self.default, self.default_factory, self.repr, self.compare = default, default_factory, repr, compare


def field(*, default: object = _MISSING, default_factory: object = _MISSING, repr: bool = True,  # noqa: A002
          compare: bool = True) -> object:
    """A field's default (or its factory, called per record), and whether repr and == show it."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


def _is_classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return text.startswith(("ClassVar", "typing.ClassVar"))


def record(cls: type | None = None, /, *, frozen: bool = False):
    """The class decorator: `@record` or `@record(frozen=True)`."""
    if cls is None:
        return lambda c: _build(c, frozen)
    return _build(cls, frozen)


def _build(cls: type, frozen: bool) -> type:
    specs: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        specs.update(getattr(base, "__record_fields__", {}))
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, _MISSING)
        spec = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True)
        if isinstance(value, _Field):  # as dataclasses: a plain default stays a class attribute
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        specs[name] = spec
    names = tuple(specs)
    seen_default = False
    for name, spec in specs.items():
        has_default = spec.default is not _MISSING or spec.default_factory is not _MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has_default
    defaults = {n: s.default for n, s in specs.items() if s.default is not _MISSING}
    factories = {n: s.default_factory for n, s in specs.items() if s.default_factory is not _MISSING}
    shown = tuple(n for n, s in specs.items() if s.repr)
    compared = tuple(n for n, s in specs.items() if s.compare)
    post_init = getattr(cls, "__post_init__", None) is not None
    qualname = cls.__qualname__

    nameset = frozenset(names)

    count = len(names)

    def __init__(self, *args, **kwargs):
        # the fields given in order, then by name, in C (dict, zip, update): a check makes ~35 records
        if len(args) > count:
            raise TypeError(f"{qualname}.__init__() takes {count + 1} positional arguments "
                            f"but {len(args) + 1} were given")
        values = dict(zip(names, args))
        if kwargs:
            if args:
                for name in values.keys() & kwargs.keys():
                    raise TypeError(f"{qualname}.__init__() got multiple values for argument {name!r}")
            values.update(kwargs)
            if not nameset.issuperset(kwargs):
                for name in kwargs.keys() - nameset:
                    raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {name!r}")
        if len(values) != count:  # some fields left to their defaults
            for name in names:
                if name in values:
                    continue
                if name in defaults:
                    values[name] = defaults[name]
                elif name in factories:
                    values[name] = factories[name]()
                else:
                    raise TypeError(f"{qualname}.__init__() missing 1 required positional argument: {name!r}")
        self.__dict__.update(values)
        if post_init:
            self.__post_init__()

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{self.__class__.__qualname__}({inner})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)

    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    def __hash__(self):
        return hash(tuple(getattr(self, n) for n in compared))

    methods = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if frozen:
        methods.update(__setattr__=__setattr__, __delattr__=__delattr__)
    for name, method in methods.items():
        if name not in cls.__dict__:
            method.__qualname__ = f"{qualname}.{name}"
            setattr(cls, name, method)
    if "__hash__" not in cls.__dict__ or cls.__dict__["__hash__"] is None:
        # as dataclasses: == without frozen makes a record unhashable; frozen hashes by the fields
        cls.__hash__ = __hash__ if frozen else None
    cls.__record_fields__ = specs
    cls.__record_frozen__ = frozen
    cls.__match_args__ = names
    cls.__dataclass_fields__ = _DataclassFields()
    return cls


def from_fields(cls: type, values: dict) -> object:
    """A record of `cls` made of `values`, a new dict that names every field and nothing else (no
    defaults, no checks, no `__post_init__`): for the hundreds of records a launch reads from
    data whose shape is checked already (the rules, the flag table), about twice as quick as
    `__init__` with keywords. The dict becomes the record's own."""
    obj = object.__new__(cls)
    object.__setattr__(obj, "__dict__", values)
    return obj


def replace(obj: object, /, **changes: object) -> object:
    """A copy of the record `obj` with `changes` applied, made by its `__init__`."""
    cls = obj.__class__
    for name in cls.__record_fields__:
        if name not in changes:
            changes[name] = getattr(obj, name)
    return cls(**changes)


def fields_of(obj: object) -> tuple[str, ...]:
    """The record's field names, in order."""
    return tuple(obj.__class__.__record_fields__ if not isinstance(obj, type) else obj.__record_fields__)


class _DataclassFields:
    """`__dataclass_fields__`, built on first use: dataclasses' functions see a dataclass."""

    def __get__(self, obj: object, owner: type) -> dict:
        import dataclasses

        made = []
        for name, spec in owner.__record_fields__.items():
            kwargs: dict = {"repr": spec.repr, "compare": spec.compare}
            if spec.default is not _MISSING:
                kwargs["default"] = spec.default
            if spec.default_factory is not _MISSING:
                kwargs["default_factory"] = spec.default_factory
            made.append((name, "object", dataclasses.field(**kwargs)))
        twin = dataclasses.make_dataclass(owner.__name__, made, frozen=owner.__record_frozen__)
        found = twin.__dataclass_fields__
        type.__setattr__(owner, "__dataclass_fields__", found)
        return found
