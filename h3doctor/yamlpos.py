"""Line numbers and short messages for errors in YAML files (rule files, recipes)."""

from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_line(text: str, error_path: list[Any]) -> int | None:
    """The line of the YAML node at a jsonschema error path (1-based)."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    line = node.start_mark.line + 1 if node is not None else None
    for key in error_path:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            match = node.value[key]
        else:
            match = None
        if match is None:
            break
        node = match
        line = node.start_mark.line + 1
    return line


def enum_meant(err: Any) -> str:
    """"; did you mean 'warning'?" for a jsonschema enum error whose text value is one slip from a
    choice (`fail_on: warnin`), else ""."""
    if err.validator != "enum" or not isinstance(err.instance, str):
        return ""
    from h3doctor.spelling import nearest

    close = nearest(err.instance, [c for c in err.validator_value if isinstance(c, str)])
    return f"; did you mean {close!r}?" if close else ""


def schema_message(err: Any) -> str:
    """A jsonschema error in a few words: its own message can hold the whole offending value
    (every unknown key, a whole expanded mapping)."""
    from h3doctor.safeload import excerpt

    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted((str(k) for k in err.instance if k not in allowed), key=str)
        shown = ", ".join(repr(excerpt(k, 40)) for k in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        from h3doctor.spelling import nearest

        close = nearest(extra[0], allowed) if extra else None
        mean = f" (did you mean {close!r}?)" if close else ""
        return f"unknown key{'s' if len(extra) > 1 else ''} {shown}{mean}; allowed here: {', '.join(allowed)}"
    if err.validator in ("type", "pattern", "enum", "minLength", "minimum", "oneOf", "const"):
        what = {"type": f"is not of type {err.validator_value!r}", "pattern": f"does not match {err.validator_value!r}",
                "enum": f"is not one of {excerpt(err.validator_value, 120)}", "minLength": "is too short",
                "minimum": f"is less than the minimum of {err.validator_value!r}",
                "oneOf": "is not valid under any of the given schemas", "const": f"is not {err.validator_value!r}"}
        shown = repr(excerpt(err.instance)) if isinstance(err.instance, str) else excerpt(err.instance)
        return f"{shown} {what[err.validator]}{enum_meant(err)}"
    return excerpt(err.message, 200)
