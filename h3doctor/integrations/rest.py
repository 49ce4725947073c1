"""One small HTTP service for the launchers' REST hooks (docs/integrations/): SkyPilot's
`RestfulAdminPolicy` (`admin_policy: http://HOST:PORT/skypilot`) and dstack's REST plugin
(`DSTACK_PLUGIN_SERVICE_URI=http://HOST:PORT`, which posts to `/apply_policies/on_run_apply`).

    python -m h3doctor.integrations.rest [--host 127.0.0.1] [--port 8765] [--mutate]

The standard library's ThreadingHTTPServer: two JSON endpoints need no framework, and a policy
service is one more thing to keep patched; no new dependency. Every request is bounded: its body
(`MAX_BODY`, a Content-Length required), the time a connection may stay idle (`TIMEOUT`), the
number judged at once (`MAX_BUSY`, the rest wait). A request that is not what the launcher sends
is refused the launcher's way, never let through: SkyPilot rejects on HTTP 400 (its body is the
message), dstack fails the apply on any HTTP error. h3doctor's own failure is a 500, which both
launchers take as a refusal too.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml

from h3doctor.digits import is_digits
from h3doctor.errors import H3DoctorError
from h3doctor.integrations.dstack import decide_run
from h3doctor.integrations.skypilot import decide_task, mutation_asked
from h3doctor.integrations.serving import serve_until_interrupted

MAX_BODY = 1 << 20  # bytes: a task or run spec is a few KB
TIMEOUT = 10.0  # seconds a connection may wait for the client's next bytes
MAX_BUSY = 4  # requests judged at once
MAX_NODES = 100_000  # values in a task, aliases expanded: a real one holds a few hundred
SKYPILOT_PATHS = ("/skypilot", "/")
DSTACK_RUN = "/apply_policies/on_run_apply"
DSTACK_OTHERS = ("/apply_policies/on_fleet_apply", "/apply_policies/on_volume_apply",
                 "/apply_policies/on_gateway_apply")
logger = logging.getLogger("h3doctor.integrations.rest")


class Malformed(ValueError):
    """A request that is not what the launcher sends (the message says what is wrong)."""


def skypilot_response(body: Any, *, mutate: bool) -> tuple[int, str]:
    """(status, body) for a RestfulAdminPolicy request: SkyPilot posts its UserRequest encoded as a
    JSON string inside JSON (`requests.post(json=user_request.encode())`) and reads the answer the
    same way (`MutatedUserRequest.decode(response.json())`); 400 rejects, its text the message."""
    request = json.loads(body) if isinstance(body, str) else body
    if not isinstance(request, dict) or not isinstance(request.get("task"), str) \
            or not isinstance(request.get("skypilot_config"), str):
        raise Malformed("a SkyPilot admin policy request holds 'task' and 'skypilot_config' as YAML strings")
    decision = decide_task(task_mapping(request["task"]), mutate=mutate)
    logger.info("skypilot: %s: %s", decision.action, decision.message)
    if decision.action == "reject":
        return 400, decision.message
    task = request["task"]
    if decision.action == "mutate" and decision.config is not None:
        task = yaml.safe_dump(decision.config, sort_keys=False)
    return 200, json.dumps(json.dumps({"task": task, "skypilot_config": request["skypilot_config"]}))


def task_mapping(text: str) -> dict[str, Any]:
    """The task SkyPilot sent, as its own YAML dumper wrote it: PyYAML's safe loader (h3doctor's
    strict reader refuses the `{null: docker:IMAGE}` SkyPilot writes for `image_id`), then held to
    MAX_NODES counting each alias as the nodes it stands for (a YAML "billion laughs" is refused,
    not expanded when the task is judged) and refused when it contains itself."""
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise Malformed(f"the request's task is not YAML ({str(exc)[:200]})") from None
    if not isinstance(data, dict):
        raise Malformed("the request's task is not a YAML mapping")
    _expanded_size(data, {}, set())
    return data


def _expanded_size(value: Any, sizes: dict[int, int], open_: set[int]) -> int:
    """Nodes of `value` with every shared object counted each time it occurs (memoised by identity)."""
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    if key in open_:
        raise Malformed("the request's task contains itself (a YAML alias inside its own anchor)")
    if key not in sizes:
        open_.add(key)
        items = list(value.keys()) + list(value.values()) if isinstance(value, dict) else value
        total = 1
        for item in items:
            total += _expanded_size(item, sizes, open_)
            if total > MAX_NODES:
                raise Malformed(f"the request's task is larger than {MAX_NODES} values once its aliases are expanded")
        open_.discard(key)
        sizes[key] = total
    return sizes[key]


def dstack_response(path: str, body: Any, *, mutate: bool) -> tuple[int, str]:
    """(status, body) for dstack's REST plugin: `{"spec": …, "error": null | "why"}` (an error
    rejects the apply; the spec is applied as returned)."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise Malformed("a dstack plugin request is {\"user\", \"project\", \"spec\": {…}}")
    spec = body["spec"]
    if path != DSTACK_RUN:  # fleets, volumes, gateways start no sglang
        return 200, json.dumps({"spec": spec, "error": None})
    configuration = spec.get("configuration")
    if not isinstance(configuration, dict):
        raise Malformed("a run spec holds its 'configuration' as a mapping")
    decision = decide_run(configuration, mutate=mutate)
    logger.info("dstack: %s: %s", decision.action, decision.message)
    if decision.action == "mutate" and decision.config is not None:
        spec = {**spec, "configuration": decision.config}
    return 200, json.dumps({"spec": spec, "error": decision.message if decision.action == "reject" else None})


