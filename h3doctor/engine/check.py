"""The engine's functions of loose parameters, as they were before the judge: one evaluation,
the fix loop and the whole check of `tokens` on `hw`, `table`, `env`, `intent` and `release`.
Each builds the `Target` and the `Judge` (engine/judge.py) and asks it; the package's own
callers hold a Judge and a Target themselves. Kept for the tests, the benchmarks and library
users of these names.
"""

from __future__ import annotations

from h3doctor.engine.judge import MAX_FIX_ROUNDS, Judge
from h3doctor.engine.results import CheckResult, Evaluation
from h3doctor.engine.ruleset import Rule, RuleSet
from h3doctor.engine.target import Target
from h3doctor.facts import HardwareFacts
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.sglang.releases import Release

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_FIX_ROUNDS", "check", "evaluate_launch", "fix_loop"]


def evaluate_launch(tokens: list[str], hw: HardwareFacts, rules: RuleSet | list[Rule], table: FlagTable,
                    env: dict[str, str], intent: dict[str, Any] | None = None,
                    release: Release | None = None, deployment: dict[str, Any] | None = None) -> Evaluation:
    return Judge(rules).evaluate(tokens, Target.of(hw, table, env, intent, release, deployment))


def check(tokens: list[str], hw: HardwareFacts, rules: RuleSet | list[Rule], table: FlagTable, env: dict[str, str],
          intent: dict[str, Any] | None = None, evaluations: dict | None = None,
          release: Release | None = None, hold: frozenset[str] = frozenset(),
          deployment: dict[str, Any] | None = None) -> CheckResult:
    return Judge(rules, evaluations).check(tokens, Target.of(hw, table, env, intent, release, deployment), hold)


def fix_loop(tokens: list[str], hw: HardwareFacts, rules: RuleSet | list[Rule], table: FlagTable, env: dict[str, str],
             intent: dict[str, Any] | None = None, evaluations: dict | None = None,
             release: Release | None = None, hold: frozenset[str] = frozenset()) -> CheckResult:
    return Judge(rules, evaluations).fix_loop(tokens, Target.of(hw, table, env, intent, release), hold)
