"""Evaluate a ValidatingAdmissionPolicy's CEL as the API server does, with cel-python (a CEL
implementation from PyPI, the `test` extra): its variables in order (`variables.NAME`), then each
validation; a failing validation's messageExpression is its message. Kubernetes' list library
`indexOf` (the one extension function the generated policy uses) is supplied as Kubernetes
documents it: the index of the first equal element, -1 if none."""

from __future__ import annotations

import json
import re

import celpy
from celpy import celtypes


def _index_of(items, value):
    for i, item in enumerate(items):
        if item == value:
            return celtypes.IntType(i)
    return celtypes.IntType(-1)


FUNCTIONS = {"indexOf": _index_of}


def compiled(documents: list[dict]) -> list["Policy"]:
    """The policies among `documents`, compiled once per process for the same documents (cel-python
    takes seconds to compile the generated policy)."""
    key = json.dumps(documents, sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = [Policy(d) for d in documents if d["kind"] == "ValidatingAdmissionPolicy"]
    return _COMPILED[key]


_COMPILED: dict[str, list] = {}


class Policy:
    """One policy's expressions compiled once."""

    def __init__(self, policy: dict) -> None:
        env = celpy.Environment()
        spec = policy["spec"]

        def compile_(text: str):
            return env.program(env.compile(text), functions=FUNCTIONS)

        self.variables = [(v["name"], compile_(v["expression"])) for v in spec.get("variables", [])]
        # a variable reading neither the object nor another variable (a flag list) is the same for
        # every object: evaluated once here, as an optimisation of this harness only
        self.constants = {v["name"]: program.evaluate({}) for v, (_n, program) in
                          zip(spec.get("variables", []), self.variables)
                          if "object" not in v["expression"] and "variables" not in v["expression"]}
        self.validations = [(compile_(v["expression"]), compile_(v["messageExpression"]))
                            for v in spec["validations"]]
        # the variable a validation `variables.NAME.all(...)` ranges over (None: any other form)
        self.over = [m.group(1) if (m := re.match(r"variables\.(\w+)\.all\(", v["expression"])) else None
                     for v in spec["validations"]]

    def messages(self, obj: dict) -> list[str]:
        """The messages of the validations `obj` fails (an evaluation error is raised: the test fails)."""
        activation = {"object": celpy.json_to_cel(obj), "oldObject": None}
        variables: dict = {}
        for name, program in self.variables:
            if name in self.constants:
                variables[name] = self.constants[name]
                continue
            variables[name] = program.evaluate({**activation, "variables": celtypes.MapType(variables)})
        activation["variables"] = celtypes.MapType(variables)
        failed = []
        for (check, message), over in zip(self.validations, self.over):
            if over is not None and over in variables and len(variables[over]) == 0:
                continue  # `<list>.all(...)` over an empty list holds: a shortcut of this harness only
            verdict = check.evaluate(activation)
            if isinstance(verdict, Exception):
                raise verdict
            if not verdict:
                failed.append(str(message.evaluate(activation)))
        return failed
