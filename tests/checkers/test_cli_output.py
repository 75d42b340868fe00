"""The command line: formats, exit codes, config errors with file and line, the step summary."""

from __future__ import annotations

import json

import pytest

from redfirst.checkers.model import Finding, decide
from redfirst.checkers.report import escape_property, github

POLICY = "checkers:\n  append_only:\n    - {path: index.md}\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope]}\n"


def _red_range(repo) -> None:
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a, b: c\nsecond\n", "specs/s.md": "## Scope\n\nreal\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("edit", {"index.md": "changed\nsecond\n"})


def test_json_is_one_versioned_document(repo, cli):
    _red_range(repo)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and doc["version"] == 1 and doc["exit"] == 1
    item = doc["items"][0]
    assert set(item) >= {"id", "kind", "verdict", "cause", "reason", "counts", "findings"}
    assert item["kind"] == "checker" and item["verdict"] == "RED" and item["cause"] == "assertion"
    assert item["findings"][0] == {"file": "index.md", "line": 1, "rule": "append-only",
                                   "message": item["findings"][0]["message"]}


def test_sarif_210(repo, cli):
    _red_range(repo)
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main", "--format", "sarif")
    doc = json.loads(out)
    assert rc == 1 and doc["version"] == "2.1.0"
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "append-only" and result["level"] == "error"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "index.md" and loc["region"]["startLine"] == 1


def test_github_annotations_and_step_summary(repo, cli, tmp_path, monkeypatch):
    _red_range(repo)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main", "--format", "github")
    assert rc == 1
    assert out.startswith("::error file=index.md,line=1,title=append-only::")
    table = summary.read_text()
    assert "| `append_only:index.md` | RED | 1 |" in table and "| `specs:specs/*.md` | GREEN | 0 |" in table


def test_github_escaping():
    finding = Finding("a,b:c.md", 3, "rule:x,y", "100% broken\r\nsecond line")
    (line, _closing) = github([decide("c", [finding])]).splitlines()
    assert line == "::error file=a%2Cb%3Ac.md,line=3,title=rule%3Ax%2Cy::100%25 broken%0D%0Asecond line"
    assert escape_property("%") == "%25"


