"""The Hub token huggingface_hub would send and where sglang spills host copies: read from the
launch's environment and the token file, never a network call, never the token's text.

huggingface_hub 2.x (`utils/_auth.py` get_token, `constants.py`): `HF_TOKEN`, else
`HUGGING_FACE_HUB_TOKEN`, else the file `HF_TOKEN_PATH` (default `HF_HOME/token`, `HF_HOME`
defaulting to `XDG_CACHE_HOME/huggingface` or `~/.cache/huggingface`); a value is cleaned of
whitespace and an empty one is no token. sglang's spill folder (0.5.20 on, `envs.py`):
`SGLANG_DIFFUSION_HOST_SPILL_DIR`, default `~/.cache/sglang/diffusion/host_spill`.
"""

from __future__ import annotations

import os

from h3doctor.errors import H3DoctorError
from h3doctor.safeload import read_bounded_bytes

_TOKEN_BYTES = 4096  # a token is tens of bytes; a bigger file is not one huggingface_hub would send whole
SPILL_DEFAULT = "~/.cache/sglang/diffusion/host_spill"


def _home(env: dict[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def _expand(path: str, env: dict[str, str]) -> str:
    return _home(env) + path[1:] if path == "~" or path.startswith("~/") else path


def hf_home(env: dict[str, str]) -> str:
    if env.get("HF_HOME"):
        return _expand(env["HF_HOME"], env)
    base = env.get("XDG_CACHE_HOME") or os.path.join(_home(env), ".cache")
    return os.path.join(_expand(base, env), "huggingface")


def token_path(env: dict[str, str]) -> str:
    return _expand(env["HF_TOKEN_PATH"], env) if env.get("HF_TOKEN_PATH") else os.path.join(hf_home(env), "token")


def hub_token(env: dict[str, str]) -> tuple[bool | None, str]:
    """(a token is present?, where it comes from). A token file that exists but cannot be read is
    unknown: huggingface_hub (running as the same user) may well read it."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if name in env:  # `or` in huggingface_hub: an empty HF_TOKEN falls through to the next
            if env[name].strip():
                return True, f"${name}"
    path = token_path(env)
    if not os.path.lexists(path):  # huggingface_hub: FileNotFoundError is no token
        return False, f"no $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN or {path}"
    try:
        data = read_bounded_bytes(path, max_bytes=_TOKEN_BYTES, what="the Hugging Face token file")
    except (H3DoctorError, OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({type(exc).__name__})"
    return bool(data.strip()), path


def spill_dir(env: dict[str, str]) -> str:
    """sglang's host spill folder, as os.path.expanduser reads the variable."""
    return _expand(env.get("SGLANG_DIFFUSION_HOST_SPILL_DIR") or SPILL_DEFAULT, env)