class Handler(BaseHTTPRequestHandler):
    server_version = "h3doctor-policy"
    timeout = TIMEOUT  # socket timeout: a client that stops sending is dropped, not waited for
    mutate = False
    busy = threading.BoundedSemaphore(MAX_BUSY)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, json.dumps({"status": "ok"}), "application/json")
        else:
            self._error(404, f"no such endpoint {self.path[:80]!r}; POST to /skypilot or {DSTACK_RUN}")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        dstack = path == DSTACK_RUN or path in DSTACK_OTHERS
        if not dstack and path not in SKYPILOT_PATHS:
            self._error(404, f"no such endpoint {path[:80]!r}; POST to /skypilot or {DSTACK_RUN}")
            return
        try:
            body = json.loads(self._body())
            with self.busy:
                status, text = (dstack_response(path, body, mutate=self.mutate) if dstack
                                else skypilot_response(body, mutate=self.mutate))
        except _HttpError as exc:
            self._error(exc.status, str(exc))
            return
        except (Malformed, H3DoctorError, ValueError, RecursionError) as exc:  # not the launcher's request: refused
            what = exc.message if isinstance(exc, H3DoctorError) else str(exc)
            self._error(400, f"h3doctor policy: malformed request, refused: {what[:500]}")
            return
        except Exception:  # h3doctor's own failure: refused (500), said in the service's log
            logger.exception("h3doctor policy: internal error")
            self._error(500, "h3doctor policy: internal error, refused (see the service's log)")
            return
        self._send(status, text, "application/json" if status == 200 else "text/plain; charset=utf-8")

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not is_digits(length):
            raise _HttpError(411, "a Content-Length is required (a chunked body is not read)")
        if int(length) > MAX_BODY:
            raise _HttpError(413, f"the body is larger than {MAX_BODY} bytes")
        try:
            data = self.rfile.read(int(length))
        except OSError:  # the client stopped sending (TIMEOUT) or went away
            raise _HttpError(408, f"the body did not arrive within {self.timeout:g} s") from None
        if len(data) != int(length):
            raise _HttpError(400, "the body ended before its Content-Length")
        return data

    def _error(self, status: int, message: str) -> None:
        self._send(status, json.dumps({"error": message}) if status != 400 else message,
                   "application/json" if status != 400 else "text/plain; charset=utf-8")

    def _send(self, status: int, text: str, kind: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        logger.info("%s %s", self.address_string(), format % args)


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def make_server(host: str = "127.0.0.1", port: int = 8765, *, mutate: bool = False) -> ThreadingHTTPServer:
    """The service, bound and not yet serving (`serve_forever()`; port 0: any free port)."""
    handler = type("PolicyHandler", (Handler,), {"mutate": mutate})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m h3doctor.integrations.rest",
                                     description="h3doctor's policy service for SkyPilot and dstack")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    parser.add_argument("--mutate", action="store_true",
                        help="correct a failing launch when every fix is safe, instead of rejecting it "
                             "(also H3DOCTOR_POLICY_MUTATE=1)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        server = make_server(args.host, args.port, mutate=mutation_asked(args.mutate))
    except OSError as exc:
        parser.exit(2, f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}\n")
    logger.info("h3doctor policy service on http://%s:%d (SkyPilot: /skypilot, dstack: %s)",
                args.host, server.server_address[1], DSTACK_RUN)
    serve_until_interrupted(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
