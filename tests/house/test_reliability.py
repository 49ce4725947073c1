"""Hostile and careless input, one test per reproducer: files, caches, environments and
output streams get a located usage error (exit 2) or a finding (exit 1), never a traceback, an
internal error (exit 3), Python's exit 120, or a file's content in the message.

Timings are not asserted here (see docs/reliability.md for the fuzz run's figures)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

M = ["--", "sglang", "serve", "MiniMaxAI/MiniMax-H3"]
README_FAILING = [*M, "--num-gpus", "4", "--ulysses-degree", "2", "--ring-degree", "2", "--attention-backend", "sage_attn"]


def alias_bomb(levels: int = 8) -> str:
    """A few hundred bytes that expand to 9**levels values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def nested(depth: int = 1000) -> str:
    return "[" * depth + "]" * depth


def usage_error(result, *fragments: str) -> str:
    code, _out, err = result
    assert code == 2, (code, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    for fragment in fragments:
        assert fragment in err, (fragment, err[-2000:])
    return err


def write(path, text: str):
    path.write_text(textwrap.dedent(text))
    return str(path)


# -- 1. alias bombs ---------------------------------------------------------------------------

def test_alias_bomb_in_a_recipe(tmp_path, cli):
    recipe = write(tmp_path / "r.yaml", "command: sglang serve MiniMaxAI/MiniMax-H3\nprofile: 4xH200\n"
                   "description:\n" + textwrap.indent(alias_bomb(), "  "))
    err = usage_error(cli("check", "--recipe", recipe), f"{recipe}:", "alias")
    assert len(err) < 1000


def test_alias_bomb_in_a_profile(tmp_path, cli):
    profile = write(tmp_path / "p.yaml", "platform: cuda\n" + alias_bomb())
    err = usage_error(cli("check", "--profile", profile, *M), f"{profile}:", "alias")
    assert len(err) < 1000


def test_alias_bomb_in_a_config(tmp_path, cli):
    config = write(tmp_path / "c.yaml", alias_bomb())
    err = usage_error(cli("check", "--profile", "4xH200", *M, "--config", config), f"{config}:", "alias")
    assert len(err) < 1000


# -- 2. large files ---------------------------------------------------------------------------

def test_a_config_with_too_many_values_is_refused_not_parsed(tmp_path, cli):
    config = tmp_path / "big.yaml"
    config.write_text("".join(f"key_{i}: {i}\n" for i in range(200_000)))  # ~3.6 MB
    usage_error(cli("check", "--profile", "4xH200", *M, "--config", str(config)), f"{config}:", "values")


def test_attention_backend_config_file_has_a_size_cap(tmp_path, cli):
    big = tmp_path / "abc.json"
    big.write_text('{"a": "' + "x" * (5 << 20) + '"}')
    usage_error(cli("check", "--profile", "4xH200", *M, "--attention-backend-config", str(big)), str(big), "larger")


# -- 3. inputs that used to be internal errors ------------------------------------------------

def test_a_timestamp_that_is_not_a_date_is_text(tmp_path, cli):
    profile = write(tmp_path / "p.yaml", "platform: cuda\ngpu_count: 4\ndescription: 2001-02-30\n")
    code, data, err = cli("check", "--profile", profile, *README_FAILING)
    assert code == 1 and "Traceback" not in err
    assert data["hardware"]["description"] == "2001-02-30"  # kept as the user wrote it
    recipe = write(tmp_path / "r.yaml", "description: 2001-02-30\nprofile: 4xH200\ncommand: " + " ".join(README_FAILING[1:]) + "\n")
    code, data, err = cli("check", "--recipe", recipe)
    assert code == 1 and "H3D305" in [f["rule"] for f in data["findings"]]


def test_a_config_date_that_is_not_a_date_fails_as_sglangs_yaml_reader_would(tmp_path, cli):
    config = write(tmp_path / "c.yaml", "model_variant: ref2va\nlabel: 2001-02-30\n")
    code, data, err = cli("check", "--profile", "4xH200", *M, "--config", config)
    assert code == 1 and "Traceback" not in err
    finding = next(f for f in data["findings"] if f["rule"] == "H3D031")
    assert f"{config}:2" in finding["message"] and "day is out of range" in finding["message"]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_deep_nesting_in_every_file(tmp_path, cli, suffix):
    deep = nested()
    profile = tmp_path / f"p{suffix}"
    profile.write_text(deep)
    usage_error(cli("check", "--profile", str(profile), *M), str(profile), "nested deeper than 64")
    config = tmp_path / f"c{suffix}"
    config.write_text(("{\"a\": " if suffix == ".json" else "a: ") + deep + ("}" if suffix == ".json" else "\n"))
    usage_error(cli("check", "--profile", "4xH200", *M, "--config", str(config)), str(config), "nested deeper than 64")
    usage_error(cli("check", "--profile", "4xH200", *M, "--attention-backend-config", str(config)), str(config), "nested")


def test_deep_nesting_in_a_recipe_and_a_model_index(tmp_path, cli):
    recipe = write(tmp_path / "r.yaml", "command: sglang serve MiniMaxAI/MiniMax-H3\ndescription: " + nested() + "\n")
    usage_error(cli("check", "--recipe", recipe), recipe, "nested deeper than 64")
    model = tmp_path / "local-model"
    model.mkdir()
    (model / "model_index.json").write_text(nested())
    usage_error(cli("check", "--profile", "4xH200", "--", "sglang", "serve", str(model)), "model_index.json", "nested")


@pytest.mark.parametrize("flag,value", [
    ("--component-attention-backends", '{"transformer": ' + nested() + "}"),
    ("--attention-backend-config", '{"a": ' + nested() + "}"),
])
def test_deep_inline_json_in_argv(cli, flag, value):
    usage_error(cli("check", "--profile", "4xH200", *M, flag, value), flag, "nested deeper than 64")


@pytest.mark.parametrize("key", ["1", "~", "[a, b]"])
def test_non_string_keys_in_a_profile(tmp_path, cli, key):
    profile = write(tmp_path / "p.yaml", f"platform: cuda\n{key}: a\n")
    usage_error(cli("check", "--profile", profile, *M), f"{profile}:2", "keys must be strings")


def test_a_path_longer_than_the_os_allows(cli):
    long = "p" * 5000 + ".yaml"
    err = usage_error(cli("check", "--profile", long, *M), "too long")
    assert len(err) < 1000  # the path is shortened, not echoed


def test_a_cache_dir_longer_than_the_os_allows_only_costs_the_cache(tmp_path, cli):
    code, data, err = cli("check", "--profile", "4xH200", *README_FAILING,
                          env={"H3DOCTOR_CACHE_DIR": str(tmp_path / ("d" * 300) / ("e" * 300))})
    assert code == 1 and "H3D305" in [f["rule"] for f in data["findings"]] and "Traceback" not in err


@pytest.mark.parametrize("command", ['sglang serve "MiniMaxAI/MiniMax-H3', "sglang serve MiniMaxAI/MiniMax-H3 \\"])
def test_recipe_command_a_shell_cannot_split(tmp_path, cli, command):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("profile: 4xH200\ncommand: " + json.dumps(command) + "\n")
    usage_error(cli("check", "--recipe", str(recipe)), f"{recipe}:2", "command:")


def test_nul_byte_in_a_recipe_profile(tmp_path, cli):
    recipe = tmp_path / "r.yaml"
    recipe.write_text('command: sglang serve MiniMaxAI/MiniMax-H3\nprofile: "lab\\0.yaml"\n')
    usage_error(cli("check", "--recipe", str(recipe)), f"{recipe}:2", "NUL")


def test_config_infinity_is_a_finding(tmp_path, cli):
    config = write(tmp_path / "c.yaml", "ring_degree: .inf\n")
    code, data, err = cli("check", "--profile", "4xH200", *M, "--config", config)
    assert code in (0, 1) and "Traceback" not in err
    assert "H3D951" in [f["rule"] for f in data["findings"]]  # not type-converted by sglang


def test_config_model_path_that_is_not_a_string(tmp_path, cli):
    config = tmp_path / "c.json"
    config.write_text('{"model_path": 5}')
    code, data, err = cli("check", "--profile", "4xH200", "--config", str(config))
    assert code == 1 and "Traceback" not in err
    assert [f["rule"] for f in data["findings"]] == ["H3D001"]  # sglang's dispatcher stops first


@pytest.mark.parametrize("text", ["", "[1, 2]\n", "just text\n"])
def test_config_that_is_not_a_mapping_is_sglangs_type_error(tmp_path, cli, text):
    config = write(tmp_path / "c.yaml", text)
    code, data, err = cli("check", "--profile", "4xH200", *M, "--config", config)
    assert code == 1 and "Traceback" not in err
    finding = next(f for f in data["findings"] if f["rule"] == "H3D031")
    assert finding["message"].startswith("TypeError: ")


# -- 4. caches are not trusted ----------------------------------------------------------------

def test_rules_cache_missing_a_rule_is_a_miss_not_an_all_clear(tmp_path, cli):
    env = {"H3DOCTOR_CACHE_DIR": str(tmp_path)}
    code, data, _ = cli("check", "--profile", "4xH200", *README_FAILING, env=env)
    assert code == 1
    [cache] = tmp_path.glob("rules-*.json")
    header, body = cache.read_text().split("\n", 1)
    rules_text, _, examples = body.rpartition("\n")  # the last line: every rule's examples
    kept = [i for i, e in enumerate(json.loads(rules_text)) if e["data"]["id"] != "H3D305"]
    short = (json.dumps([json.loads(rules_text)[i] for i in kept]) + "\n"
             + json.dumps([json.loads(examples)[i] for i in kept]))
    cache.write_text(header + "\n" + short)  # valid JSON, one rule short (and a stale content hash)
    code, data, err = cli("check", "--profile", "4xH200", *README_FAILING, env=env)
    assert code == 1 and "H3D305" in [f["rule"] for f in data["findings"]], err
    meta = json.loads(header)  # the same, with a content hash that matches: the rule IDs still refuse it
    meta["content_sha256"] = hashlib.sha256(short.encode()).hexdigest()
    cache.write_text(json.dumps(meta) + "\n" + short)
    code, data, err = cli("check", "--profile", "4xH200", *README_FAILING, env=env)
    assert code == 1 and "H3D305" in [f["rule"] for f in data["findings"]], err
    cache.write_text("{not json")
    code, data, _ = cli("check", "--profile", "4xH200", *README_FAILING, env=env)
    assert code == 1 and "H3D305" in [f["rule"] for f in data["findings"]]


def _probe_env(tmp_path):
    return {"H3DOCTOR_CACHE_DIR": str(tmp_path), "PATH": os.environ.get("PATH", "")}


GOOD_OBSERVATIONS = {"plugins": [], "nvidia_procfs": {"gpus": [], "jetson": False},
                     "torch": {"ok": True, "version": "2.13.0+cpu", "cuda": None, "hip": None}}


@pytest.mark.parametrize("damage", [
    {"created": None},
    {"created": "yesterday"},
    {"observations": {**GOOD_OBSERVATIONS, "torch": "x"}},
    {"observations": {**GOOD_OBSERVATIONS, "torch": {"ok": "yes"}}},
    {"observations": {**GOOD_OBSERVATIONS, "cuda_devices": [{"index": 0, "total": "80 GB"}]}},
    {"observations": {**GOOD_OBSERVATIONS, "surprise": 1}},
    {"run": None},
])
def test_probe_cache_entry_with_the_right_key_but_wrong_types_is_a_miss(tmp_path, damage):
    from h3doctor.host import probe_cache

    env = _probe_env(tmp_path)
    parts = probe_cache.key_parts(env)
    assert probe_cache.store(env, parts, GOOD_OBSERVATIONS, {"outcome": "ok", "elapsed_s": 1.0})
    entry, why = probe_cache.load(env, parts)
    assert entry is not None and why == "cached"
    path = probe_cache.path_for(env, parts)
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({**stored, **damage}))
    entry, why = probe_cache.load(env, parts)
    assert entry is None and "damaged" in why


