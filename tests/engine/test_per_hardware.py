"""What depends on the hardware alone is worked out once per hardware object (engine/memo.py,
derivations declared `per_hardware`): the same values as worked out afresh, never another
object's, never changed by a check that changes its own, bounded, and the same under threads."""

from __future__ import annotations

import copy
import gc
import shlex
import threading
import weakref

from h3doctor.engine.check import evaluate_launch
from h3doctor.engine.derivations import registry
from h3doctor.engine.memo import PerHardware
from h3doctor.host.profiles import load_profile
from h3doctor.record import replace

LAUNCH = ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]
OLD_DRIVER = "derived.cuda.driver_too_old"


def _hw(driver: str, n: int = 0):
    """A new hardware object: 4xH200 with this driver's CUDA (torch's is 13.0)."""
    return replace(load_profile("4xH200"), driver_cuda=driver, description=f"copy {n}")


def test_a_per_hardware_derivation_reads_only_the_hardware_and_its_reads(rules, table):
    """Worked out with no resolved launch (`r` None) and only its declared reads, each such
    derivation gives the values the check's own run gave, on every plain rule example."""
    memoised = [d for d in registry.REGISTRY if d.per_hardware]
    assert memoised
    seen = 0
    for example in (e for rule in rules for e in rule.examples if not e.get("sglang_version")):
        if "hw" in example or "{" in example["argv"]:
            continue
        hw = load_profile(example["profile"])
        ctx = evaluate_launch(shlex.split(example["argv"]), hw, rules, table, dict(example.get("env") or {})).context
        for d in memoised:
            assert not [e for e in ctx["derived.derivation_errors"] if e.startswith(f"{d.name}:")], example["name"]
            if d.paths[0] in ctx:  # it ran for this launch
                alone = d.compute(None, hw, {p: ctx.get(p) for p in d.reads})
                assert alone == {p: ctx[p] for p in alone}, (d.name, example["name"])
                seen += 1
    assert seen > 100


def test_another_hardware_object_never_gets_a_kept_value(rules, table):
    """Objects made and dropped in turn: each gets its own driver's verdict."""
    for n in range(20):
        driver = ("12.0", "13.0")[n % 2]
        hw = _hw(driver, n)
        assert evaluate_launch(LAUNCH, hw, rules, table, {}).context[OLD_DRIVER] is (driver == "12.0"), n
        del hw
        gc.collect()


def test_an_entry_keeps_its_hardware_alive_until_it_is_dropped():
    """Keyed on the object's id, an entry holds the object, so no other object can have that id
    while the entry lives; dropped from the table, the object is freed (memory stays bounded)."""
    table, hw = PerHardware(2), _hw("13.0")
    alive = weakref.ref(hw)
    assert table.get(hw, "k", lambda: {"v": 1}) == {"v": 1}
    del hw
    gc.collect()
    assert alive() is not None
    for n in range(2):
        table.get(_hw("13.0", n), "k", lambda: {"v": 2})
    gc.collect()
    assert alive() is None and len(table) == 2


def test_a_check_changing_its_values_leaves_the_next_check_s(rules, table):
    hw = _hw("13.0")
    evaluate_launch(LAUNCH, hw, rules, table, {})  # worked out and kept
    first = evaluate_launch(LAUNCH, hw, rules, table, {}).context  # the kept values, handed out
    kept = copy.deepcopy({p: first[p] for p in first if p.startswith("derived.cuda")})
    first["derived.cuda_unknown"]["driver_too_old"] = "changed"
    first["derived.cuda_unknown"].clear()
    second = evaluate_launch(LAUNCH, hw, rules, table, {}).context
    assert {p: second[p] for p in kept} == kept and second["derived.cuda_unknown"]


def test_the_table_stays_within_its_bound(rules, table, monkeypatch):
    small = PerHardware(3)
    monkeypatch.setattr(registry, "PER_HARDWARE", small)
    objects = [_hw(("12.0", "13.0")[n % 2], n) for n in range(10)]  # kept alive: ten distinct objects
    for hw in objects:
        evaluate_launch(LAUNCH, hw, rules, table, {})
        assert len(small) <= 3
    assert len(small) == 3


def test_threads_over_a_small_table_give_the_serial_values(rules, table, monkeypatch):
    """Eight threads over more hardware objects than the table holds (entries evicted while others
    read them) give each object its serial values."""
    monkeypatch.setattr(registry, "PER_HARDWARE", PerHardware(2))
    objects = [_hw(("12.0", "13.0")[n % 2], n) for n in range(6)]
    serial = [evaluate_launch(LAUNCH, hw, rules, table, {}).context[OLD_DRIVER] for hw in objects]
    results: dict[int, list] = {}
    start = threading.Barrier(8)

    def work(n: int) -> None:
        start.wait()
        order = objects[n % 6:] + objects[:n % 6]
        results[n] = [(hw, evaluate_launch(LAUNCH, hw, rules, table, {}).context[OLD_DRIVER]) for hw in order * 5]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8
    for pairs in results.values():
        assert all(value is serial[objects.index(hw)] for hw, value in pairs)


def test_a_key_that_cannot_be_hashed_is_made_every_time():
    table, made = PerHardware(4), []
    hw = object()
    for _ in range(2):
        assert table.get(hw, ("x", ["unhashable"]), lambda: made.append(1) or {"v": [1]}) == {"v": [1]}
    assert len(made) == 2 and len(table) == 0


def test_a_hit_and_an_eviction_in_two_threads_do_not_collide():
    """Thread A finds its entry; before A marks it recently used, thread B stores another and
    evicts A's (a table of one). Under the table's lock B waits for A (A's pause ends unanswered,
    a bounded wait) and both get their values; without it A's mark fails (KeyError)."""
    from collections import OrderedDict

    table, first, second = PerHardware(1), object(), object()
    found, evicted = threading.Event(), threading.Event()

    class Pausing(OrderedDict):
        def get(self, key, default=None):
            value = super().get(key, default)
            if value is not None and threading.current_thread().name == "A":
                found.set()
                evicted.wait(0.5)  # B evicts now, unless the lock holds it back
            return value

    table._entries = Pausing()
    table.get(first, "k", lambda: {"v": 1})
    answers: dict[str, object] = {}

    def hit() -> None:
        try:
            answers["A"] = table.get(first, "k", lambda: {"v": 1})
        except Exception as exc:  # noqa: BLE001 - the collision this test is about
            answers["A"] = exc

    def store() -> None:
        found.wait(5)
        answers["B"] = table.get(second, "k", lambda: {"v": 2})
        evicted.set()

    threads = [threading.Thread(target=hit, name="A"), threading.Thread(target=store, name="B")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {"A": {"v": 1}, "B": {"v": 2}} and len(table) == 1


def test_kept_containers_are_handed_out_as_copies_of_their_own_class():
    from collections import defaultdict

    from h3doctor.engine.memo import fresh

    kept = {"a": [1, {"b": {2}}], "c": defaultdict(list, {"d": [3]}), "e": (4, "f")}
    out = fresh(kept)
    assert out == kept and type(out["c"]) is defaultdict
    out["a"][1]["b"].add(5)
    out["a"].append(6)
    out["c"]["d"].append(7)
    assert kept == {"a": [1, {"b": {2}}], "c": {"d": [3]}, "e": (4, "f")}
