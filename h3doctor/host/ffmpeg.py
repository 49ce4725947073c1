"""The ffmpeg sglang encodes its output with, and whether it can.

sglang (0.5.23 `runtime/entrypoints/utils.py`, `_resolve_ffmpeg_exe`) runs the binary
`imageio_ffmpeg.get_ffmpeg_exe()` returns with `-vcodec libx264 ... -acodec aac`. imageio-ffmpeg
looks in this order: `IMAGEIO_FFMPEG_EXE`, its own bundled binary, a conda ffmpeg
(`sys.prefix/bin/ffmpeg`), then `ffmpeg` on PATH. An ffmpeg built without libx264 (Anaconda's
default, `--disable-gpl`) fails "Unknown encoder 'libx264'" after the whole denoise.

The binary is asked `-hide_banner -encoders`: an argv list, no shell, a timeout, output capped.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

NEEDED_ENCODERS = ("libx264", "aac")
TIMEOUT_S = 10.0
MAX_OUTPUT = 1 << 20  # an encoder list is ~30 KiB; a binary printing forever is cut here


def encoder_binary(env: dict[str, str], bundled_dir: str | None, prefix: str = sys.prefix) -> tuple[str | None, str]:
    """(the ffmpeg imageio-ffmpeg would return, how it was chosen); None when it would find none."""
    named = env.get("IMAGEIO_FFMPEG_EXE")
    if named:
        return named, "IMAGEIO_FFMPEG_EXE"
    if bundled_dir:
        bundled = sorted(p for p in glob.glob(os.path.join(glob.escape(bundled_dir), "ffmpeg-*")) if os.path.isfile(p))
        if bundled:
            return bundled[0], "imageio-ffmpeg's bundled binary"
    conda = os.path.join(prefix, "bin", "ffmpeg")
    if os.path.isfile(conda):
        return conda, "the environment's own ffmpeg (imageio-ffmpeg's conda step)"
    found = shutil.which("ffmpeg", path=env.get("PATH", os.defpath))
    return (found, "ffmpeg on PATH (imageio-ffmpeg's last step)") if found else (None, "")


def run_bounded(argv: list[str], timeout: float = TIMEOUT_S) -> tuple[str | None, str]:
    """(stdout, "") of a short command, or (None, why not). Never a shell; output past MAX_OUTPUT
    is dropped; a command still running at `timeout` is killed."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=os.name == "posix")
    except (OSError, ValueError) as exc:
        return None, f"cannot run {argv[0]}: {exc}"
    import threading

    chunks: list[bytes] = []
    # read at most MAX_OUTPUT bytes, then stop listening: what is past it is never held in memory
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read(MAX_OUTPUT)), daemon=True)
    reader.start()
    reader.join(timeout)
    try:
        code = proc.wait(timeout=0.5 if not reader.is_alive() else 0)
    except subprocess.TimeoutExpired:
        code = None
    if code is None:
        flooded = not reader.is_alive() and bool(chunks) and len(chunks[0]) >= MAX_OUTPUT  # before the kill ends the read
        kill_group(proc)
        if proc.stdout:
            proc.stdout.close()
        return None, (f"{argv[0]} wrote more than {MAX_OUTPUT} bytes" if flooded
                      else f"{argv[0]} did not answer within {timeout:g} s")
    if code != 0:
        return None, f"{argv[0]} exited with code {code}"
    out = chunks[0] if chunks else b""
    return out.decode("utf-8", "replace"), ""


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a child started in its own session, with everything it started; wait briefly."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, 9)
        else:  # pragma: no cover
            proc.kill()
    except OSError:
        pass
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:  # uninterruptible (in the kernel driver): leave it
        pass


def encoders(listing: str) -> set[str]:
    """Encoder names from `ffmpeg -encoders`: lines ` V..... libx264  description` after the ` ------` rule."""
    names: set[str] = set()
    started = False
    for line in listing.splitlines():
        if line.strip().startswith("------"):
            started = True
            continue
        parts = line.split()
        if started and len(parts) >= 2 and len(parts[0]) == 6:
            names.add(parts[1])
    return names


def encoder_facts(env: dict[str, str], bundled_dir: str | None, timeout: float = TIMEOUT_S) -> dict[str, object]:
    """What the probe reports: the binary, how it was chosen, the needed encoders it lacks, or why unknown."""
    exe, how = encoder_binary(env, bundled_dir)
    if exe is None:
        return {"ffmpeg_encoder_exe": None, "ffmpeg_encoder_how": "imageio-ffmpeg finds no ffmpeg",
                "ffmpeg_missing_encoders": list(NEEDED_ENCODERS)}
    out, why = run_bounded([exe, "-hide_banner", "-encoders"], timeout)
    if out is None:
        return {"ffmpeg_encoder_exe": exe, "ffmpeg_encoder_how": how, "ffmpeg_encoders_error": why}
    have = encoders(out)
    if not have:
        return {"ffmpeg_encoder_exe": exe, "ffmpeg_encoder_how": how,
                "ffmpeg_encoders_error": f"{exe} -encoders listed no encoder h3doctor could read"}
    return {"ffmpeg_encoder_exe": exe, "ffmpeg_encoder_how": how,
            "ffmpeg_missing_encoders": [e for e in NEEDED_ENCODERS if e not in have]}


def version_in(text: str) -> str | None:
    """The version on `ffprobe -version`'s first line ("ffprobe version 6.1.1-3ubuntu5 Copyright ...")."""
    words = (text.splitlines() or [""])[0].split()
    if len(words) >= 3 and words[1] == "version":
        return words[2][:80]
    return None


def ffprobe_version(env: dict[str, str], timeout: float = TIMEOUT_S) -> tuple[str | None, str, str]:
    """(version, the ffprobe asked, why unknown): the `ffprobe` on the launch's PATH, the one H3's
    media path runs (material_io.py, video_adapter.py), asked `-version`: an argv, no shell, a
    timeout, output capped."""
    exe = shutil.which("ffprobe", path=env.get("PATH", os.defpath))
    if exe is None:
        return None, "", "no ffprobe on PATH"
    out, why = run_bounded([exe, "-version"], timeout)
    if out is None:
        return None, exe, why
    version = version_in(out)
    return version, exe, "" if version else f"{exe} -version printed no version h3doctor reads"
