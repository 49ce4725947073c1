"""What kills a server after the check (issue 29 item 6): each crash signature, in the words the
real launcher, kernel, torch, NCCL, Hugging Face and ffmpeg print, names its rule or its cause
(with the probe check and the fix), and nothing else. Each line is quoted from the source named
beside it (sglang's own code: the 0.5.22 and 0.5.23 wheels; the rest: the issues cited in
the project's field-evidence reference (shared/reference/field-evidence.md), or the library's own format string)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from h3doctor.engine.ruleset import load_rules
from h3doctor.explain import crashes, source
from h3doctor.explain.report import ExplainRequest, run

RULES = load_rules()

# (the line as printed, where it comes from, the rule or cause it must name)
REAL_LINES = [
    # sglang 0.5.18-0.5.22 multimodal_gen/runtime/launch_server.py:199-203 (logger.error: two lines)
    ("[12-01 23:41:15] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
     "[12-01 23:41:15] Exit code: -9", "sglang 0.5.22 launch_server.py:199-203; gpustack#3848", "H3D418"),
    # sglang 0.5.23 multimodal_gen/runtime/launch_server.py:174-175
    ("RuntimeError: sglang-diffusionWorker-1 exited during initialization (exit code -9). Check the worker logs.",
     "sglang 0.5.23 launch_server.py:174-175", "H3D418"),
    ("Killed", "the shell, when the kernel's OOM killer ends its child (sglang#39021: 'is killed by the kernel')", "H3D418"),
    ("[ 8123.456789] Out of memory: Killed process 41234 (python3) total-vm:812345678kB, anon-rss:61234567kB, "
     "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:123456kB oom_score_adj:0", "the kernel's dmesg (mm/oom_kill.c)", "H3D418"),
    ("[ 8123.456700] python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
     "oom_score_adj=0", "the kernel's dmesg (mm/oom_kill.c)", "H3D418"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
     "torch/multiprocessing/spawn.py's ProcessExitedException", "H3D418"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGBUS",
     "torch/multiprocessing/spawn.py's ProcessExitedException", "H3D415"),
    ("[12-01 23:41:15] Exit code: -7", "sglang 0.5.22 launch_server.py:203; odysseus#6259 (exit code: -7)", "H3D415"),
    ("RuntimeError: sglang-diffusionWorker-2 exited during initialization (exit code -7). Check the worker logs.",
     "sglang 0.5.23 launch_server.py:174-175", "H3D415"),
    ("Bus error (core dumped)", "sglang#38638", "H3D415"),
    ("[vost#0:0 @ 0x5581c2a3f8c0] Unknown encoder 'libx264'", "ffmpeg 6+ (LatentSync#147, VideoHelperSuite#567)", "H3D613"),
    ("Unknown encoder 'libx264'", "ffmpeg 4-5 (SSStereoscope#18)", "H3D613"),
    ("[rank1]:[E1201 23:51:15.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
     "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600083 "
     "milliseconds before timing out.", "torch ProcessGroupNCCL.cpp (sglang#36853)", "nccl-timeout"),
    ("[W1201 23:51:15.000000000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=62, "
     "addr=[localhost]:43214, remote=[localhost]:29500): Connection was likely closed. Did the remote server "
     "shutdown or crash?", "torch TCPStore.cpp (gpustack#3383)", "nccl-timeout"),
    ("torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect "
     "to (127.0.0.1, 29500).", "torch TCPStore's client (socket.cpp)", "nccl-timeout"),
    ("torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined.",
     "torch TCPStore's server (c10d rendezvous)", "nccl-timeout"),
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
     "port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
     "torch TCPStore (sglang#37215)", "address-in-use"),
    ("zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30001')", "pyzmq (sglang#37215)",
     "address-in-use"),
    ("OSError: [Errno 98] Address already in use", "Python's socket.bind", "address-in-use"),
    ("[12-01 23:41:15] Port 30000 was unavailable, using port 30042 instead",
     "sglang 0.5.23 server_args.py:3434 (INFO; sglang-crash-logs.md)", "port-moved"),
    ("[12-01 23:41:15] Successfully bound ZMQ socket to tcp://127.0.0.1:5642 after 2 attempts. Original port "
     "5600 was unavailable.", "sglang 0.5.23 runtime/utils/common.py:219-222", "port-moved"),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6745c0de-1a2b3c4d5e6f)",
     "huggingface_hub (mflux#14)", "hub-access"),
    ("Cannot access gated repo for url https://huggingface.co/MiniMaxAI/MiniMax-H3/resolve/main/model_index.json.",
     "huggingface_hub (sdnext#4043)", "hub-access"),
    ("requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
     "https://huggingface.co/api/models/MiniMaxAI/MiniMax-H3/revision/main", "requests via huggingface_hub", "hub-access"),
    ("OSError: [Errno 28] No space left on device", "diffusers#4957", "disk-full"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device",
     "torch's CUDA check (MEDS_EIC_AR#163)", "H3D615"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 12040). Please update your GPU "
     "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
     "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
     "version of the CUDA driver.", "sglang#11395", "H3D614"),
    ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
     "the CUDA runtime's cudaErrorInsufficientDriver", "H3D614"),
    ("ImportError: /usr/local/lib/python3.12/dist-packages/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: "
     "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib", "sglang#29317", "H3D616"),
]


def explain(text: str, *launch: str) -> dict:
    return run(ExplainRequest(source.from_argument(text), list(launch), rules=RULES, profile="4xH200")).as_dict()


def named(data: dict) -> list[str]:
    return [m["rule"] for m in data["matches"]] + [c["cause"] for c in data["causes"]]


@pytest.mark.parametrize("text, where, target", REAL_LINES, ids=[f"{t}-{i}" for i, (_, _, t) in enumerate(REAL_LINES)])
def test_each_real_line_names_its_rule_or_cause_and_nothing_else(text, where, target):
    data = explain(text)
    assert named(data) == [target], where
    assert data["explained"]
    if target.startswith("H3D"):
        [m] = data["matches"]
        assert m["how"] == "crash" or m["how"] == "message"  # H3D613's message is ffmpeg's own line
        assert m["fix_note"]
        if m["how"] == "crash":
            assert any(n.startswith("probe check: `h3doctor probe`") for n in m["notes"])
    else:
        [c] = data["causes"]
        assert c["why"] and c["fix"] and c["probe"]


def test_every_signature_is_held_by_a_real_line():
    """A signature nobody has seen printed is a guess: each is found in one of REAL_LINES (or the
    launcher's worker summary below)."""
    corpus = "\n".join(t for t, _, _ in REAL_LINES).lower() + "\n" + SUMMARY_TAIL.lower()
    for sig in crashes.signatures(RULES):
        assert sig.regex.search(corpus), sig.text


SUMMARY_TAIL = ("[12-01 23:41:15] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
                "EOFError\n"
                "RuntimeError: sglang-diffusionWorker-1 exited during initialization (exit code 1). Check the worker logs.")


def test_a_pasted_launcher_summary_points_at_the_rank_traceback_and_explains_nothing():
    data = explain(SUMMARY_TAIL)
    assert named(data) == ["worker-summary"]
    assert "Process sglang-diffusionWorker-N:" in data["causes"][0]["fix"]
    assert not data["explained"]  # a pointer, not a cause: exit 1


def test_the_summary_pointer_gives_way_to_the_cause_in_the_same_text():
    data = explain(SUMMARY_TAIL + "\n[12-01 23:41:15] Exit code: -9")
    assert named(data) == ["H3D418"]


def test_a_port_no_socket_binds_stays_h3d140_and_a_busy_port_is_not_it():
    assert named(explain("[12-01 23:41:15] Port 70000 was unavailable, using port 5234 instead")) == ["H3D140"]
    assert named(explain("[12-01 23:41:15] Port 30000 was unavailable, using port 30042 instead")) == ["port-moved"]
    port_moved = explain("Port 30000 was unavailable, using port 30042 instead")["causes"][0]
    assert port_moved["severity"] == "info"


def test_an_exit_code_is_not_read_inside_a_longer_number():
    sigs = crashes.signatures(RULES)
    assert crashes.scan(["[12-01 23:41:15] Exit code: -91", "(exit code -75)"], sigs) == []


def test_fragments_are_literal_text_not_patterns():
    sigs = crashes.signatures(RULES)
    assert crashes.scan(["ImportError: /x/common_opsXso: undefined symbol: _Z"], sigs) == []


def test_a_log_repeating_one_signature_counts_it_up_to_the_cap():
    [hit] = crashes.scan(["Bus error"] * (crashes.MAX_COUNTED + 50), crashes.signatures(RULES))
    assert hit.signature.rule == "H3D415" and hit.line == 1
    assert hit.count == crashes.MAX_COUNTED


def test_the_container_runtimes_words_are_never_labelled_sglangs():
    """H3D148's match is nvidia-container-cli's line (wordings.json `by`): explain says whose words
    they are, in JSON and text, never "sglang says" nor "as sglang … prints it"."""
    log = ("docker: Error response from daemon: failed to create task for container: OCI runtime create failed\n"
           "nvidia-container-cli: device error: 7: unknown device: unknown.\n")
    run = [sys.executable, "-m", "h3doctor", "explain", "-"]
    data = json.loads(subprocess.run(run + ["--format", "json"], input=log, capture_output=True, text=True,
                                      timeout=120).stdout)
    [m] = [m for m in data["matches"] if m["rule"] == "H3D148"]
    assert m["by"] == "the container runtime"
    text = subprocess.run(run, input=log, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}).stdout
    assert "the container runtime says: nvidia-container-cli" in text
    assert "sglang says" not in text and "as sglang" not in text
