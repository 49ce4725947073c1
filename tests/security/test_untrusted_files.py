"""Files others wrote: weights folders, caches in a shared directory, FIFOs and links where a file
is expected. Each hostile file is built in tmp_path; every test says what h3doctor must do with it
(cannot verify, not used, refused) through findings, return values and files on disk."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from h3doctor import paths
from h3doctor.engine import ruleset
from h3doctor.errors import UsageError
from h3doctor.host import probe_cache
from h3doctor.safeload import LimitExceeded, read_bounded
from h3doctor.sglang import safetensors_header
from repo_paths import REPO

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs and permissions")

LAUNCH = "sglang serve MiniMaxAI/MiniMax-H3 --layerwise-offload-components all --transformer-weights-path {}"
W4A4 = {"_quantization_metadata": json.dumps({"layers": {"blocks.0.attn.qkv": {"format": "convrot_w4a4"}}})}


def _shard(path: Path, metadata: dict | None = None, *, header: bytes | None = None) -> Path:
    body = header if header is not None else json.dumps({"__metadata__": metadata or {"format": "pt"}}).encode()
    path.write_bytes(struct.pack("<Q", len(body)) + body)
    return path


def _on_mac(run_check, weights: Path):
    """The findings about the weights on an M3 Max: the memory fit, which h3doctor's model does
    not cover on MPS (H3D543, said on every MPS launch), is not what these tests are about."""
    result = run_check(LAUNCH.format(weights), "m3-max")
    return {f.rule.id: f for f in result.evaluation.findings if f.rule.id != "H3D543"}


# -- weights: unreadable is never clean ---------------------------------------------------------

def test_a_garbage_shard_beside_a_w4a4_shard_is_cannot_verify_and_the_w4a4_shard_still_counts(tmp_path, run_check):
    folder = tmp_path / "w"
    folder.mkdir()
    _shard(folder / "a.safetensors", W4A4)
    assert "H3D521" in _on_mac(run_check, folder) and "H3D935" not in _on_mac(run_check, folder)
    (folder / "b.safetensors").write_bytes(b"abc")
    found = _on_mac(run_check, folder)
    assert "H3D521" in found  # the readable shard's facts still count
    unread = found["H3D935"]
    assert unread.severity == "warning" and unread.message.startswith("cannot verify")
    assert "b.safetensors" in unread.message and "a.safetensors" not in unread.message


def test_only_an_unreadable_shard_is_not_a_pass(tmp_path, run_check):
    folder = tmp_path / "w"
    folder.mkdir()
    _shard(folder / "a.safetensors")
    assert _on_mac(run_check, folder) == {}
    (folder / "b.safetensors").write_bytes(b"abc")
    assert list(_on_mac(run_check, folder)) == ["H3D935"]


@pytest.mark.parametrize("bomb", ["header", "quantization_metadata", "marker"])
def test_a_header_nested_100000_levels_is_cannot_verify_for_that_file(tmp_path, bomb):
    deep = "[" * 100_000 + "]" * 100_000
    file = tmp_path / "deep.safetensors"
    if bomb == "header":
        _shard(file, header=deep.encode())
    elif bomb == "quantization_metadata":  # the JSON inside the header's metadata
        _shard(file, {"_quantization_metadata": deep})
    else:  # a comfy_quant marker tensor of 64 KiB of brackets, under the marker limit
        marker = ("[" * 30_000 + "]" * 30_000).encode()
        head = json.dumps({"x.comfy_quant": {"dtype": "U8", "shape": [len(marker)], "data_offsets": [0, len(marker)]}}).encode()
        file.write_bytes(struct.pack("<Q", len(head)) + head + marker)
    read = safetensors_header.checkpoint_formats(str(tmp_path))
    if bomb == "header":
        assert read.formats == frozenset() and len(read.unread) == 1
        assert "deep.safetensors" in read.unread[0] and "nested deeper" in read.unread[0]
    else:  # markers that are not readable JSON declare nothing, as sglang's reader skips them
        assert read.formats == frozenset() and read.unread == ()


def test_a_fifo_or_a_dangling_link_in_a_weights_folder_is_named_and_never_waited_on(tmp_path, run_check):
    folder = tmp_path / "w"
    folder.mkdir()
    _shard(folder / "a.safetensors", W4A4)
    os.mkfifo(folder / "b.safetensors")  # no writer: a blocking open would hang the check
    (folder / "c.safetensors").symlink_to(tmp_path / "gone.safetensors")
    found = _on_mac(run_check, folder)
    assert "H3D521" in found
    assert "b.safetensors" in found["H3D935"].message and "FIFO" in found["H3D935"].message
    assert "c.safetensors" in found["H3D935"].message


def test_the_weights_walk_stops_at_its_cap_before_sorting_and_says_so(tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    for d in range(20):
        sub = tree / f"d{d:02}"
        sub.mkdir(parents=True)
        for i in range(20):
            _shard(sub / f"s{i:02}.safetensors")
    looked_at = []
    real_scandir = os.scandir

    class Counting:
        def __init__(self, path):
            self.it = real_scandir(path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.it.close()

        def __iter__(self):
            for entry in self.it:
                looked_at.append(entry.name)
                yield entry

    monkeypatch.setattr(safetensors_header.os, "scandir", Counting)
    monkeypatch.setattr(safetensors_header, "MAX_WALK_ENTRIES", 50)
    read = safetensors_header.checkpoint_formats(str(tree))
    assert len(looked_at) <= 51  # 420 entries there: the walk stopped, it did not list them all
    assert read.unread and read.unread[-1].startswith(f"the rest of {tree}") and "50 entries" in read.unread[-1]
    looked_at.clear()
    monkeypatch.setattr(safetensors_header, "MAX_WALK_ENTRIES", 10_000)
    monkeypatch.setattr(safetensors_header, "MAX_FILES", 30)
    files, skipped = safetensors_header._walk(tree)
    # breadth-first, in name order: the first 30 files are d00's 20 and d01's first 10, every run
    assert [f.relative_to(tree).as_posix() for f in files] == (
        [f"d00/s{i:02}.safetensors" for i in range(20)] + [f"d01/s{i:02}.safetensors" for i in range(10)])
    assert len(skipped) == 1 and "more than 30 .safetensors files" in skipped[0]


def test_the_weights_walk_follows_no_folder_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    _shard(outside / "q.safetensors", W4A4)
    tree = tmp_path / "tree"
    tree.mkdir()
    _shard(tree / "a.safetensors")
    (tree / "up").symlink_to(outside, target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    read = safetensors_header.checkpoint_formats(str(tree))
    assert read.formats == frozenset() and read.unread == ()


# -- caches: a directory that can be trusted ----------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory (created by h3doctor) for both caches, and the shipped rule files
    copied so that the rules cache can be exercised without touching the real one."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("H3DOCTOR_CACHE_DIR", str(folder))
    monkeypatch.setattr(paths, "_UNTRUSTED_SAID", set())
    rules = tmp_path / "rules"
    shutil.copytree(ruleset.rules_dir(), rules)
    return folder, rules


def _rules_entry(folder: Path) -> Path:
    [entry] = folder.glob("rules-*.json")
    return entry


def _forged_rules_entry(genuine: Path, message: str) -> str:
    """A rules cache entry with every rule's message replaced and its content hash recomputed:
    what whoever can write the cache directory can make."""
    header_text, _, body = genuine.read_text().partition("\n")
    rules_text, _, examples = body.rpartition("\n")  # the last line: every rule's examples
    entries = json.loads(rules_text)
    for e in entries:
        e["data"]["message"] = message
    body = json.dumps(entries) + "\n" + examples
    header = {**json.loads(header_text), "content_sha256": hashlib.sha256(body.encode()).hexdigest()}
    return json.dumps(header) + "\n" + body


def test_the_cache_directory_is_created_0700(cache):
    folder, rules = cache
    ruleset.load_rules(rules)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(_rules_entry(folder).stat().st_mode) == 0o600


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "another user's"])
def test_a_cache_directory_others_can_write_is_not_used_and_said_once(cache, capsys, monkeypatch, how):
    folder, rules = cache
    genuine = ruleset.load_rules(rules)
    entry = _rules_entry(folder)
    entry.write_text(_forged_rules_entry(entry, "forged"))
    assert {r.message for r in ruleset.load_rules(rules)} == {"forged"}  # the user's own dir: trusted (integrity only)
    if how == "another user's":
        uid = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: uid + 1)
    else:
        folder.chmod(0o770 if how == "group-writable" else 0o707)
    capsys.readouterr()
    for _ in range(2):
        assert [r.message for r in ruleset.load_rules(rules)] == [r.message for r in genuine]
    said = capsys.readouterr().err
    assert said.count("not using the cache directory") == 1 and str(folder) in said
    assert entry.read_text().count("forged") > 0  # not rewritten either: nothing is written there
    env = {"H3DOCTOR_CACHE_DIR": str(folder)}
    parts = probe_cache.key_parts(env)
    assert probe_cache.store(env, parts, {"plugins": []}, {"outcome": "ok", "elapsed_s": 1.0}) is None
    assert probe_cache.load(env, parts) == (None, "no cache directory h3doctor can trust")


def test_a_planted_link_named_like_a_rules_entry_is_never_followed_or_written_through(cache, tmp_path):
    folder, rules = cache
    genuine = ruleset.load_rules(rules)
    entry = _rules_entry(folder)
    forged = tmp_path / "forged.json"  # a valid entry for these rules, somewhere else
    forged.write_text(_forged_rules_entry(entry, "forged"))
    entry.unlink()
    entry.symlink_to(forged)
    assert [r.message for r in ruleset.load_rules(rules)] == [r.message for r in genuine]  # not read through
    assert "forged" in forged.read_text()  # and not written through: the link itself was replaced
    assert not entry.is_symlink() and json.loads(entry.read_text().partition("\n")[0])["format"] == ruleset.CACHE_FORMAT


def test_a_fifo_named_like_a_cache_entry_never_hangs_and_is_replaced(cache):
    folder, rules = cache
    genuine = ruleset.load_rules(rules)
    entry = _rules_entry(folder)
    entry.unlink()
    os.mkfifo(entry)
    assert len(ruleset.load_rules(rules)) == len(genuine)
    assert stat.S_ISREG(entry.lstat().st_mode)
    env = {"H3DOCTOR_CACHE_DIR": str(folder)}
    parts = probe_cache.key_parts(env)
    os.mkfifo(probe_cache.path_for(env, parts))
    entry_read, why = probe_cache.load(env, parts)
    assert entry_read is None and "FIFO" in why
    assert probe_cache.store(env, parts, {"plugins": []}, {"outcome": "ok", "elapsed_s": 1.0})
    assert probe_cache.load(env, parts)[1] == "cached"


def test_the_hook_never_hangs_on_a_fifo_in_the_cache(cache):
    folder, rules = cache
    ruleset.load_rules()  # the shipped rules' entry name, which the hook's check reads
    entry = _rules_entry(folder)
    entry.unlink()
    os.mkfifo(entry)
    env = {**os.environ, "H3DOCTOR_CACHE_DIR": str(folder)}
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--hook", "--profile", "4xH200", "--",
                           "sglang", "serve", "MiniMaxAI/MiniMax-H3", "--num-gpus", "4"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISREG(entry.lstat().st_mode)


def test_a_planted_probe_link_is_never_followed(cache, tmp_path):
    folder, _ = cache
    env = {"H3DOCTOR_CACHE_DIR": str(folder)}
    parts = probe_cache.key_parts(env)
    assert probe_cache.store(env, parts, {"plugins": ["genuine"]}, {"outcome": "ok", "elapsed_s": 1.0})
    path = probe_cache.path_for(env, parts)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(path.read_text().replace("genuine", "forged"))
    path.unlink()
    path.symlink_to(elsewhere)
    entry, why = probe_cache.load(env, parts)
    assert entry is None and "symbolic link" in why
    assert probe_cache.store(env, parts, {"plugins": []}, {"outcome": "ok", "elapsed_s": 1.0})
    assert "forged" in elsewhere.read_text() and not path.is_symlink()


# -- the caches' own defences, each on its own --------------------------------------------------

def _key_for(folder: Path, devices: str) -> tuple[dict, dict]:
    env = {"H3DOCTOR_CACHE_DIR": str(folder), "CUDA_VISIBLE_DEVICES": devices}
    return env, probe_cache.key_parts(env)


def test_a_valid_probe_entry_for_other_hardware_at_this_keys_path_is_not_used(cache):
    folder, _ = cache
    env_a, parts_a = _key_for(folder, "0,1,2,3")
    env_b, parts_b = _key_for(folder, "7")
    assert probe_cache.store(env_b, parts_b, {"plugins": ["other hardware"]}, {"outcome": "ok", "elapsed_s": 1.0})
    planted = probe_cache.path_for(env_b, parts_b).read_text()  # valid in every field, for key B
    probe_cache.path_for(env_a, parts_a).write_text(planted)  # put where key A's entry lives
    entry, why = probe_cache.load(env_a, parts_a)
    assert entry is None and why == "cache file does not match this key"


def test_two_probe_keys_each_get_their_own_entry(cache):
    folder, _ = cache
    env_a, parts_a = _key_for(folder, "0,1,2,3")
    env_b, parts_b = _key_for(folder, "7")
    assert probe_cache.path_for(env_a, parts_a) != probe_cache.path_for(env_b, parts_b)
    assert probe_cache.store(env_a, parts_a, {"plugins": ["A"]}, {"outcome": "ok", "elapsed_s": 1.0})
    assert probe_cache.store(env_b, parts_b, {"plugins": ["B"]}, {"outcome": "ok", "elapsed_s": 1.0})
    entry_a, why_a = probe_cache.load(env_a, parts_a)
    entry_b, why_b = probe_cache.load(env_b, parts_b)
    assert (why_a, why_b) == ("cached", "cached")
    assert entry_a["observations"]["plugins"] == ["A"] and entry_b["observations"]["plugins"] == ["B"]


def test_a_rules_cache_written_for_other_rules_is_not_used(cache):
    folder, rules = cache
    assert ruleset.load_rules(rules)[0].message != "edited"
    first = sorted(rules.glob("*.yaml"))[0]
    text = first.read_text()
    # same rule IDs, one message changed: only the digest of the rule files tells the two apart
    data = yaml.safe_load(text)
    data["message"] = "edited"
    first.write_text(yaml.safe_dump(data, sort_keys=False))
    assert ruleset.load_rules(rules)[0].message == "edited"
    assert len(list(folder.glob("rules-*.json"))) == 2


def _indexed(folder: Path, rules: Path, monkeypatch) -> Path:
    """The rules loaded once with every file counted as settled: the status index is written."""
    monkeypatch.setattr(ruleset, "_SETTLED_NS", 0)
    ruleset.load_rules(rules)
    [index] = folder.glob("ruleindex-*.json")
    return index


def test_the_rules_index_is_written_only_once_the_files_are_settled(cache, monkeypatch):
    folder, rules = cache
    ruleset.load_rules(rules)  # the files were just copied: they may still change unseen in this tick
    assert list(folder.glob("ruleindex-*.json")) == [] and len(list(folder.glob("rules-*.json"))) == 1
    index = _indexed(folder, rules, monkeypatch)
    assert json.loads(index.read_text())["digest"] in _rules_entry(folder).name


def test_a_rule_file_edited_to_the_same_size_and_time_is_not_read_from_the_index(cache, monkeypatch):
    folder, rules = cache
    _indexed(folder, rules, monkeypatch)
    first = sorted(rules.glob("*.yaml"))[0]
    before = first.stat()
    text = first.read_text()
    message = yaml.safe_load(text)["message"]
    edited = text.replace(message, message[::-1], 1)
    assert len(edited) == len(text) and edited != text
    first.write_text(edited)
    os.utime(first, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and modification time as before
    assert ruleset.load_rules(rules)[0].message == message[::-1]  # the change time told them apart


def test_a_rules_entry_damaged_after_its_index_was_written_is_a_miss(cache, monkeypatch):
    folder, rules = cache
    genuine = [r.message for r in ruleset.load_rules(rules, use_cache=False)]
    _indexed(folder, rules, monkeypatch)
    entry = _rules_entry(folder)
    text = entry.read_text()
    at = text.index(genuine[0][:20], text.index("\n"))  # a letter of the first rule's message, in the body
    entry.write_text(text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1:])  # still valid JSON, same IDs
    assert [r.message for r in ruleset.load_rules(rules)] == genuine


@pytest.mark.parametrize("damage", ["not json", "another digest", "a link", "a fifo"])
def test_a_damaged_or_planted_rules_index_is_a_miss(cache, monkeypatch, tmp_path, damage):
    folder, rules = cache
    genuine = [r.message for r in ruleset.load_rules(rules, use_cache=False)]
    index = _indexed(folder, rules, monkeypatch)
    # a valid entry for other rules under its own name, for the index to point at
    forged = _forged_rules_entry(_rules_entry(folder), "forged")
    other = folder / ("rules-" + "f" * 32 + ".json")
    other.write_text(forged.replace(json.loads(forged.partition("\n")[0])["digest"], "f" * 32, 1))
    data = json.loads(index.read_text())
    index.unlink()
    if damage == "not json":
        index.write_text("{")
    elif damage == "another digest":
        index.write_text(json.dumps({**data, "digest": "f" * 32}))
    elif damage == "a link":
        target = tmp_path / "elsewhere.json"
        target.write_text(json.dumps({**data, "digest": "f" * 32}))
        index.symlink_to(target)
    else:
        os.mkfifo(index)
    assert [r.message for r in ruleset.load_rules(rules)] == genuine
    assert stat.S_ISREG(index.lstat().st_mode) and json.loads(index.read_text()) == data  # rewritten in place


def test_a_rules_cache_for_another_schema_or_format_is_not_used(cache):
    folder, rules = cache
    genuine = ruleset.load_rules(rules)
    entry = _rules_entry(folder)
    forged = _forged_rules_entry(entry, "forged")
    header_text, _, body = forged.partition("\n")
    for change in ({"digest": "0" * 32}, {"format": ruleset.CACHE_FORMAT - 1}):
        entry.write_text(json.dumps({**json.loads(header_text), **change}) + "\n" + body)
        assert [r.message for r in ruleset.load_rules(rules)] == [r.message for r in genuine]


# -- no blocking opens: inputs the user named are refused (exit 2) ---------------------------------

def test_the_one_reader_refuses_fifos_devices_and_links_on_the_opened_descriptor(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(LimitExceeded, match="a FIFO"):
        read_bounded(fifo, max_bytes=100, what="profile")
    if os.path.exists("/dev/zero"):
        with pytest.raises(LimitExceeded, match="character device"):
            read_bounded("/dev/zero", max_bytes=100, what="profile")
    real = tmp_path / "real.yaml"
    real.write_text("a: 1\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    assert read_bounded(link, max_bytes=100, what="recipe") == "a: 1\n"  # a file the user names: followed
    with pytest.raises(UsageError, match="symbolic link"):
        read_bounded(link, max_bytes=100, what="probe cache", follow=False)


def test_a_profile_that_is_a_fifo_is_a_usage_error(tmp_path, cli):
    os.mkfifo(tmp_path / "hw.yaml")
    code, _out, err = cli("check", "--profile", str(tmp_path / "hw.yaml"), "--", "sglang", "serve",
                          "MiniMaxAI/MiniMax-H3", "--num-gpus", "4", json_output=False)
    assert code == 2 and "hw.yaml" in err and "FIFO" in err


def test_a_recipes_config_linked_to_a_fifo_is_refused_by_check_and_lint(tmp_path, cli):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "f.yaml").symlink_to(tmp_path / "pipe")
    recipe = tmp_path / "r.yaml"
    recipe.write_text("command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --config ./f.yaml\nprofile: 4xH200\n")
    env = {"PWD": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "check", "--recipe", str(recipe)], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=120)
    assert proc.returncode == 2 and "f.yaml" in proc.stderr and "FIFO" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=120)
    report = json.loads(proc.stdout)
    messages = [f["message"] for f in report["findings"]]
    assert proc.returncode == 1 and any("FIFO" in m for m in messages)


def test_a_model_index_json_that_is_a_fifo_is_refused_not_waited_on(tmp_path, cli):
    model = tmp_path / "model"
    model.mkdir()
    os.mkfifo(model / "model_index.json")
    code, _out, err = cli("check", "--profile", "4xH200", "--", "sglang", "serve", str(model), "--num-gpus", "4",
                          json_output=False)
    assert code == 2 and "model_index.json" in err and "FIFO" in err


def test_lint_never_waits_on_a_fifo_named_gitignore(tmp_path):
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "r.yaml").write_text("command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4\nprofile: 4xH200\n")
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["findings"] == []


# -- lint --fix writes only inside the tree it was given -----------------------------------------

BROKEN = "command: sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4 --tp-size 3\nprofile: 4xH200\n"


def test_lint_fix_never_writes_through_a_link_out_of_the_tree(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "r.yaml").write_text(BROKEN)
    (tree / "out.yaml").symlink_to(outside / "r.yaml")
    (tree / "own.yaml").write_text(BROKEN)
    (tree / "target.yaml").write_text(BROKEN)
    (tree / "in.yaml").symlink_to(tree / "target.yaml")
    proc = subprocess.run([sys.executable, "-m", "h3doctor", "lint", "--fix", "tree"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert (outside / "r.yaml").read_text() == BROKEN  # the file outside is untouched
    # the link out of the tree is not even read (H3DL006), so never fixed
    assert "tree/out.yaml:1:1: H3DL006" in proc.stdout and "tree/out.yaml (" not in proc.stdout
    assert "--tp-size 4" in (tree / "own.yaml").read_text()
    assert (tree / "in.yaml").is_symlink() and "--tp-size 4" in (tree / "target.yaml").read_text()  # inside: kept a link


# -- every read goes through the one reader ---------------------------------------------------------

PACKAGE = REPO / "h3doctor"
OPENS = re.compile(r"(?<![A-Za-z_.])(?:os\.(?:fd)?)?open\(|\.(?:read|write)_(?:text|bytes)\(|\b(?:json|tomllib)\.load\(")
# files h3doctor ships (read by package_dir / importlib.resources), the kernel's own files, and
# what h3doctor writes to places the user named or owns: nothing here reads a file others wrote
ALLOWED = {
    ("safeload.py", "os.open("), ("safeload.py", "os.fdopen(fd"), ("paths.py", "open("), ("output/streams.py", "os.open(os.devnull"),
    ("host/probe.py", 'open("/proc/meminfo"'), ("host/probe_child.py", "open(os.path.join(root, bus"),
    ("host/probe_child.py", "os.fdopen(os.dup(1)"), ("launch/execute.py", 'open("/proc/self/environ"'),
    ("launch/hook.py", 'open("/dev/tty"'),
    ("launch/hook.py", "open(path, \"wb\")"), ("launch/hook.py", "(here / "),
    ("cli_reference.py", "Path(markdown).write_text("), ("suggest/search.py", "path.read_text("),
    ("engine/ruleset.py", "json.loads(path.read_text("),  # releasedata/X/where.json, shipped
}


def test_every_file_h3doctor_reads_is_opened_by_the_one_reader():
    stray = []
    for source in sorted(PACKAGE.rglob("*.py")):
        rel = source.relative_to(PACKAGE).as_posix()
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if not OPENS.search(code) or "package_dir(" in code or "resources.files(" in code:
                continue
            if code.lstrip().startswith(('"', "'")) or any(rel == f and snippet in code for f, snippet in ALLOWED):
                continue
            stray.append(f"{rel}:{number}: {line.strip()}")
    assert stray == [], "read it through h3doctor.safeload (open_regular / read_bounded):\n" + "\n".join(stray)
