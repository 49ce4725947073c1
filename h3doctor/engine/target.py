"""What a launch is judged against, apart from its words: the hardware, the release and its flag
table, the environment the launch starts in and the planned request (`intent`). One frozen
`Target` per check, handed whole to `judge.Judge`: no function of the engine takes these loose.
"""

from __future__ import annotations

from h3doctor.errors import UsageError
from h3doctor.facts import HardwareFacts
from h3doctor.record import field, record, replace
from h3doctor.sglang.container_facts import in_container
from h3doctor.sglang.container_run import ContainerRun
from h3doctor.sglang.flagtable import FlagTable
from h3doctor.sglang.launch_forms import LaunchWords
from h3doctor.sglang.releases import Release, image_target

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True)
class Target:
    hw: HardwareFacts
    table: FlagTable
    release: Release
    env: dict[str, str] = field(default_factory=dict)
    intent: dict[str, Any] = field(default_factory=dict)
    # the machine the container runs on, before its line's facts (in_container): a fix that edits
    # the line (`--shm-size 16g`) is judged with the facts of the line it makes (container_hw)
    host: HardwareFacts | None = None
    # what the launch's deployment says around it (a manifest's probes: inputs/probes.py
    # deployment_facts), read by the rules as `deployment.*`; empty for a bare command line
    deployment: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, hw: HardwareFacts, table: FlagTable, env: dict[str, str] | None = None,
           intent: dict[str, Any] | None = None, release: Release | None = None,
           deployment: dict[str, Any] | None = None) -> Target:
        """The release defaults to the flag table's own (one Release per check: the resolver and
        every derivation read the same object)."""
        return cls(hw, table, release or Release(table.sglang_version), env=dict(env or {}),
                   intent=dict(intent or {}), deployment=dict(deployment or {}))

    @property
    def key(self) -> tuple:
        """What an evaluation of the same words depends on, for a judge's memo: the hardware and
        the table by identity (the memo keeps them, so an id is not reused while it lives)."""
        return (id(self.hw), id(self.table), tuple(sorted(self.env.items())),
                tuple(sorted(self.intent.items())), self.release, tuple(sorted(self.deployment.items())))

    def in_container(self, launch: LaunchWords) -> Target:
        """A launch in a container (`docker run … IMAGE sglang …`) sees the GPUs the runtime grants
        (at most the host's), has the container's /dev/shm, memory cap and the image's ffmpeg and
        kernels (sglang/container_facts.py), and runs the image's sglang: its tag is the release unless the user
        named one (option, recipe); the host's installed sglang is never the container's. The
        image's Release comes with its own flag table."""
        try:
            run = launch.form_or_raise().container
        except UsageError:  # an unreadable launch is the evaluation's to report, the usual way
            return self
        if run is None:
            return self
        hw, table, release = self.container_hw(run, self.hw), self.table, self.release
        if release.source in ("option", "recipe"):
            return replace(self, hw=hw, release=replace(release, image=run.image), host=self.hw)
        release = image_target(run.image)
        if release.table_version != table.sglang_version:
            table = release.table
        return replace(self, hw=hw, table=table, release=release, host=self.hw)

    def container_hw(self, run: ContainerRun, host: HardwareFacts | None = None) -> HardwareFacts:
        """The host's facts as the container of `run` sees them: its own facts (container_facts)
        and the GPUs the runtime grants, at most the host's."""
        hw = in_container(host or self.host or self.hw, run, self.env)
        granted = run.gpu_count(self.env)
        if granted is not None and (hw.gpu_count is None or granted < hw.gpu_count):
            hw = replace(hw, gpu_count=granted, description=f"{hw.description}; {granted} granted to the container "
                                                             f"({run.gpus.said if run.gpus else 'NVIDIA_VISIBLE_DEVICES'})")
        return hw
