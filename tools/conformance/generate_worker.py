"""Run `sglang generate` up to the request hand-off for a batch of cases on one simulated profile.

Runs *inside* the sglang venv; `record_generate.py` starts one of these per profile, with the
same command line as `sglang_worker.py`:

    python generate_worker.py --profile-json P.json --cases CASES.jsonl --out RESULTS.jsonl --workdir DIR

Each case goes through sglang's console entry point `sglang.cli.main:main` with
`sys.argv = ["sglang", "generate", *argv]`: `cli/generate.py:generate` (model detection, the
`argparse.ArgumentParser` + `add_multimodal_gen_generate_args` + `parse_known_args`), then
`generate_cmd`: `ServerArgs.from_cli_args`, `_resolve_cli_sampling_params_cls`, the `--config`
sampling fields and `get_cli_args`, `DiffGenerator.from_pretrained`, and `DiffGenerator.generate`:
`SamplingParams.from_user_sampling_params_args` (the class built with the flags as keyword
arguments, `__post_init__` -> `_validate`, the merge, `_adjust`, `_validate_with_pipeline_config`),
then per prompt `prepare_request` and `prepare_video_request_for_queue` (the H3 request
validation). Replaced, and nothing else:

* `DiffGenerator._create` (called by `from_pretrained` after its plugin hooks; up to 0.5.20,
  which has no `_create`, `DiffGenerator.from_server_args`) returns a generator holding the
  `ServerArgs`, without starting workers: nothing is downloaded or loaded;
* `DiffGenerator._send_to_scheduler_and_wait_for_response` raises `_Accepted`: the requests
  sglang prepared are never run (no worker-side check runs, see README);
* `DiffGenerator.shutdown` is a no-op (there is no scheduler to stop).

Network, hub look-ups and hardware: as `sglang_worker.py` (its guards and `simhw.py`, imported).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sglang_worker as serve_worker  # noqa: E402
import simhw  # noqa: E402

# innermost marker frame wins: (function name, path fragment) -> stage. The launch stages are
# sglang_worker's (argparse, ServerArgs); then the generate path's own.
GENERATE_MARKERS = [
    ("generate_cmd", "entrypoints/cli/generate.py", "generate_cmd"),
    ("generate", "entrypoints/diffusion_generator.py", "generate"),
    ("from_user_sampling_params_args", "configs/sample/sampling_params.py", "sampling"),
    ("_validate", "configs/sample/", "sampling"),
    ("prepare_request", None, "request"),
    ("build_request_extra", None, "request"),
    ("prepare_video_request_for_queue", None, "request"),
    ("expand_request_outputs", None, "request"),  # one request per output: the seed list
]
# sglang's step (docs/generate.md, gen-1): 1 argparse, 2 ServerArgs, 5 sampling parameters,
# 6 the request; `generate_cmd` (3) and `generate` (5, its prompt handling) are the glue
STEPS = {"dispatch": 0, "parse": 1, "from_cli_args": 2, "post_init": 2, "adjust": 2, "validate": 2,
         "model_hook": 2, "generate_cmd": 3, "generate": 5, "sampling": 5, "request": 6}


class _Accepted(BaseException):
    def __init__(self, requests):
        super().__init__("accepted")
        self.requests = requests


def _stage(tb, sglang_root: str) -> tuple[str, str | None]:
    stage, where = None, None
    for frame, lineno in traceback.walk_tb(tb):
        code = frame.f_code
        fname = code.co_filename.replace(os.sep, "/")
        for func, suffix, name in serve_worker.STAGE_MARKERS:
            if code.co_name == func and (suffix is None or fname.endswith(suffix)):
                if name == "model_hook" and "pipeline_configs" not in fname:
                    continue
                stage = name
        for func, fragment, name in GENERATE_MARKERS:
            if code.co_name == func and (fragment is None or fragment in fname) and "/sglang/" in fname:
                stage = name
        if code.co_filename.startswith(sglang_root):
            where = f"{os.path.relpath(code.co_filename, sglang_root)}:{lineno}"
    return stage or "dispatch", where


def run_case(case: dict[str, Any], workdir: Path, sglang_root: str, cli_main, caches=()) -> dict[str, Any]:
    serve_worker.prepare_case(case, workdir, caches, "generate")
    out, err = io.StringIO(), io.StringIO()
    result: dict[str, Any] = {"id": case["id"]}
    seen: list[BaseException] = []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli_main()
        result.update(ok=False, exc="NoRequest", msg="sglang generate returned without a request", stage="dispatch")
    except _Accepted as acc:
        result.update(ok=True, requests=len(acc.requests))
    except SystemExit as exc:
        seen.append(exc)
        stage, where = _stage(exc.__traceback__, sglang_root)
        parsed = serve_worker._argparse_message(err.getvalue()) if exc.code == 2 else None
        result.update(ok=False, exc="SystemExit", msg=parsed if parsed is not None else str(exc.code),
                      stage=stage, at=where)
    except BaseException as exc:  # noqa: BLE001 - every sglang failure is a verdict
        seen.append(exc)
        stage, where = _stage(exc.__traceback__, sglang_root)
        msg = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
        result.update(ok=False, exc=type(exc).__name__, msg=msg, stage=stage, at=where)
    finally:
        for cfg in case.get("files", ()):
            with contextlib.suppress(OSError):
                (workdir / cfg["name"]).unlink()
    result["step"] = 7 if result["ok"] else STEPS.get(result["stage"], 0)
    if not result["ok"]:
        env = serve_worker._import_cause(seen[0]) if seen else None
        if env:
            result["env"] = env
    if serve_worker.NETWORK_ATTEMPTS:
        result["network"] = list(serve_worker.NETWORK_ATTEMPTS)
    serve_worker.mark_hub_lookups(result)
    return result


def main() -> int:
    args, profile, sim = serve_worker.start_worker()

    import sglang.cli.main as cli_main_mod
    from sglang.multimodal_gen.runtime.entrypoints.diffusion_generator import DiffGenerator

    facts = simhw.check_platform(profile)

    def create(cls, server_args, *, local_mode=True):
        instance = cls.__new__(cls)
        instance.server_args = server_args
        return instance

    def send(self, requests):
        raise _Accepted(requests)

    # 0.5.21+: from_pretrained runs its plugin hooks, then _create starts the workers; up to 0.5.20
    # there are no hooks and from_server_args (called by from_pretrained) starts them
    if hasattr(DiffGenerator, "_create"):
        starter = "_create"
        DiffGenerator._create = classmethod(create)
    else:
        starter = "from_server_args"
        DiffGenerator.from_server_args = classmethod(
            lambda cls, server_args, local_mode=True: create(cls, server_args, local_mode=local_mode))
    DiffGenerator._send_to_scheduler_and_wait_for_response = send
    DiffGenerator.shutdown = lambda self: None
    prefix = "sglang.multimodal_gen.runtime.entrypoints.diffusion_generator.DiffGenerator."
    sim["replaced"] = [prefix + n for n in (starter, "_send_to_scheduler_and_wait_for_response", "shutdown")]
    return serve_worker.run_cases(args, profile, sim, facts, run_case, cli_main_mod.main)


if __name__ == "__main__":
    sys.exit(main())
