"""The host commands' bodies: `h3doctor probe` and `h3doctor doctor` (bare `h3doctor` too); cli.py
declares them. torch runs in the probe's child process, never in this one."""

from __future__ import annotations

import os
import sys

from h3doctor.cli_output import write_file, write_report


def probe(format_name: str, refresh: bool, no_cache: bool, timeout: float | None, save_profile: str | None) -> None:
    """`h3doctor probe`: one line per hardware fact with its source, and the shell hook's state."""
    from h3doctor.host.probe import probe as run_probe
    from h3doctor.host.probe import profile_text
    from h3doctor.launch.hook import status as hook_status
    from h3doctor.output.formats import Report
    from h3doctor.output.probe_text import probe_report

    result = run_probe(dict(os.environ), use_cache=not no_cache, refresh=refresh, timeout=timeout)
    data = {**result.as_dict(), "hook": hook_status(os.environ)}
    if save_profile:
        write_file(save_profile, profile_text(result), "profile")
    write_report("probe", format_name, Report(data, text=lambda console, buf: probe_report(data, console)),
                 sys.stdout, None)
    if save_profile and format_name != "json":
        sys.stdout.write(f"\nprofile written to {save_profile} (use: h3doctor check --profile {save_profile} ...)\n")


def doctor(format_name: str, no_cache: bool, output_file: str | None) -> int:
    """`h3doctor doctor`: this machine for MiniMax-H3, one fact a line; the report's exit code."""
    from h3doctor.host.doctor import report
    from h3doctor.host.probe import probe as run_probe
    from h3doctor.output.doctor_text import doctor_report
    from h3doctor.output.formats import Report

    data = report(run_probe(dict(os.environ), use_cache=not no_cache), download_gib=_variant_download_gib())
    write_report("doctor", format_name, Report(data, text=lambda console, buf: doctor_report(data, console)),
                 sys.stdout, output_file)
    return data["summary"]["exit_code"]


def _variant_download_gib() -> float | None:
    """What one MiniMax-H3 variant downloads for the installed sglang (else the newest verified
    release): its published partition (sglang/releases.py), for the doctor's disk line."""
    from h3doctor.errors import UsageError
    from h3doctor.sglang import releases

    try:
        version = releases.target(None, None, installed=releases.installed_version()).table_version
    except UsageError:  # an installed version h3doctor cannot read: the newest verified release's
        version = releases.NEWEST.table_version
    _subfolder, size = releases.published_partition(version, "MiniMaxAI/MiniMax-H3", None)
    return None if size is None else round(size / 2**30, 1)
