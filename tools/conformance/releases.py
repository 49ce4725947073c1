"""What differs per sglang release for the conformance recorder (standard library only).

`import_requirements(version)`: the packages installed into a release's throwaway venv after the
wheel (`--no-deps`), in place of `tools/flagtable/extract.py`'s `IMPORT_REQUIREMENTS` (which is
0.5.23's list). Each older list is 0.5.23's with the pins that the release's own wheel METADATA
(`Requires-Dist`) sets differently, plus what its `sglang serve` path imports at module level
that 0.5.23's does not (see README.md, "Older releases"). torch/torchvision stay
`extract.TORCH_REQUIREMENTS` (2.14.1 / 0.29.1) for every release: the launch path does not
depend on the torch minor version, and those are the builds on the machine's local disk.
"""

from __future__ import annotations

# 0.5.23's list (tools/flagtable/extract.py IMPORT_REQUIREMENTS), repeated here so that the
# per-release overrides below read as differences against it.
_BASE = [
    "numpy", "pyyaml", "addict", "orjson", "psutil", "pybase64", "requests",
    "packaging", "pillow", "msgspec", "pydantic", "pyzmq", "tqdm", "ipython",
    "aiohttp", "einops", "apache-tvm-ffi==0.1.11", "transformers==5.19.0",
    "dill", "sentencepiece==0.2.1", "compressed-tensors==0.18.0", "gguf",
    "imageio", "imageio-ffmpeg", "diffusers", "cache-dit",
    "python-dateutil<3", "openai==2.8.0", "partial_json_parser", "uvicorn",
    "httpx", "fastapi", "python-multipart",
]

# transformers 5.12.1 (pinned by 0.5.17-0.5.21) needs huggingface-hub>=1.5,<2 at import;
# 1.33.0 with httpcore 1.0.9 imports. 0.5.17-0.5.21 import cloudpickle
# (multimodal_gen/utils.py), xgrammar (srt/server_args.py -> function-call detectors) and
# scipy.stats (a flow-match scheduler) on the serve path.
_OLD_HF = {"transformers": "transformers==5.12.1", "tokenizers": "tokenizers==0.22.2",
           "huggingface-hub": "huggingface-hub==1.33.0", "httpcore": "httpcore==1.0.9",
           "openai": "openai==2.6.1", "cloudpickle": "cloudpickle", "scipy": "scipy",
           "setproctitle": "setproctitle"}

_OVERRIDES: dict[str, dict[str, str]] = {
    "0.5.17": {**_OLD_HF, "cache-dit": "cache-dit==1.3.0", "xgrammar": "xgrammar==0.2.1"},
    "0.5.18": {**_OLD_HF, "cache-dit": "cache-dit==1.3.0", "xgrammar": "xgrammar==0.2.1"},
    "0.5.19": {**_OLD_HF, "cache-dit": "cache-dit==1.3.0", "xgrammar": "xgrammar==0.2.1"},
    "0.5.20": {**_OLD_HF, "cache-dit": "cache-dit==1.3.0", "xgrammar": "xgrammar==0.2.1"},
    "0.5.21": {**_OLD_HF, "cache-dit": "cache-dit==1.5.1", "xgrammar": "xgrammar==0.2.7"},
    # 0.5.22 pins tokenizers==0.23.2, which pip cannot install beside transformers 5.19.0 and
    # huggingface-hub 2.4.0 (ResolutionImpossible); 0.23.3 (0.5.23's venv) resolves
    "0.5.22": {"transformers": "transformers==5.19.0", "tokenizers": "tokenizers==0.23.3",
               "huggingface-hub": "huggingface-hub==2.4.0", "openai": "openai==2.6.1",
               "cache-dit": "cache-dit==1.5.1", "cloudpickle": "cloudpickle",
               "setproctitle": "setproctitle"},
}


def _name(req: str) -> str:
    for sep in ("==", "<", ">", "~=", "!="):
        req = req.split(sep, 1)[0]
    return req.strip().lower().replace("_", "-")


def import_requirements(version: str, base: list[str] | None = None) -> list[str]:
    """The import requirements for sglang `version` (0.5.23's list for unknown versions)."""
    base = list(_BASE if base is None else base)
    over = _OVERRIDES.get(version)
    if not over:
        return base
    out, used = [], set()
    for req in base:
        n = _name(req)
        if n in over:
            out.append(over[n])
            used.add(n)
        else:
            out.append(req)
    out += [r for n, r in over.items() if n not in used]
    return out
