"""Property tests (hypothesis) over argv, profiles, recipes and config files.

A sample runs in CI (the default `max_examples`); H3DOCTOR_PROPERTY_EXAMPLES raises it for a
longer run. The long fault and fuzz run through the CLI is tools/fuzz/ (docs/reliability.md)."""

from __future__ import annotations

import os
from collections import Counter

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from h3doctor.engine.check import check
from h3doctor.errors import UsageError
from h3doctor.host.profiles import builtin_profile_names, load_profile
from h3doctor.output.json_report import build
from h3doctor.safeload import load_json, load_yaml

EXAMPLES = int(os.environ.get("H3DOCTOR_PROPERTY_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize="H3DOCTOR_PROPERTY_EXAMPLES" not in os.environ,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

MODELS = ["MiniMaxAI/MiniMax-H3", "OpenVDN/vdn-minimax-h3", "FastVideo/FastVideo-FastH3-8-Step-V2"]
VALUES = ["0", "1", "2", "4", "8", "-1", "true", "false", "fa", "sage_attn", "nope", "x", "", "a=b", '{"a":1}',
          "transformer=fa", "dit,vae", "none", "3.5", "nan", "speed", "abc"]
EXTRA = ["--qua", "--ring", "--mode", "--model", "--enable-cache-dit", "--attention_backend", "--num-gpu",
         "--component-attention-backends.transformer", "--x-path"]


@pytest.fixture(scope="module")
def options(table):
    return sorted(table.options_for("serve")) + EXTRA


@pytest.fixture(scope="module")
def profiles():
    return [load_profile(name) for name in builtin_profile_names()]


def launches(options):
    flag = st.tuples(st.sampled_from(options), st.lists(st.sampled_from(VALUES), max_size=2))
    return st.tuples(st.sampled_from(MODELS), st.lists(flag, max_size=6)).map(
        lambda t: ["sglang", "serve", t[0], *[w for f, vals in t[1] for w in (f, *vals)]])


def test_every_changed_token_is_named_by_the_report(rules, table, options, profiles):
    @SETTINGS
    @given(argv=launches(options), profile=st.sampled_from(range(len(profiles))))
    def prop(argv, profile):
        result = check(argv, profiles[profile], rules, table, {})
        data = build(result)
        proposal = data["corrected_argv"] or data["nearest_argv"]
        if proposal is None:
            return
        reported = {f["rule"] for f in data["findings"]}
        removed, added = Counter(), Counter()
        for step in data["fix_steps"]:
            # a change is made for a finding the report lists, or one it lists as met while fixing
            assert step["rule"] in reported or step["found_after_fix"], step
            for change in step["changes"]:
                removed.update(change["removed"])
                added.update(change["added"])
                assert change["text"]
        for token in Counter(argv) - Counter(proposal):  # fewer of it than the user typed
            assert token in removed, (argv, proposal, token)
        for token in Counter(proposal) - Counter(argv):  # more of it than the user typed
            assert token in added, (argv, proposal, token)
        for f in data["findings"]:  # a finding's own list covers its own steps
            own = [c["text"] for s in data["fix_steps"] if s["rule"] == f["rule"] for c in s["changes"]]
            assert f["changes"] == own

    prop()


# -- loaders: never anything but the documented usage error ------------------------------------

def _scalars():
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
                     st.dates().map(str), st.sampled_from(["2001-02-30", ".inf", "~", "NaN", "&a", "*a", "!!binary"]))


def _documents():
    return st.recursive(_scalars(), lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=10), st.integers(), st.none()), inner, max_size=4)), max_leaves=20)


def _yaml_texts():
    dumped = _documents().map(lambda d: yaml.safe_dump(d, allow_unicode=True))
    noisy = st.lists(st.sampled_from(["a: &x [1, 2]\n", "b: *x\n", "c: *y\n", "- [\n", "{\n", "d: !!python/object:os.system\n",
                                      "e: 2001-02-30\n", "f: .nan\n", "1: one\n", "'\"\n", "\t\n", "---\n", "g: |\n  text\n",
                                      "h: [[[[[[[[1]]]]]]]]\n", "i: " + "[" * 70 + "]" * 70 + "\n"]), max_size=8).map("".join)
    return st.one_of(dumped, noisy, st.text(max_size=200))


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_yaml_and_json_loaders_raise_only_usage_errors():
    @SETTINGS
    @given(text=_yaml_texts())
    def prop(text):
        for load in (lambda: load_yaml(text, origin="f.yaml"), lambda: load_json(text, origin="f.json"),
                     lambda: load_yaml(text, origin="f.yaml", string_keys=False, finite=False, invalid_dates="error")):
            try:
                load()
            except UsageError as exc:
                assert exc.location and exc.location.startswith("f."), exc

    prop()


def test_recipe_loader_raises_only_usage_errors(tmp_path_factory):
    from h3doctor.inputs.recipe import load_recipe

    tmp = tmp_path_factory.mktemp("recipes")
    heads = st.sampled_from(["", "command: sglang serve MiniMaxAI/MiniMax-H3\n", "command: 'sglang serve \"x'\n",
                             "command: [sglang, serve, 5]\n", "profile: ../../etc/passwd\n", "profile: ./p.yaml\n",
                             "sglang_version: \"0.5.23\\n\"\n", "env: {A: 1, 'b-c': x}\n", "request: {steps: 0}\n"])

    @SETTINGS
    @given(head=heads, body=_yaml_texts())
    def prop(head, body):
        path = _write(tmp, "r.yaml", head + body)
        try:
            recipe = load_recipe(path)
        except UsageError as exc:
            assert exc.location and exc.location.startswith(path), exc
            return
        assert all(isinstance(t, str) for t in recipe.command)

    prop()


def test_config_loader_raises_only_usage_errors(tmp_path_factory, table):
    from h3doctor.sglang.server_args import config_for
    from h3doctor.sglang.argv import parse_command

    tmp = tmp_path_factory.mktemp("configs")

    @SETTINGS
    @given(body=_yaml_texts(), suffix=st.sampled_from([".yaml", ".json", ".toml", ".txt"]))
    def prop(body, suffix):
        path = _write(tmp, "c" + suffix, body)
        cmd = parse_command(["sglang", "serve", "MiniMaxAI/MiniMax-H3", "--config", path], table)
        try:
            load = config_for(cmd, table)
        except UsageError as exc:  # h3doctor's reading limits only
            assert exc.location and exc.location.startswith(path), exc
            return
        assert load.error is None or isinstance(load.error, str)
        assert isinstance(load.values, dict)

    prop()


def test_profile_loader_raises_only_usage_errors(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profiles")

    @SETTINGS
    @given(body=_yaml_texts(), suffix=st.sampled_from([".yaml", ".json"]), platform=st.booleans())
    def prop(body, suffix, platform):
        path = _write(tmp, "p" + suffix, ("platform: cuda\n" if platform and suffix == ".yaml" else "") + body)
        try:
            load_profile(path)
        except UsageError as exc:
            assert exc.location and exc.location.startswith(path), exc

    prop()
