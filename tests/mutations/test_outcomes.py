"""The outcomes and exit codes of DESIGN sections 1 and 3, as a new user meets them:
a real git repository, a Python package, pytest-driven gates, mutation files."""

from __future__ import annotations

import json
from pathlib import Path

from mutate_helpers import git, mutate, write

from redfirst.gates.proofs import proofs


def mutation(mid: str, anchor: str, replace: str, red: list[str], green: list[str] = (), **extra: str) -> str:
    text = f"mutation: {mid}\nfile: calc/__init__.py\nanchor: {json.dumps(anchor)}\nreplace: {json.dumps(replace)}\n"
    for k, v in extra.items():
        text += f"{k}: {v}\n"
    expect = {"red": list(red), "green": list(green)}
    if "expect_build" in extra:
        raise AssertionError
    return text + f"expect: {json.dumps(expect)}\n"


def run_json(root: Path, *args: str) -> tuple[int, dict]:
    proc = mutate(root, "--json", *args)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def outcome(doc: dict, mid: str) -> dict:
    return next(i for i in doc["items"] if i["id"] == mid)


def test_killing_mutation_exits_0_is_proven_and_leaves_the_repo_untouched(repo: Path):
    write(repo, "mutations/kill.yaml", mutation("add-minus", "    return a + b\n", "    return a - b\n",
                                                ["add"], ["sub"]))
    status_before = git(repo, "status", "--porcelain")
    worktrees_before = git(repo, "worktree", "list")
    code, doc = run_json(repo)
    item = outcome(doc, "add-minus")
    assert (code, doc["exit"], item["verdict"]) == (0, 0, "KILLED")
    assert item["diffstat"] == "+1 -1" and item["line"] == 2
    assert [(g["gate"], g["verdict"], g["cause"]) for g in item["gates"]] == [("add", "RED", "exit")]
    assert item["gates"][0]["counts"]["failed"] == 1
    assert [(g["gate"], g["verdict"]) for g in item["controls"]] == [("sub", "GREEN")]
    assert doc["matrix"]["rows"] == {"add-minus": {"add": "RED", "sub": "GREEN"}}
    assert [(p.kind, p.ref) for p in proofs(repo)["add"]] == [("mutation", "add-minus")]
    assert proofs(repo)["add"][0].evidence_ids == (item["gates"][0]["evidence"],)
    assert "sub" not in proofs(repo)
    assert git(repo, "status", "--porcelain") == status_before
    assert git(repo, "worktree", "list") == worktrees_before


def test_every_mutated_run_records_the_commit_dirty(repo: Path):
    # Each record says what ran: the repository's commit, dirty with the mutation applied
    # (the first run asks git, later ones reuse its commit).
    write(repo, "mutations/two.yaml", "- " + mutation("m1", "    return a + b\n", "    return a - b\n", ["add"], ["sub"])
          .replace("\n", "\n  ").rstrip() + "\n- " +
          mutation("m2", "    return a + b\n", "    return a * b\n", ["add"], ["sub"]).replace("\n", "\n  ").rstrip() + "\n")
    code, doc = run_json(repo)
    assert code == 0, doc
    head = git(repo, "rev-parse", "HEAD").strip()
    seen = [g for item in doc["items"] for g in (*item["gates"], *item["controls"])]
    assert len(seen) == 4
    for g in seen:
        record = json.loads((repo / ".redfirst" / "evidence" / g["evidence"] / "record.json").read_text())
        assert record["source"] == {"commit": head, "dirty": True}, g
        # Failing is the point of a mutated run: one line per failure, same counts.
        assert "--tb=short" in record["main"]["argv"], record["main"]["argv"]
    baseline = [json.loads(r.read_text()) for r in (repo / ".redfirst" / "evidence").glob("*/record.json")]
    baseline = [r for r in baseline if r["source"]["dirty"] is False]
    assert {r["gate_id"] for r in baseline} == {"add", "sub"}
    assert all("--tb=short" not in r["main"]["argv"] for r in baseline)


