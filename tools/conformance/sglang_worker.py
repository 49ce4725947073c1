"""Run `sglang serve` argument handling for a batch of cases on one simulated hardware profile.

Runs *inside* the throwaway sglang venv; `record.py` starts one of these per profile:

    python sglang_worker.py --profile-json P.json --cases CASES.jsonl --out RESULTS.jsonl

Each case goes through sglang's real console entry point, `sglang.cli.main:main`, with
`sys.argv = ["sglang", "serve", *argv]`: the top-level subcommand parser, `--model-type`
extraction, the positional-model rewrite, backend auto-detection, `_run_diffusion`
(`argparse.ArgumentParser` + `add_multimodal_gen_serve_args` + `parse_known_args`) and
`execute_serve_cmd`, i.e. `ServerArgs.from_cli_args(args, unknown, default_args={"warmup_mode":
"server"})` with `__post_init__` (adjust phase, validation, the pipeline's
`validate_server_args`). Only the steps *after* a configuration is accepted are replaced:

* `entrypoints.cli.serve.dispatch_launch` raises `_Accepted(server_args)` instead of starting
  workers (so nothing after from_cli_args runs: no workers, no download, no webui);
* `sglang.cli.serve._run_llm` raises `_RoutedToLLM` instead of starting the LLM server;
* `sglang.cli.serve.kill_process_tree` is a no-op (it would signal this process's children).

The network is blocked (non-loopback `connect` raises and is recorded per case); HF offline
variables are set by record.py. Hardware is simulated by simhw.py.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import socket
import sys
import traceback
import zlib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import simhw  # noqa: E402

H3_COMPONENTS = ("transformer", "text_encoder", "video_vae", "audio_vae")
# recorded instead of `residency` where ServerArgs has no residency_mode (0.5.17)
OFFLOAD_FIELDS = ("dit_cpu_offload", "dit_layerwise_offload", "layerwise_offload_components",
                  "text_encoder_cpu_offload", "vae_cpu_offload")

# innermost marker frame wins: (function name, file suffix or None) -> stage
STAGE_MARKERS = [
    ("parse_known_args", "argparse.py", "parse"),
    ("from_cli_args", "server_args.py", "from_cli_args"),
    ("from_dict", "server_args.py", "from_cli_args"),
    ("__post_init__", "server_args.py", "post_init"),
    ("_adjust_parameters", "server_args.py", "adjust"),
    ("_validate_parameters", "server_args.py", "validate"),
    ("validate_server_args", None, "model_hook"),
]
# catalog stage codes (sglang-0.5.23-h3-constraints.md): __post_init__'s own checks (B1-B3)
# are listed under A there
STAGE_CODES = {"dispatch": "D", "parse": "P", "from_cli_args": "F", "post_init": "A",
               "adjust": "A", "validate": "V", "model_hook": "M"}


class _Accepted(BaseException):
    def __init__(self, server_args):
        super().__init__("accepted")
        self.server_args = server_args


class _RoutedToLLM(BaseException):
    pass


# --------------------------------------------------------------------------
# network guard
# --------------------------------------------------------------------------

NETWORK_ATTEMPTS: list[str] = []


def _is_loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    return isinstance(host, str) and (host in ("localhost", "", "::1", "0.0.0.0") or host.startswith("127."))


def install_network_guard() -> None:
    orig_connect = socket.socket.connect
    orig_connect_ex = socket.socket.connect_ex

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            NETWORK_ATTEMPTS.append(repr(address))
            raise OSError(101, "network blocked by h3doctor conformance recorder")
        return orig_connect(self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            NETWORK_ATTEMPTS.append(repr(address))
            return 101
        return orig_connect_ex(self, address)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex


# Hub look-ups (HF_HUB_OFFLINE=1, so each one fails), recorded per case (`hub`). For a model
# id that its diffusion registry does not know, sglang fetches model_index.json
# (`get_is_diffusion_model`: offline, it routes the launch to the LLM server;
# `maybe_download_model_index`: the diffusion side falls back to its diffusers backend). Such
# a verdict is the offline hub's, not the release's: a case with a model_index.json look-up is
# marked `env` (FastH3 8-Step-V2 before 0.5.22, FastH3 Omni before 0.5.23, VDN-H3 before
# 0.5.20). Other look-ups are only listed: 0.5.23's auto performance mode on CUDA sizes the
# *local* checkpoint of a registered H3 id (`checkpoint_component_sizes`: a
# `snapshot_download(local_files_only=True)`); not downloaded, it keeps the per-model policy,
# as on a host that has not downloaded the weights yet.
HUB_LOOKUPS: list[str] = []
_HUB_FUNCTIONS = ("hf_hub_download", "snapshot_download", "model_info", "list_repo_files",
                  "file_exists", "repo_info")


def install_hub_guard() -> None:
    import huggingface_hub

    def wrap(name, fn):
        def hub_call(*a, **k):
            repo = k.get("repo_id") or (a[0] if a and isinstance(a[0], str) else None)
            if name == "hf_hub_download":
                what = f"{repo}/{k.get('filename') or (a[1] if len(a) > 1 else '')}"
            else:
                what = str(repo)
            HUB_LOOKUPS.append(f"{name}({what})")
            return fn(*a, **k)
        hub_call.__wrapped__ = fn
        hub_call._h3conf_hub = True
        return hub_call

    modules = [huggingface_hub]
    for sub in ("file_download", "_snapshot_download", "hf_api"):
        try:
            modules.append(__import__(f"huggingface_hub.{sub}", fromlist=["_"]))
        except ImportError:
            pass
    for mod in modules:
        for name in _HUB_FUNCTIONS:
            fn = getattr(mod, name, None)
            if callable(fn) and not getattr(fn, "_h3conf_hub", False):
                setattr(mod, name, wrap(name, fn))
    api = getattr(huggingface_hub, "HfApi", None)
    for name in _HUB_FUNCTIONS:
        fn = getattr(api, name, None) if api is not None else None
        if callable(fn):
            orig = fn

            def method(self, *a, _orig=orig, _name=name, **k):
                HUB_LOOKUPS.append(f"{_name}({k.get('repo_id') or (a[0] if a else None)})")
                return _orig(self, *a, **k)
            setattr(api, name, method)


# --------------------------------------------------------------------------
# one case
# --------------------------------------------------------------------------

def _stage_and_where(tb, sglang_root: str) -> tuple[str, str | None]:
    stage = None
    where = None
    for frame, lineno in traceback.walk_tb(tb):
        code = frame.f_code
        fname = code.co_filename
        for func, suffix, name in STAGE_MARKERS:
            if code.co_name == func and (suffix is None or fname.endswith(suffix)):
                if name == "model_hook" and "pipeline_configs" not in fname:
                    continue
                stage = name
        if fname.startswith(sglang_root):
            where = f"{os.path.relpath(fname, sglang_root)}:{lineno}"
    if stage is None:
        stage = "dispatch"
    return stage, where


def _argparse_message(stderr: str) -> str | None:
    for line in reversed(stderr.splitlines()):
        marker = ": error: "
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return None


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [_jsonable(x) for x in v]
    return getattr(v, "value", None) if hasattr(v, "value") and isinstance(v.value, str) else str(v)


def resolved_config(sa) -> dict[str, Any]:
    """The resolved configuration fields the goldens keep (see README)."""
    cab = dict(sa.component_attention_backends or {})
    out = {
        "attention_backend": _jsonable(sa.attention_backend),
        "component_attention_backends": _jsonable(cab),
        "performance_mode": sa.performance_mode,
        "num_gpus": sa.num_gpus,
        "tp": sa.tp_size,
        "sp": sa.sp_degree,
        "ulysses": sa.ulysses_degree,
        "ring": sa.ring_degree,
        "dp": sa.dp_size,
        "cfg_parallel": bool(sa.enable_cfg_parallel),
        # ServerArgs.residency_mode is new in 0.5.18 (with --component-residency)
        "residency": ({c: sa.residency_mode(c) for c in H3_COMPONENTS}
                      if hasattr(sa, "residency_mode") else None),
        "quantization": sa.quantization,
        "torch_compile": _jsonable(sa.enable_torch_compile),
        "warmup_mode": sa.warmup_mode,
        "pipeline_config": type(sa.pipeline_config).__name__,
    }
    if out["residency"] is None:  # 0.5.17: the offload switches themselves
        out["offload"] = {k: _jsonable(getattr(sa, k, None)) for k in OFFLOAD_FIELDS}
    if (getattr(sa, "kv_gather_degree", None) or 1) > 1:  # --kv-gather-degree: 0.5.18+
        out["kv_gather"] = sa.kv_gather_degree
    return out


def _import_cause(exc: BaseException) -> str | None:
    """`Type: message` of an ImportError in the exception's cause/context chain, if any.

    Such a verdict depends on which optional kernel packages are installed (flash_attn,
    cutlass, sgl_kernel, sageattention, ...), which differs between this venv and a real
    GPU host; the goldens mark it and the CI test does not judge it."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ImportError):
            return f"{type(exc).__name__}: {exc}"[:200]
        exc = exc.__cause__ or exc.__context__
    return None


