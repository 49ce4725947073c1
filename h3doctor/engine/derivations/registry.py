"""The derivation registry: every `derived.*` value a rule can read, declared by the function that
computes it, with what it reads.

A derivation is a function `(resolver, hw, ctx) -> {context path: value}` registered with
`@derives("name", ..., reads=(...), points_at=(...))`: the names it produces, under `derived.`;
the context paths it reads (every `derived.*` and `events.*` one, and the other context roots it
looks up); and the flags its values are made from (where lint points a finding that reads only
them). Rule loading refuses a rule that reads a `derived.*` path no derivation declares
(engine/ruleset.py), so a misspelt name is a located error, not a rule that never fires.

The order they run in is computed from the declarations (`ordered`: a topological sort of reads
over produces, registration order among equals), once when the package is imported; a read no
derivation produces, an event the adjust phase does not record, or a cycle is an error there that
names the derivations and the path. A check runs only the derivations the values it needs come
from (`needed_for`: the closure over reads).

A derivation that raises is reported, never silent: `run` returns its failure beside the values
(rule H3D991 says what could not be checked). Its values are then its declared `fallback`, or
absent (a missing path reads as None, like an unknown value).
"""

from __future__ import annotations

from h3doctor.engine.memo import PerHardware
from h3doctor.record import record

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Collection, Iterable, Mapping

PREFIX = "derived."
EVENT_PREFIX = "events."


@record(frozen=True)
class Derivation:
    name: str  # the function's name: what a failure report calls it
    module: str  # the derivations module it lives in (named for what it computes)
    paths: tuple[str, ...]  # the context paths it produces, `derived.<name>`
    compute: Callable[[Any, Any, dict[str, Any]], dict[str, Any]]
    fallback: Mapping[str, Any] | None = None  # the values a failure leaves; None: its paths stay absent
    # reads only the launch's words and environment, not the resolved launch: it runs for every
    # launch, also one whose family is not known or whose resolution failed
    launch_only: bool = False
    # the context paths it reads: every `derived.*` (they order the run and decide what runs) and
    # `events.*` one, and the other roots it looks up in `ctx` (tests/engine/test_derivation_graph.py
    # records what each one reads on every rule example and fails on an undeclared read)
    reads: tuple[str, ...] = ()
    # (produced path, the option dests or --config key lists its value is made from): where lint
    # points a finding whose condition reads that value (lint/locate.py)
    points_at: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # reads nothing but the hardware and its declared `reads` (never the resolved launch: its `r`
    # is None): its values are kept per hardware object and those values (`PER_HARDWARE`)
    per_hardware: bool = False


class DerivationGraphError(Exception):
    """The declarations do not make a run order: a read nobody produces, an unrecorded event, two
    producers of one value, or a cycle. A defect of the package, raised when it is imported."""


REGISTRY: list[Derivation] = []


def derives(*names: str, reads: Iterable[str] = (), points_at: Mapping[str, Iterable[str]] | None = None,
            fallback: Mapping[str, Any] | None = None, launch_only: bool = False, per_hardware: bool = False) -> Callable:
    """Register the decorated function as the derivation of `derived.<name>` for each name.
    `reads`: the context paths it reads (`derived.*` ones complete). `points_at` ({name: dests}):
    the option dests (or --config key lists) a value is made from. `fallback` ({name: value}): what the values are when it raises.
    `launch_only`: it reads no resolved value (its `r` may be None), so it runs for every launch.
    `per_hardware`: its values depend on the hardware and its `reads` alone (it is called with `r`
    None), so a process checking many launches on one hardware object works them out once."""
    paths = tuple(PREFIX + n for n in names)
    if fallback is not None and not set(fallback) <= set(names):
        raise ValueError(f"fallback names {sorted(set(fallback) - set(names))} are not declared")
    if points_at is not None and not set(points_at) <= set(names):
        raise ValueError(f"points_at names {sorted(set(points_at) - set(names))} are not declared")
    pointing = tuple((PREFIX + n, tuple(dests)) for n, dests in (points_at or {}).items())
    prefixed = None if fallback is None else {PREFIX + k: v for k, v in fallback.items()}

    def register(fn: Callable) -> Callable:
        REGISTRY.append(Derivation(fn.__name__.lstrip("_"), fn.__module__.rsplit(".", 1)[-1], paths, fn, prefixed,
                                   launch_only, tuple(reads), pointing, per_hardware))
        return fn
    return register


def declared_paths() -> frozenset[str]:
    """Every `derived.*` path some derivation declares (`derived.derivation_errors` included)."""
    return frozenset(p for d in REGISTRY for p in d.paths) | {ERRORS}


ERRORS = PREFIX + "derivation_errors"  # the failures of one run, as rule H3D991 prints them
# the values of `per_hardware` derivations: a few profiles x the values of their reads in a process
PER_HARDWARE = PerHardware(256)


def _label(d: Derivation) -> str:
    return f"{d.module}.{d.name}"


def producers(derivations: Iterable[Derivation]) -> dict[str, Derivation]:
    """Each produced path -> the derivation that produces it; two producers of one path is an error."""
    owner: dict[str, Derivation] = {}
    for d in derivations:
        for path in d.paths:
            if path in owner:
                raise DerivationGraphError(f"{_label(owner[path])} and {_label(d)} both produce {path!r}")
            owner[path] = d
    return owner


