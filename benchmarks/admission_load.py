"""Reviews per second and latency of `h3doctor admission` over real HTTPS on this machine.

Threads, each with one kept-alive connection (as the API server keeps them), send AdmissionReview
v1 CREATE requests for the fixture repository's Deployment (an sglang launch with findings, on an
H100 node label) for DURATION seconds; prints reviews/s and the p50/p99 latency.

    python benchmarks/admission_load.py [THREADS] [SECONDS]
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integrations"))

from admission_helpers import Webhook, review  # noqa: E402


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    obj = yaml.safe_load((ROOT / "tests/fixtures/repo/deploy/k8s/deployment.yaml").read_text())
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    body = json.dumps(review(obj)).encode()
    with tempfile.TemporaryDirectory() as folder:
        hook = Webhook(Path(folder))
        hook.post(body)  # the first review loads the flag table
        latencies: list[float] = []
        lock = threading.Lock()
        stop = time.monotonic() + seconds

        def worker() -> None:
            conn, mine = hook.client(), []
            while time.monotonic() < stop:
                start = time.perf_counter()
                status, answer = hook.post(body, conn=conn)
                mine.append(time.perf_counter() - start)
                assert status == 200 and answer["response"]["allowed"] is True
            with lock:
                latencies.extend(mine)

        workers = [threading.Thread(target=worker) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        hook.close()
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000  # noqa: E731
    print(f"{threads} threads, {seconds:g} s: {len(latencies)} reviews, {len(latencies) / seconds:.0f} reviews/s, "
          f"p50 {p(0.50):.1f} ms, p99 {p(0.99):.1f} ms")


if __name__ == "__main__":
    main()
