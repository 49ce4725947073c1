"""The webhook's HTTPS server: `POST /validate` (AdmissionReview v1), `GET /healthz`.

The standard library's `http.server` and `ssl`, not a web framework: the webhook serves two
routes with one JSON body each, and what it must get right (a body cap, read timeouts, TLS from
files, never a traceback) is a few lines here, where a framework would add a runtime dependency,
its own error pages and its start-up time to the image. A thread per connection (the API server
keeps connections alive); judging itself is one at a time (judge.py).

Status codes: 200 with the AdmissionReview answer; 400 a body that is no AdmissionReview; 404, 405;
411 no Content-Length; 413 past MAX_BODY; 415 not JSON. An error's body is `{"error": ...}`.
"""

from __future__ import annotations

import json
import ssl
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from h3doctor.digits import is_digits
from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.integrations.kubernetes_admission.review import BadReview, answer

# The API server refuses objects past ~3 MiB (etcd's 1.5 MiB limit, in JSON with the old object
# beside it on UPDATE); a body past this is no review the API server sends.
MAX_BODY = 4 << 20
# Seconds a connection may take to send its request (a client that trickles bytes holds a thread
# for no longer); the webhook's own timeoutSeconds (chart: 5) is what the API server waits.
READ_TIMEOUT = 5.0
VALIDATE_PATH = "/validate"


class AdmissionServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], judge: Judge, tls: ssl.SSLContext | None, *, deny: bool) -> None:
        self.judge, self.deny = judge, deny
        super().__init__(address, _Handler)
        if tls is not None:
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        # a connection that broke mid-request (reset, TLS alert): one line, never a traceback
        sys.stderr.write(f"h3doctor admission: a connection ended early ({type(sys.exc_info()[1]).__name__})\n")


def tls_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """TLS 1.2+ from PEM files (a Secret cert-manager writes, mounted read-only)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: AdmissionServer
    timeout = READ_TIMEOUT
    # the headers and the body are two writes: with Nagle's algorithm on, the body waits for the
    # client's delayed ACK (~40 ms a review on a kept-alive connection)
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            try:  # the handshake in this thread, under the read timeout, not in the accepting one
                self.connection.do_handshake()
            except (OSError, ssl.SSLError):
                self.close_connection = True
                self.rfile = self.wfile = _Closed()

    def handle_one_request(self) -> None:
        if isinstance(self.rfile, _Closed):
            self.close_connection = True
            return
        super().handle_one_request()

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": f"no such path; POST {VALIDATE_PATH}, GET /healthz"})

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != VALIDATE_PATH:
            self._send(404, {"error": f"no such path; POST {VALIDATE_PATH}"})
            return
        if (self.headers.get("Content-Type") or "").split(";")[0].strip().lower() != "application/json":
            self._send(415, {"error": "Content-Type must be application/json"})
            return
        length = self.headers.get("Content-Length")
        if length is None or not is_digits(length):
            self._send(411, {"error": "a Content-Length is required"})
            return
        if int(length) > MAX_BODY:
            self._send(413, {"error": f"body larger than {MAX_BODY} bytes"})
            return
        try:
            body = self.rfile.read(int(length))
        except OSError:
            self.close_connection = True
            return
        try:
            self._send(200, answer(body, self.server.judge, deny=self.server.deny))
        except BadReview as exc:
            self._send(400, {"error": str(exc)})

    def _send(self, code: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode("utf-8")
        if code in (411, 413):
            self.close_connection = True  # the unread body would be read as the next request
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self._send(code, {"error": message or "bad request"})  # a malformed request line or header: JSON too

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no per-request log: a review's content never reaches the logs


class _Closed:
    """The streams of a connection whose TLS handshake failed: nothing to read or write."""

    def read(self, *_: Any) -> bytes:
        return b""

    def readline(self, *_: Any) -> bytes:
        return b""

    def write(self, *_: Any) -> int:
        return 0

    def flush(self) -> None:
        pass


def serve(host: str, port: int, judge: Judge, tls: ssl.SSLContext | None, *, deny: bool) -> AdmissionServer:
    """A bound server (port 0: any free port, `server.server_address`); call `serve_forever()`."""
    return AdmissionServer((host, port), judge, tls, deny=deny)