def test_a_damaged_probe_cache_means_probing_again(tmp_path, monkeypatch):
    from h3doctor.host import probe as probe_mod
    from h3doctor.host import probe_cache

    env = _probe_env(tmp_path)
    parts = probe_cache.key_parts(env)
    probe_cache.store(env, parts, GOOD_OBSERVATIONS, {"outcome": "ok", "elapsed_s": 1.0})
    path = probe_cache.path_for(env, parts)
    path.write_text(json.dumps({**json.loads(path.read_text()), "created": None}))
    calls = []
    monkeypatch.setattr(probe_mod, "run_child", lambda e, t: calls.append(1) or (dict(GOOD_OBSERVATIONS), {"outcome": "ok", "elapsed_s": 0.1}))
    result = probe_mod.probe(env)
    assert calls == [1] and result.run["cached"] is False and "damaged" in result.run["cache"]
    assert probe_mod.probe(env).run["cached"] is True  # rewritten, atomically, and trusted again


def test_files_are_written_atomically_and_never_replace_what_is_not_a_file(tmp_path):
    import stat

    from h3doctor.paths import write_atomic

    target = tmp_path / "sub" / "f.json"
    write_atomic(target, "{}")
    assert target.read_text() == "{}" and [p.name for p in target.parent.iterdir()] == ["f.json"]
    target.chmod(0o640)
    write_atomic(target, "[]")
    assert target.read_text() == "[]" and stat.S_IMODE(target.stat().st_mode) == 0o640  # keeps its mode
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "1")
    assert link.is_symlink() and target.read_text() == "1"  # written through the link
    with pytest.raises(OSError):
        write_atomic(tmp_path, "x")  # a directory is not replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "sub"]  # and no temporary file is left
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomic(fifo, "through the pipe")
        assert os.read(fd, 100) == b"through the pipe" and stat.S_ISFIFO(fifo.stat().st_mode)
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_writing_a_file_to_a_device_writes_into_it(cli):
    import stat

    usage_error(cli("coverage", "--write", "/dev/full", json_output=False), "No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # still the device, not a file put in its place


# -- 5. output streams and encodings ----------------------------------------------------------

def _raw(args: list[str], *, stdout=None, close_stdout=False, env=None):
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "h3doctor", *args], stdout=stdout if stdout is not None else subprocess.PIPE,
                          stderr=subprocess.PIPE, env=full_env, timeout=60,
                          preexec_fn=(lambda: os.close(1)) if close_stdout else None)
    return proc.returncode, proc.stdout, proc.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("args", [["rules"], ["check", "--profile", "4xH200", *README_FAILING], ["profiles"]])
