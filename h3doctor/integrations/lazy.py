"""A module's classes that subclass a launcher's own (SkyPilot's `sky.AdminPolicy`, dstack's
`Plugin`), made the first time one is asked for: the module imports without the launcher, and
the launcher's package is imported only where the launcher runs the hook."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType


class LazyClasses:
    """A module's `__getattr__`: `names` are made together by `make(package)`, the launcher's
    package `requires` imported first; without it, an ImportError that says `install`."""

    def __init__(self, module: str, names: tuple[str, ...], make: Callable[[ModuleType], dict[str, type]], *,
                 requires: str, install: str) -> None:
        self.module, self.names, self.make = module, names, make
        self.requires, self.install = requires, install
        self.made: dict[str, type] = {}

    def __call__(self, name: str) -> type:
        if name not in self.names:
            raise AttributeError(f"module {self.module!r} has no attribute {name!r}")
        if not self.made:
            try:
                package = importlib.import_module(self.requires)
            except ImportError as exc:
                raise ImportError(f"{self.module}.{name} is {self.install}") from exc
            self.made = self.make(package)
        return self.made[name]