def ordered(derivations: list[Derivation], events: Collection[str] = ()) -> list[Derivation]:
    """The derivations in an order where each runs after every one whose values it reads (among
    those free to go, the one registered first). `events`: the names the adjust phase records."""
    owner = producers(derivations)
    after: dict[int, set[int]] = {id(d): set() for d in derivations}  # id -> ids of the ones it reads from
    for d in derivations:
        for path in d.reads:
            if path.startswith(PREFIX):
                if path not in owner:
                    raise DerivationGraphError(f"{_label(d)} reads {path!r}, which no derivation produces")
                after[id(d)].add(id(owner[path]))
            elif path.startswith(EVENT_PREFIX) and events and path[len(EVENT_PREFIX):] not in events:
                raise DerivationGraphError(f"{_label(d)} reads {path!r}, an event the adjust phase does not record "
                                           "(sglang/resolve.py EVENTS)")
    position = {id(d): i for i, d in enumerate(derivations)}
    if all(position[p] < position[id(d)] for d in derivations for p in after[id(d)]):
        return list(derivations)  # the usual case: each is registered after what it reads (one pass)
    done: set[int] = set()
    order: list[Derivation] = []
    pending = list(derivations)
    while pending:  # ~60 derivations, a few levels deep: a scan per level is enough
        ready = [d for d in pending if after[id(d)] <= done]
        if not ready:
            raise DerivationGraphError(_cycle(pending, owner))
        first = ready[0]
        order.append(first)
        done.add(id(first))
        pending.remove(first)
    return order


def _cycle(pending: list[Derivation], owner: dict[str, Derivation]) -> str:
    """Words for one cycle among derivations that cannot be ordered: each, and the path it reads
    from the next."""
    waiting = {id(d) for d in pending}
    walk: list[tuple[Derivation, str]] = []
    d = pending[0]
    while all(seen is not d for seen, _ in walk):
        path = next(p for p in d.reads if p in owner and id(owner[p]) in waiting)
        walk.append((d, path))
        d = owner[path]
    start = next(i for i, (seen, _) in enumerate(walk) if seen is d)
    loop = walk[start:]
    steps = ", ".join(f"{_label(a)} reads {path!r} from {_label(owner[path])}" for a, path in loop)
    return f"a cycle between derivations: {steps}"


def needed_for(paths: Iterable[str], order: list[Derivation],
               owner: Mapping[str, Derivation] | None = None) -> tuple[Derivation, ...]:
    """The derivations (in `order`) whose values `paths` names, and those they read from, again.
    `owner`: `producers(order)`, when the caller has it."""
    owner = owner if owner is not None else producers(order)
    wanted: set[int] = set()
    stack = [owner[p] for p in paths if p in owner]
    while stack:
        d = stack.pop()
        if id(d) not in wanted:
            wanted.add(id(d))
            stack.extend(owner[p] for p in d.reads if p in owner)
    return tuple(d for d in order if id(d) in wanted)


def flags_of(derivations: Iterable[Derivation]) -> dict[str, tuple[str, ...]]:
    """Each derived path some derivation points at flags for -> those option dests (or key lists)."""
    return {path: dests for d in derivations for path, dests in d.points_at}


def run(r: Any, hw: Any, ctx: dict[str, Any], launch_only: bool = False,
        plan: Iterable[Derivation] | None = None, in_place: bool = False) -> dict[str, Any]:
    """The values of the derivations of `plan` (default: every registered one, ordered), in order,
    and `derived.derivation_errors`: the failures. With `launch_only` (no resolved launch), only the
    derivations that read the launch's words. `in_place`: each value is written into `ctx` as it is
    made (the check's own context, ~450 paths: not copied) and only the failures are returned."""
    out: dict[str, Any] = {}
    failures: list[str] = []
    seen = ctx if in_place else dict(ctx)  # what the next derivation reads: the context and every earlier value
    for derivation in ordered(REGISTRY) if plan is None else plan:
        if launch_only and not derivation.launch_only:
            continue
        try:
            if derivation.per_hardware:
                values = PER_HARDWARE.get(hw, (derivation.paths, *map(seen.get, derivation.reads)),
                                          lambda d=derivation: d.compute(None, hw, seen))
            else:
                values = derivation.compute(r, hw, seen)
        except Exception as exc:  # noqa: BLE001 - one derivation's surprise must not hide the others
            failures.append(f"{derivation.name}: {type(exc).__name__}: {exc}")
            if derivation.fallback is None:
                continue
            import copy

            values = copy.deepcopy(dict(derivation.fallback))
        if not in_place:
            out.update(values)
        seen.update(values)
    out[ERRORS] = failures
    return out


def read_by(rules: Iterable[Any]) -> dict[str, list[str]]:
    """Each derivation's name -> the IDs of the rules that read one of its values (`Rule.reads`: in
    a condition, a message, a fix or an alternative), for the generated rule reference."""
    owner = {p: d.name for d in REGISTRY for p in d.paths}
    readers: dict[str, list[str]] = {d.name: [] for d in REGISTRY}
    for rule in rules:
        for name in {owner[p] for p in rule.reads if p in owner}:
            readers[name].append(rule.id)
    return {name: sorted(ids) for name, ids in readers.items()}
