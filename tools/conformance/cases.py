"""Seeded, reproducible `sglang serve` launch cases for the conformance goldens.

Pure standard library: used by record.py (outside and inside the sglang venv) and readable by
the CI test. `generate(seed, count)` returns the same list for the same arguments on every
machine and Python >= 3.10 (only `random.Random(seed)` with explicit choices is used; no set or
dict iteration order leaks into the output).

A case is a dict:

    {"id": "g0001", "profile": "4xH200", "argv": [...tokens after `sglang serve`...],
     "files": [{"name": "cfg-g0001.yaml", "text": "..."}]}      # files: optional

`argv` never contains the `sglang serve` prefix. Config files are referred to by a relative
name; the recorder and the test write them into the working directory first.
"""

from __future__ import annotations

import json
import random
from typing import Any

GENERATOR_VERSION = 1
DEFAULT_SEED = 20260523
DEFAULT_COUNT = 1680

# built-in h3doctor profiles (h3doctor/host/builtin_profiles/*.json) and their visible GPU count
PROFILES = {
    "1xH200": 1, "4xH200": 4, "8xH200": 8, "1xH100": 1, "8xH100": 8, "1xA100": 1, "1xL40S": 1,
    "1xRTX5090": 1, "4xB200": 4, "m3-max": 1, "m4-pro": 1, "cpu": 0,
}
MPS_PROFILES = ("m3-max", "m4-pro")

MODELS = {
    "h3": ["MiniMaxAI/MiniMax-H3", "MiniMaxAI/MiniMax-H3", "MiniMaxAI/MiniMax-H3", "MiniMax/MiniMax-H3"],
    "fh3": ["FastVideo/FastVideo-FastH3-8-Step-V2"],
    "fh3o": ["FastVideo/FastVideo-FastH3-Omni-8-Step-V1"],
    "vdn": ["OpenVDN/vdn-minimax-h3"],
}
FAMILY_WEIGHTS = [("h3", 50), ("fh3", 17), ("fh3o", 13), ("vdn", 20)]

VALID_BACKENDS = [
    "fa", "fa", "fa", "torch_sdpa", "torch_sdpa", "sage_attn", "sage_attn", "fa2", "sage_attn_3",
    "sparge_attn", "video_sparse_attn", "video_sparse_attn_h3", "video_sparse_attn_h3",
    "hybrid_window_attn_h3", "hybrid_window_attn_h3", "subblock_sparse_attn", "cube_sparse_attn",
    "fp8_fa_sm120", "torch_cudnn_sdpa", "dynamic_cudnn_sdpa", "aiter", "laser_attn",
    "sliding_tile_attn", "vmoba_attn", "sla_attn", "no_attention",
]
ALIAS_BACKENDS = ["fa3", "fa4", "fa3", "FA", "Fa"]
INVALID_BACKENDS = ["FA3", "FA4", "flash", "sage", "xformers", "cudnn_sdpa", "sdpa", "flash_attn", "fa5", "auto"]
COMPONENT_BACKENDS = ["fa", "torch_sdpa", "sage_attn", "video_sparse_attn_h3", "hybrid_window_attn_h3",
                      "fa3", "cudnn_sdpa", "FA", "flash", "subblock_sparse_attn"]

LAYERWISE_SETS = [
    ["transformer", "text_encoder", "video_vae", "audio_vae"],
    ["transformer", "text_encoder", "video_vae", "audio_vae"],
    ["all"], ["default"], ["dit", "text_encoder", "vae", "audio_vae"], ["vae"], ["transformer"],
    ["transformer,text_encoder,video_vae,audio_vae"], ["dit", "text_encoder"], ["none"],
]
RESIDENCY_SETS = [
    ["all=layerwise-offload"], ["all=layerwise-offload"], ["transformer=resident"],
    ["dit=component-offload"], ["vae=snapshot-offload"], ["text_encoder=layerwise_offload"],
    ["transformer=snapshot-offload"], ["all=resident"], ["transformer=layerwise-offload"],
    ["all=component-offload"], ["transformer=foo"], ["transformer"],
    ["all=resident", "transformer=layerwise-offload"], ["dit=layerwise-offload,vae=resident"],
    ["audio_vae=layerwise-offload"],
]
BOOL_VALUES = [None, None, "true", "false"]  # None: bare flag
BAD_BOOL_VALUES = ["yes", "0", "1", "True", "FALSE", "on"]


