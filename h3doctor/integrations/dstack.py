"""dstack apply policy: the `h3doctor` plugin (`plugins: [h3doctor]` in the dstack server's
`config.yml`; docs/integrations/dstack.md), whose `ApplyPolicy.on_run_apply` judges a run's
configuration (`type: task` or `service`) as `h3doctor lint` would: its `commands` on its
`resources.gpu`, with its `image`'s release (integrations/judge.py).

A failing launch is rejected by raising `ValueError` (dstack's way: the message is shown to the
user), with sglang's words and the corrected command; with `H3DOCTOR_POLICY_MUTATE=1` it is
corrected instead when every fix is safe (only the launch's words in its `commands` item change).
Other specs (fleets, volumes, gateways) and runs h3doctor cannot judge pass, logged "not judged".

dstack is imported only when `Plugin` or `Policy` is asked for (dstack requires subclasses of its
own classes), so this module imports without it.
"""

from __future__ import annotations

from typing import Any

from h3doctor.inputs.dstack import RUN_TYPES, read_configuration
from h3doctor.integrations.judge import Decision, decide
from h3doctor.integrations.lazy import LazyClasses
from h3doctor.integrations.skypilot import mutation_asked


def decide_run(configuration: dict[str, Any], *, mutate: bool = False) -> Decision:
    """The decision about one run configuration (the RunSpec's `configuration`, as JSON data)."""
    if configuration.get("type") not in RUN_TYPES:
        return Decision("allow", f"h3doctor: not judged: a {str(configuration.get('type'))[:40]} run has no commands "
                                 "h3doctor reads")
    return decide(configuration, read_configuration, origin="dstack run configuration", mutate=mutate)


def _plugin_classes(plugins: Any) -> dict[str, type]:
    logger = plugins.get_plugin_logger(__name__)

    class Policy(plugins.ApplyPolicy):
        """h3doctor's preflight check of a run's sglang launch."""

        def on_run_apply(self, user: str, project: str, spec: Any) -> Any:
            configuration = spec.configuration
            decision = decide_run(configuration.model_dump(mode="json"), mutate=mutation_asked())
            if decision.action == "reject":
                raise ValueError(decision.message)
            if decision.action == "mutate" and decision.config is not None:
                configuration.commands = decision.config["commands"]  # the launch's words only
            logger.info("%s", decision.message)
            return spec

    class Plugin(plugins.Plugin):
        def get_apply_policies(self) -> list[Any]:
            return [Policy()]

    return {"Policy": Policy, "Plugin": Plugin}


__getattr__ = lazy = LazyClasses(__name__, ("Policy", "Plugin"), _plugin_classes, requires="dstack.plugins",
                                 install="a dstack server plugin: install it where the dstack server runs "
                                         "(pip install 'dstack[server]')")