def test_closed_stdout(args):
    code, _, err = _raw(args, close_stdout=True)
    assert code == 2 and "cannot write to stdout" in err and "Traceback" not in err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["rules"], ["check", "--profile", "4xH200", "--format", "json", *README_FAILING]])
def test_full_disk_on_stdout(args):
    with open("/dev/full", "w") as full:
        code, _, err = _raw(args, stdout=full)
    assert code == 2 and "No space left on device" in err and "Traceback" not in err


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_non_utf8_output_encodings(encoding):
    code, out, err = _raw(["check", "--profile", "4xH200", *README_FAILING], env={"PYTHONIOENCODING": encoding})
    assert code == 1 and "Traceback" not in err
    text = out.decode(encoding)
    assert "H3D305" in text and "--attention-backend fa" in text and "✗" not in text


def test_coverage_write_to_a_directory(tmp_path, cli):
    usage_error(cli("coverage", "--write", str(tmp_path), json_output=False), "cannot write the coverage table")


def test_internal_errors_say_how_to_get_the_traceback():
    script = ("import sys; from h3doctor import cli\n"
              "def boom(*a, **k): raise RuntimeError('x' * 10000)\n"
              "cli.app = boom\nsys.argv = ['h3doctor', 'rules']\ncli.main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "H3DOCTOR_DEBUG"})
    assert proc.returncode == 3 and "H3DOCTOR_DEBUG=1" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr) < 1000  # the exception's text is shortened
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "H3DOCTOR_DEBUG": "1"})
    assert proc.returncode == 3 and "Traceback" in proc.stderr and "RuntimeError" in proc.stderr


