"""`h3doctor admission`: load the rules, read the TLS files, serve until stopped."""

from __future__ import annotations

import ssl
import sys

from h3doctor.errors import UsageError
from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.integrations.kubernetes_admission.server import serve, tls_context
from h3doctor.integrations.serving import serve_until_interrupted


def run_server(*, cert: str, key: str, host: str, port: int, deny: bool, sglang_version: str | None,
               rules_dir: str | None) -> None:
    try:
        tls = tls_context(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(f"--cert/--key: cannot load the TLS certificate and key: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    judge = Judge(sglang_version=sglang_version, rules_dir=rules_dir)
    try:
        server = serve(host, port, judge, tls, deny=deny)
    except OSError as exc:
        raise UsageError(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = server.server_address
    sys.stderr.write(f"h3doctor admission: listening on https://{bound[0]}:{bound[1]} "
                     f"({'deny' if deny else 'warn'} mode)\n")
    sys.stderr.flush()
    serve_until_interrupted(server)