# Model resolution caches of sglang's diffusion registry (`functools.lru_cache(maxsize=1)` on
# `get_model_info` and `_get_config_info`, in every release 0.5.17-0.5.23). They are cleared
# before every case, so each case resolves its model as a fresh `sglang serve` process would;
# otherwise a case that follows one with the same unregistered model id would reuse that
# case's (offline-hub) resolution without looking it up, and its `hub`/`env` marks would
# depend on the case order. Verdicts do not depend on it (the 0.5.23 order check passed).
RESOLUTION_CACHES = ("get_model_info", "_get_config_info")


def resolution_caches() -> list:
    from sglang.multimodal_gen import registry

    return [fn for fn in (getattr(registry, n, None) for n in RESOLUTION_CACHES) if hasattr(fn, "cache_clear")]


def prepare_case(case: dict[str, Any], workdir: Path, caches, entry: str) -> None:
    """One case's fresh start (shared with generate_worker.py): its config files, a seeded random,
    no memory of earlier cases, and sglang's argv for `entry`."""
    # config files named by the case are written into the (per-process) work directory and
    # referred to by relative name, so messages that quote the path are machine-independent
    for cfg in case.get("files", ()):
        (workdir / cfg["name"]).write_text(cfg["text"], encoding="utf-8")
    os.chdir(workdir)
    random.seed(zlib.crc32(case["id"].encode()))
    NETWORK_ATTEMPTS.clear()
    HUB_LOOKUPS.clear()
    for fn in caches:
        fn.cache_clear()
    sys.argv = ["sglang", entry, *case["argv"]]