# -- 6. JSON is JSON --------------------------------------------------------------------------

def _strict_json(text: str):
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


def test_profile_with_nan_is_refused(tmp_path, cli):
    profile = write(tmp_path / "p.yaml", "platform: cuda\ngpu_memory_gib: .nan\n")
    usage_error(cli("check", "--profile", profile, *M), f"{profile}:2", "not a finite number")
    profile = tmp_path / "p.json"
    profile.write_text('{"platform": "cuda", "gpu_memory_gib": NaN}')
    usage_error(cli("check", "--profile", str(profile), *M), str(profile), "NaN is not JSON")


def test_probe_timeout_nan_is_a_usage_error(cli):
    usage_error(cli("probe", "--timeout", "nan", "--format", "json", json_output=False), "timeout")


def test_non_finite_config_values_stay_valid_json(tmp_path, cli):
    config = write(tmp_path / "c.yaml", "attention_backend_config: {sparsity: .nan, cap: .inf}\n")
    code, out, err = cli("check", "--profile", "4xH200", "--format", "json", *M, "--config", config, json_output=False)
    assert code in (0, 1) and "Traceback" not in err
    data = _strict_json(out)
    assert data["effective_config"]["attention_backend_config"] == {"sparsity": "nan", "cap": "inf"}


# -- 8. files stay where they belong ----------------------------------------------------------

