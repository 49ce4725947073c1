"""Every example in every rule file runs as a test (failing, passing, and the corrected command)."""

from __future__ import annotations

import json
import re
import shlex
import struct
from dataclasses import replace

import pytest
import yaml

from h3doctor.engine.check import check
from h3doctor.engine.ruleset import load_rules
from h3doctor.host.profiles import load_profile
from h3doctor.output.json_report import finding_dict
from h3doctor.sglang import releases
from h3doctor.sglang.flagtable import load_flag_table

RULES = load_rules()
PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:\.\w+)+(?:!r)?\}")  # `{args.dp_size}`, not a dict's repr
CASES = [(rule, ex) for rule in RULES for ex in rule.examples]


@pytest.mark.parametrize("rule,example", CASES, ids=[f"{r.id}::{e['name']}" for r, e in CASES])
def test_rule_example(rule, example, tmp_path):
    if "config" in example:  # an inline --config file: written out, its path replaces {config}
        config = tmp_path / example.get("config_name", "config.yaml")
        config.write_text(_serialize(config.suffix, example["config"]))
        example = {**example, "argv": example["argv"].replace("{config}", str(config))}
        if example.get("fixed"):
            example["fixed"] = example["fixed"].replace("{config}", shlex.quote(str(config)))
    if "checkpoint" in example:  # a header-only .safetensors file with this __metadata__, or these bytes
        ckpt = tmp_path / "transformer.safetensors"
        if isinstance(example["checkpoint"], str):
            ckpt.write_bytes(example["checkpoint"].encode())
        else:
            header = json.dumps({"__metadata__": example["checkpoint"]}).encode()
            ckpt.write_bytes(struct.pack("<Q", len(header)) + header)
        example = {**example, "argv": example["argv"].replace("{checkpoint}", str(ckpt))}
        if example.get("fixed"):
            example["fixed"] = example["fixed"].replace("{checkpoint}", shlex.quote(str(ckpt)))
    release = releases.target(example.get("sglang_version"), None)
    table = load_flag_table(release.table_version)
    hw = replace(load_profile(example["profile"]), **example.get("hw", {}))
    env = example.get("env", {})
    intent = example.get("intent", {})
    deployment = example.get("deployment")  # a manifest's probes (lint's Kubernetes readers)
    result = check(shlex.split(example["argv"]), hw, RULES, table, env, intent, release=release, deployment=deployment)
    fired = [f for f in result.evaluation.findings if f.rule.id == rule.id]
    said = json.dumps([finding_dict(f) for f in result.evaluation.findings]
                      + [s.message for s in result.fix_steps] + result.gives_up + result.fix_notes
                      + [g for a in result.alternatives for g in a.gives_up])
    assert not PLACEHOLDER.findall(said), f"unfilled placeholders: {PLACEHOLDER.findall(said)}"
    if example["expect"] == "pass":
        assert not fired, f"{rule.id} fired on its passing example: {[f.message for f in fired]}"
        return
    if example["expect"] == "unknown":
        assert fired and fired[0].cannot_verify, "expected a 'cannot verify' finding"
        return
    assert fired and not fired[0].cannot_verify, f"{rule.id} did not fire on {example['argv']}"
    if "fixed" in example:
        expected = example["fixed"]
        assert result.corrected_command == expected, result.fix_notes
        if expected is not None:
            again = check(shlex.split(expected), hw, RULES, table, env, intent, release=release, deployment=deployment)
            errors = [f.rule.id for f in again.evaluation.findings if f.severity == "error"]
            assert errors == [], f"the corrected command still fails: {errors}"
    if "alternatives" in example:
        assert [a.command for a in result.alternatives] == example["alternatives"], [a.gives_up for a in result.alternatives]
        for alt in result.alternatives:
            assert rule.id in alt.answers and alt.checks_clean and alt.gives_up
            again = check(alt.argv, hw, RULES, table, env, intent)
            assert again.fix_status == "clean", f"the alternative {alt.command} does not re-check clean"


def test_every_rule_has_failing_and_passing_examples():
    for rule in RULES:
        kinds = {e["expect"] for e in rule.examples}
        # a rule that can only say "cannot verify" (its condition is unknown wherever it applies)
        # shows that instead of a failure
        assert "pass" in kinds and kinds & {"fail", "unknown"}, rule.id
        if "fail" in kinds:
            assert any("fixed" in e for e in rule.examples if e["expect"] == "fail"), f"{rule.id} shows no corrected command"
        if rule.alternatives:
            assert any(e.get("alternatives") for e in rule.examples), f"{rule.id} shows none of its alternatives"


def _serialize(suffix: str, data) -> str:
    if suffix == ".json":
        return json.dumps(data)
    if suffix == ".toml":  # flat tables of scalars are enough for the examples
        return "".join(f"{k} = {json.dumps(v)}\n" for k, v in data.items())
    return yaml.safe_dump(data)
