"""The action and the reusable workflows as a user pastes them (issue 35 item 9): the artifacts
they upload are named as README and the guide say, the reusable workflows install redfirst
itself (the repository pyproject names), not the calling repository, and the GPU workflow's
default runner is a GPU runner. Read from the files themselves."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ACTION = REPO / ".github" / "actions" / "redfirst" / "action.yml"
DOCS = {"README.md": (REPO / "README.md").read_text(), "docs/guide.md": (REPO / "docs" / "guide.md").read_text()}


def reusable() -> dict[str, dict[Any, Any]]:
    """Reusable workflow file name -> its parsed document (YAML 1.1 reads `on:` as True)."""
    found = {}
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        doc = yaml.safe_load(path.read_text())
        trigger = doc.get("on", doc.get(True)) or {}
        if isinstance(trigger, dict) and "workflow_call" in trigger:
            found[path.name] = doc
    assert {"redfirst-gpu.yml", "redfirst-mutate.yml"} <= set(found)
    return found


def inputs(doc: dict[Any, Any]) -> dict[str, Any]:
    trigger: dict[str, Any] = doc["on"] if "on" in doc else doc[True]
    return dict(trigger["workflow_call"]["inputs"])


def redfirst_repository() -> str:
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"].get("urls", {})
    m = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?", urls.get("Repository", ""))
    assert m, f"pyproject.toml [project.urls] Repository is no GitHub repository: {urls}"
    return m.group(1)


@pytest.mark.parametrize("name", ["redfirst-gpu.yml", "redfirst-mutate.yml"])
def test_a_reusable_workflow_installs_redfirst_itself_by_default(name: str):
    doc = reusable()[name]
    assert inputs(doc)["redfirst-repository"]["default"] == redfirst_repository()
    checkouts = [step for job in doc["jobs"].values() for step in job.get("steps", [])
                 if str(step.get("uses", "")).startswith("actions/checkout@")
                 and (step.get("with") or {}).get("path") == ".redfirst-src"]
    assert checkouts, f"{name}: no checkout of the redfirst source"
    for step in checkouts:
        # Never the caller's repository: an empty input is not a way back to it.
        assert step["with"]["repository"] == "${{ inputs.redfirst-repository }}", step
    assert "github.repository" not in (WORKFLOWS / name).read_text()


def test_the_gpu_workflow_runs_on_a_gpu_runner_by_default():
    labels = json.loads(inputs(reusable()["redfirst-gpu.yml"])["runs-on"]["default"])
    assert "ubuntu-latest" not in labels and any("gpu" in label.lower() for label in labels), labels


def _report_artifact() -> str:
    """The HTML report's artifact name as the action builds it: `<report-name>-<job>-<n>`."""
    action = yaml.safe_load(ACTION.read_text())
    prefix = action["inputs"]["report-name"]["default"]
    text = ACTION.read_text()
    line = next((x for x in text.splitlines() if "report-name=%s-%s-%s" in x), "")
    assert line.endswith('"$REPORT_NAME" "$GITHUB_JOB" "$n" >> "$GITHUB_OUTPUT"'), \
        "the action no longer names its report artifact <report-name>-<job>-<n>"
    assert "name: ${{ steps.run.outputs.report-name }}" in text
    return f"{prefix}-<job>-<n>"


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_the_uploaded_artifacts_are_named_as_the_docs_say(doc: str):
    text = DOCS[doc]
    name = _report_artifact()
    assert f"`{name}`" in text, f"{doc} does not name the report artifact `{name}`"
    prefix = name.split("-<")[0]
    assert not re.search(rf"artifact\s+`{re.escape(prefix)}`", text), f"{doc} names the artifact `{prefix}`"
    evidence = inputs(reusable()["redfirst-gpu.yml"])["artifact-name"]["default"]
    assert f"`{evidence}`" in text, f"{doc} does not name the GPU workflow's artifact `{evidence}`"