def test_recipe_profile_may_not_leave_the_recipe_directory(tmp_path, cli):
    secret = tmp_path / "secret.yaml"
    secret.write_text("root: $6$hash-that-must-not-be-printed\n")
    sub = tmp_path / "pr"
    sub.mkdir()
    for target in ("../secret.yaml", "../../../../../../etc/shadow", str(secret)):
        recipe = sub / "r.yaml"
        recipe.write_text(f"command: sglang serve MiniMaxAI/MiniMax-H3\nprofile: {target}\n")
        err = usage_error(cli("check", "--recipe", str(recipe)), f"{recipe}:2", "leaves the recipe's directory")
        assert "hash-that-must-not-be-printed" not in err
    # given on the command line it is read, and still not echoed: it is not a profile
    err = usage_error(cli("check", "--profile", str(secret), *M), "not a profile")
    assert "hash-that-must-not-be-printed" not in err


def test_a_file_that_is_not_a_profile_is_not_echoed(tmp_path, cli):
    notes = tmp_path / "notes.yaml"
    notes.write_text("password: hunter2\ntoken: abc\n")
    recipe = write(tmp_path / "r.yaml", "command: sglang serve MiniMaxAI/MiniMax-H3\nprofile: ./notes.yaml\n")
    err = usage_error(cli("check", "--recipe", recipe), "not a profile")
    assert "hunter2" not in err and "token" not in err


def test_unknown_profile_keys_are_listed_briefly(tmp_path, cli):
    profile = tmp_path / "p.yaml"
    profile.write_text("platform: cuda\n" + "".join(f"unknown_key_{i}: {i}\n" for i in range(20_000)))
    err = usage_error(cli("check", "--profile", str(profile), *M), "unknown profile key(s)", "more")
    assert len(err) < 2000


