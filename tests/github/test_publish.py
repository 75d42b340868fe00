"""redfirst.gates.github: escaped annotations capped as GitHub keeps them, the step summary, the step outputs.

The commands run for real (`gates run`, `checkers run --format json`, `mutate --json`) in
temporary projects, with the GitHub Actions environment variables pointing at files here.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst.gates import github

ANNOTATION = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def need(tool: str) -> str:
    found = shutil.which(tool)
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{tool} is not installed")
    return str(found)


def actions_env(tmp_path: Path, workspace: Path) -> dict[str, str]:
    # RUNNER_TEMP holds the job's annotation count: a test never shares the count of the job running it
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(workspace),
               GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"), GITHUB_OUTPUT=str(tmp_path / "output.txt"))
    return env


def parsed(lines: str) -> list[tuple[str, dict[str, str], str]]:
    """Workflow commands in `lines`, unescaped as the runner does."""
    def unescape(value: str) -> str:
        return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",") \
            .replace("%25", "%")

    out = []
    for line in lines.splitlines():
        m = ANNOTATION.match(line)
        if m:
            props = dict(p.split("=", 1) for p in m.group(2).split(",") if p)
            out.append((m.group(1), {k: unescape(v) for k, v in props.items()}, unescape(m.group(3))))
    return out


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def item(i: int, verdict: str, file: str | None = "gates/g.yaml") -> github.Item:
    return github.Item(f"g{i}", verdict, "assertion" if verdict == "RED" else "evidence", f"reason {i}", "-",
                       file, i + 1)


def test_escaping_follows_the_runner_for_data_and_properties():
    assert github.escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert github.escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    a = github.Annotation("error", "RED x:y", "line one\nline 2, 50%", "dir/a,b:c.yaml", 7)
    assert a.command() == "::error file=dir/a%2Cb%3Ac.yaml,line=7,title=RED x%3Ay::line one%0Aline 2, 50%25"
    (level, props, message), = parsed(a.command())
    assert (level, props["file"], props["line"], props["title"], message) == \
        ("error", "dir/a,b:c.yaml", "7", "RED x:y", "line one\nline 2, 50%")


def test_outside_github_actions_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    summary = tmp_path / "summary.md"
    stream = io.StringIO()
    report = github.Report("gates", 1, (item(0, "RED"),))
    assert github.publish(report, {"GITHUB_STEP_SUMMARY": str(summary)}, stream) is False
    assert github.publish(report, {"GITHUB_ACTIONS": "1", "GITHUB_STEP_SUMMARY": str(summary)}, stream) is False
    assert stream.getvalue() == "" and not summary.exists()


def test_at_most_ten_errors_and_ten_warnings_the_rest_listed_in_the_summary(tmp_path):
    items = tuple(item(i, "RED") for i in range(13)) + tuple(item(i, "NO_DECISION") for i in range(13, 25))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"),
           "GITHUB_OUTPUT": str(tmp_path / "o.txt"), "GITHUB_WORKSPACE": str(tmp_path)}
    stream = io.StringIO()
    assert github.publish(github.Report("gates", 1, items), env, stream)
    shown = parsed(stream.getvalue())
    assert [level for level, _, _ in shown] == ["error"] * 10 + ["warning"] * 10
    assert [p["title"] for _, p, _ in shown[:10]] == [f"RED g{i}" for i in range(10)]
    summary = (tmp_path / "s.md").read_text()
    assert "5 annotation(s) not shown" in summary
    for i in (10, 11, 12):
        assert f"- error `gates/g.yaml:{i + 1}` RED g{i}: RED (assertion): reason {i}" in summary
    for i in (23, 24):
        assert f"- warning `gates/g.yaml:{i + 1}` NO_DECISION g{i}" in summary
    for i in range(10):  # shown ones are not listed again
        assert f"`gates/g.yaml:{i + 1}` RED g{i}:" not in summary
    assert summary.count("| **RED** |") == 13 and summary.count("| **NO_DECISION** |") == 12


def test_no_decision_is_a_warning_and_never_reads_as_success(tmp_path):
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"),
           "GITHUB_OUTPUT": str(tmp_path / "o.txt")}
    stream = io.StringIO()
    github.publish(github.Report("gates", 0, (item(0, "GREEN"), item(1, "NO_DECISION"))), env, stream)
    (level, props, message), = parsed(stream.getvalue())
    assert level == "warning" and props["title"] == "NO_DECISION g1" and "not a pass" in message
    assert "::notice" not in stream.getvalue()
    # exit 0 (as under --allow-no-decision) does not make the verdict output GREEN
    assert outputs(tmp_path / "o.txt") == {"verdict": "NO_DECISION", "counts": '{"GREEN":1,"NO_DECISION":1}'}
    summary = (tmp_path / "s.md").read_text()
    assert summary.startswith("### redfirst gates: NO_DECISION")
    assert "| `g1` | **NO_DECISION** |" in summary and "All " not in summary


def test_nothing_selected_is_no_decision(tmp_path):
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"),
           "GITHUB_OUTPUT": str(tmp_path / "o.txt")}
    stream = io.StringIO()
    github.publish(github.Report("gates", 3, ()), env, stream)
    (level, _props, message), = parsed(stream.getvalue())
    assert level == "warning" and "nothing was selected" in message
    assert outputs(tmp_path / "o.txt")["verdict"] == "NO_DECISION"
    assert "NO_DECISION" in (tmp_path / "s.md").read_text()


def test_a_missing_document_is_an_error_not_a_pass(tmp_path):
    env = actions_env(tmp_path, tmp_path)
    missing = tmp_path / "absent.json"
    # exit status 0 with no document: still ERROR, exit 2
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(missing), "--exit-status", "0"],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 2
    (level, _props, message), = parsed(run.stderr)
    assert level == "error" and "could not be read as JSON" in message
    assert outputs(tmp_path / "output.txt")["verdict"] == "ERROR"


GATE_RED = """gate: broken-kernel
driver:
  type: command
  run: "printf '1 passed, 1 failed\\n'; exit 1"
  format: plain
