"""The reusable workflow `redfirst-mutate.yml`: a shard matrix and a merge job, checked with
actionlint and run by `act` on this machine (host mode, no Docker) against a temporary
repository, as tests/github does: two shards, then one merge that decides. Third-party
actions act would clone (checkout of redfirst, upload/download-artifact) are stand-ins (fakes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from mutate_helpers import CALC, TEST_ADD, TEST_CLAMP, TEST_SUB, gate, git, write

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "redfirst-mutate.yml"
CHECKOUT = "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1"
UPLOAD = "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"
DOWNLOAD = "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c"
SETUP_PYTHON = "actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97"

STAND_INS = {
    CHECKOUT: """name: stand-in for actions/checkout (the job's own tree is act's copy; redfirst is the test's)
description: copies $REDFIRST_SOURCE_FOR_TEST to `path` unless path is the workspace itself
inputs:
  repository: {description: ignored, default: ""}
  ref: {description: ignored, default: ""}
  path: {description: where, default: "."}
runs:
  using: composite
  steps:
    - shell: bash
      run: |
        [ "${{ inputs.path }}" = "." ] && exit 0
        mkdir -p "$GITHUB_WORKSPACE/${{ inputs.path }}" && cp -a "$REDFIRST_SOURCE_FOR_TEST/." "$GITHUB_WORKSPACE/${{ inputs.path }}"
""",
    UPLOAD: """name: stand-in for actions/upload-artifact (keeps the files in $ARTIFACTS_FOR_TEST)
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
""",
    DOWNLOAD: """name: stand-in for actions/download-artifact (reads $ARTIFACTS_FOR_TEST)
description: copies every artifact matching `pattern` into path/<name>
inputs:
  pattern: {description: artifact names, default: "*"}
  path: {description: where, default: "."}
runs:
  using: composite
  steps:
    - shell: bash
      run: |
        mkdir -p "${{ inputs.path }}"
        for d in "$ARTIFACTS_FOR_TEST"/${{ inputs.pattern }}; do cp -a "$d" "${{ inputs.path }}/"; done
""",
    SETUP_PYTHON: "name: stand-in\ndescription: never run\nruns:\n  using: composite\n  steps: []\n",
}

MUTATIONS = '''\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add]}
- mutation: sub-plus
  file: calc/__init__.py
  anchor: "return a - b"
  replace: "return a + b"
  expect: {red: [sub]}
- mutation: clamp-lo
  file: calc/__init__.py
  anchor: "return lo"
  replace: "return hi"
  expect: {red: [clamp]}
'''


def need(tool: str) -> str:
    here = [Path(sysconfig.get_path("scripts")), Path(sys.base_prefix) / "bin"]
    found = next((str(d / tool) for d in here if os.access(d / tool, os.X_OK)), None) or shutil.which(tool)
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{tool} is not installed")
    return str(found)


def pip_args() -> str:
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        return "--no-deps"
    return "--no-build-isolation --no-deps"


def test_the_sharded_workflow_passes_actionlint():
    need("shellcheck")
    run = subprocess.run([need("actionlint"), "-oneline", "-no-color", str(WORKFLOW)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_two_shards_and_a_merge_run_by_act_decide_the_union(tmp_path: Path):
    need("git")
    act = need("act")
    source = tmp_path / "redfirst-checkout"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in ("redfirst", ".github"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    repo = tmp_path / "repo"
    repo.mkdir()
    write(repo, "calc/__init__.py", CALC)
    for rel, text in (("tests/test_add.py", TEST_ADD), ("tests/test_sub.py", TEST_SUB),
                      ("tests/test_clamp.py", TEST_CLAMP)):
        write(repo, rel, text)
    for name in ("add", "sub", "clamp"):
        write(repo, f"gates/{name}.yaml", gate(name, f"tests/test_{name}.py"))
    write(repo, "mutations/m.yaml", MUTATIONS)
    write(repo, ".gitignore", "__pycache__/\n")
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy2(WORKFLOW, repo / ".github" / "workflows")
    write(repo, ".github/workflows/redfirst.yml",
          "on: push\njobs:\n  mutations:\n    uses: ./.github/workflows/redfirst-mutate.yml\n    with:\n"
          "      shards: 2\n      setup-python: false\n      redfirst-repository: example/redfirst\n"
          f"      pip-args: {pip_args()}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "three mutations")
    artifacts = tmp_path / "artifacts"
    argv = [act, "push", "-P", "ubuntu-latest=-self-hosted", "--json", "-W", ".github/workflows/redfirst.yml",
            "--concurrent-jobs", "1"]
    for n, (ref, text) in enumerate(STAND_INS.items()):
        folder = tmp_path / f"stand-in-{n}"
        folder.mkdir()
        (folder / "action.yml").write_text(text)
        argv += ["--local-repository", f"{ref}={folder}"]
    for key, value in {"REDFIRST_SOURCE_FOR_TEST": str(source), "ARTIFACTS_FOR_TEST": str(artifacts)}.items():
        argv += ["--env", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACT"))}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=600, env=env)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    log = proc.stdout + proc.stderr
    # each shard kept its own report, the two parts cover the three mutations once
    reports = {p.parent.name: json.loads(p.read_text()) for p in artifacts.glob("*/mutate-shard.json")}
    assert sorted(reports) == ["redfirst-mutate-shard-1", "redfirst-mutate-shard-2"], log[-4000:]
    assigned = [i for r in reports.values() for i in r["shard"]["assigned"]]
    assert sorted(assigned) == ["add-minus", "clamp-lo", "sub-plus"]
    # the merge job decided the union: one survivor, so RED (exit 1), annotated and summarised
    outputs = {e["name"]: e.get("arg", "") for e in events
               if e.get("command") == "set-output" and e.get("stepID") == ["merge"]}
    assert outputs.get("verdict") == "RED" and outputs.get("exit-code") == "1", log[-6000:]
    assert json.loads(outputs["counts"]) == {"KILLED": 2, "SURVIVED": 1}
    summary = "".join(e["content"] for e in events if e.get("command") == "summary")
    assert "clamp-lo" in summary and "SURVIVED" in summary
    assert proc.returncode != 0      # a survivor fails the workflow
