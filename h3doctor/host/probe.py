"""The live hardware probe: this host as sglang 0.5.23 would see it, as `HardwareFacts`.

Three sources, kept apart:

* the child process (`h3doctor.host.probe_child`, run with a timeout): torch, NVML, amdsmi, CUDA
  init. Everything that can hang or crash happens there; this process never imports torch.
  Its observations are cached (`h3doctor.host.probe_cache`).
* this process, on every run: package facts from package metadata and import specs (never an
  import), ffmpeg/ffprobe on PATH, host memory.
* `build` (host/probe_facts.py), a pure function from both to facts, one report line per fact, and a reason for
  every fact that is unknown or not applicable. The tests drive it with faked observations.

A fact is None when it could not be read (status "unknown") or does not apply to the platform
(status "n/a"); either way its reason says why, and rules that need it report "cannot verify".
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from h3doctor import __version__
from h3doctor.facts import HardwareFacts
from h3doctor.host import cuda_stack, probe_cache
from h3doctor.host.probe_facts import (  # noqa: F401 - build/map_visible/ProbeResult are this module's API too
    FA_MODULE,
    FA_MODULE_DEPS,
    PROBE_ONLY_FACTS,
    PROFILE_FACTS,
    SCHEMA_VERSION,
    STATUSES,
    SUPPORTED_SGLANG,
    Line,
    ProbeResult,
    build,
    map_visible,
)
from h3doctor.paths import installed_versions

DEFAULT_TIMEOUT_S = 30.0

# The only variables of a launch's own environment (a recipe's `env:`, `VAR=value` words in front of
# the command) that reach the probe child: what decides which platform sglang 0.5.23 picks and which
# devices it sees. SGLANG_DIFFUSION_PLATFORM_OVERRIDE is read by multimodal_gen/runtime/platforms/
# __init__.py; CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER by platforms/cuda.py (and rocm.py's
# device_control_env_var) and by torch; HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES by the ROCm
# runtime under torch; ZE_AFFINITY_MASK by Level Zero (XPU); ASCEND_RT_VISIBLE_DEVICES by
# platforms/npu.py; MUSA_VISIBLE_DEVICES by platforms/musa.py; PYTORCH_NVML_BASED_CUDA_CHECK by
# torch.cuda.is_available(), sglang's CUDA fallback. Values of these are device lists and switches:
# none of them names code to load. Everything else a launch sets (PYTHONPATH, PYTHONHOME,
# PYTHONSTARTUP, PYTHONUSERBASE, LD_PRELOAD, LD_LIBRARY_PATH, DYLD_*, PATH, BASH_ENV, ...) can make
# Python or the loader run a file the input's author chose, so the child never gets it: nobody has
# decided to launch anything yet. The report names what was held back (`probe_env_not_applied`).
LAUNCH_ENV_APPLIED = probe_cache.PLATFORM_ENV


def child_environment(base: Mapping[str, str], launch: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the probe child's environment, the names of the launch's variables it does not get).

    `base` is the environment h3doctor itself runs in (the user's); `launch` the one the checked
    command would start in. The child gets `base` with only `LAUNCH_ENV_APPLIED` taken from the
    launch (set, changed or removed as the launch has them)."""
    env = {k: v for k, v in base.items() if k not in LAUNCH_ENV_APPLIED}
    env.update({k: launch[k] for k in LAUNCH_ENV_APPLIED if k in launch})
    withheld = sorted(k for k in set(base) | set(launch)
                      if k not in LAUNCH_ENV_APPLIED and base.get(k) != launch.get(k))
    return env, withheld


def _reader(stream: Any, sink: list[str]) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
    stream.close()


