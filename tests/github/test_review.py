"""Review of the GitHub output: an exit status that outranks the document, GitHub's per-job annotation
cap, a command that stopped before it could report, and the action's own error lines escaped.

The publishing code runs for real (`python -m gates.github`, `gates run`) with the GitHub Actions
variables pointing at files here; the action's steps run under `act` as tests/github/test_action_act.py does.
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

from gates import github

ANNOTATION = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def need(tool: str) -> str:
    found = shutil.which(tool)
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{tool} is not installed")
    return str(found)


def unescape(value: str) -> str:
    return value.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",") \
        .replace("%25", "%")


def parsed(lines: str) -> list[tuple[str, dict[str, str], str]]:
    out = []
    for line in lines.splitlines():
        m = ANNOTATION.match(line)
        if m:
            props = dict(p.split("=", 1) for p in m.group(2).split(",") if p)
            out.append((m.group(1), {k: unescape(v) for k, v in props.items()}, unescape(m.group(3))))
    return out


def env_in(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(tmp_path), GITHUB_STEP_SUMMARY=str(tmp_path / "s.md"),
               GITHUB_OUTPUT=str(tmp_path / "o.txt"), **extra)
    return env


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.parametrize(("status", "verdict"), [(1, "RED"), (2, "ERROR"), (139, "ERROR"), (3, "NO_DECISION")])
def test_a_failing_exit_status_outranks_a_document_of_passing_items(tmp_path: Path, status: int,
                                                                     verdict: str) -> None:
    # the command printed its document and then failed (killed, crashed on exit): never verdict=GREEN
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"version": 1, "exit": 0, "items": [
        {"id": "drop-writeback", "kind": "mutation", "verdict": "KILLED"}]}))
    run = subprocess.run([sys.executable, "-m", "gates.github", "publish", str(doc), "--exit-status", str(status)],
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
    run = subprocess.run([sys.executable, "-m", "gates.github", "stopped", "--id", "gates run", "--exit-status", "2",
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
    run = subprocess.run([sys.executable, "-m", "gates.github", "stopped", "--id", "checkers run", "--exit-status",
                          "0", "--stderr", str(tmp_path / "err.txt")], capture_output=True, text=True,
                         env=env_in(tmp_path), cwd=tmp_path, timeout=60)
    assert run.returncode == 2 and outputs(tmp_path / "o.txt")["verdict"] == "ERROR"


def test_a_document_of_red_items_never_exits_0(tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({"version": 1, "exit": 1, "items": [
        {"id": "drop-writeback", "kind": "mutation", "verdict": "SURVIVED", "reason": "gates stayed GREEN"}]}))
    run = subprocess.run([sys.executable, "-m", "gates.github", "publish", str(doc), "--exit-status", "0"],
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
    run = subprocess.run([sys.executable, "-m", "gates.github", "publish", str(doc), "--exit-status", str(rc),
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
    for package in ("gates", "mutations", "leases", "checkers"):
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