def run_case(case: dict[str, Any], workdir: Path, sglang_root: str, cli_main, caches=()) -> dict[str, Any]:
    prepare_case(case, workdir, caches, "serve")
    out, err = io.StringIO(), io.StringIO()
    result: dict[str, Any] = {"id": case["id"]}
    exc_seen: list[BaseException] = []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli_main()
        result.update(ok=False, exc="NoLaunch", msg="sglang returned without launching", stage="dispatch")
    except _Accepted as acc:
        result.update(ok=True, resolved=resolved_config(acc.server_args))
    except _RoutedToLLM:
        result.update(ok=False, exc="RoutedToLLM", msg="sglang serve routed this launch to the LLM server",
                      stage="dispatch")
    except SystemExit as exc:
        exc_seen.append(exc)
        stage, where = _stage_and_where(exc.__traceback__, sglang_root)
        parsed = _argparse_message(err.getvalue()) if exc.code == 2 else None
        msg = parsed if parsed is not None else str(exc.code)
        result.update(ok=False, exc="SystemExit", msg=msg, stage=stage, at=where)
    except BaseException as exc:  # noqa: BLE001 - every sglang failure is a verdict
        exc_seen.append(exc)
        stage, where = _stage_and_where(exc.__traceback__, sglang_root)
        msg = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
        result.update(ok=False, exc=type(exc).__name__, msg=msg, stage=stage, at=where)
    finally:
        for cfg in case.get("files", ()):
            with contextlib.suppress(OSError):
                (workdir / cfg["name"]).unlink()
    if not result["ok"]:
        result["code"] = STAGE_CODES.get(result["stage"], "?")
        env = _import_cause(exc_seen[0]) if exc_seen else None
        if env:
            result["env"] = env
    if NETWORK_ATTEMPTS:
        result["network"] = list(NETWORK_ATTEMPTS)
    mark_hub_lookups(result)
    return result