def run_child(env: dict[str, str], timeout: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the child; return (observations, run info). Never raises, never outlives `timeout` by much."""
    import subprocess
    import tempfile

    start = time.perf_counter()
    out: list[str] = []
    err: list[str] = []
    # The child is probe_child.py run by path (it imports only the standard library), with `-P`
    # where Python has it (3.11+; on 3.10 the child drops its own directory from sys.path first):
    # neither the current directory nor the script's is put on sys.path. Its working directory is an
    # empty private directory, so an empty or relative entry in the user's PYTHONPATH or
    # LD_LIBRARY_PATH (`PYTHONPATH=:/opt/x` means "also the current directory") cannot reach the
    # directory h3doctor was started in, which may be a checkout of someone else's recipes. The
    # user's own environment is otherwise kept as it is (no -E, -s or -I): sglang starts in it too,
    # and torch found through it (a PYTHONPATH, the user site) is the torch sglang would import;
    # torch in the interpreter's own site-packages is found either way.
    script = str(Path(__file__).resolve().with_name("probe_child.py"))
    flags = ["-P"] if sys.version_info >= (3, 11) else []
    with tempfile.TemporaryDirectory(prefix="h3doctor-probe-", ignore_cleanup_errors=True) as cwd:
        try:
            proc = subprocess.Popen(
                [sys.executable, *flags, script], cwd=cwd,
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors="replace", start_new_session=os.name == "posix",
            )
        except OSError as exc:
            return {}, {"outcome": "failed", "detail": f"cannot start {sys.executable}: {exc}", "elapsed_s": 0.0}
        return _collect(proc, out, err, start, timeout)


def _collect(proc: Any, out: list[str], err: list[str], start: float, timeout: float) -> tuple[dict[str, Any], dict[str, Any]]:
    import subprocess
    import threading

    threads = [threading.Thread(target=_reader, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, err), daemon=True)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        from h3doctor.host.ffmpeg import kill_group  # subprocess is imported only when a child runs

        kill_group(proc)
    for t in threads:
        t.join(timeout=1.0)  # a process stuck in the driver may never close its pipes
    obs, done, pending, last = _parse(out)
    elapsed = time.perf_counter() - start
    run: dict[str, Any] = {"elapsed_s": round(elapsed, 3), "child_returncode": proc.returncode,
                           "child_stderr": "".join(err)[-2000:]}
    if done:
        run["outcome"] = "ok"
    elif timed_out:
        run["outcome"] = "timeout"
        run["hung_in"] = pending or (f"after {last}" if last else "starting Python")
        run["detail"] = f"the probe child did not finish within {timeout:g} s; it hung in {run['hung_in']}"
    else:
        run["outcome"] = "crashed"
        where = pending or (f"after {last}" if last else "start-up")
        run["hung_in"] = where
        run["detail"] = f"the probe child exited with code {proc.returncode} in {where}" + _tail(err)
    return obs, run


def _tail(err: list[str]) -> str:
    lines = [ln.strip() for ln in "".join(err).splitlines() if ln.strip()]
    return f": {lines[-1][:300]}" if lines else ""


def _parse(lines: list[str]) -> tuple[dict[str, Any], bool, str | None, str | None]:
    obs: dict[str, Any] = {}
    partial: list[dict[str, Any]] = []
    done, pending, last = False, None, None
    for raw in lines:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        if "begin" in msg:
            pending = str(msg["begin"])
        elif "step" in msg:
            pending, last = None, str(msg["step"])
            if msg["step"] == "cuda_device":
                partial.append(msg.get("data") or {})
            else:
                obs[str(msg["step"])] = msg.get("data")
        elif msg.get("done"):
            done = True
    if "cuda_devices" not in obs and partial:
        obs["cuda_devices"] = partial
        obs["cuda_devices_incomplete"] = True
    return obs, done, pending, last


# -- this process: packages, PATH, host memory -----------------------------------------------

def locate(fullname: str) -> Any:
    """The import spec of a module, found without importing it or any parent package."""
    parts = fullname.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])  # top level: finds, does not import
    except (ImportError, ValueError):
        return None
    for i in range(1, len(parts)):
        locations = getattr(spec, "submodule_search_locations", None) if spec else None
        if not locations:
            return None
        spec = _find_in(".".join(parts[: i + 1]), list(locations))
    return spec


def _find_in(name: str, path: list[str]) -> Any:
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(name, path)
        except Exception:
            continue
        if spec is not None:
            return spec
    # a namespace-package portion (a directory without __init__.py): the path finder cannot
    # build its spec without the parent package imported, so look for the directory itself
    last = name.rpartition(".")[2]
    portions = [os.path.join(p, last) for p in path if os.path.isdir(os.path.join(p, last))]
    return _namespace_spec(name, portions) if portions else None


def _namespace_spec(name: str, portions: list[str]) -> Any:
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = portions
    return spec


def _env_true(env: dict[str, str], name: str, default: bool) -> bool:
    value = (env.get(name) or "").strip().lower()
    if value in ("1", "true", "yes", "on", "y", "t"):
        return True
    if value in ("0", "false", "no", "off", "n", "f"):
        return False
    return default


def host_facts(env: dict[str, str]) -> dict[str, Any]:
    """Facts this process reads itself on every run (milliseconds, no import of anything heavy)."""
    path = env.get("PATH", os.defpath)
    mem_total, mem_avail, mem_source = _host_memory()
    fa3_sgl = _env_true(env, "SGLANG_USE_SGL_FA3_KERNEL", True)
    versions = installed_versions(("sglang", "torch", "sgl-kernel"))  # one walk of sys.path for the three
    return {
        "ffmpeg_path": shutil.which("ffmpeg", path=path),
        "ffprobe_path": shutil.which("ffprobe", path=path),
        "host_total": mem_total,
        "host_available": mem_avail,
        "host_memory_source": mem_source,
        "sglang_version": versions["sglang"],
        "torch_version": versions["torch"],
        "torch_spec": locate("torch") is not None,
        "sglang_spec": locate("sglang") is not None,
        "fa_module": locate(FA_MODULE) is not None,
        "fa_module_missing_deps": [d for d in FA_MODULE_DEPS if locate(d) is None],
        "sgl_kernel": locate("sgl_kernel") is not None,
        "sgl_kernel_flash_attn": locate("sgl_kernel.flash_attn") is not None,
        "sgl_kernel_version": versions["sgl-kernel"],
        "cutlass": locate("cutlass") is not None,
        "kernels_hub": locate("kernels") is not None,
        "use_sgl_fa3_kernel": fa3_sgl,
        "driver_file": probe_cache.driver_version(),
        **system_facts(env),
        **cuda_stack.observe(env),
    }


def system_facts(env: dict[str, str], root: str = "/") -> dict[str, Any]:
    """The host around the GPUs (host/system.py, host/ffmpeg.py): the cgroup's memory cap, /dev/shm,
    free disk under the Hugging Face cache, the encoders of the ffmpeg sglang encodes with.
    `root` is "/" except in tests, which hand a faked tree."""
    from h3doctor.host import ffmpeg, hub, swap, system

    cap, usage, cap_source, cap_reason = system.cgroup_memory(root)
    unlimited, unlimited_source, unlimited_reason = system.root_memory_max_unlimited(root)
    shm_size, shm_free, shm_source, shm_reason = system.shm(root)
    cache = system.hf_hub_cache(env)
    _disk_size, disk_free, disk_where, disk_reason = system.filesystem(cache)
    token, token_source = hub.hub_token(env)
    spill = hub.spill_dir(env)
    _spill_size, spill_free, spill_where, spill_reason = system.filesystem(spill)
    spec = locate("imageio_ffmpeg")
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    bundled = os.path.join(locations[0], "binaries") if locations else None
    return {
        "cgroup_limit": cap, "cgroup_usage": usage, "cgroup_source": cap_source, "cgroup_reason": cap_reason,
        "cgroup_unlimited": unlimited, "cgroup_unlimited_source": unlimited_source,
        "cgroup_unlimited_reason": unlimited_reason,
        "shm_size": shm_size, "shm_free": shm_free, "shm_source": shm_source, "shm_reason": shm_reason,
        "hf_cache": cache, "disk_free": disk_free, "disk_measured": disk_where, "disk_reason": disk_reason,
        "hf_token": token, "hf_token_source": token_source,
        "spill_dir": spill, "spill_free": spill_free, "spill_measured": spill_where, "spill_reason": spill_reason,
        "imageio_ffmpeg": spec is not None,
        **ffmpeg.encoder_facts(env, bundled),
        **swap.swap_facts(root),
    }


def _host_memory() -> tuple[int | None, int | None, str]:
    try:
        info: dict[str, int] = {}
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
        return info.get("MemTotal"), info.get("MemAvailable"), "/proc/meminfo"
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil  # sglang's own choice; present wherever sglang is

        vm = psutil.virtual_memory()
        return int(vm.total), int(vm.available), "psutil.virtual_memory()"
    except Exception:
        pass
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return int(total), None, "os.sysconf (available memory needs psutil here)"
    except (ValueError, OSError, AttributeError):
        return None, None, "no /proc/meminfo, psutil or sysconf"


# -- the whole probe -------------------------------------------------------------------------

def timeout_from(env: dict[str, str]) -> float:
    try:
        value = float(env.get("H3DOCTOR_PROBE_TIMEOUT") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if math.isfinite(value) and value > 0 else DEFAULT_TIMEOUT_S


def probe(env: Mapping[str, str] | None = None, *, use_cache: bool = True, refresh: bool = False,
          timeout: float | None = None, launch: Mapping[str, str] | None = None) -> ProbeResult:
    """Probe this host. `use_cache=False` neither reads nor writes the cache; `refresh` re-probes and writes.

    `env` is the environment h3doctor runs in (default this process's): its H3DOCTOR_* settings
    and the child's environment come from it. `launch` is the environment of a launch being
    checked: only its `LAUNCH_ENV_APPLIED` variables reach the child (the rest are named in
    `run["env_not_applied"]`); PATH and sglang's switches read in this process come from it."""
    settings = dict(os.environ if env is None else env)
    launch = settings if launch is None else dict(launch)
    child_env, withheld = child_environment(settings, launch)
    timeout = timeout_from(settings) if timeout is None else timeout
    if not (math.isfinite(timeout) and timeout > 0):
        from h3doctor.errors import UsageError

        raise UsageError(f"the probe timeout must be a positive number of seconds, not {timeout!r}")
    start = time.perf_counter()
    host = host_facts(launch)  # lookups only (PATH, package specs): nothing here runs
    entry = None
    cache_why = "cache not used (--no-cache)"
    parts = probe_cache.key_parts(child_env) if use_cache else None  # the key of what the child actually ran with
    if parts is not None and not refresh:
        entry, cache_why = probe_cache.load(settings, parts)
    elif refresh:
        cache_why = "refresh requested"
    if entry is not None:
        obs = entry["observations"]
        run = dict(entry.get("run") or {})
        run.update({"cached": True, "cache_age_s": round(entry["age_s"], 1), "cache_file": entry["path"],
                    "cache": "hit", "child_elapsed_s": run.get("elapsed_s"), "env_not_applied": withheld})
        run["timeout_s"] = timeout
        try:
            result = build(obs, run, host, child_env)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            # well-typed but inconsistent (a hand-edited entry): a miss, never a verdict
            entry, cache_why = None, f"cache file is damaged ({type(exc).__name__}); probing again"
        else:
            run["elapsed_s"] = round(time.perf_counter() - start, 3)
            return result
    obs, run = run_child(child_env, timeout)
    run.update({"cached": False, "cache_age_s": None, "cache": cache_why, "child_elapsed_s": run.get("elapsed_s"),
                "env_not_applied": withheld})
    run["cache_file"] = None
    if parts is not None and run.get("outcome") == "ok":  # a hang or crash is never cached
        run["cache_file"] = probe_cache.store(settings, parts, obs,
                                              {k: run[k] for k in ("outcome", "elapsed_s") if k in run})
    run["timeout_s"] = timeout
    result = build(obs, run, host, child_env)
    run["elapsed_s"] = round(time.perf_counter() - start, 3)
    return result


# -- outputs ---------------------------------------------------------------------------------

def profile_text(result: ProbeResult) -> str:
    """This host as a profile file (YAML) that `--profile FILE` accepts; sources as comments."""
    import yaml

    if result.facts.platform is None:
        from h3doctor.errors import UsageError

        raise UsageError("cannot save a profile: the platform is unknown (" + result.line("platform").reason + ")")
    out = [f"# h3doctor probe of this host, {time.strftime('%Y-%m-%d %H:%M:%S')}; h3doctor {__version__}",
           "# null = unknown or not applicable here: rules that need it report \"cannot verify\""]
    data = {"description": result.facts.description}
    data.update({k: getattr(result.facts, k) for k in PROFILE_FACTS if k not in PROBE_ONLY_FACTS})
    data.update({k: list(v) for k, v in data.items() if isinstance(v, tuple)})  # YAML lists: a profile's targets
    for key, value in data.items():
        text = yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False).strip()
        if key in PROFILE_FACTS:
            ln = result.line(key)
            out.append(f"# {ln.status}: {ln.reason} [{ln.source}]".replace("\n", " "))
        out.append(text)
    return "\n".join(out) + "\n"


def facts_for_check(launch: Mapping[str, str], *, use_cache: bool = True) -> HardwareFacts:
    """The hardware for `check` without --profile: this host, probed in this process's environment
    with the device selection of the launch's (the caller adds the `VAR=value` words in front of
    the command, e.g. CUDA_VISIBLE_DEVICES). The facts name the launch's variables the probe did
    not apply (`probe_env_not_applied`)."""
    import dataclasses

    from h3doctor.errors import UsageError

    result = probe(os.environ, use_cache=use_cache, launch=launch)
    if result.facts.platform is None:
        raise UsageError(
            "cannot tell which platform sglang would use on this host: " + result.line("platform").reason,
            hint="run `h3doctor probe` for details, or pass --profile NAME|FILE",
        )
    return dataclasses.replace(result.facts, probe_env_not_applied=tuple(result.run.get("env_not_applied", ())))
