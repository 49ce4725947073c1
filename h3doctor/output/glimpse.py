"""A finding's words as they may be shown: each value the launch's file gave a flag (on the
command line or in its --config file; the model aside) quoted only as a glimpse when it is long.
The words of a finding reach CI logs and SARIF uploads, and a value typed where it does not belong
may be a secret."""

from __future__ import annotations

from h3doctor.safeload import GLIMPSE_WHOLE, excerpt, glimpse


def glimpsed(message: str, ev) -> str:
    """`message` with the launch's long values (`ev`: its evaluation) glimpsed. Matched in any case
    (sglang's KeyError quotes a backend name upper-cased)."""
    values = [v for v in _flag_values(ev) if len(v) > GLIMPSE_WHOLE]
    if not values or "'" not in message and '"' not in message:
        return message
    for value in values:
        for shown in {repr(value), repr(excerpt(value, 120)), repr(value.upper()), repr(value.lower())}:
            if shown in message:
                message = message.replace(shown, glimpse(value))
    return message


def _flag_values(ev) -> list[str]:
    cmd = ev.cmd
    model = cmd.provided.get("model_path")
    out: list[str] = []
    for word in cmd.args:
        _flag, eq, value = word.partition("=")
        out += [value] if word.startswith("-") and eq else [] if word.startswith("-") else [word]
    if ev.config is not None:
        out += [v for v in ev.config.values.values() if isinstance(v, str)]
    return [v for v in out if v != model]