def test_equivalent_mutation_survives_exit_1(repo: Path):
    write(repo, "mutations/eq.yaml", mutation("add-swap", "return a + b\n", "return b + a\n", ["add"]))
    proc = mutate(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "add-swap  +1 -1" in proc.stdout and "SURVIVED" in proc.stdout
    assert "stayed GREEN under the mutation: add" in proc.stdout
    assert "All 1 mutations KILLED" not in proc.stdout
    assert proofs(repo) == {}


def test_missing_anchor_exits_2_naming_it(repo: Path):
    write(repo, "mutations/gone.yaml", mutation("gone", "return a ** b\n", "return a - b\n", ["add"]))
    proc = mutate(repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ERROR" in proc.stdout and "anchor not found: 'return a ** b'" in proc.stdout
    check = mutate(repo, "check")
    assert check.returncode == 2
    assert "mutations/gone.yaml:1: mutation gone: calc/__init__.py: anchor not found" in check.stderr


def test_breaking_a_control_is_unscoped_exit_1(repo: Path):
    both = "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    broken = "    return a * b\n\n\ndef sub(a, b):\n    return a / b\n"
    write(repo, "mutations/wide.yaml", mutation("too-wide", both, broken, ["add"], ["sub"]))
    code, doc = run_json(repo)
    item = outcome(doc, "too-wide")
    assert (code, item["verdict"]) == (1, "UNSCOPED")
    assert "a control went RED too: sub RED" in item["reason"]
    assert item["diffstat"] == "+2 -2"


def test_syntax_error_with_build_ok_is_discarded_exit_3(repo: Path):
    write(repo, "mutations/syntax.yaml", mutation("syntax", "return a + b\n", "return a +\n", ["add"],
                                                  build="python -m py_compile calc/__init__.py"))
    code, doc = run_json(repo)
    item = outcome(doc, "syntax")
    assert (code, item["verdict"], item["build"]["state"]) == (3, "DISCARDED", "failed")
    assert "never a kill" in item["reason"]
    assert item["gates"] == []


def test_syntax_error_with_build_fails_is_killed(repo: Path):
    text = mutation("syntax", "return a + b\n", "return a +\n", ["add"],
                    build="python -m py_compile calc/__init__.py")
    write(repo, "mutations/syntax.yaml", text.replace('expect: {', 'expect: {"build": "fails", '))
    code, doc = run_json(repo)
    assert (code, outcome(doc, "syntax")["verdict"]) == (0, "KILLED"), doc


def test_build_fails_through_the_gates_own_build(repo: Path):
    text = mutation("syntax-gate", "return a + b\n", "return a +\n", ["compiles"])
    write(repo, "mutations/syntax.yaml", text.replace('expect: {', 'expect: {"build": "fails", '))
    code, doc = run_json(repo)
    item = outcome(doc, "syntax-gate")
    assert (code, item["verdict"], item["cause"]) == (0, "KILLED", "build"), doc


def test_build_that_cannot_start_is_error_not_a_kill(repo: Path):
    text = mutation("nobuild", "return a + b\n", "return a +\n", ["add"], build="no-such-compiler-xyz calc")
    write(repo, "mutations/syntax.yaml", text.replace('expect: {', 'expect: {"build": "fails", '))
    code, doc = run_json(repo)
    item = outcome(doc, "nobuild")
    assert (code, item["verdict"]) == (2, "ERROR"), doc
    assert "build not ok before mutation: error" in item["reason"]


def test_gate_red_before_mutation_makes_its_mutations_error(repo: Path):
    write(repo, "tests/test_broken.py", "def test_broken():\n    assert False\n")
    write(repo, "gates/broken.yaml", "gate: broken\ndriver: {type: pytest, run: [tests/test_broken.py]}\n")
    write(repo, "mutations/m.yaml", mutation("needs-broken", "return a + b\n", "return a - b\n", ["broken"]) +
          "---\n" if False else mutation("needs-broken", "return a + b\n", "return a - b\n", ["broken"]))
    write(repo, "mutations/ok.yaml", mutation("fine", "return a + b\n", "return a - b\n", ["add"]))
    code, doc = run_json(repo)
    broken = outcome(doc, "needs-broken")
    assert (code, broken["verdict"]) == (2, "ERROR")
    assert broken["reason"].startswith("gate not green before mutation: broken RED")
    assert outcome(doc, "fine")["verdict"] == "KILLED"


def test_unknown_gate_and_bad_keys_exit_2_with_file_and_line_before_anything_runs(repo: Path):
    write(repo, "mutations/a.yaml", mutation("a", "return a + b\n", "return a - b\n", ["nope"]))
    write(repo, "mutations/b.yaml", "mutation: b\nfile: calc/__init__.py\nanchor: x\nreplace: y\n"
                                    "expect: {red: [add]}\nmdoe: commit\n")
    proc = mutate(repo)
    assert proc.returncode == 2
    assert "mutations/b.yaml:6: unknown key 'mdoe'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (repo / ".redfirst" / "evidence").exists()
    write(repo, "mutations/b.yaml", "mutation: b\nfile: calc/__init__.py\nanchor: x\nreplace: y\n")
    proc = mutate(repo)
    assert proc.returncode == 2
    assert "mutations/b.yaml:1: expect.red: name the gates" in proc.stderr
    (repo / "mutations/b.yaml").unlink()
    proc = mutate(repo)
    assert proc.returncode == 2
    assert "mutations/a.yaml:1: mutation a: unknown gate 'nope'" in proc.stderr
    assert not (repo / ".redfirst" / "evidence").exists()


def test_selecting_nothing_exits_3(repo: Path):
    proc = mutate(repo)
    assert proc.returncode == 3
    assert "no mutations selected" in proc.stderr


def test_a_run_that_stopped_before_any_mutation_writes_a_junit_that_is_not_green(repo: Path):
    # The JUnit file of an earlier, all-KILLED run left in place read as this run's: a CI that
    # reads only it saw green over an exit 3 that selected nothing.
    import xml.etree.ElementTree as ET
    junit = repo / "out/junit.xml"
    write(repo, "out/junit.xml", '<testsuite name="mutate" tests="1" failures="0" errors="0">'
                                 '<testcase classname="mutate" name="old-run" time="0.1"/></testsuite>')
    write(repo, "out/mutate.sarif", '{"version": "2.1.0", "runs": [{"results": []}]}')   # a clean scan, stale
    proc = mutate(repo, "--junit", "out/junit.xml", "--sarif", "out/mutate.sarif")
    assert proc.returncode == 3, proc.stderr
    suite = ET.parse(junit).getroot()
    assert int(suite.get("errors")) == 1 and "old-run" not in junit.read_text()
    assert "no mutations selected" in junit.read_text()
    (run,) = json.loads((repo / "out/mutate.sarif").read_text())["runs"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert run["results"] == [] and [n["level"] for n in notes] == ["warning"], notes
    assert "no mutations selected" in notes[0]["message"]["text"]


def test_ad_hoc_mutation_from_the_command_line(repo: Path):
    proc = mutate(repo, "--file", "calc/__init__.py", "--anchor", "return a - b", "--replace", "return a + b",
                  "--gate", "sub", "--control", "add", "--id", "sub-plus", "--junit", "out/junit.xml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sub-plus" in proc.stdout and "All 1 mutations KILLED" in proc.stdout
    junit = (repo / "out/junit.xml").read_text()
    assert 'name="sub-plus"' in junit and "<failure" not in junit


def test_under_github_actions_a_survivor_is_annotated_on_its_line_and_summarised(repo: Path, monkeypatch):
    summary = repo.parent / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write(repo, "mutations/eq.yaml", mutation("add-swap", "return a + b\n", "return b + a\n", ["add"]))
    proc = mutate(repo, "--json", "--sarif", "out/mutate.sarif")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "SURVIVED"
    (result,) = json.loads((repo / "out/mutate.sarif").read_text())["runs"][0]["results"]   # SARIF: the survivor
    where = result["locations"][0]["physicalLocation"]
    assert (result["ruleId"], result["level"], where["artifactLocation"]["uri"], where["region"]["startLine"]) == (
        "mutation-survived", "warning", "calc/__init__.py", 2)
    assert "::error" in proc.stderr and "calc/__init__.py,line=2" in proc.stderr
    assert "add-swap" in summary.read_text()