def test_unknown_recipe_keys_are_listed_briefly(tmp_path, cli):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("command: sglang serve MiniMaxAI/MiniMax-H3\n" + "".join(f"k{i}: {i}\n" for i in range(20_000)))
    err = usage_error(cli("check", "--recipe", str(recipe)), f"{recipe}:", "unknown key")
    assert len(err) < 2000


# -- 9. messages name the file and the line ---------------------------------------------------

@pytest.mark.parametrize("line,needle", [
    ("sglang_version: 0.4.99", "sglang"),
    ('sglang_version: "0.5.23\\n"', "does not match"),
    ("profile: 9xH900", "no such hardware profile"),
    ("profile: ./missing.yaml", "no such hardware profile"),
])
def test_wrong_recipe_values_point_at_their_line(tmp_path, cli, line, needle):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"command: sglang serve MiniMaxAI/MiniMax-H3\n{line}\n")
    usage_error(cli("check", "--recipe", str(recipe)), f"{recipe}:2", needle)


def test_sglang_version_option_cannot_pick_another_file(cli):
    usage_error(cli("check", "--profile", "4xH200", "--sglang-version", "../../schema/rule.schema", *M), "sglang version must look like")


# -- 7. corrected commands name every change --------------------------------------------------

def _changed_tokens(data) -> tuple[set[str], set[str]]:
    removed = {t for step in data["fix_steps"] for c in step["changes"] for t in c["removed"]}
    added = {t for step in data["fix_steps"] for c in step["changes"] for t in c["added"]}
    return removed, added


def test_every_parse_error_the_fix_drops_is_reported(cli):
    code, data, err = cli("check", "--profile", "4xH200", *M, "--qua", "x", "--num-gpus", "abc", "--attention-backend", "nope")
    assert code == 1 and "Traceback" not in err
    h3d010 = next(f for f in data["findings"] if f["rule"] == "H3D010")
    assert "--qua" in h3d010["message"]
    assert h3d010["detail"].startswith("sglang stops at the first parse error; after it: ")
    assert "argument --num-gpus: invalid int value: 'abc'" in h3d010["detail"]
    assert any("--num-gpus abc" in c for c in h3d010["changes"])
    assert data["corrected_argv"] == ["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--attention-backend", "fa"]
    removed, added = _changed_tokens(data)
    assert {"--qua", "x", "--num-gpus", "abc", "nope"} <= removed and "fa" in added


def test_a_did_you_mean_that_swaps_a_flag_says_so(cli):
    code, data, _ = cli("check", "--profile", "4xH200", *M, "--num-gpus", "4", "--enable-cache-dit")
    assert code == 1
    h3d020 = next(f for f in data["findings"] if f["rule"] == "H3D020")
    [change] = h3d020["changes"]
    assert "--enable-cache-dit" in change and "--enable-cache-report" in change and "a different flag" in change


@pytest.mark.parametrize("xdg", [None, "/srv/cache", " /srv/cache ", "relative/cache", ""])
def test_cache_directory_is_where_platformdirs_puts_it(monkeypatch, xdg):
    """h3doctor computes its cache directory itself (platformdirs costs ~8 ms to import on every
    check); on Linux, with XDG_CACHE_HOME unset, absolute, padded, relative or empty, and on
    macOS, it is platformdirs' answer."""
    import platformdirs.macos
    import platformdirs.unix

    from h3doctor.paths import user_cache_dir

    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    monkeypatch.setattr("sys.platform", "linux")
    assert str(user_cache_dir()) == platformdirs.unix.Unix("h3doctor").user_cache_dir
    monkeypatch.setattr("sys.platform", "darwin")
    assert str(user_cache_dir()) == platformdirs.macos.MacOS("h3doctor").user_cache_dir