"""
GATE_SKIPPED = """gate: skipped-suite
driver:
  type: command
  run: "printf '0 passed, 0 failed\\n'"
  format: plain
"""
GATE_GREEN = """gate: fine
driver:
  type: command
  run: "printf '3 passed, 0 failed\\n'"
  format: plain
"""


def test_gates_run_annotates_red_and_no_decision_at_their_gate_files(tmp_path):
    gates_cmd = need("gates")
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates:\n  paths: [gates]\n")
    (root / "gates" / "a-red.yaml").write_text(GATE_RED)
    (root / "gates" / "b-skipped.yaml").write_text("# a comment first: the gate starts on line 2\n" + GATE_SKIPPED)
    (root / "gates" / "c-green.yaml").write_text(GATE_GREEN)
    env = actions_env(tmp_path, tmp_path)
    run = subprocess.run([gates_cmd, "run", "--root", str(root), "-q"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    found = {props["title"]: (level, props.get("file"), props.get("line"), msg) for level, props, msg in
             parsed(run.stderr)}
    assert set(found) == {"RED broken-kernel", "NO_DECISION skipped-suite"}
    assert found["RED broken-kernel"][:3] == ("error", "proj/gates/a-red.yaml", "1")
    assert found["NO_DECISION skipped-suite"][:3] == ("warning", "proj/gates/b-skipped.yaml", "2")
    assert "0 cases executed" in found["NO_DECISION skipped-suite"][3]
    summary = (tmp_path / "summary.md").read_text()
    assert "| `broken-kernel` | **RED** | exit |" in summary
    assert "| `skipped-suite` | **NO_DECISION** | evidence |" in summary
    assert "| `fine` | GREEN |" in summary and "3 cases, 0 failed" in summary
    assert outputs(tmp_path / "output.txt") == {"verdict": "RED",
                                                 "counts": '{"RED":1,"NO_DECISION":1,"GREEN":1}'}


def test_gates_run_json_stays_one_document_on_stdout_under_github_actions(tmp_path):
    gates_cmd = need("gates")
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates:\n  paths: [gates]\n")
    (root / "gates" / "a-red.yaml").write_text(GATE_RED)
    run = subprocess.run([gates_cmd, "run", "--root", str(root), "-q", "--json"], capture_output=True, text=True,
                         env=actions_env(tmp_path, tmp_path), cwd=tmp_path)
    assert run.returncode == 1
    doc = json.loads(run.stdout)  # nothing but the document
    assert doc["exit"] == 1 and [i["verdict"] for i in doc["items"]] == ["RED"]
    assert [props["title"] for _, props, _ in parsed(run.stderr)] == ["RED broken-kernel"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def test_checkers_document_annotates_each_finding_at_file_and_line(tmp_path):
    need("git")
    checkers_cmd = need("checkers")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "redfirst.yaml").write_text("checkers:\n  append_only:\n    - {path: index.md}\n")
    (repo / "index.md").write_text("first\nsecond\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "seed")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "index.md").write_text("first\nsecond, rewritten: 100%\n")
    git(repo, "commit", "-qam", "rewrite")
    env = actions_env(tmp_path, repo)
    doc = tmp_path / "doc.json"
    own_summary_off = {k: v for k, v in env.items() if k != "GITHUB_STEP_SUMMARY"}  # as the action runs it
    with doc.open("w") as fh:
        rc = subprocess.run([checkers_cmd, "run", "--base", "main", "--format", "json"], stdout=fh,
                            env=own_summary_off, cwd=repo).returncode
    assert rc == 1
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", str(rc)],
                         capture_output=True, text=True, env=env, cwd=repo)
    assert run.returncode == 1
    first, *_ = parsed(run.stderr)
    assert first[0] == "error" and first[1]["file"] == "index.md" and first[1]["line"] == "2"
    assert first[1]["title"] == "append-only"
    assert "index.md:2: append-only:" in run.stdout  # the plain log line
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### redfirst checkers: RED") and "| `append_only:index.md` | **RED** |" in summary


SEAM = Path(__file__).resolve().parents[2] / "examples" / "seam"


def test_mutate_document_gives_the_mutations_by_gates_matrix(tmp_path):
    need("git")
    mutate_cmd = need("mutate")
    root = tmp_path / "seam"
    shutil.copytree(SEAM, root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__", "mutations"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seam")
    env = actions_env(tmp_path, tmp_path)
    doc = tmp_path / "doc.json"
    argv = [mutate_cmd, "--root", str(root), "--file", "seam/model.py",
            "--anchor", "            attn = graph_break(rt, self.attention[i], qkv)",
            "--replace", "            attn = self.attention[i](qkv)",
            "--gate", "seam-g2-reachability", "--gate", "seam-g3-counts", "--json"]
    with doc.open("w") as fh:
        rc = subprocess.run(argv, stdout=fh, env=env, cwd=tmp_path).returncode
    assert rc == 0
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", "0",
                          "--root", str(root)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0 and parsed(run.stderr) == []  # KILLED: nothing to annotate
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### redfirst mutations: GREEN")
    assert "| mutation | seam-g2-reachability | seam-g3-counts |" in summary
    assert "| ad-hoc | RED | RED |" in summary and "| `ad-hoc` | KILLED |" in summary
    assert json.loads(outputs(tmp_path / "output.txt")["counts"]) == {"KILLED": 1}


def test_surviving_mutation_is_annotated_at_the_line_it_edited(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    doc = {"version": 1, "exit": 1, "items": [
        {"id": "drop-writeback", "kind": "mutation", "verdict": "SURVIVED", "cause": "assertion",
         "reason": "every named gate stayed GREEN", "counts": {"diffstat": "+1 -1"}, "file": "seam/capture.py",
         "line": 129, "source": "<command line>:0"}],
        "matrix": {"gates": ["seam-g1-replay"], "rows": {"drop-writeback": {"seam-g1-replay": "GREEN"}}}}
    report = github.document_report(doc, root=str(tmp_path / "examples" / "seam"))
    (a,) = github.annotations_of(report)
    assert (a.level, a.file, a.line, a.title) == ("error", "examples/seam/seam/capture.py", 129,
                                                  "SURVIVED drop-writeback")
    assert report.verdict() == "RED" and report.matrix[1] == ("drop-writeback", "GREEN")


# -- an exit status that outranks the document, the per-job annotation cap, a command that
# stopped before it could report, the action's own error lines escaped

def unescape(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",") \
        .replace("%25", "%")


def env_in(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(tmp_path), GITHUB_STEP_SUMMARY=str(tmp_path / "s.md"),
               GITHUB_OUTPUT=str(tmp_path / "o.txt"), **extra)
    return env


@pytest.mark.parametrize(("status", "verdict"), [(1, "RED"), (2, "ERROR"), (139, "ERROR"), (3, "NO_DECISION")])
def test_a_failing_exit_status_outranks_a_document_of_passing_items(tmp_path: Path, status: int,
                                                                     verdict: str) -> None:
    # the command printed its document and then failed (killed, crashed on exit): never verdict=GREEN
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"version": 1, "exit": 0, "items": [
        {"id": "drop-writeback", "kind": "mutation", "verdict": "KILLED"}]}))
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", str(status)],
                         capture_output=True, text=True, env=env_in(tmp_path), cwd=tmp_path, timeout=60)
    assert run.returncode == status
    assert outputs(tmp_path / "o.txt")["verdict"] == verdict
    summary = (tmp_path / "s.md").read_text()
    assert summary.startswith(f"### redfirst mutations: {verdict}") and "All 1" not in summary
    assert "All 1" not in run.stdout and f"exit status {status}" in run.stdout
    found = parsed(run.stderr)
    assert found and f"exit status {status}" in found[0][2]


def test_allow_no_decision_exit_0_still_reports_the_worst_item() -> None:
    report = github.Report("gates", 0, (github.Item("g", "NO_DECISION", "evidence", "r", "-"),))
    assert report.verdict() == "NO_DECISION"


def test_the_job_keeps_50_annotations_so_later_steps_list_theirs_in_the_summary(tmp_path: Path) -> None:
    # four redfirst steps in one job (as in ci.yml), 10 errors and 10 warnings each: GitHub keeps 50 per job
    shown_total = 0
    for step in range(4):
        items = tuple(github.Item(f"s{step}-r{i}", "RED", "assertion", "x", "-") for i in range(10)) + \
            tuple(github.Item(f"s{step}-n{i}", "NO_DECISION", "evidence", "x", "-") for i in range(10))
        summary = tmp_path / f"s{step}.md"
        env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(tmp_path / "o"),
               "RUNNER_TEMP": str(tmp_path)}
        stream = io.StringIO()
        github.publish(github.Report("gates", 1, items), env, stream)
        shown = parsed(stream.getvalue())
        shown_total += len(shown)
        listed = summary.read_text().count("\n- ")
        assert len(shown) + listed == 20, (step, len(shown), listed)
    assert shown_total == 50


def test_a_command_that_stopped_before_reporting_is_annotated_from_its_problem_lines(tmp_path: Path) -> None:
    gates_cmd = need("gates")
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "gates" / "bad.yaml").write_text("gate: bad\ndriver:\n  type: command\n  run: 'true'\n  colour: blue\n")
    env = env_in(tmp_path)
    gates = subprocess.run([gates_cmd, "run", "--root", str(root)], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=60)
    # gates run publishes its own stop: ERROR, the problem annotated at its file and line
    assert gates.returncode == 2 and outputs(tmp_path / "o.txt")["verdict"] == "ERROR"
    assert ("error", "proj/gates/bad.yaml", "5") in [(lv, p.get("file"), p.get("line"))
                                                      for lv, p, _ in parsed(gates.stderr)]
    (tmp_path / "o.txt").unlink()
    (tmp_path / "s.md").unlink()
    (tmp_path / "err.txt").write_text(gates.stderr)
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "stopped", "--id", "gates run", "--exit-status", "2",
                          "--stderr", str(tmp_path / "err.txt")], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 2
    assert outputs(tmp_path / "o.txt")["verdict"] == "ERROR"
    found = parsed(run.stderr)
    assert ("error", "proj/gates/bad.yaml", "5") in [(lv, p.get("file"), p.get("line")) for lv, p, _ in found]
    assert any("unknown key 'colour'" in msg for _, _, msg in found)
    assert "| `gates run` | **ERROR** |" in (tmp_path / "s.md").read_text()


def test_a_stopped_command_with_exit_0_and_no_report_is_not_a_pass(tmp_path: Path) -> None:
    (tmp_path / "err.txt").write_text("")
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "stopped", "--id", "checkers run", "--exit-status",
                          "0", "--stderr", str(tmp_path / "err.txt")], capture_output=True, text=True,
                         env=env_in(tmp_path), cwd=tmp_path, timeout=60)
    assert run.returncode == 2 and outputs(tmp_path / "o.txt")["verdict"] == "ERROR"


def test_a_document_of_red_items_never_exits_0(tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"version": 1, "exit": 1, "items": [
        {"id": "drop-writeback", "kind": "mutation", "verdict": "SURVIVED", "reason": "gates stayed GREEN"}]}))
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", "0"],
                         capture_output=True, text=True, env=env_in(tmp_path), cwd=tmp_path, timeout=60)
    assert run.returncode == 1 and outputs(tmp_path / "o.txt")["verdict"] == "RED"


def test_checkers_config_problems_are_annotated_at_their_file_and_line(tmp_path: Path) -> None:
    checkers_cmd = need("checkers")
    need("git")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "redfirst.yaml").write_text("checkers:\n  append_only:\n    - {pathx: index.md}\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "seed",
                    "--allow-empty"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "config"],
                   cwd=repo, check=True)
    env = env_in(repo)
    doc, err = tmp_path / "doc.json", tmp_path / "err.txt"
    with doc.open("w") as out, err.open("w") as errors:
        rc = subprocess.run([checkers_cmd, "run", "--format", "json"], stdout=out, stderr=errors, cwd=repo,
                            env={k: v for k, v in env.items() if k != "GITHUB_STEP_SUMMARY"}, timeout=60).returncode
    assert rc == 2
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", str(rc),
                          "--stderr", str(err)], capture_output=True, text=True, env=env, cwd=repo, timeout=60)
    assert run.returncode == 2 and outputs(repo / "o.txt")["verdict"] == "ERROR"
    assert ("error", "redfirst.yaml", "3") in [(lv, p.get("file"), p.get("line")) for lv, p, _ in parsed(run.stderr)]


def _act_helpers():  # type: ignore[no-untyped-def]
    """tests/github/test_action_act.py's act runner and repository builder, loaded as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("act_helpers", Path(__file__).with_name("test_action_act.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_under_act_a_stopped_command_is_annotated_and_the_actions_own_errors_are_escaped(tmp_path: Path) -> None:
    act = _act_helpers()
    need("git")
    src = tmp_path / "redfirst-src"
    for name in ("pyproject.toml", "README.md"):
        src.mkdir(exist_ok=True)
        shutil.copy2(act.REPO / name, src / name)
    for package in ("redfirst",):
        shutil.copytree(act.REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    steps = [act.action_step("broken", "gates run", src, args="--root broken"),
             act.action_step("badargs", "gates run", src, args='"-k \'x\\n--root \\"50%25 done"')]
    repo = tmp_path / "repo"
    (repo / "broken" / "gates").mkdir(parents=True)
    (repo / "broken" / "gates" / "bad.yaml").write_text(
        "gate: bad\ndriver:\n  type: command\n  run: 'true'\n  colour: blue\n")
    act.make_repo(repo, steps, ["broken", "badargs"])
    run = act.run_act(repo, tmp_path)
    assert run.result("broken") == "failure" and run.outputs["broken"][:2] == ("ERROR", "2"), run.log[-3000:]
    where = [(lv, p.get("file"), p.get("line")) for lv, p, _ in run.annotations("broken")]
    assert ("error", "broken/gates/bad.yaml", "5") in where, run.log[-3000:]
    assert "| `gates run` | **ERROR** |" in run.summary("broken")
    (level, _props, message), = run.annotations("badargs")
    assert level == "error" and message.endswith("-k 'x\n--root \"50%25 done"), message


def test_a_summary_over_githubs_1_mib_keeps_the_verdict_the_closing_line_and_says_what_it_left_out(
        tmp_path: Path) -> None:
    # GitHub drops a step summary over 1 MiB whole: the verdict would vanish with it
    items = tuple(github.Item(f"g{i}", "RED" if i == 2999 else "GREEN", None, "r" * 400, "-") for i in range(3000))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"), "GITHUB_OUTPUT": str(tmp_path / "o")}
    github.publish(github.Report("gates", 1, items), env, io.StringIO())
    summary = (tmp_path / "s.md").read_bytes()
    assert len(summary) <= github.SUMMARY_BUDGET
    text = summary.decode()
    assert text.startswith("### redfirst gates: RED") and "2999 GREEN, 1 RED." in text
    assert "| `g2999` | **RED** |" in text  # what did not pass comes before what did
    assert "item(s) not shown here" in text and "the log lists every item" in text


def test_the_plain_log_has_one_line_per_item_whatever_the_reason_holds() -> None:
    # the runner reads `::` lines of the log as commands: a reason must not start one
    report = github.Report("gates", 1, (github.Item("g", "RED", "exit", "boom\n::error file=README.md::forged", "-"),))
    assert not any(line.lstrip().startswith("::") for line in github.text(report).splitlines())
