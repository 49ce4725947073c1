"""Running one of the integrations' HTTP servers in the foreground: until Ctrl-C, closing its
socket whatever ends it (the admission webhook and the launchers' policy service alike)."""

from __future__ import annotations


def serve_until_interrupted(server) -> None:
    """`server.serve_forever()`; Ctrl-C ends it quietly, and the socket is closed either way."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
