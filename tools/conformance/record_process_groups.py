#!/usr/bin/env python3
"""Record what sglang's workers do with a parallel layout when they build their process groups.

The launcher recorder (record.py) stops at dispatch_launch, so launches whose parallel degrees
are negative (`--tp-size -4`, `--ulysses-degree -2 --ring-degree -2`, `--cfg-parallel-size -2`)
are recorded as accepted. This tool runs the next step for real: sglang's own
`maybe_init_distributed_environment_and_model_parallel` (gpu_worker.py's call, with the layout
the launcher resolved) in 4 worker processes on CPU (gloo), and records each rank's exception and
message. Run it with the Python that has h3doctor installed:

    python tools/conformance/record_process_groups.py --venv $VENV --sglang-version X

with a venv holding torch, REQUIREMENTS and sglang X's wheel installed --no-deps (record.py's venv
works too); it writes tests/conformance/sglang-X-process-groups.jsonl; tests/sglang/test_conformance.py
compares h3doctor's H3D402 with it. Only the process-group step runs: no model, no GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORLD = 4
# (launch argv after `sglang serve` on 4xH200, accepted by sglang's launcher: the boundary suite's
# cases; the layout sglang resolved for it: its `resolved` record, and for CFG the degree given)
CASES = [
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--tp-size", "-4"],
     dict(tp=-4, sp=-1, cfg=1, ulysses=-1, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--tp-size", "-1"],
     dict(tp=-1, sp=-4, cfg=1, ulysses=-4, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--ulysses-degree", "-2", "--ring-degree", "-2"],
     dict(tp=1, sp=4, cfg=1, ulysses=-2, ring=-2, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--cfg-parallel-size", "-2"],
     dict(tp=1, sp=4, cfg=-2, ulysses=4, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--cfg-parallel-size", "-1"],
     dict(tp=1, sp=4, cfg=-1, ulysses=4, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--sp-degree", "-1"],
     dict(tp=1, sp=-1, cfg=1, ulysses=-1, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4", "--sp-degree", "-4", "--ulysses-degree", "-4"],
     dict(tp=1, sp=-4, cfg=1, ulysses=-4, ring=1, dp=1)),
    (["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"],
     dict(tp=1, sp=4, cfg=1, ulysses=4, ring=1, dp=1)),
]


# What the venv needs beside torch and the sglang wheel (installed --no-deps) for the import of
# parallel_state and what it imports, with the package __init__s of SKIP_INIT skipped: found by
# importing it in a venv holding only torch, 0.5.17 to 0.5.23. torch is the CPU build on the local
# disk (gloo is all this step uses); torchvision is not needed (stub_torchvision).
REQUIREMENTS = ["numpy", "psutil", "pyzmq", "cloudpickle", "pyyaml", "orjson", "pybase64", "requests", "triton",
                "packaging", "pillow", "starlette", "msgspec", "pydantic",
                "apache-tvm-ffi==0.1.11"]  # 0.5.21+: the all-reduce the positive layout builds imports tvm_ffi
# `sglang/__init__` and (up to 0.5.20) `sglang/multimodal_gen/__init__` import the whole runtime
# (DiffGenerator, the launcher, the models): none of it is on the process-group path
SKIP_INIT = {"sglang", "sglang.multimodal_gen"}


def skip_package_inits() -> None:
    """Import the packages of SKIP_INIT as bare packages (their submodules found as usual, their
    __init__ not run), so parallel_state imports without the runtime it does not call."""
    import importlib.abc
    import importlib.machinery

    class _Bare(importlib.abc.Loader):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            pass

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in SKIP_INIT:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None and spec.submodule_search_locations:
                spec.loader = _Bare()
            return spec

    sys.meta_path.insert(0, _Finder())


def stub_torchvision() -> None:
    """sglang.srt.utils.common imports `torchvision.io.decode_jpeg` at import time (0.5.17+) and
    calls it only to decode a request's image: without torchvision (PyPI's does not import beside
    the CPU torch), a stub that refuses to run stands in for it."""
    import importlib.util
    import types

    if importlib.util.find_spec("torchvision") is not None:
        return

    def decode_jpeg(*_args, **_kwargs):
        raise RuntimeError("torchvision stub (record_process_groups.py): no image decoding here")

    tv, io = types.ModuleType("torchvision"), types.ModuleType("torchvision.io")
    io.decode_jpeg, tv.io = decode_jpeg, io
    sys.modules.update({"torchvision": tv, "torchvision.io": io})


def rank_main(rank: int, cases: list[dict], out_dir: str) -> None:
    """One worker process: every case's process groups, torn down between cases."""
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1")
    skip_package_inits()
    stub_torchvision()
    import torch.distributed as dist
    from sglang.multimodal_gen.runtime.distributed import parallel_state as ps

    results = []
    for i, c in enumerate(cases):
        lay = c["layout"]
        try:
            ps.maybe_init_distributed_environment_and_model_parallel(
                tp_size=lay["tp"], sp_size=lay["sp"], cfg_degree=lay["cfg"] or 1, ulysses_degree=lay["ulysses"],
                ring_degree=lay["ring"], dp_size=lay["dp"], distributed_init_method=f"tcp://127.0.0.1:{c['port']}",
                dist_timeout=60)
            results.append({"ok": True})
        except Exception as exc:  # noqa: BLE001 - every failure is the verdict
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = frame.filename.replace(os.sep, "/").split("/sglang/", 1)[-1]
            results.append({"ok": False, "exc": type(exc).__name__, "msg": str(exc), "at": f"{where}:{frame.lineno}"})
        for name, value in list(vars(ps).items()):  # module-level groups: unset for the next case
            if name.startswith("_") and name.isupper() and type(value).__name__.endswith("Coordinator"):
                setattr(ps, name, None)
        if dist.is_initialized():
            dist.destroy_process_group()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", required=True, help="a venv with the sglang release (record.py's)")
    ap.add_argument("--sglang-version", default="0.5.23")
    ap.add_argument("--output", help="default tests/conformance/sglang-<version>-process-groups.jsonl")
    ap.add_argument("--in-venv", help=argparse.SUPPRESS)  # internal: the worker side
    args = ap.parse_args(argv)
    if args.in_venv:
        import torch.multiprocessing as mp

        cases = json.loads(Path(args.in_venv, "cases.json").read_text())
        mp.start_processes(rank_main, args=(cases, args.in_venv), nprocs=WORLD, join=True, start_method="spawn")
        return 0

    import record

    py = Path(args.venv) / "bin" / "python"
    tmp = Path(tempfile.mkdtemp(prefix="h3pg-"))
    cases = [{"id": f"p{i:02d}", "profile": "4xH200", "argv": argv_, "layout": lay, "port": 29650 + i}
             for i, (argv_, lay) in enumerate(CASES, 1)]
    (tmp / "cases.json").write_text(json.dumps(cases))
    t0 = time.time()
    env = record.worker_env(tmp)
    subprocess.run([str(py), str(Path(__file__).resolve()), "--venv", args.venv, "--in-venv", str(tmp)],
                   check=True, env=env, cwd=str(tmp), timeout=1800)
    ranks = [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(WORLD)]
    records = []
    for i, c in enumerate(cases):
        rec = {k: c[k] for k in ("id", "profile", "argv", "layout")}
        rec["ranks"] = [ranks[r][i] for r in range(WORLD)]
        records.append(rec)
    output = Path(args.output) if args.output else HERE.parents[1] / "tests" / "conformance" / \
        f"sglang-{args.sglang_version}-process-groups.jsonl"
    argv_used = ["python", "tools/conformance/record_process_groups.py", *record._portable(sys.argv[1:] if argv is None else argv)]
    meta = {"format_version": record.FORMAT_VERSION, "sglang_version": args.sglang_version, "world_size": WORLD,
            "entry": "sglang.multimodal_gen.runtime.distributed.parallel_state."
                     "maybe_init_distributed_environment_and_model_parallel, 4 processes, gloo on CPU",
            "record_command": shlex.join(argv_used)}
    record.write_jsonl(output, meta, records)
    print(f"[record_process_groups] wrote {output}: {len(records)} layouts, {time.time() - t0:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
