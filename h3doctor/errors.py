"""Exit codes and the one error type that carries a user-facing message to the CLI boundary."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """h3doctor's exit codes (README, Exit codes)."""

    OK = 0  # no finding at or above the failure threshold
    FINDINGS = 1  # at least one finding at or above the threshold (default: error)
    USAGE = 2  # bad h3doctor usage, unreadable config/recipe/profile, or a malformed rule file
    INTERNAL = 3  # a bug in h3doctor


class H3DoctorError(Exception):
    """An error the user can act on: printed as `error: <message>` without a traceback."""

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, location: str | None = None, hint: str | None = None, path: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint
        # the file the error is about, whole, as its reader was given it (`location` is an excerpt):
        # what the shell hook drops from a launch it cannot read (launch_forms.without_words_naming)
        self.path = path

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.message}"


class UsageError(H3DoctorError):
    """Bad command line, profile, recipe or config file given to h3doctor."""


class RuleFileError(H3DoctorError):
    """A rule file does not match the rule schema (or cannot be read)."""
