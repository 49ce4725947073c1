"""The errors `h3doctor.api` raises, each with the exit code the CLI gives the same failure.

Every call translates what goes wrong inside into one of these (`translated`), so a caller
catches `H3DoctorError` and reads `.exit_code` as it would read the CLI's: 2 for a call or an
input h3doctor cannot take, 3 for a bug in h3doctor. The message is the CLI's `error:` line.
They subclass the package's own `h3doctor.errors.H3DoctorError`, so code catching that still does.
"""

from __future__ import annotations

from h3doctor import errors as _internal
from h3doctor.errors import ExitCode

__all__ = ["ExitCode", "H3DoctorError", "InputError", "InternalError", "UsageError"]


class H3DoctorError(_internal.H3DoctorError):
    """Base of every error the API raises. `.exit_code` is the CLI's for it, `.message` its text,
    `.location` what it points at (a file, `file:line:col`, or the option it is about), `.hint`
    what to do, or None."""

    exit_code = ExitCode.USAGE


class UsageError(H3DoctorError):
    """The call cannot be judged as made: arguments that cannot go together, a value out of range,
    no launch (the CLI's usage errors, exit 2)."""


class InputError(H3DoctorError):
    """A file or value the call names cannot be read or is refused: a recipe, profile, `--config`,
    rule file, log; `.location` says where (exit 2)."""


class InternalError(H3DoctorError):
    """A bug in h3doctor (the CLI's exit 3): the original exception is its `__cause__`."""

    exit_code = ExitCode.INTERNAL


class translated:
    """Inside it, an error of h3doctor's becomes the API's: one with a location is an `InputError`,
    one without a `UsageError`; any other exception (but KeyboardInterrupt, SystemExit and the
    like) an `InternalError`. A class, not contextlib's decorator: contextlib is not imported here."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or isinstance(exc, H3DoctorError) or not isinstance(exc, Exception):
            return False
        if isinstance(exc, _internal.H3DoctorError):
            cls = InputError if exc.location else UsageError
            raise cls(exc.message, location=exc.location, hint=exc.hint, path=exc.path) from exc
        raise InternalError(f"internal error: {type(exc).__name__}: {str(exc)[:300]}",
                            hint="this is a bug in h3doctor: report it with the traceback of its __cause__") from exc
