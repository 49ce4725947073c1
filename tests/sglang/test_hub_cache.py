"""What a launch would download, read from a faked Hugging Face cache (sglang/hub_cache.py):
refs, snapshot folders and huggingface_hub's cached tree listing, as sglang 0.5.23's
maybe_download_model and huggingface_hub 2.x read them; hostile caches are "unknown", never complete."""

from __future__ import annotations

import json
import os

import pytest

from h3doctor.sglang import hub_cache

REPO = "MiniMaxAI/MiniMax-H3"
COMMIT = "a" * 40
GB = 10**9
FILES = {  # a partition's files as the listing gives them, and another partition sglang does not fetch
    "FL2VA/model_index.json": 500,
    "FL2VA/transformer/diffusion_pytorch_model-00001-of-00002.safetensors": 40 * GB,
    "FL2VA/transformer/diffusion_pytorch_model-00002-of-00002.safetensors": 26 * GB,
    "FL2VA/text_encoder/model.safetensors": 66 * GB,
    "FL2VA/text_encoder/model.onnx": 9 * GB,  # ignore_patterns: never fetched
    "Ref2VA/transformer/diffusion_pytorch_model.safetensors": 66 * GB,
}
WANTED = sum(size for path, size in FILES.items() if path.startswith("FL2VA/") and not path.endswith(".onnx"))


def cache(tmp_path, *, ref=COMMIT, listing=FILES, present=(), snapshot=True):
    """A cache folder: refs/main -> COMMIT, the tree listing, and the `present` files in the snapshot."""
    storage = tmp_path / "hub" / "models--MiniMaxAI--MiniMax-H3"
    if ref is not None:
        (storage / "refs").mkdir(parents=True)
        (storage / "refs" / "main").write_text(ref)
    if listing is not None:
        (storage / "trees").mkdir(parents=True, exist_ok=True)
        files = {p: {"size": s, "blob_id": "b" * 40} for p, s in listing.items()}
        (storage / "trees" / f"{COMMIT}.json").write_text(json.dumps({"format_version": 1, "files": files}))
    if snapshot:
        (storage / "snapshots" / COMMIT).mkdir(parents=True)
    for rel in present:
        path = storage / "snapshots" / COMMIT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")  # a symlink to a blob in a real cache; existence is what counts
    return str(tmp_path / "hub")


def snap(tmp_path, **kw):
    return hub_cache.snapshot(cache(tmp_path, **kw), REPO, ("FL2VA/**",))


def test_nothing_cached_is_absent():
    assert hub_cache.snapshot("/nonexistent/hub", REPO, ("FL2VA/**",)).state == "absent"


def test_a_complete_partition_downloads_nothing(tmp_path):
    present = [p for p in FILES if p.startswith("FL2VA/") and not p.endswith(".onnx")]
    s = snap(tmp_path, present=present)
    assert (s.state, s.expected_bytes, s.missing_bytes) == ("complete", WANTED, 0)


def test_missing_files_count_only_what_is_missing_and_selected(tmp_path):
    s = snap(tmp_path, present=["FL2VA/model_index.json", "FL2VA/text_encoder/model.safetensors"])
    assert s.state == "incomplete" and s.missing_files == 2 and s.missing_bytes == 66 * GB


def test_no_snapshot_folder_but_a_listing_is_absent_with_the_listing_s_sizes(tmp_path):
    s = snap(tmp_path, snapshot=False)
    assert s.state == "absent" and s.missing_bytes == WANTED


def test_a_snapshot_without_a_listing_is_returned_as_it_is(tmp_path):
    # huggingface_hub returns the folder when no cached listing contradicts it: sglang downloads nothing
    assert snap(tmp_path, listing=None).state == "present"


def test_an_empty_ref_is_a_cache_miss(tmp_path):
    # sglang's _is_revisionless_snapshot_root: an empty ref resolves to snapshots/, a miss
    assert snap(tmp_path, ref="").state == "absent"


def test_a_commit_hash_revision_needs_no_ref(tmp_path):
    root = cache(tmp_path, ref=None, present=["FL2VA/model_index.json"])
    assert hub_cache.snapshot(root, REPO, ("FL2VA/**",), COMMIT).state == "incomplete"


@pytest.mark.parametrize("listing", ["not json", json.dumps({"format_version": 2, "files": {}}),
                                     json.dumps({"format_version": 1, "files": {"a": {"size": -1}}}),
                                     json.dumps({"format_version": 1, "files": {"a": {"size": True}}}),
                                     "[" * 100_000])
def test_a_listing_that_is_not_one_is_no_listing(tmp_path, listing):
    root = cache(tmp_path, listing=None)
    trees = tmp_path / "hub" / "models--MiniMaxAI--MiniMax-H3" / "trees"
    trees.mkdir()
    (trees / f"{COMMIT}.json").write_text(listing)
    assert hub_cache.snapshot(root, REPO, ("FL2VA/**",)).state == "present"  # the folder, unchecked


def test_an_oversized_listing_is_not_read(tmp_path):
    # a valid listing naming a missing file, padded past the 16 MiB h3doctor reads: not read at all
    root = cache(tmp_path, listing=None)
    trees = tmp_path / "hub" / "models--MiniMaxAI--MiniMax-H3" / "trees"
    trees.mkdir()
    listing = json.dumps({"format_version": 1, "files": {"FL2VA/a": {"size": 1, "blob_id": "b"}}})
    (trees / f"{COMMIT}.json").write_text(listing + " " * (16 << 20))
    assert hub_cache.snapshot(root, REPO, ("FL2VA/**",)).state == "present"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_ref_does_not_hang(tmp_path):
    storage = tmp_path / "hub" / "models--MiniMaxAI--MiniMax-H3"
    (storage / "refs").mkdir(parents=True)
    os.mkfifo(storage / "refs" / "main")
    assert hub_cache.snapshot(str(tmp_path / "hub"), REPO, ("FL2VA/**",)).state == "absent"


@pytest.mark.parametrize("repo", ["../../etc", "a/b/c", "noslash"])
def test_a_model_path_that_is_no_repo_id_is_unknown(repo):
    assert hub_cache.snapshot("/nonexistent/hub", repo, ()).state == "unknown"


def test_patterns_as_huggingface_hub_matches_them():
    assert hub_cache._matches("FL2VA/x/y.safetensors", ("FL2VA/**",), hub_cache.IGNORE_PATTERNS)
    assert not hub_cache._matches("Ref2VA/y.safetensors", ("FL2VA/**",), hub_cache.IGNORE_PATTERNS)
    assert not hub_cache._matches("FL2VA/m.onnx", ("FL2VA/**",), hub_cache.IGNORE_PATTERNS)
    assert hub_cache._matches("FL2VA/a", ("FL2VA/",), ())  # a trailing "/" means everything under it
    assert hub_cache._matches("anything", (), ())  # no allow patterns: the whole repo
