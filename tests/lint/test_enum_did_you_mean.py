"""A value one slip from a choice names the choice meant, at the key's line (issue 31: did-you-mean
for enum values): `.h3doctor.yaml`'s enums (fail_on, a rule's severity, an override's kind), a
rule file's, and a recipe's `request.quality` (H3D705: the levels are the release's, so the finding
stays sglang's refusal; its fix names the level meant and lint points at `quality:`)."""

from __future__ import annotations

import pytest

from h3doctor.errors import UsageError
from h3doctor.lint.config import load_config
from h3doctor.lint.run import LintOptions, lint
from h3doctor.request import CheckRequest, run

LAUNCH = "sglang serve MiniMaxAI/MiniMax-H3 --num-gpus 4"


@pytest.mark.parametrize("text, where, said", [
    ("targets: [4xH200]\nfail_on: warnin\n", ":2:1", "at fail_on: 'warnin' is not one of ['error', 'warning', 'info']; "
                                                     "did you mean 'warning'?"),
    ("severity:\n  H3D305: inf\n", ":2:3", "did you mean 'info'?"),
    ("overrides:\n  - paths: ['*']\n    kind: shel\n", ":3:5", "did you mean 'shell'?"),
])
def test_a_configuration_enum_one_slip_away_names_the_choice_at_its_line(tmp_path, text, where, said):
    """Fails when config._validate drops yamlpos.enum_meant (the choices alone, no suggestion)."""
    config = tmp_path / ".h3doctor.yaml"
    config.write_text(text)
    with pytest.raises(UsageError) as err:
        load_config(config)
    assert err.value.location == f"{config}{where}" and said in err.value.message, err.value.message


def test_a_configuration_enum_near_nothing_lists_the_choices_only(tmp_path):
    config = tmp_path / ".h3doctor.yaml"
    config.write_text("fail_on: zzzzzzzz\n")
    with pytest.raises(UsageError) as err:
        load_config(config)
    assert "is not one of ['error', 'warning', 'info']" in err.value.message and "did you mean" not in err.value.message


def test_a_rule_files_enum_one_slip_away_names_the_choice(tmp_path):
    """A rule file read with --rules-dir: its severity one slip away is named (yamlpos.schema_message)."""
    from h3doctor.engine.ruleset import load_rules
    from h3doctor.errors import H3DoctorError
    from repo_paths import REPO

    (tmp_path / "H3D705.yaml").write_text((REPO / "rules" / "H3D705.yaml").read_text().replace(
        "severity: error", "severity: eror"))
    with pytest.raises(H3DoctorError) as err:
        load_rules(tmp_path)
    assert "'eror' is not one of" in str(err.value) and "did you mean 'error'?" in str(err.value), str(err.value)


def _recipe(tmp_path, quality: str):
    path = tmp_path / "r.yaml"
    path.write_text(f"command: {LAUNCH}\nprofile: 4xH200\nrequest:\n  quality: {quality}\n")
    return path


def test_a_recipes_quality_one_slip_away_is_pointed_at_by_lint(tmp_path, monkeypatch):
    """lint points H3D705 at the recipe's `quality:` key (line 4), not the command (line 1); its fix
    names the level meant. Fails when locate.py's request-key branch is removed."""
    monkeypatch.chdir(tmp_path)
    _recipe(tmp_path, "hihg")
    code, report, _ = lint(["r.yaml"], LintOptions(no_config=True))
    found = [d for d in report.diagnostics() if d.rule == "H3D705"]
    assert code == 1 and len(found) == 1
    assert (found[0].location.line, found[0].location.column) == (4, 3)
    assert found[0].message == "quality must be one of ['exact', 'lossless', 'high'], got 'hihg'"  # sglang's words


@pytest.mark.parametrize("version, quality, meant", [
    ("0.5.23", "hihg", "high"), ("0.5.23", "exat", "exact"), ("0.5.20", "extra-hgh", "extra-high"),
    ("0.5.23", "best", None), ("0.5.21", "exact", None),  # near nothing; a level of another release only
])
def test_the_quality_fix_names_the_level_this_release_accepts(version, quality, meant):
    """check (--request-quality and a recipe's request alike: one intent): H3D705's fix names the
    nearest of the release's own levels, and nothing when none is near. Fails when the rule's
    fix_note or the quality_meant derivation drops it."""
    outcome = run(CheckRequest(tokens=LAUNCH.split(), profile="4xH200", sglang_version=version,
                               intent={"quality": quality}))
    finding = next(f for f in outcome.result.evaluation.findings if f.rule.id == "H3D705")
    assert finding.fix_note.startswith("request a quality this release accepts: [")
    if meant:
        assert finding.fix_note.endswith(f"; did you mean {meant!r}?"), finding.fix_note
    else:
        assert "did you mean" not in finding.fix_note, finding.fix_note
