"""A fix never writes a literal over a value the deployment gives (issue 30 item 8).

A word the launch's file leaves to the shell or the cluster — Kubernetes `$(VAR)`, compose
`${VAR}`, a script's `"$VAR"` — is marked by the readers (h3doctor/unresolved.py) and judged as
"any value". Its value is the deployment's (a Secret, the host's environment, the job's
variables), not the file's: writing `fa` over `"$BACKEND"` would pin the file to one value and
quietly ignore what the deployment sets. A rule whose fix would replace or drop such a word is
not fixed automatically; the launch's other fixes still are, and a note names the word.
"""

from __future__ import annotations

from h3doctor.unresolved import as_written, has_mark

TYPE_CHECKING = False
if TYPE_CHECKING:
    from h3doctor.engine.results import CheckResult


def overwritten(result: CheckResult) -> dict[str, str]:
    """Rule ID -> the first deployment-given word (as the file writes it) one of its fix steps
    replaces or drops."""
    out: dict[str, str] = {}
    for step in result.fix_steps:
        for change in step.changes:
            word = next((w for w in change.removed if has_mark(w)), None)
            if word is not None:
                out.setdefault(step.rule.id, as_written(word))
    return out


def notes(given: dict[str, str]) -> list[str]:
    """One note per deployment-given word: the rules whose fixes would write over it."""
    by_word: dict[str, list[str]] = {}
    for rule, word in given.items():
        by_word.setdefault(word, []).append(rule)
    return [f"the fix of {', '.join(rules)} would write over `{word}`, a value the deployment "
            "gives, not the file; change it where the deployment sets it" for word, rules in by_word.items()]
