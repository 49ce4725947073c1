"""A real HTTPS admission webhook for the tests and the load benchmark: a self-signed certificate
made by the `openssl` CLI (the `cryptography` package is not installed here), the server in a
thread, and an `http.client` client that trusts exactly that certificate."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

from h3doctor.integrations.kubernetes_admission.judge import Judge
from h3doctor.integrations.kubernetes_admission.server import serve, tls_context

OPENSSL = shutil.which("openssl")


def make_cert(folder: Path) -> tuple[str, str]:
    cert, key = folder / "tls.crt", folder / "tls.key"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return str(cert), str(key)


class Webhook:
    def __init__(self, folder: Path, *, deny: bool = False, judge: Judge | None = None) -> None:
        self.cert, key = make_cert(folder)
        self.server = serve("127.0.0.1", 0, judge or Judge(), tls_context(self.cert, key), deny=deny)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def client(self) -> http.client.HTTPSConnection:
        context = ssl.create_default_context(cafile=self.cert)
        return http.client.HTTPSConnection("localhost", self.port, context=context, timeout=30)

    def post(self, body: bytes, *, content_type: str = "application/json", conn=None,
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        own = conn is None
        conn = conn or self.client()
        try:
            conn.request("POST", "/validate", body=body, headers={"Content-Type": content_type, **(headers or {})})
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            if own:
                conn.close()

    def review(self, obj: Any, *, operation: str = "CREATE", dry_run: bool = False, conn=None) -> tuple[int, dict]:
        return self.post(json.dumps(review(obj, operation=operation, dry_run=dry_run)).encode(), conn=conn)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def review(obj: Any, *, operation: str = "CREATE", dry_run: bool = False) -> dict[str, Any]:
    """An AdmissionReview v1 request as the API server sends it."""
    kind = obj.get("kind", "Pod") if isinstance(obj, dict) else "Pod"
    group, _, version = (obj.get("apiVersion", "v1") if isinstance(obj, dict) else "v1").rpartition("/")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "requestKind": {"group": group, "version": version, "kind": kind}, "name": "h3", "namespace": "default",
        "operation": operation, "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
        "object": obj, "oldObject": obj if operation == "UPDATE" else None, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"}}}