def test_all_green_is_printed_only_when_every_check_passed(repo, cli):
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a\n", "specs/s.md": "## Scope\n\nreal\n"})
    repo.commit("append", {"index.md": "a\nb\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "HEAD~1")
    assert rc == 0 and out.splitlines()[-1] == "All 2 checks green"
    repo.commit("empty the scope", {"specs/s.md": "## Scope\n\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "HEAD~1")
    assert rc == 1 and "green" not in out.splitlines()[-1].replace("1 GREEN", "")


def test_a_configured_check_this_run_cannot_judge_is_no_decision_not_left_out(repo, cli):
    # Without a base the old lines of index.md are unknown: a committed edit of one must not read
    # "All checks green" from a plain `checkers run`.
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a\n", "specs/s.md": "## Scope\n\nreal\n"})
    repo.commit("edit an old row", {"index.md": "A\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 3 and "green" not in out.splitlines()[-1].lower().replace("1 green", "")
    assert "NO_DECISION append_only: needs a base" in out
    rc, out, _ = cli("run", "--root", str(repo.path), "--only", "specs")  # deselected on purpose: judged alone
    assert rc == 0 and out.splitlines()[-1] == "All 1 checks green"


def test_no_policy_selects_nothing_and_is_3(repo, cli):
    repo.commit("seed", {"README": "x\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--allow-no-decision")
    assert rc == 3 and "no `checkers:` section" in out


def test_only_with_an_unknown_checker_is_a_usage_error(repo, cli):
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a\n", "specs/s.md": "## Scope\n\nreal\n"})
    rc, _out, err = cli("run", "--root", str(repo.path), "--only", "spec")
    assert rc == 2 and "spec" in err and "specs" in err


def test_unknown_checker_is_exit_2_with_file_and_line(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "gates: {}\ncheckers:\n  append_only: []\n  spelling: {}\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2
    assert err.startswith("redfirst.yaml@") and ":4: unknown checker 'spelling'" in err


def test_wrong_type_is_exit_2_with_file_and_line(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  append_only:\n    - path: index.md\n      mode: sideways\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2 and ":4: checkers.append_only: 0/mode:" in err


def test_an_entry_that_checks_nothing_is_exit_2_not_green(repo, cli):
    # A cap with no limit, or trailers with no rule, would pass every file and every commit.
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  caps:\n    - {paths: [\"*.md\"]}\n", "a.md": "x\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2 and ":3: checkers.caps: 0:" in err
    repo.commit("trailers", {"redfirst.yaml": "checkers:\n  trailers: {include_merges: true}\n"})
    repo.commit("any message")
    rc, _out, err = cli("run", "--root", str(repo.path), "--base", "HEAD~1")
    assert rc == 2 and ":2: checkers.trailers:" in err


def test_bad_regex_and_yaml_error_are_exit_2(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  commit_style:\n    subject: \"([\"\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2 and ":3:" in err
    repo.commit("yaml", {"redfirst.yaml": "checkers:\n  specs: [\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2 and "redfirst.yaml@" in err


def test_a_config_error_still_prints_one_json_document_and_an_annotation(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  specs: [\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 2 and doc["exit"] == 2
    (item,) = doc["items"]
    assert item["verdict"] == "ERROR" and item["reason"].startswith("redfirst.yaml@") and ":3:" in item["reason"]
    rc, out, _ = cli("run", "--root", str(repo.path), "--format", "github")
    assert rc == 2 and out.startswith("::error ") and "redfirst.yaml@" in out


def test_a_self_referencing_yaml_alias_is_refused_naming_its_line_as_gates_refuses_it(repo, cli):
    # one loader for every file (issue 34.2): the bounds of a gate file hold for redfirst.yaml too
    repo.commit("seed", {"redfirst.yaml": POLICY + "loop: &a [*a]\n", "index.md": "a\n",
                         "specs/s.md": "## Scope\n\nreal\n"})
    repo.commit("append", {"index.md": "a\nb\n"})
    rc, _out, err = cli("run", "--root", str(repo.path), "--base", "HEAD~1")
    assert rc == 2 and ":6: YAML error: a recursive alias" in err
    repo.commit("bad", {"redfirst.yaml": "checkers:\n  append_only: &b [*b]\n"})
    rc, _out, err = cli("run", "--root", str(repo.path))
    assert rc == 2 and ":2: YAML error: a recursive alias" in err


def test_not_a_repository_is_no_decision(tmp_path, cli):
    rc, out, _ = cli("run", "--root", str(tmp_path))
    assert rc == 3 and "not a git repository" in out
    rc, out, _ = cli("run", "--root", str(tmp_path), "--allow-no-decision")
    assert rc == 3 and "not a git repository" in out


def test_pre_push_without_a_range_selects_nothing_even_when_no_decision_is_allowed(repo, cli, monkeypatch):
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": "a\n"})
    monkeypatch.delenv("PRE_COMMIT_FROM_REF", raising=False)
    rc, out, _ = cli("run", "--root", str(repo.path), "--pre-push", "--allow-no-decision")
    assert rc == 3 and "PRE_COMMIT_FROM_REF" in out


def test_list_names_every_checker(cli):
    rc, out, _ = cli("list")
    names = {line.split()[0] for line in out.splitlines()}
    assert rc == 0 and names == {"append_only", "specs", "matrices", "trailers", "commit_style", "doc_checkpoint",
                                 "symbol_anchors", "caps", "ratchets", "env_documented", "script"}


DESIGN_EXAMPLE = r'''checkers:
  append_only:
    - {path: .agents/issue-index.md, mode: insert}     # insert (default) | tail
  specs:
    - {glob: ".agents/specs/*.md", sections: [Scope, Gates, Owed, Now]}
  trailers:
    require: {Assisted-by: "^[A-Za-z0-9][^:]*:[^ ]+ \\[.+\\]$"}
    forbid_in: {Signed-off-by: "(?i)\\b(claude|gpt|copilot|bot)\\b"}
  commit_style:
    subject: "^(feat|fix|spec|docs|test|refactor|chore)(\\([A-Za-z0-9_.-]+\\))?: .*[^.]$"
    body: required
  doc_checkpoint:
    - {when: [CMakeLists.txt, "include/**"], require: [docs/USAGE.md]}
'''


def test_the_design_example_policy_is_accepted(repo, cli):
    repo.commit("docs: seed\n\nbody\n\nAssisted-by: Tool:m [T]\n", {"redfirst.yaml": DESIGN_EXAMPLE,
                                                                     ".agents/issue-index.md": "| 1 |\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("feat(api): grow the index\n\nwhy\n\nAssisted-by: Tool:m [T]\n", {".agents/issue-index.md": "| 1 |\n| 2 |\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert verdicts["append_only:.agents/issue-index.md"] == "GREEN"
    assert verdicts["trailers"] == "GREEN" and verdicts["commit_style"] == "GREEN"
    assert verdicts["specs:.agents/specs/*.md"] == "NO_DECISION"  # no spec in this repository
    assert rc == 3


def test_a_path_holding_line_breaks_or_escapes_cannot_print_a_verdict_line(repo, cli):
    # git allows any byte but NUL in a path. Printed raw, a spec named "b<LF>All 1 checks green<LF>.md"
    # put the line "All 1 checks green" into the output of a RED run, and an ESC could rewrite a
    # terminal's line. Every field of a text line is printed on that line, control characters escaped.
    policy = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "specs/a.md": "## Scope\n\nreal\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("odd names", {"specs/b\nAll 1 checks green\n.md": "# B\n", "specs/c\r\x1b[2KGREEN\u2028.md": "# C\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    lines = out.splitlines()  # Python's own line breaks: CR and U+2028 too
    assert not [line for line in lines if line.startswith(("All ", "GREEN"))], out
    assert "\x1b" not in out and lines[-1] == "1 checks: 1 RED"
    assert sum(line.startswith("specs/b\\nAll 1 checks green\\n.md:1: spec-section:") for line in lines) == 1, out


def test_a_secret_of_the_environment_is_in_no_output_of_checkers(repo, cli, monkeypatch, tmp_path):
    """A token the range removes from an append-only file is quoted by the finding (its old line), and a
    commit subject naming it by the subject finding: with the CI's own secret in the environment, its value
    was printed in text, JSON, SARIF (uploaded to code scanning), GitHub annotations and the step summary
    (round 4 of issue 34). Every output is scrubbed as the gates' records are."""
    secret = "ghp_CheckerSecret99&<x>"
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  append_only: [{path: idx.md}]\n  commit_style: {max_subject: 30}\n",
                         "idx.md": f"a\nkey={secret}\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit(f"rotate the token {secret} out of the index", {"idx.md": "a\nkey=rotated\n"})
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    for fmt in ("text", "json", "sarif", "github"):
        rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--format", fmt)
        assert rc == 1 and "REDACTED" in out + err, (fmt, out, err)
        for form in (secret, json.dumps(secret)[1:-1], "ghp_CheckerSecret99&amp;&lt;x&gt;", "ghp_CheckerSecret99%26"):
            assert form not in out + err, (fmt, form)
    assert "ghp_CheckerSecret99" not in summary.read_text()


def test_the_projects_own_secret_names_are_scrubbed_from_every_output_of_checkers(repo, cli, monkeypatch):
    """`secrets: {names: [...]}` in redfirst.yaml names variables whose values are secrets though their names
    look harmless: gates scrub them, checkers printed them (round 5 of issue 34, left open by round 4)."""
    secret = "vault-Unlock-5150"
    repo.commit("seed", {"redfirst.yaml": "secrets: {names: [SIGNING_MATERIAL]}\n"
                                          "checkers:\n  append_only: [{path: idx.md}]\n",
                         "idx.md": f"a\nmaterial={secret}\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("rotate", {"idx.md": "a\nmaterial=rotated\n"})
    monkeypatch.setenv("SIGNING_MATERIAL", secret)
    for fmt in ("text", "json", "sarif", "github"):
        rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--format", fmt)
        assert rc == 1 and "REDACTED" in out + err, (fmt, out, err)
        assert secret not in out + err, fmt


@pytest.mark.parametrize("args", [("--only", "nosuch"), ("--staged", "--base", "main"),
                                  ("--config", "x.yaml", "--policy-from", "head")])
def test_a_usage_error_of_run_is_still_one_document_under_every_machine_format(repo, cli, args):
    """`checkers run --json --only nosuch` (and --staged with --base, --config with --policy-from head) exited 2
    with nothing on stdout: a CI step parsing the one document it was promised got no JSON (round 5 of issue 34).
    Every --format but text prints its one document, valid against the output schema, whatever went wrong."""
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("redfirst.gates").joinpath("schema/output.schema.json").read_text())
    _red_range(repo)
    rc, out, err = cli("run", "--root", str(repo.path), *args, "--format", "json")
    assert rc == 2 and args[0] in err, err
    doc = json.loads(out)
    jsonschema.validate(doc, schema)
    assert doc["exit"] == 2 and doc["items"][0]["verdict"] == "ERROR"
    rc, out, _ = cli("run", "--root", str(repo.path), *args, "--format", "sarif")
    assert rc == 2 and json.loads(out)["version"] == "2.1.0"


def test_a_head_that_drops_the_secret_names_of_the_base_still_has_them_scrubbed(repo, cli, monkeypatch):
    """The names came from the checked-out redfirst.yaml only: a range whose head deletes `secrets: names`
    (CI checks the head out) printed the base's secret in the finding quoting it. The base's names count too."""
    secret = "vault-Unlock-5150"
    repo.commit("seed", {"redfirst.yaml": "secrets: {names: [SIGNING_MATERIAL]}\n"
                                          "checkers:\n  append_only: [{path: idx.md}]\n",
                         "idx.md": f"a\nmaterial={secret}\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("rotate", {"idx.md": "a\nmaterial=rotated\n", "redfirst.yaml": "checkers:\n  append_only: []\n"})
    monkeypatch.setenv("SIGNING_MATERIAL", secret)
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--format", "json")
    assert rc == 1 and "REDACTED" in out, (out, err)
    assert secret not in out + err


@pytest.mark.parametrize("config", ["secrets: {names: SIGNING_MATERIAL}\n", "secrets: [SIGNING_MATERIAL]\n",
                                    "secrets: {names: [SIGNING_MATERIAL]}\nsecrets: {}\n"])
def test_a_checkout_config_that_cannot_give_its_secret_names_says_so(repo, cli, config):
    """A checked-out redfirst.yaml whose `secrets` cannot be read (a string where the list goes, a key twice)
    scrubbed the default names only, silently: checkers say so, naming file:line."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  append_only: [{path: idx.md}]\n", "idx.md": "a\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("row", {"idx.md": "a\nb\n", "redfirst.yaml": config + "checkers:\n  append_only: [{path: idx.md}]\n"})
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, (out, err)
    assert f"{repo.path / 'redfirst.yaml'}:" in err and "only the secret-looking names are scrubbed" in err, err
