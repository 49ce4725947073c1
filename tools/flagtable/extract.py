#!/usr/bin/env python3
"""Generate h3doctor's flag table from sglang's own diffusion argument parser.

Maintainer tool only: h3doctor never imports this module at run time.  It
imports sglang (in a throwaway virtual environment) at generation time, builds
the parsers exactly the way the sglang entry points build them, and writes what
it finds as JSON.  No sglang code is copied into the repository; only data
derived from the live objects is written.

Typical use (see README.md beside this file):

    python3 tools/flagtable/extract.py \
        --wheel path/to/sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl \
        --venv $VENV \
        --output h3doctor/sglang/releasedata/0.5.23/flags.json

With --venv the tool creates/updates that venv, installs the wheel with
--no-deps plus the minimum packages needed to import sglang's diffusion
server-args module, and re-runs itself inside it.  Without --venv it expects
the current interpreter to have sglang installed already.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import importlib.metadata
import importlib.util
import inspect
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1
GENERATOR = "tools/flagtable/extract.py"
HELP_CHARS = 160

# Installed into the throwaway venv before the sglang wheel (which goes in
# with --no-deps).  torch is pinned because an unpinned torch pulls a
# multi-GB CUDA build from the index; 2.14.1 is the version sglang 0.5.23
# pins, and torchvision (imported by sglang.srt.multimodal) needs a matching
# build.  Both lie on the local disk of the project machines.
TORCH_REQUIREMENTS = ["torch==2.14.1", "torchvision==0.29.1"]
# The smallest set found to make
# sglang.multimodal_gen.runtime.entrypoints.cli.{serve,generate} importable.
# Versions pinned where sglang 0.5.23's own metadata pins them.
IMPORT_REQUIREMENTS = [
    "numpy", "pyyaml", "addict", "orjson", "psutil", "pybase64", "requests",
    "packaging", "pillow", "msgspec", "pydantic", "pyzmq", "tqdm", "ipython",
    "aiohttp", "einops", "apache-tvm-ffi==0.1.11", "transformers==5.19.0",
    "dill", "sentencepiece==0.2.1", "compressed-tensors==0.18.0", "gguf",
    "imageio", "imageio-ffmpeg", "diffusers", "cache-dit",
    "python-dateutil<3", "openai==2.8.0", "partial_json_parser", "uvicorn",
    "httpx", "fastapi", "python-multipart",
]
# Older releases import against other pins, and some of them import modules
# that 0.5.23 no longer needs.  RELEASE_REQUIREMENTS[version] is applied on
# top of IMPORT_REQUIREMENTS: a requirement replaces the one with the same
# project name, anything else is added.  Pins follow the wheel's METADATA
# (Requires-Dist) where it pins; huggingface-hub/httpcore/cache-dit are the
# versions found to import with those pins (transformers 5.12.1 requires
# huggingface-hub<2.0).  torch stays at TORCH_REQUIREMENTS for every release
# (0.5.16/0.5.17 pin torch 2.11.0 and 0.5.18-0.5.21 pin 2.13.0, but only
# 2.14.1 is on the local disk, and the parsers build with it).  A release
# missing here gets IMPORT_REQUIREMENTS unchanged, with a warning.
_TRANSFORMERS_5_12 = [
    "transformers==5.12.1", "tokenizers==0.22.2", "openai==2.6.1",
    "huggingface-hub==1.33.0", "httpcore==1.0.9",
    "cloudpickle",  # sglang.multimodal_gen.utils / runtime.models.registry
    "scipy",        # scipy.stats in a flow-match scheduler
]
RELEASE_REQUIREMENTS: dict[str, list[str]] = {
    "0.5.23": [],
    # tokenizers 0.23.3, not the release's own 0.23.2 pin: pip cannot resolve 0.23.2 beside
    # transformers 5.19.0 and huggingface-hub 2.4.0 (tools/conformance/README.md, Older releases)
    "0.5.22": ["openai==2.6.1", "tokenizers==0.23.3", "huggingface-hub==2.4.0", "cache-dit==1.5.1",
               "cloudpickle", "setproctitle"],
    "0.5.21": _TRANSFORMERS_5_12 + ["cache-dit==1.5.1", "xgrammar==0.2.7", "setproctitle"],
    # setproctitle: runtime/managers/gpu_worker.py, imported at package import
    "0.5.20": _TRANSFORMERS_5_12 + ["cache-dit==1.3.0", "xgrammar==0.2.1", "setproctitle"],
    "0.5.19": _TRANSFORMERS_5_12 + ["cache-dit==1.3.0", "xgrammar==0.2.1", "setproctitle"],
    "0.5.18": _TRANSFORMERS_5_12 + ["cache-dit==1.3.0", "xgrammar==0.2.1", "setproctitle"],
    "0.5.17": _TRANSFORMERS_5_12 + ["cache-dit==1.3.0", "xgrammar==0.2.1", "setproctitle"],
    "0.5.16": _TRANSFORMERS_5_12 + ["cache-dit==1.3.0", "xgrammar==0.2.1", "setproctitle"],
}

# The H3 model ids are read from each release's registry: every HF path
# registered with a pipeline config from these modules (minimax_h3,
# minimax_h3_vdn).  Their resolved pipeline config could contribute extra CLI
# flags through add_resolved_pipeline_config_cli_args (0.5.23+; it pre-parses
# sys.argv).  0.5.16 registers none.
H3_CONFIG_MODULE_PREFIX = "sglang.multimodal_gen.configs.pipeline_configs.minimax_h3"
H3_CONFIG_CLASSES = [
    ("sglang.multimodal_gen.configs.pipeline_configs.minimax_h3", "MiniMaxH3PipelineConfig"),
    ("sglang.multimodal_gen.configs.pipeline_configs.minimax_h3", "FastH3PipelineConfig"),
    ("sglang.multimodal_gen.configs.pipeline_configs.minimax_h3", "FastH3OmniPipelineConfig"),
    ("sglang.multimodal_gen.configs.pipeline_configs.minimax_h3_vdn", "VDNH3PipelineConfig"),
]

ACTION_KINDS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_AppendConstAction": "append_const",
    "_CountAction": "count",
    "_HelpAction": "help",
    "_VersionAction": "version",
    "_ExtendAction": "extend",
    "BooleanOptionalAction": "boolean_optional",
    "StoreBoolean": "store_boolean",
}


# --------------------------------------------------------------------------
# bootstrap: wheel + venv, then re-exec inside the venv
# --------------------------------------------------------------------------

def _wheel_version(wheel: Path) -> str:
    # sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl -> 0.5.23
    parts = wheel.name.split("-")
    if len(parts) < 2 or parts[0] != "sglang":
        raise SystemExit(f"not an sglang wheel: {wheel}")
    return parts[1]


def _download_wheel(version: str, dest: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "-d", str(dest), f"sglang=={version}"],
        check=True,
    )
    wheels = sorted(dest.glob(f"sglang-{version}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip download produced no sglang {version} wheel in {dest}")
    return wheels[0]


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _installed_sglang_version(python: Path) -> str | None:
    out = subprocess.run(
        [str(python), "-c",
         "import importlib.metadata as m; print(m.version('sglang'))"],
        capture_output=True, text=True,
    )
    return out.stdout.strip() if out.returncode == 0 else None


def _project_name(requirement: str) -> str:
    name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def import_requirements(version: str) -> list[str]:
    """IMPORT_REQUIREMENTS with RELEASE_REQUIREMENTS[version] applied."""
    if version not in RELEASE_REQUIREMENTS:
        print(f"[extract] warning: no RELEASE_REQUIREMENTS entry for sglang {version}; "
              "using the 0.5.23 import requirements", file=sys.stderr)
    reqs = list(IMPORT_REQUIREMENTS)
    for req in RELEASE_REQUIREMENTS.get(version, []):
        names = [_project_name(r) for r in reqs]
        if _project_name(req) in names:
            reqs[names.index(_project_name(req))] = req
        else:
            reqs.append(req)
    return reqs


def bootstrap(args: argparse.Namespace) -> None:
    venv = Path(args.venv).resolve()
    py = _venv_python(venv)
    if not py.exists():
        print(f"[extract] creating venv {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(py), "-m", "pip", "install", "--quiet"]
    wheel = Path(args.wheel).resolve() if args.wheel else None
    # A venv that holds another sglang release is reused: its wheel is
    # swapped and the release's import requirements are installed over what
    # is there.  The wheel goes in last, so a failed requirement install
    # leaves the old version in place and the next run retries it.
    installed = _installed_sglang_version(py)
    if installed != args.sglang_version:
        print("[extract] installing torch/torchvision (pinned)", file=sys.stderr)
        subprocess.run(pip + TORCH_REQUIREMENTS, check=True)
        if wheel is None:
            wheel = _download_wheel(args.sglang_version, Path(tempfile.mkdtemp()))
        print(f"[extract] installing import requirements for sglang {args.sglang_version}",
              file=sys.stderr)
        subprocess.run(pip + import_requirements(args.sglang_version), check=True)
        if installed is not None:
            print(f"[extract] replacing sglang {installed}", file=sys.stderr)
        print(f"[extract] installing {wheel.name} --no-deps", file=sys.stderr)
        subprocess.run(pip + ["--no-deps", "--force-reinstall", str(wheel)], check=True)
    cmd = [str(py), os.path.abspath(__file__), "--sglang-version", args.sglang_version,
           "--output", os.path.abspath(args.output), "--in-venv"]
    if args.wheel:
        cmd += ["--wheel", str(Path(args.wheel).resolve())]
    os.execv(str(py), cmd)


# --------------------------------------------------------------------------
# JSON encoding helpers
# --------------------------------------------------------------------------

def _plain(v: Any) -> bool:
    """True if json.dumps would give back an equal value."""
    if v is None or isinstance(v, (bool, str, int)):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return False


def to_json(v: Any) -> Any:
    if isinstance(v, enum.Enum):
        out = {"repr": repr(v), "enum": type(v).__name__}
        if _plain(v.value):
            out["value"] = v.value
        return out
    if isinstance(v, tuple) and _plain(list(v)):
        return list(v)
    if _plain(v):
        return v
    return {"repr": repr(v)}


def type_name(t: Any) -> str | None:
    if t is None:
        return None
    if t in (str, int, float):
        return t.__name__
    return getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or repr(t)


def action_kind(action: argparse.Action) -> str:
    name = type(action).__name__
    return ACTION_KINDS.get(name, name)


# --------------------------------------------------------------------------
# building the parsers
# --------------------------------------------------------------------------

class SourceRecorder:
    """Records file:line of every add_argument call while parsers are built."""

    def __init__(self, root: Path):
        self.root = root
        self.by_id: dict[int, str] = {}
        self._calls: dict[Path, dict[int, int]] = {}
        self._orig = None

    def option_line(self, path: Path, call_line: int) -> int:
        """Line of the first option string of the add_argument call that the
        frame reports at call_line (the reference notes cite that line)."""
        if path not in self._calls:
            calls: dict[int, int] = {}
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "add_argument" and node.args):
                    for ln in range(node.lineno, node.end_lineno + 1):
                        calls.setdefault(ln, node.args[0].lineno)
            self._calls[path] = calls
        return self._calls[path].get(call_line, call_line)

    def __enter__(self):
        recorder = self
        orig = argparse._ActionsContainer.add_argument
        self._orig = orig

        def add_argument(container, *a, **kw):
            action = orig(container, *a, **kw)
            frame = inspect.currentframe().f_back
            if frame is not None:
                path = Path(frame.f_code.co_filename).resolve()
                try:
                    rel = path.relative_to(recorder.root)
                except ValueError:
                    rel = None
                if rel is not None:
                    line = recorder.option_line(path, frame.f_lineno)
                    recorder.by_id[id(action)] = f"{rel.as_posix()}:{line}"
            return action

        argparse._ActionsContainer.add_argument = add_argument
        return self

    def __exit__(self, *exc):
        argparse._ActionsContainer.add_argument = self._orig
        return False


@contextlib.contextmanager
def fake_argv(argv: list[str]):
    # add_resolved_pipeline_config_cli_args pre-parses sys.argv[1:], so the
    # parser depends on the command line; build it for a neutral one.
    saved = sys.argv
    sys.argv = list(argv)
    try:
        yield
    finally:
        sys.argv = saved


def build_parsers(recorder: SourceRecorder, argv: list[str]) -> dict[str, argparse.ArgumentParser]:
    from sglang.multimodal_gen.runtime.entrypoints.cli.generate import (
        add_multimodal_gen_generate_args,
    )
    from sglang.multimodal_gen.runtime.entrypoints.cli.serve import (
        add_multimodal_gen_serve_args,
    )
    from sglang.multimodal_gen.runtime.server_args import ServerArgs

    FlexibleArgumentParser = flexible_argument_parser()
    parsers = {}
    with fake_argv(argv), recorder:
        # sglang serve (cli/serve.py:_run_diffusion): plain ArgumentParser,
        # then add_multimodal_gen_serve_args (--config, ServerArgs, resolved
        # pipeline-config extras), then parse_known_args.
        p = argparse.ArgumentParser(description="SGLang Diffusion Model Serving")
        add_multimodal_gen_serve_args(p)
        parsers["serve"] = p
        # sglang generate (cli/generate.py:generate)
        p = argparse.ArgumentParser(description="SGLang Multimodal Generation")
        add_multimodal_gen_generate_args(p)
        parsers["generate"] = p
        # python -m sglang.multimodal_gen.runtime.launch_server
        # (server_args.py:prepare_server_args)
        p = FlexibleArgumentParser()
        ServerArgs.add_cli_args(p)
        parsers["launch_server"] = p
    return parsers


def flexible_argument_parser():
    # runtime/utils/argparse.py from 0.5.20; sglang/multimodal_gen/utils.py before.
    try:
        from sglang.multimodal_gen.runtime.utils.argparse import FlexibleArgumentParser
    except ImportError:
        from sglang.multimodal_gen.utils import FlexibleArgumentParser
    return FlexibleArgumentParser


def long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings]


def describe_action(action: argparse.Action, sources: dict[int, str]) -> dict[str, Any]:
    help_text = action.help
    if isinstance(help_text, str):
        help_text = help_text[:HELP_CHARS]
    return {
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "action": action_kind(action),
        "nargs": action.nargs,
        "type": type_name(action.type),
        "choices": None if action.choices is None else [to_json(c) for c in action.choices],
        "default": to_json(action.default),
        "const": to_json(action.const),
        "required": bool(action.required),
        "help": help_text,
        "source": sources.get(id(action)),
    }


# --------------------------------------------------------------------------
# ServerArgs / PipelineConfig introspection
# --------------------------------------------------------------------------

def dataclass_defaults(cls) -> tuple[dict[str, Any], list[str]]:
    out: dict[str, Any] = {}
    non_init: list[str] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            non_init.append(f.name)
        if f.default is not dataclasses.MISSING:
            out[f.name] = to_json(f.default)
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            factory = f.default_factory  # type: ignore[misc]
            entry: dict[str, Any] = {"factory": type_name(factory)}
            try:
                value = factory()
            except Exception:  # noqa: BLE001 - best effort only
                value = None
            else:
                if _plain(value) or (isinstance(value, tuple) and _plain(list(value))):
                    entry["value"] = to_json(value)
            out[f.name] = entry
        else:
            # no default: the dataclass needs a value (e.g. model_path)
            out[f.name] = {"repr": "<no default>", "required": True}
    return out, sorted(non_init)


def _string_constants(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _keyword_constant(tree: ast.AST, name: str, default: Any) -> Any:
    for n in ast.walk(tree):
        if isinstance(n, ast.keyword) and n.arg == name and isinstance(n.value, ast.Constant):
            return n.value.value
    return default


def _source_ref(obj, root: Path) -> str | None:
    try:
        path = Path(inspect.getsourcefile(obj)).resolve()
        line = inspect.getsourcelines(obj)[1]
        return f"{path.relative_to(root).as_posix()}:{line}"
    except (TypeError, OSError, ValueError):
        return None


# Component names probed for aliases that the argparse parser claims first
# (exact option or unique abbreviation), so the dynamic alias never applies.
PROBE_COMPONENTS = ["transformer", "transformer_2", "text_encoder", "text_encoder_2",
                    "image_encoder", "vae", "video_vae", "audio_vae", "tokenizer",
                    "scheduler"]


def _claimed_by_parser(parser: argparse.ArgumentParser, option: str) -> str | None:
    """dest that parse_known_args assigns `option` to, or None if unknown."""
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns, unknown = parser.parse_known_args([option, "probe-value"])
    except SystemExit:
        return "<argparse error: " + err.getvalue().strip().splitlines()[-1] + ">"
    if option in unknown:
        return None
    for k, v in vars(ns).items():
        if v == "probe-value" or v == ["probe-value"]:
            return k
    return "<claimed>"


def component_map_flags(ServerArgs, root: Path,
                        serve: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """The dynamic per-component flags that from_cli_args pulls out of the
    unknown args.  Prefixes and alias suffixes are read from the extractor
    methods' source; how values are consumed is established by calling the
    real extractor methods on probe inputs."""
    src = inspect.getsource(ServerArgs.from_cli_args)
    # (0.5.16-0.5.18 have two of these methods, 0.5.19+ seven.)
    order = re.findall(r"cls\.(_extract_component_\w+)\(", src)
    field_names = {f.name for f in dataclasses.fields(ServerArgs)}
    out = []
    for position, name in enumerate(order):
        fn = getattr(ServerArgs, name)
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        prefixes = [s for s in dict.fromkeys(_string_constants(tree))
                    if s.startswith("--") and s.endswith(".")]
        if not prefixes:
            raise SystemExit(f"could not find option prefixes in ServerArgs.{name}")
        dash = [p for p in prefixes if "_" not in p] or prefixes
        prefix = dash[0]
        dest = prefix[2:-1].replace("-", "_")
        if dest not in field_names:
            raise SystemExit(f"{name}: derived dest {dest!r} is not a ServerArgs field")
        alias_suffix = _keyword_constant(tree, "alias_suffix", None)
        # Up to 0.5.18 the methods parse argv themselves instead of passing
        # alias_suffix= to _extract_dynamic_component_map; there the alias
        # suffix is a string literal like "-path" (endswith), probed below.
        suffix_candidates = [alias_suffix] if alias_suffix is not None else []
        if not any(isinstance(n, ast.keyword) and n.arg == "alias_suffix"
                   for n in ast.walk(tree)):
            suffix_candidates = [s for s in dict.fromkeys(_string_constants(tree))
                                 if len(s) > 1 and s.startswith("-")
                                 and not s.startswith("--")]
        expand_values = _keyword_constant(tree, "expand_values", True)

        # --- probes against the real method ---
        def call(argv):
            return fn(list(argv))

        c = "probe-comp"
        ck = "probe_comp"
        vals, rest = call([prefix + c, "v1", "v2"])
        if vals == {ck: ["v1", "v2"]} and rest == []:
            value = "many"
        elif vals == {ck: "v1"} and rest == ["v2"]:
            value = "one"
        elif vals == {ck: True} and rest == ["v1", "v2"]:
            v2, r2 = call([prefix + c, "FALSE"])
            if v2 == {ck: False} and r2 == []:
                value = "bool_optional"
            else:
                value = "unknown"
        else:
            value = "unknown"
        vals, rest = call([prefix + c])
        bare = "error" if rest == [prefix + c] else ("true" if vals == {ck: True} else "unknown")
        vals, rest = call([prefix + c, "-x"])
        dash_value = "not_consumed" if rest[:1] == [prefix + c] or vals.get(ck) is True else "consumed"
        vals, _ = call([prefix + c + "=a,b"])
        equals_value = to_json(vals.get(ck)) if vals else None
        accepted = [p for p in prefixes if call([p + c, "true"])[0]]
        alias = None
        for suffix in suffix_candidates:
            vals, rest = call(["--" + c + suffix, "true"])
            if vals.get(ck) in ("true", True) and rest == []:
                alias = "--{c}" + suffix
                break
        shadowed = {}
        if alias is not None:
            for comp in PROBE_COMPONENTS:
                opt = alias.format(c=comp.replace("_", "-"))
                dest_claim = _claimed_by_parser(serve, opt)
                if dest_claim is not None:
                    shadowed[opt] = dest_claim
        home_probe = call([prefix + c, "~/x"])[0].get(ck)
        expands = isinstance(home_probe, str) and not home_probe.startswith("~")

        out.append({
            "prefix": prefix,
            "prefix_spellings": accepted,
            "alias": alias,
            "alias_shadowed_by_parser": shadowed,
            "dest": dest,
            "value": value,
            "bare_flag": bare,
            "dash_value": dash_value,
            "equals_probe": {"argv": prefix + "c=a,b", "value": equals_value},
            "expanduser": expands,
            "expand_values_kwarg": expand_values,
            "extract_order": position,
            "method": name,
            "source": _source_ref(fn, root),
        })
    return out


def removed_config_keys(ServerArgs) -> tuple[list[str], dict[str, str]]:
    fn = getattr(ServerArgs, "_reject_retired_args", None)
    if fn is None:  # added in 0.5.18
        return [], {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    keys: list[str] = []
    repl: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                    keys.append(k.value)
                    repl[k.value] = v.value
    confirmed = []
    for k in keys:
        try:
            fn({k: 1})
        except ValueError:
            confirmed.append(k)
    return confirmed, {k: repl[k] for k in confirmed}


def pipeline_config_info(absent: list[str]) -> dict[str, Any]:
    import importlib

    from sglang.multimodal_gen.configs.pipeline_configs.base import PipelineConfig

    # update_config_from_dict excludes these two from the flat update.
    excluded = {"task_type", "supported_task_types"}
    base = [f.name for f in dataclasses.fields(PipelineConfig) if f.name not in excluded]
    extra: dict[str, list[str]] = {}
    for module, cls_name in H3_CONFIG_CLASSES:
        if importlib.util.find_spec(module) is None or not hasattr(
                importlib.import_module(module), cls_name):
            # not in this release (minimax_h3 from 0.5.17, FastH3 and VDN-H3
            # from 0.5.20, FastH3 Omni from 0.5.23)
            absent.append(f"{module}.{cls_name}")
            continue
        cls = getattr(importlib.import_module(module), cls_name)
        names = [f.name for f in dataclasses.fields(cls)
                 if f.name not in excluded and f.name not in base]
        extra[cls_name] = sorted(names)
    return {"base": sorted(base), "h3_extra": extra}


def h3_model_ids() -> list[str]:
    """HF model ids that this release registers with an H3 pipeline config."""
    from sglang.multimodal_gen import registry

    ensure = getattr(registry, "_ensure_registry_initialized", None)  # 0.5.21+
    if ensure is not None:
        ensure()
    ids = []
    for path, key in registry._MODEL_HF_PATH_TO_NAME.items():
        info = registry._CONFIG_REGISTRY.get(key)
        cls = getattr(info, "pipeline_config_cls", None)
        if cls is not None and cls.__module__.startswith(H3_CONFIG_MODULE_PREFIX):
            ids.append(path)
    return sorted(ids)


# --------------------------------------------------------------------------
# main extraction
# --------------------------------------------------------------------------

def extract(sglang_version: str) -> dict[str, Any]:
    installed = importlib.metadata.version("sglang")
    if installed != sglang_version:
        raise SystemExit(f"installed sglang is {installed}, expected {sglang_version}")

    warnings.simplefilter("ignore")
    import sglang

    pkg_root = Path(sglang.__file__).resolve().parent
    root = pkg_root / "multimodal_gen"

    from sglang.multimodal_gen.runtime.server_args import ServerArgs

    recorder = SourceRecorder(root)
    neutral = build_parsers(recorder, ["sglang"])
    serve = neutral["serve"]
    common = set(long_options(neutral["launch_server"]))

    parsers_meta: dict[str, Any] = {}
    for name, parser in neutral.items():
        opts = long_options(parser)
        parsers_meta[name] = {
            "extra": [o for o in opts if o not in common],
            "missing": sorted(common - set(opts)),
            "parser_class": type(parser).__name__,
            "allow_abbrev": parser.allow_abbrev,
        }

    # Hooks and classes of 0.5.23 that this release does not have; written
    # to the table only when the list is not empty.
    absent: list[str] = []
    if importlib.util.find_spec("sglang.multimodal_gen.runtime.entrypoints.cli.utils") is None \
            or not hasattr(importlib.import_module(
                "sglang.multimodal_gen.runtime.entrypoints.cli.utils"),
                "add_resolved_pipeline_config_cli_args"):
        absent.append("add_resolved_pipeline_config_cli_args")  # 0.5.23+
    if not hasattr(ServerArgs, "_reject_retired_args"):
        absent.append("ServerArgs._reject_retired_args")  # 0.5.18+

    # add_resolved_pipeline_config_cli_args may add flags for the model on
    # the command line; record what it adds for each H3 model id.
    # (For every H3 id the registry resolves a pipeline whose config has no
    # add_pipeline_cli_args hook, so these lists are expected to be empty;
    # before 0.5.23 the serve parser does not depend on argv at all.)
    from sglang.multimodal_gen.registry import get_non_diffusers_pipeline_name

    base_serve = set(long_options(serve))
    parsers_meta["serve"]["model_extra"] = {}
    for model in h3_model_ids():
        model_parsers = build_parsers(SourceRecorder(root),
                                      ["sglang", "serve", "--model-path", model])
        added = [o for o in long_options(model_parsers["serve"]) if o not in base_serve]
        parsers_meta["serve"]["model_extra"][model] = {
            "pipeline": get_non_diffusers_pipeline_name(model),
            "extra": added,
        }

    # serve's actions, then the ones only `sglang generate` registers (its sampling flags);
    # the loader assigns each action to the entry points whose parsers list it.
    actions = [describe_action(a, recorder.by_id) for a in serve._actions]
    serve_options = set(long_options(serve))
    for action in neutral["generate"]._actions:
        if action.option_strings and not set(action.option_strings) & serve_options:
            actions.append(describe_action(action, recorder.by_id))

    defaults, non_init = dataclass_defaults(ServerArgs)
    removed, removed_repl = removed_config_keys(ServerArgs)
    pc = pipeline_config_info(absent)

    out = {
        "format_version": FORMAT_VERSION,
        "sglang_version": sglang_version,
        "generator": GENERATOR,
        "source_root": "sglang/multimodal_gen",
        "allow_abbrev": serve.allow_abbrev,
        "parsers": parsers_meta,
        "actions": actions,
        "dataclass_defaults": defaults,
        "dataclass_non_init_fields": non_init,
        "pipeline_config_fields": pc["base"],
        "pipeline_config_extra_fields": pc["h3_extra"],
        "component_map_flags": component_map_flags(ServerArgs, root, serve),
        "removed_config_keys": removed,
        "removed_config_key_replacements": removed_repl,
    }
    if absent:
        out["absent_in_release"] = absent
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sglang-version", help="sglang version (default: from --wheel)")
    ap.add_argument("--wheel", help="path to the sglang wheel to install into --venv")
    ap.add_argument("--venv", help="throwaway venv to create/use and re-run in")
    ap.add_argument("--output", required=True, help="JSON file to write")
    ap.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.wheel and not args.sglang_version:
        args.sglang_version = _wheel_version(Path(args.wheel))
    if not args.sglang_version:
        ap.error("give --sglang-version or --wheel")
    if args.wheel and _wheel_version(Path(args.wheel)) != args.sglang_version:
        ap.error("--wheel does not match --sglang-version")

    if args.venv and not args.in_venv:
        bootstrap(args)  # does not return

    data = extract(args.sglang_version)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    print(f"[extract] wrote {out} ({len(data['actions'])} actions)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
