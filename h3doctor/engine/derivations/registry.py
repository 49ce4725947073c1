"""The derivation registry: every `derived.*` value a rule can read, declared by the function that
computes it.

A derivation is a function `(resolver, hw, ctx) -> {context path: value}` registered with
`@derives("name", ...)`: the names it may return, under `derived.`. Rule loading refuses a rule
that reads a `derived.*` path no derivation declares (engine/ruleset.py), so a misspelt name is a
located error, not a rule that never fires. Derivations run in registration order (module order
in derivations/__init__.py, then source order), each reading the context and every earlier
derivation's values.

A derivation that raises is reported, never silent: `run` returns its failure beside the values
(rule H3D991 says what could not be checked). Its values are then its declared `fallback`, or
absent (a missing path reads as None, like an unknown value).
"""

from __future__ import annotations

import json
import re

from h3doctor.record import record

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping

PREFIX = "derived."


@record(frozen=True)
class Derivation:
    name: str  # the function's name: what a failure report calls it
    module: str  # the derivations module it lives in (named for what it computes)
    paths: tuple[str, ...]  # the context paths it may return, `derived.<name>`
    compute: Callable[[Any, Any, dict[str, Any]], dict[str, Any]]
    fallback: Mapping[str, Any] | None = None  # the values a failure leaves; None: its paths stay absent
    # reads only the launch's words and environment, not the resolved launch: it runs for every
    # launch, also one whose family is not known or whose resolution failed
    launch_only: bool = False


REGISTRY: list[Derivation] = []


def derives(*names: str, fallback: Mapping[str, Any] | None = None, launch_only: bool = False) -> Callable:
    """Register the decorated function as the derivation of `derived.<name>` for each name.
    `fallback` ({name: value}): what the values are when it raises. `launch_only`: it reads no
    resolved value (its `r` may be None), so it runs for every launch."""
    paths = tuple(PREFIX + n for n in names)
    if fallback is not None and not set(fallback) <= set(names):
        raise ValueError(f"fallback names {sorted(set(fallback) - set(names))} are not declared")
    prefixed = None if fallback is None else {PREFIX + k: v for k, v in fallback.items()}

    def register(fn: Callable) -> Callable:
        REGISTRY.append(Derivation(fn.__name__.lstrip("_"), fn.__module__.rsplit(".", 1)[-1], paths, fn, prefixed,
                                   launch_only))
        return fn
    return register


def declared_paths() -> frozenset[str]:
    """Every `derived.*` path some derivation declares (`derived.derivation_errors` included)."""
    return frozenset(p for d in REGISTRY for p in d.paths) | {ERRORS}


ERRORS = PREFIX + "derivation_errors"  # the failures of one run, as rule H3D991 prints them


def run(r: Any, hw: Any, ctx: dict[str, Any], launch_only: bool = False) -> dict[str, Any]:
    """Every derivation's values, in order, and `derived.derivation_errors`: the failures. With
    `launch_only` (no resolved launch), the derivations that read only the launch's words."""
    out: dict[str, Any] = {}
    failures: list[str] = []
    seen = dict(ctx)  # what the next derivation reads: the context and every earlier value (one copy per check)
    for derivation in REGISTRY:
        if launch_only and not derivation.launch_only:
            continue
        try:
            values = derivation.compute(r, hw, seen)
        except Exception as exc:  # noqa: BLE001 - one derivation's surprise must not hide the others
            failures.append(f"{derivation.name}: {type(exc).__name__}: {exc}")
            if derivation.fallback is None:
                continue
            import copy

            values = copy.deepcopy(dict(derivation.fallback))
        out.update(values)
        seen.update(values)
    out[ERRORS] = failures
    return out


_READ = re.compile(r"\bderived\.[\w.]*\w")


def read_by(rules: Iterable[Any]) -> dict[str, list[str]]:
    """Each derivation's name -> the IDs of the rules that read one of its values (in a condition,
    a message, a fix or an alternative), for the generated rule reference."""
    owner = {p: d.name for d in REGISTRY for p in d.paths}
    readers: dict[str, list[str]] = {d.name: [] for d in REGISTRY}
    for rule in rules:
        names = {owner[p] for p in _READ.findall(json.dumps(rule.raw, default=str)) if p in owner}
        for name in names:
            readers[name].append(rule.id)
    return {name: sorted(ids) for name, ids in readers.items()}
