"""`checkers run --format sarif` as GitHub code scanning ingests it: valid against the official
SARIF 2.1.0 schema and clean under Microsoft's SARIF Multitool GitHub rule set (`--rule-kind Gh`,
the GH1xxx/GH2xxx ingestion rules), both from npm's `@microsoft/sarif-multitool` that .ci/setup
installs into build/npm; every result located, every rule described, the tool's real version."""

from __future__ import annotations

import ast
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from redfirst import clitools

REPO = Path(__file__).resolve().parents[2]
LINUX = REPO / "build/npm/node_modules/@microsoft/sarif-multitool-linux"
POLICY = ("checkers:\n  append_only:\n    - {path: index.md}\n  commit_style: {max_subject: 30}\n"
          "  specs:\n    - {glob: \"specs/*.md\", sections: [Scope]}\n")


def need(path: Path) -> Path:
    if not path.exists():
        why = f"{path.relative_to(REPO)} is missing: run .ci/setup (npm installs @microsoft/sarif-multitool)"
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)
    return path


def multitool_errors(sarif: dict[str, Any], tmp: Path) -> list[str]:
    """What the Multitool's SARIF and GitHub rules (`--rule-kind Sarif;Gh`) say of `sarif` at level error."""
    given, out = tmp / "given.sarif", tmp / "multitool.sarif"
    given.write_text(json.dumps(sarif))
    out.unlink(missing_ok=True)
    proc = subprocess.run([str(need(LINUX / "Sarif.Multitool")), "validate", "--rule-kind", "Sarif;Gh",
                           "-o", str(out), str(given)], capture_output=True, text=True, timeout=120)
    assert out.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())["runs"][0].get("results", [])
    return [f"{r['ruleId']}: {r['message'].get('arguments')}" for r in results if r.get("level", "warning") == "error"]


def range_with_findings(repo) -> None:
    """A file finding (append-only, at index.md:1), a commit finding (its subject: no file to
    point at) and a check without a decision (no spec file matches)."""
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a\nsecond\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("rewrite the first row of the index file", {"index.md": "changed\nsecond\n"})


def test_sarif_is_valid_and_clean_under_githubs_ingestion_rules(repo, cli, tmp_path):
    range_with_findings(repo)
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--format", "sarif")
    assert rc == 1, err
    doc = json.loads(out)
    schema = json.loads(need(LINUX / "sarif-2.1.0.json").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    assert multitool_errors(doc, tmp_path) == []
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["version"] == clitools.version() and driver["name"] == "redfirst-checkers"
    assert "example.invalid" not in json.dumps(driver)
    import tomllib
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    assert driver["informationUri"] == urls["Repository"], driver   # the project's own, from its metadata
    (result,) = run["results"]     # the append-only finding; the commit's has no file
    assert result["ruleId"] == "append-only"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "index.md"
    rules = {r["id"]: r for r in driver["rules"]}
    assert driver["rules"][result["ruleIndex"]]["id"] == "append-only"
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
               and r["help"]["markdown"] for r in rules.values())
    # what has no location is reported elsewhere: the run's notifications and stderr
    notes = {n["message"]["text"] for n in run["invocations"][0]["toolExecutionNotifications"]}
    assert any("subject-length" in n and "commit " in n for n in notes), notes
    assert any("NO_DECISION specs:specs/*.md" in n for n in notes), notes
    assert "subject-length" in err and "not in SARIF" in err


def test_the_multitool_does_flag_a_result_without_a_location(repo, cli, tmp_path):
    # the check above can fail: the GitHub rules refuse what the old output held
    range_with_findings(repo)
    _rc, out, _err = cli("run", "--root", str(repo.path), "--base", "main", "--format", "sarif")
    doc = json.loads(out)
    del doc["runs"][0]["results"][0]["locations"]
    assert any(e.startswith(("GH1015", "GH1017", "GH2012")) for e in multitool_errors(doc, tmp_path))


def test_an_error_is_a_failed_execution_not_a_clean_scan(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  commit_style:\n    subject: \"([\"\n"})
    rc, out, _err = cli("run", "--root", str(repo.path), "--format", "sarif")
    run = json.loads(out)["runs"][0]
    assert rc == 2 and run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert [n["level"] for n in invocation["toolExecutionNotifications"]] == ["error"]


def test_every_rule_a_checker_reports_is_described():
    from redfirst.checkers.rule_help import RULES

    named: set[str] = set()
    for path in (REPO / "redfirst/checkers").glob("*.py"):
        tree = ast.parse(path.read_text())
        constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Finding" and len(call.args) > 2:
                rule = call.args[2]
                if isinstance(rule, ast.Constant):
                    named.add(str(rule.value))
                elif isinstance(rule, ast.Name) and rule.id in constants:
                    named.add(str(constants[rule.id]))
    assert "append-only" in named and "subject-length" in named and len(named) > 40
    assert sorted(named - set(RULES)) == []


def test_a_path_is_a_relative_uri_and_results_stay_within_githubs_limit():
    from redfirst.checkers.model import Finding, decide
    from redfirst.checkers.report import MAX_RESULTS, sarif

    findings = [Finding("docs/my notes#1.md", n + 1, "append-only", "edited") for n in range(MAX_RESULTS + 2)]
    run = json.loads(sarif([decide("append_only:docs", findings)]))["runs"][0]
    assert len(run["results"]) == MAX_RESULTS == 25000        # GitHub refuses a run of more
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "docs/my%20notes%231.md"
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and "2 more findings" in note["message"]["text"]


def test_a_check_without_a_decision_is_no_clean_scan_either(repo, cli):
    """A NO_DECISION (no spec file matches: nothing was checked) must not read as a run that
    succeeded with no result: code scanning would close the rule's open alerts as fixed."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope]}\n"})
    rc, out, _err = cli("run", "--root", str(repo.path), "--format", "sarif")
    run = json.loads(out)["runs"][0]
    assert rc == 3 and run["results"] == [], out
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    assert [n["level"] for n in invocation["toolExecutionNotifications"]] == ["warning"]
    assert invocation["toolExecutionNotifications"][0]["message"]["text"].startswith("NO_DECISION ")


def test_a_file_name_that_is_not_utf8_is_its_bytes_percent_encoded(repo, cli, tmp_path):
    """git stores names as bytes: a finding at `docs/bad\\xff` was a UnicodeEncodeError traceback
    (exit 1) out of `--format sarif`, where text and JSON printed it (round 4 of issue 34)."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  caps: [{paths: [\"docs/*\"], file_bytes: 10}]\n",
                         "docs/ok": "x\n"})
    repo.git("checkout", "-q", "-b", "feature")
    (repo.path / "docs" / os.fsdecode(b"bad\xff")).write_bytes(b"more than ten bytes\n")
    repo.commit("a file whose name is not UTF-8")
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--format", "sarif")
    assert rc == 1, err
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "docs/bad%FF"
