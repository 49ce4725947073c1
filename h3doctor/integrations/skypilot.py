"""SkyPilot admin policy: `admin_policy: h3doctor.integrations.skypilot.Policy` in
`~/.sky/config.yaml` (docs/integrations/skypilot.md).

Every request's task is judged as `h3doctor lint` judges a task file (integrations/judge.py): its
`run:` launches on its `resources.accelerators`, with `resources.image_id`'s release. A failing
launch is rejected with sglang's words and the corrected command; with `MutatingPolicy` (or
`H3DOCTOR_POLICY_MUTATE=1`) it is corrected instead when every fix is safe: only the launch's
words in `run:` change. A task h3doctor cannot judge passes, logged as "not judged".

SkyPilot is imported only when a policy class is asked for (SkyPilot requires a subclass of its
`sky.AdminPolicy`), so this module imports without it; asking without SkyPilot installed is an
ImportError saying so.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from h3doctor.inputs.skypilot import read_task
from h3doctor.integrations.judge import Decision, decide
from h3doctor.integrations.lazy import LazyClasses

MUTATE_ENV = "H3DOCTOR_POLICY_MUTATE"
logger = logging.getLogger("h3doctor.integrations.skypilot")


def mutation_asked(default: bool = False) -> bool:
    """The policy's own opt-in, or `H3DOCTOR_POLICY_MUTATE=1` in the environment it runs in."""
    return default or os.environ.get(MUTATE_ENV, "").strip().lower() in ("1", "true", "yes")


def decide_task(task_config: dict[str, Any], *, mutate: bool = False) -> Decision:
    """The decision about one task, as `Task.to_yaml_config()` gives it."""
    return decide(task_config, read_task, origin="SkyPilot task", mutate=mutate)


def _policy_classes(sky: Any) -> dict[str, type]:
    from sky import exceptions

    class Policy(sky.AdminPolicy):
        """h3doctor's preflight check of the task's sglang launch (rejects a launch sglang would fail)."""

        mutate = False

        @classmethod
        def validate_and_mutate(cls, user_request: Any) -> Any:
            task = user_request.task
            decision = decide_task(task.to_yaml_config(), mutate=mutation_asked(cls.mutate))
            if decision.action == "reject":
                raise exceptions.UserRequestRejectedByPolicy(decision.message)
            if decision.action == "mutate" and decision.config is not None:
                task.run = decision.config["run"]  # the launch's words only: the script is otherwise as given
            logger.info("%s", decision.message)
            return sky.MutatedUserRequest(task=task, skypilot_config=user_request.skypilot_config)

    class MutatingPolicy(Policy):
        """As Policy, but a failing launch whose fixes are all safe is corrected instead of rejected."""

        mutate = True

    return {"Policy": Policy, "MutatingPolicy": MutatingPolicy}


__getattr__ = lazy = LazyClasses(__name__, ("Policy", "MutatingPolicy"), _policy_classes, requires="sky",
                                 install="a SkyPilot admin policy: install SkyPilot (pip install skypilot) where "
                                         "SkyPilot runs it")
