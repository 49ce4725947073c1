"""A test-only renderer for the subset of Go templates deploy/helm/h3doctor-admission uses, since
`helm` cannot be installed here (no release binary on the package registries this machine reaches):
`{{ .Values.a.b }}`, `{{ .Release.Name }}`, `{{ .Release.Namespace }}`, `{{ .Chart.Name }}`,
`{{ .Chart.AppVersion }}`, and `{{ if X }} … {{ else }} … {{ end }}` (nestable), with `{{-`/`-}}`
trimming the whitespace beside them as Go's text/template does. Anything else is an error, so a
template that leaves the subset fails its test instead of rendering differently from helm."""

from __future__ import annotations

import re

_ACTION = re.compile(r"\{\{(-?)\s*(.*?)\s*(-?)\}\}", re.S)
_PATH = re.compile(r"\.(Values|Release|Chart)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\Z")


class TemplateError(Exception):
    pass


def _lookup(expr: str, scope: dict):
    m = _PATH.match(expr)
    if not m:
        raise TemplateError(f"outside the chart's template subset: {{{{ {expr} }}}}")
    node = scope[m.group(1)]
    for key in m.group(2).split(".")[1:]:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _truthy(value) -> bool:
    """Go's `if`: false, 0, nil, and empty strings, maps and lists are false."""
    return not (value is None or value is False or value == 0 or (hasattr(value, "__len__") and len(value) == 0))


def _text(value) -> str:
    if value is None:
        return "<no value>"  # what Go prints for a missing key; the tests refuse it in output
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        raise TemplateError("a map or list printed whole (the subset prints scalars only)")
    return str(value)


def render(template: str, values: dict, *, release: str = "h3doctor", namespace: str = "h3doctor",
           chart: dict | None = None) -> str:
    scope = {"Values": values, "Release": {"Name": release, "Namespace": namespace},
             "Chart": {"Name": (chart or {}).get("name"), "AppVersion": (chart or {}).get("appVersion")}}
    # tokens: text, then each action with its trimming
    parts: list[tuple[str, str]] = []
    pos = 0
    for m in _ACTION.finditer(template):
        parts.append(("text", template[pos:m.start()]))
        if m.group(1):
            parts[-1] = ("text", parts[-1][1].rstrip())
        parts.append(("action", m.group(2)))
        pos = m.end()
        if m.group(3):
            rest = template[pos:]
            pos += len(rest) - len(rest.lstrip())
    parts.append(("text", template[pos:]))
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (this branch taken, every enclosing branch taken)
    live = True
    for kind, body in parts:
        if kind == "text":
            if live:
                out.append(body)
            continue
        if body.startswith("if "):
            taken = _truthy(_lookup(body[3:].strip(), scope)) if live else False
            stack.append((taken, live))
            live = live and taken
        elif body == "else":
            if not stack:
                raise TemplateError("else without if")
            taken, outer = stack[-1]
            live = outer and not taken
        elif body == "end":
            if not stack:
                raise TemplateError("end without if")
            _taken, live = stack.pop()
        elif live:
            out.append(_text(_lookup(body, scope)))
        else:
            _lookup(body, scope)  # still in the subset
    if stack:
        raise TemplateError("if without end")
    return "".join(out)