def mark_hub_lookups(result: dict[str, Any]) -> None:
    """Record the case's hub look-ups (`hub`); a model_index.json look-up (a model id the release's
    registry does not know) makes the verdict the offline hub's: `env` (shared with generate_worker.py)."""
    if not HUB_LOOKUPS:
        return
    lookups = list(dict.fromkeys(HUB_LOOKUPS))
    result["hub"] = lookups
    identity = [x for x in lookups if x.endswith("/model_index.json)")]
    if identity and not result.get("env"):
        more = f" (+{len(lookups) - 1} more)" if len(lookups) > 1 else ""
        result["env"] = f"offline hub: {identity[0]}{more}"


def start_worker() -> tuple[argparse.Namespace, dict[str, Any], dict[str, Any]]:
    """A worker's start, before sglang is imported (shared with generate_worker.py): its options,
    the profile, the network and hub guards and the simulated hardware."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile-json", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    profile = json.loads(Path(args.profile_json).read_text())
    install_network_guard()
    install_hub_guard()
    return args, profile, simhw.install(profile)


def run_cases(args: argparse.Namespace, profile: dict[str, Any], sim: dict[str, Any], facts: Any, run,
              cli_main) -> int:
    """Every case of the worker's file through `run` (this module's or generate_worker's run_case),
    one JSON line each after the header line (shared with generate_worker.py)."""
    import sglang

    caches = resolution_caches()
    sglang_root = str(Path(sglang.__file__).resolve().parent) + os.sep
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    cases = [json.loads(line) for line in Path(args.cases).read_text().splitlines() if line.strip()]
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"profile": profile["name"], "simulation": sim, "platform": facts}) + "\n")
        for case in cases:
            fh.write(json.dumps(run(case, workdir, sglang_root, cli_main, caches)) + "\n")
            fh.flush()
    return 0


def main() -> int:
    args, profile, sim = start_worker()

    import sglang.cli.main as cli_main_mod
    import sglang.cli.serve as cli_serve
    from sglang.multimodal_gen.runtime.entrypoints.cli import serve as diffusion_serve

    facts = simhw.check_platform(profile)

    def dispatch_launch(server_args):
        raise _Accepted(server_args)

    def run_llm(*_a, **_k):
        raise _RoutedToLLM()

    diffusion_serve.dispatch_launch = dispatch_launch
    replaced = ["sglang.multimodal_gen.runtime.entrypoints.cli.serve.dispatch_launch"]
    if hasattr(cli_serve, "_run_llm"):
        # 0.5.18+: the LLM backend of `sglang serve`'s backend registry
        cli_serve._run_llm = run_llm
        replaced.append("sglang.cli.serve._run_llm")
    else:
        # 0.5.17: serve() itself builds the LLM server: `from sglang.srt.server_args import
        # prepare_server_args` (imported when that branch runs), then run_server; the LLM
        # argument parsing is stopped before it starts, as _run_llm is in later releases
        import sglang.srt.server_args as srt_server_args

        srt_server_args.prepare_server_args = run_llm
        replaced.append("sglang.srt.server_args.prepare_server_args")
    cli_serve.kill_process_tree = lambda *a, **k: None
    replaced.append("sglang.cli.serve.kill_process_tree")
    sim["replaced"] = replaced
    return run_cases(args, profile, sim, facts, run_case, cli_main_mod.main)


if __name__ == "__main__":
    sys.exit(main())