def _pick_weighted(rng: random.Random, pairs):
    total = sum(w for _, w in pairs)
    x = rng.randrange(total)
    for value, weight in pairs:
        if x < weight:
            return value
        x -= weight
    raise AssertionError


def _bool_flag(rng: random.Random, flag: str, bad_rate: float = 0.08) -> list[str]:
    if rng.random() < bad_rate:
        return [flag, rng.choice(BAD_BOOL_VALUES)]
    value = rng.choice(BOOL_VALUES)
    if value is None:
        return [flag]
    if rng.random() < 0.2:
        return [f"{flag}={value}"]
    return [flag, value]


def _degree(rng: random.Random) -> int:
    return rng.choice([1, 2, 2, 2, 4, 4, 8])


def _parallel(rng: random.Random, visible: int) -> list[str]:
    out: list[str] = []
    r = rng.random()
    if r < 0.22:
        num = None
    elif r < 0.55:
        num = max(visible, 1)
    elif r < 0.95:
        num = rng.choice([1, 2, 4, 8])
    else:
        num = rng.choice([3, 6, 16])
    if num is not None:
        out += ["--num-gpus", str(num)]
    n = num or 1
    policy = _pick_weighted(rng, [("none", 38), ("ulysses", 14), ("ring", 12), ("both", 12),
                                  ("sp", 10), ("tp", 8), ("kv", 3), ("junk", 3)])
    consistent = rng.random() < 0.55
    if policy == "ulysses":
        out += ["--ulysses-degree", str(n if consistent else _degree(rng))]
    elif policy == "ring":
        out += ["--ring-degree", str(n if consistent else _degree(rng))]
    elif policy == "both":
        if consistent and n >= 2:
            ring = rng.choice([d for d in (2, 4) if n % d == 0] or [2])
            ulysses = max(n // ring, 1)
        else:
            ring, ulysses = _degree(rng), _degree(rng)
        out += ["--ulysses-degree", str(ulysses), "--ring-degree", str(ring)]
        if rng.random() < 0.3:
            out += ["--sp-degree", str(ring * ulysses if consistent else _degree(rng))]
    elif policy == "sp":
        sp = n if consistent else _degree(rng)
        out += ["--sp-degree", str(sp)]
        extra = rng.random()
        if extra < 0.3:
            out += ["--ulysses-degree", str(sp if consistent else _degree(rng))]
        elif extra < 0.5:
            out += ["--ring-degree", str(sp if consistent else _degree(rng))]
    elif policy == "tp":
        tp = rng.choice([1, 2, 2, 4, 8])
        out += ["--tp-size", str(tp)]
        if rng.random() < 0.4:
            out += ["--sp-degree", str(max(n // tp, 1) if consistent else _degree(rng))]
    elif policy == "kv":
        out += ["--kv-gather-degree", str(rng.choice([2, 2, 4]))]
        if rng.random() < 0.4:
            out += ["--ulysses-degree", "2"]
    elif policy == "junk":
        out += [rng.choice(["--ulysses-degree", "--ring-degree", "--tp-size", "--num-gpus"]),
                rng.choice(["0", "-1", "two", "1.5"])]
    r = rng.random()
    if r < 0.03:
        out += _bool_flag(rng, "--enable-cfg-parallel", 0.0)
    elif r < 0.05:
        out += ["--cfg-parallel-size", rng.choice(["1", "2"])]
    elif r < 0.07:
        out += [rng.choice(["--dp-size", "--data-parallel-size", "--dp"]), rng.choice(["1", "2"])]
    return out


def _attention(rng: random.Random, family: str) -> list[str]:
    out: list[str] = []
    r = rng.random()
    if r < 0.47:
        pass
    elif r < 0.82:
        out += ["--attention-backend", rng.choice(VALID_BACKENDS)]
    elif r < 0.88:
        out += ["--attention-backend", rng.choice(ALIAS_BACKENDS)]
    else:
        out += ["--attention-backend", rng.choice(INVALID_BACKENDS)]
    if rng.random() < 0.13:
        comp = rng.choice(["transformer", "transformer", "transformer", "text_encoder", "text-encoder"])
        value = rng.choice(COMPONENT_BACKENDS)
        form = rng.random()
        if form < 0.5:
            out += ["--component-attention-backends", f"{comp}={value}"]
        elif form < 0.85:
            out += [f"--component-attention-backends.{comp}", value]
        else:
            out += ["--component-attention-backends", json.dumps({comp: value})]
    if rng.random() < (0.12 if family == "vdn" else 0.05):
        out += ["--attention-backend-config", rng.choice([
            "vdn_h3_dense_smoke=true", '{"vdn_h3_dense_smoke": true}', "compute_mode=sage_fp8",
            "compute_mode=bf16", "compute_mode=fp4", "vdn_h3_dense_smoke=false"])]
    return out


def _residency(rng: random.Random, mps: bool) -> list[str]:
    out: list[str] = []
    p = 0.55 if mps else 0.3
    if rng.random() >= p:
        return out
    for _ in range(1 if rng.random() < 0.75 else 2):
        kind = _pick_weighted(rng, [("layerwise", 35 if mps else 18), ("residency", 20), ("dit_lw", 8),
                                    ("cpu", 10), ("cpu_components", 7), ("fsdp", 4), ("direct", 7)])
        if kind == "layerwise":
            out += [rng.choice(["--layerwise-offload-components", "--layerwise-offload-components",
                                "--layerwise-offload-modules"]), *rng.choice(LAYERWISE_SETS)]
        elif kind == "residency":
            out += ["--component-residency", *rng.choice(RESIDENCY_SETS)]
        elif kind == "dit_lw":
            out += _bool_flag(rng, "--dit-layerwise-offload", 0.0)
        elif kind == "cpu":
            flag = rng.choice(["--dit-cpu-offload", "--text-encoder-cpu-offload", "--vae-cpu-offload"])
            out += [flag, rng.choice(["true", "false"])]
        elif kind == "cpu_components":
            out += ["--cpu-offload-components", *rng.choice([["none"], ["all"], ["dit"], ["none", "dit"],
                                                             ["text_encoder", "vae"]])]
        elif kind == "fsdp":
            out += _bool_flag(rng, "--use-fsdp-inference", 0.0)
        else:
            out += _bool_flag(rng, "--direct-gpu-weight-loading", 0.0)
    return out


def _misc(rng: random.Random, family: str, mps: bool) -> list[str]:
    out: list[str] = []
    if rng.random() < (0.3 if mps else 0.16):
        out += _bool_flag(rng, "--enable-torch-compile")
    if rng.random() < 0.05:
        out += _bool_flag(rng, "--enable-breakable-cuda-graph", 0.0)
    r = rng.random()
    if r < 0.25:
        flag = "--mode" if rng.random() < 0.25 else "--performance-mode"
        out += [flag, rng.choice(["speed", "speed", "memory", "memory", "auto", "manual"])]
    elif r < 0.27:
        out += ["--performance-mode", rng.choice(["fast", "low-memory"])]
    if rng.random() < (0.14 if family == "h3" else 0.06):
        out += ["--model-variant", rng.choice(["fl2va", "fl2va", "ref2va", "hybrid", "FL2VA", "t2va"])]
    if rng.random() < 0.05:
        out += ["--vae-config.parallel-decode-mode", rng.choice(["tiled", "patch", "spatial", "spatial_shard",
                                                                  "auto", "fast"])]
    if rng.random() < (0.1 if family == "vdn" else 0.04):
        out += ["--quantization", rng.choice(["fp8", "none", "bf16", "mxfp8", "NONE"])]
    if rng.random() < 0.05:
        out += ["--warmup-mode", rng.choice(["off", "request", "server", "never"])]
    if rng.random() < 0.02:
        out += ["--disagg-role", rng.choice(["encoder", "monolithic", "denoiser"])]
    if rng.random() < 0.03:
        out += ["--text-encoder-precisions", *rng.choice([["bf16"], ["bf16", "fp16"], ["fp32"]])]
    if rng.random() < 0.04:
        out += rng.choice([["--attention_backend", "fa"], ["--num_gpus", "2"], ["--ring", "2"],
                           ["--ulysses", "2"], ["--enable-torch-compil"], ["--performance_mode", "speed"],
                           ["--warmup", "server"], ["--dit-layerwise", "true"]])
    return out


def _config_file(rng: random.Random, case_id: str) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    choices = [
        ("num_gpus", [1, 2, 4, 8]),
        ("attention_backend", ["fa", "sage_attn", "torch_sdpa", "FA3", "hybrid_window_attn_h3"]),
        ("enable_torch_compile", [True, False, "false", "true"]),
        ("layerwise_offload_components", [["transformer", "text_encoder", "video_vae", "audio_vae"], ["all"],
                                          ["default"]]),
        ("performance_mode", ["speed", "memory", "fast"]),
        ("warmup", [True]),
        ("component_attention_backends", [{"transformer": "fa"}, {"transformer": "torch_sdpa"}]),
        ("ring_degree", [1, 2]),
        ("ulysses_degree", [1, 2, 4]),
        ("model_variant", ["fl2va", "ref2va"]),
        ("attention-backend", ["fa"]),
        ("warmup_mode", ["server", "never"]),
    ]
    for _ in range(rng.choice([1, 1, 2, 3])):
        key, values = rng.choice(choices)
        keys[key] = rng.choice(values)
    suffix = _pick_weighted(rng, [("yaml", 55), ("json", 35), ("yml", 5), ("toml", 5)])
    if suffix == "json":
        text = json.dumps(keys, sort_keys=True) + "\n"
    else:
        text = _to_yaml(keys)
    return {"name": f"cfg-{case_id}.{suffix}", "text": text}


def _to_yaml(mapping: dict[str, Any]) -> str:
    lines = []
    for key in sorted(mapping):
        value = mapping[key]
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {v}" for k, v in sorted(value.items())]
        elif isinstance(value, list):
            lines.append(f"{key}: [{', '.join(value)}]")
        elif isinstance(value, bool):
            lines.append(f"{key}: {'true' if value else 'false'}")
        elif isinstance(value, str) and value in ("true", "false"):
            lines.append(f'{key}: "{value}"')  # a quoted YAML string, not a boolean
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


def _model_tokens(rng: random.Random, model: str) -> tuple[list[str], bool]:
    r = rng.random()
    if r < 0.8:
        return [model], True
    if r < 0.95:
        return ["--model-path", model], False
    return [f"--model-path={model}"], False


def generate_one(rng: random.Random, case_id: str) -> dict[str, Any]:
    profile = rng.choice(sorted(PROFILES))
    family = _pick_weighted(rng, FAMILY_WEIGHTS)
    model = rng.choice(MODELS[family])
    mps = profile in MPS_PROFILES
    head, positional = _model_tokens(rng, model)
    groups = [_parallel(rng, PROFILES[profile]), _attention(rng, family), _residency(rng, mps),
              _misc(rng, family, mps)]
    # the groups' order on the command line is shuffled (argparse is order-insensitive except
    # for repeated flags, which this keeps together)
    order = list(range(len(groups)))
    rng.shuffle(order)
    argv = list(head)
    for i in order:
        argv += groups[i]
    if not positional and rng.random() < 0.3 and len(argv) > 2:
        argv = argv[2:] + argv[:2] if argv[0] == "--model-path" else argv
    case: dict[str, Any] = {"id": case_id, "profile": profile, "argv": argv}
    if rng.random() < 0.08:
        cfg = _config_file(rng, case_id)
        case["files"] = [cfg]
        case["argv"] = argv + ["--config", cfg["name"]]
    return case


# Hand-picked launches, each run on every profile: the catalog's seed scenarios and the
# commands users type most.
ANCHORS = [
    "MiniMaxAI/MiniMax-H3",
    "MiniMaxAI/MiniMax-H3 --num-gpus {n}",
    "MiniMaxAI/MiniMax-H3 --num-gpus 4",
    "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2 --attention-backend sage_attn",
    "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2 --ring-degree 2",
    "MiniMaxAI/MiniMax-H3 --num-gpus 4 --ulysses-degree 2",
    "MiniMaxAI/MiniMax-H3 --layerwise-offload-components transformer text_encoder video_vae audio_vae",
    "MiniMaxAI/MiniMax-H3 --enable-torch-compile",
    "MiniMaxAI/MiniMax-H3 --performance-mode speed --num-gpus {n}",
    "MiniMaxAI/MiniMax-H3 --performance-mode memory",
    "MiniMaxAI/MiniMax-H3 --direct-gpu-weight-loading",
    "MiniMaxAI/MiniMax-H3 --attention-backend FA3",
    "FastVideo/FastVideo-FastH3-8-Step-V2 --num-gpus {n}",
    "FastVideo/FastVideo-FastH3-Omni-8-Step-V1 --model-variant ref2va",
    "OpenVDN/vdn-minimax-h3 --num-gpus {n}",
    "OpenVDN/vdn-minimax-h3 --num-gpus 2 --ring-degree 2",
    "--num-gpus {n}",
    "--model-type diffusion MiniMaxAI/MiniMax-H3 --num-gpus {n}",
    "--model MiniMaxAI/MiniMax-H3",
]


def anchors() -> list[dict[str, Any]]:
    """Every anchor on every profile, minus repeats (`--num-gpus {n}` is `--num-gpus 4` on 4-GPU hosts)."""
    out = []
    seen = set()
    for i, template in enumerate(ANCHORS):
        for profile in sorted(PROFILES):
            argv = template.format(n=max(PROFILES[profile], 1)).split()
            if case_key(profile, argv, None) in seen:
                continue
            seen.add(case_key(profile, argv, None))
            out.append({"id": f"a{i:02d}-{profile}", "profile": profile, "argv": argv})
    return out


def generate(seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT) -> list[dict[str, Any]]:
    """Anchors first, then `count` random cases; ids are stable for a given seed."""
    rng = random.Random(seed)
    cases = anchors()
    seen = {case_key(c["profile"], c["argv"], c.get("files")) for c in cases}
    n = 0
    attempts = 0
    while n < count:
        attempts += 1
        if attempts > count * 20:
            raise RuntimeError("the generator keeps producing duplicates")
        case = generate_one(rng, f"g{n + 1:04d}")
        key = case_key(case["profile"], case["argv"], case.get("files"))
        if key in seen:
            continue
        seen.add(key)
        cases.append(case)
        n += 1
    return cases


def fsdp_suite(version: str | None = None) -> list[dict[str, Any]]:
    """--use-fsdp-inference x performance mode x GPU count x free memory (below and above the
    auto-tuner's 120 GiB rule), for the residency sglang resolves (issue: memory fit, item 0)."""
    cases: list[dict[str, Any]] = []
    n = 0
    for profile in ("8xH100", "4xH200", "4xB200"):
        for gpus in (1, 2, 4):
            for mode in ("auto", "speed", "memory", "manual"):
                for fsdp in (["--use-fsdp-inference"], ["--use-fsdp-inference", "false"]):
                    n += 1
                    argv = ["MiniMaxAI/MiniMax-H3", "--num-gpus", str(gpus), "--performance-mode", mode, *fsdp]
                    if gpus > 1:
                        argv += ["--ulysses-degree", str(gpus)]
                    cases.append({"id": f"f{n:03d}", "profile": profile, "argv": argv})
    extras = [
        ["--num-gpus", "2", "--tp-size", "2", "--use-fsdp-inference"],
        ["--num-gpus", "2", "--ring-degree", "2", "--use-fsdp-inference"],
        ["--num-gpus", "4", "--dp-size", "2", "--ulysses-degree", "2", "--use-fsdp-inference"],
        ["--num-gpus", "2", "--ulysses-degree", "2", "--use-fsdp-inference", "--dit-cpu-offload", "true"],
        ["--num-gpus", "2", "--ulysses-degree", "2", "--use-fsdp-inference", "--dit-cpu-offload", "false"],
    ]
    for profile in ("8xH100", "4xH200"):
        for extra in extras:
            n += 1
            cases.append({"id": f"f{n:03d}", "profile": profile, "argv": ["MiniMaxAI/MiniMax-H3", *extra]})
    return cases


BOUNDARY_LAUNCH = ["MiniMaxAI/MiniMax-H3", "--num-gpus", "4"]  # the default 4xH200 launch
BOUNDARY_PROFILE = "4xH200"
BOUNDARY_INT_VALUES = ("-1", "0", "1", "3", "100000")
BOUNDARY_FLOAT_VALUES = (*BOUNDARY_INT_VALUES, "nan", "inf")
# values sglang's launch checks accept but that cannot run (issue 22 item 2), beside the grid
BOUNDARY_EXTRAS = [
    ["--tp-size", "-4"], ["--ulysses-degree", "-2", "--ring-degree", "-2"], ["--hsdp-shard-dim", "-4"],
    ["--cfg-parallel-size", "-2"], ["--sp-degree", "-4", "--ulysses-degree", "-4"],
]


def boundary_flags(version: str) -> list[tuple[str, str]]:
    """(option, "int"/"float") of every int/float flag of `sglang serve` in that release's flag
    table, in the table's order: the serve parser's options as h3doctor.sglang.flagtable builds
    them; the option is the action's first spelling."""
    from h3doctor.sglang.flagtable import load_flag_table

    first: dict[int, tuple[str, str]] = {}  # one row per action, at its first option
    for opt, action in load_flag_table(version).options_for("serve").items():
        if action.type in ("int", "float"):
            first.setdefault(id(action), (opt, action.type))
    return list(first.values())


def boundary_suite(version: str | None = None) -> list[dict[str, Any]]:
    """The default 4xH200 launch with one int/float flag of that release at an edge value: every
    int flag at -1, 0, 1, 3, 100000, every float flag also at nan and inf (issue 22, "must show"),
    plus the default launch itself and the multi-flag negatives of BOUNDARY_EXTRAS. `--num-gpus`
    replaces the launch's own value instead of being given twice."""
    cases: list[dict[str, Any]] = [{"id": "b000", "profile": BOUNDARY_PROFILE, "argv": list(BOUNDARY_LAUNCH)}]
    for opt, kind in boundary_flags(version or "0.5.23"):
        for value in BOUNDARY_FLOAT_VALUES if kind == "float" else BOUNDARY_INT_VALUES:
            if opt == "--num-gpus":
                argv = [BOUNDARY_LAUNCH[0], opt, value]
            else:
                argv = [*BOUNDARY_LAUNCH, opt, value]
            cases.append({"id": f"b{len(cases):03d}", "profile": BOUNDARY_PROFILE, "argv": argv})
    for extra in BOUNDARY_EXTRAS:
        cases.append({"id": f"b{len(cases):03d}", "profile": BOUNDARY_PROFILE, "argv": [*BOUNDARY_LAUNCH, *extra]})
    return cases


SUITES = {"fsdp": fsdp_suite, "boundary": boundary_suite}


def case_key(profile: str, argv, files) -> tuple:
    """Identity of a launch (used to match cases across golden files and corrected commands)."""
    return (profile, tuple(argv), json.dumps(files or [], sort_keys=True))


if __name__ == "__main__":
    import sys

    for c in generate(int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SEED,
                      int(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_COUNT):
        print(json.dumps(c))
