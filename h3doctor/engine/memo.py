"""Values worked out from one hardware object, kept for the next check on the same hardware.

A process judging many launches (the API, lint, the admission webhook) hands every check of one
profile the same frozen `HardwareFacts` object (host/profiles.py makes a built-in profile's facts
once per process), so what depends on the hardware alone — its facts as context paths, a
derivation declared `per_hardware` (engine/derivations/registry.py) — need not be worked out per
check. Entries are keyed on the object's identity and hold the object itself, so an id is never
reused while its entry lives; an equal object made anew (a profile file read again) is a miss,
never a wrong hit. The table is a least-recently-used one of `size` entries, under a lock (the
API's checks may run in threads), and hands out a fresh copy of every list, dict and set it keeps
(a check may change its context's values; the next check's must not see it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

TYPE_CHECKING = False  # typing is not imported at run time (start-up: record.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Hashable


def fresh(value: Any) -> Any:
    """`value` with every list, dict and set in it copied (the rest is immutable: str, numbers,
    None, tuples of those); a subclass of one is deep-copied, keeping its class."""
    kind = type(value)
    if kind is dict:
        return {k: fresh(v) for k, v in value.items()}
    if kind is list:
        return [fresh(v) for v in value]
    if kind is set:
        return set(value)
    if isinstance(value, (dict, list, set, bytearray)):  # a subclass (defaultdict ...): copied as it is
        import copy

        return copy.deepcopy(value)
    return value


class PerHardware:
    """A least-recently-used table of values per (hardware object, key)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[int, Hashable], tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, hw: Any, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value `make()` gave for this hardware object and `key`, made now if not kept (a key
        that cannot be hashed, e.g. a list among a derivation's reads, is made every time)."""
        try:
            slot = (id(hw), key)
            with self._lock:
                found = self._entries.get(slot)  # its entry holds `hw`: the id is not another object's
                if found is not None:
                    self._entries.move_to_end(slot)
                    return fresh(found[1])
        except TypeError:  # unhashable: nothing to look up by
            return make()
        value = make()
        with self._lock:
            self._entries[slot] = (hw, value)
            self._entries.move_to_end(slot)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return fresh(value)
