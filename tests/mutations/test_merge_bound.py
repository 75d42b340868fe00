"""Evidence bound to what it claims (issue 33): every record names the mutation and patch it
ran for, the tree, the gate document's digest and the redfirst version, sealed with it; `mutate
merge` re-derives every KILLED and SURVIVED from the records shipped with the shard reports and
stores proofs only from records bound to their mutation.

Each shard runs in its own clone (its own evidence store), as CI jobs do; its artifact is the
folder the workflow uploads: `mutate-shard.json` and `evidence/`. The merge runs in a third clone."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mutate_helpers import git, make_repo, write

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
- mutation: clamp-x
  file: calc/__init__.py
  anchor: "    return x\\n"
  replace: "    return lo\\n"
  expect: {red: [clamp]}
'''

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mutate", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ},
                          timeout=300)


class Shards:
    """Two shards, each run in its own clone, their artifacts; merges run in fresh clones."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = make_repo(tmp, pytest.MonkeyPatch())
        write(self.root, "mutations/m.yaml", MUTATIONS)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "four mutations")
        self.artifacts = tmp / "artifacts"
        for k in (1, 2):
            clone = self.clone(f"shard-{k}")
            proc = run(clone, "--root", str(clone), "--json", "--shard", f"{k}/2", "--no-cache")
            assert proc.stdout, proc.stderr
            folder = self.artifacts / f"shard-{k}"
            folder.mkdir(parents=True)
            (folder / "mutate-shard.json").write_text(proc.stdout)
            shutil.copytree(clone / ".redfirst" / "evidence", folder / "evidence")

    def clone(self, name: str) -> Path:
        path = self.tmp / name
        n = 0
        while path.exists():
            n += 1
            path = self.tmp / f"{name}-{n}"
        git(self.tmp, "clone", "-q", str(self.root), str(path))
        return path

    def report(self, k: int) -> dict:
        doc: dict = json.loads((self.artifacts / f"shard-{k}" / "mutate-shard.json").read_text())
        return doc

    def item(self, mutation: str) -> tuple[int, dict]:
        for k in (1, 2):
            for item in self.report(k)["items"]:
                if item["id"] == mutation:
                    return k, item
        raise AssertionError(f"no shard ran {mutation}")

    def edited(self, name: str, edit: Callable[[Path], None]) -> Path:
        """A copy of both artifacts, `edit` applied to the copy's folder."""
        copy = self.tmp / name
        shutil.copytree(self.artifacts, copy)
        edit(copy)
        return copy

    def merge(self, artifacts: Path, *extra: str, here: Path | None = None
              ) -> tuple[subprocess.CompletedProcess[str], dict, Path]:
        here = here or self.clone("merge")
        proc = run(here, "merge", "--root", str(here), "--json", *extra, str(artifacts))
        return proc, json.loads(proc.stdout), here

    @functools.cached_property
    def killed_only(self) -> Path:
        """The artifact of one shard 1/1 of add-minus alone (a selection every mutation of which is KILLED)."""
        clone = self.clone("shard-add")
        proc = run(clone, "--root", str(clone), "--json", "--shard", "1/1", "--no-cache", "add-minus")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        folder = self.tmp / "artifacts-add" / "shard-1"
        folder.mkdir(parents=True)
        (folder / "mutate-shard.json").write_text(proc.stdout)
        shutil.copytree(clone / ".redfirst" / "evidence", folder / "evidence")
        return folder.parent


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shards]:
    with pytest.MonkeyPatch.context() as mp:
        tmp = tmp_path_factory.mktemp("bound")
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        yield Shards(tmp)


def proof_refs(root: Path) -> list[str]:
    """The mutation ids the proofs stored under `root` cite (none where no proof was stored)."""
    return sorted(json.loads(p.read_text())["ref"] for p in (root / ".redfirst" / "proofs").rglob("*.json"))


def rewrite_report(folder: Path, k: int, edit: Callable[[dict], None]) -> None:
    path = folder / f"shard-{k}" / "mutate-shard.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def record(folder: Path, evidence_id: str) -> dict:
    found = next(folder.rglob(f"evidence/{evidence_id}/record.json"))
    data: dict = json.loads(found.read_text())
    return data


def test_every_record_of_a_shard_names_the_mutation_patch_tree_gate_and_version_it_ran_for(shards: Shards):
    k, item = shards.item("clamp-x")
    shard = shards.report(k)["shard"]
    (red,) = item["gates"]
    bound = record(shards.artifacts, red["evidence"])
    assert bound["binding"]["mutation"] == "clamp-x"
    assert bound["binding"]["tree"] == shard["tree"]["tree"]
    assert bound["binding"]["redfirst"] == shard["version"]
    assert bound["binding"]["gate"] == hashlib.sha256(bound["gate_document"].encode()).hexdigest()
    _, other = shards.item("clamp-lo")
    assert record(shards.artifacts, other["gates"][0]["evidence"])["binding"]["patch"] not in (
        bound["binding"]["patch"], "baseline")
    # the baseline's runs: bound to "baseline" on the same tree
    baselines = [json.loads(p.read_text())["binding"] for p in (shards.artifacts / f"shard-{k}").rglob("record.json")]
    assert {"mutation": "baseline", "patch": "baseline"}.items() <= next(
        b for b in baselines if b["mutation"] == "baseline").items()
    assert {b["tree"] for b in baselines} == {shard["tree"]["tree"]}


def test_a_binding_edited_in_a_record_is_an_edited_record(shards: Shards, tmp_path: Path):
    _, item = shards.item("clamp-x")
    folder = next(shards.artifacts.rglob(f"evidence/{item['gates'][0]['evidence']}"))
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    data = json.loads((copy / "record.json").read_text())
    data["binding"]["mutation"] = "clamp-lo"
    (copy / "record.json").write_text(json.dumps(data))
    proc = subprocess.run([*GATES, "regrade", str(copy)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0 and "changed after the run" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_an_honest_two_shard_merge_decides_as_the_shards_did_and_proves_the_kills(shards: Shards):
    proc, doc, here = shards.merge(shards.artifacts)
    assert doc["merge"]["problems"] == [], proc.stderr
    assert proc.returncode == 1, proc.stderr          # clamp-lo survived: RED
    assert {i["id"]: i["verdict"] for i in doc["items"]} == {
        "add-minus": "KILLED", "sub-plus": "KILLED", "clamp-lo": "SURVIVED", "clamp-x": "KILLED"}
    assert proof_refs(here) == ["add-minus", "clamp-x", "sub-plus"]
    proven = subprocess.run([*GATES, "run", "clamp", "--require-proven", "--root", str(here)],
                            capture_output=True, text=True)
    assert proven.returncode == 0, proven.stdout + proven.stderr


def test_a_report_edited_from_survived_to_killed_is_refused(shards: Shards):
    def forge(doc: dict) -> None:
        for item in doc["items"]:
            if item["id"] == "clamp-lo":
                item["verdict"], item["cause"], item["reason"] = "KILLED", None, "RED: clamp (assertion)"
                for g in item["gates"]:
                    g["verdict"], g["cause"] = "RED", "assertion"
    k, item = shards.item("clamp-lo")
    proc, doc, here = shards.merge(shards.edited("forged", lambda f: rewrite_report(f, k, forge)))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "clamp-lo" in problems and item["gates"][0]["evidence"][:12] in problems, problems
    assert "SURVIVED" in problems, problems
    assert proof_refs(here) == []


def test_a_kill_pointed_at_another_mutations_red_record_is_refused_and_proves_nothing(shards: Shards):
    _, killer = shards.item("clamp-x")
    borrowed = killer["gates"][0]["evidence"]

    def borrow(doc: dict) -> None:
        for item in doc["items"]:
            if item["id"] == "clamp-lo":
                item["verdict"], item["cause"], item["reason"] = "KILLED", None, "RED: clamp (assertion)"
                item["gates"] = [dict(killer["gates"][0])]
    k, _ = shards.item("clamp-lo")
    proc, doc, here = shards.merge(shards.edited("borrowed", lambda f: rewrite_report(f, k, borrow)))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "clamp-lo" in problems and borrowed[:12] in problems and "clamp-x" in problems, problems
    assert "clamp-lo" not in proof_refs(here)


def test_a_report_whose_records_are_missing_is_no_decision_naming_them(shards: Shards):
    k, item = shards.item("add-minus")
    gone = item["gates"][0]["evidence"]

    def drop(folder: Path) -> None:
        for found in folder.rglob(f"evidence/{gone}"):
            shutil.rmtree(found)
    proc, doc, here = shards.merge(shards.edited("missing", drop))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "add-minus" in problems and gone[:12] in problems and "no record" in problems, problems
    assert "add-minus" not in proof_refs(here)


def test_a_record_whose_binding_was_edited_is_refused_as_edited(shards: Shards):
    _, killer = shards.item("clamp-x")
    borrowed = killer["gates"][0]["evidence"]

    def rebind(folder: Path) -> None:
        for found in folder.rglob(f"evidence/{borrowed}/record.json"):
            data = json.loads(found.read_text())
            data["binding"]["mutation"] = "clamp-lo"
            found.write_text(json.dumps(data))
        k, _ = shards.item("clamp-lo")

        def point(doc: dict) -> None:
            for item in doc["items"]:
                if item["id"] == "clamp-lo":
                    item["verdict"], item["cause"] = "KILLED", None
                    item["gates"] = [dict(killer["gates"][0])]
        rewrite_report(folder, k, point)
    proc, doc, _ = shards.merge(shards.edited("rebound", rebind))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "clamp-lo" in problems and "changed after the run" in problems, problems


def test_a_plain_gates_run_record_is_bound_to_the_baseline(repo: Path):
    proc = subprocess.run([*GATES, "run", "add", "--root", str(repo)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (found,) = (repo / ".redfirst" / "evidence").glob("*/record.json")
    binding = json.loads(found.read_text())["binding"]
    assert binding["mutation"] == binding["patch"] == "baseline"
    assert len(binding["tree"]) == 64 and len(binding["gate"]) == 64 and binding["redfirst"]


WEAK_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) is not None\n"


@pytest.mark.parametrize("committed", [True, False])
def test_a_merge_in_a_checkout_of_another_tree_is_no_decision_naming_both_trees(shards: Shards, committed: bool):
    # adversarial finding (issue 33): shards of commit A merged in a checkout of a later commit
    # that weakened the test printed "All 1 mutations KILLED", exit 0 (proofs not stored, on stderr only)
    here = shards.clone("weakened")
    write(here, "tests/test_add.py", WEAK_ADD)
    if committed:
        git(here, "commit", "-q", "-am", "weaken the add test")
    truth = run(here, "--root", str(here), "--json", "--no-cache", "add-minus")
    assert json.loads(truth.stdout)["items"][0]["verdict"] == "SURVIVED", truth.stdout + truth.stderr
    shard_tree = json.loads((shards.killed_only / "shard-1" / "mutate-shard.json").read_text())["shard"]["tree"]
    proc, doc, _ = shards.merge(shards.killed_only, here=here)
    assert proc.returncode == 3 and doc["exit"] == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "not this checkout's" in problems, problems
    assert shard_tree["tree"][:12] in problems and shard_tree["head"][:12] in problems, problems
    assert git(here, "rev-parse", "HEAD").strip()[:12] in problems, problems
    assert proof_refs(here) == []
    text = run(here, "merge", "--root", str(here), str(shards.killed_only))
    assert text.returncode == 3 and "All 1 mutations KILLED" not in text.stdout, text.stdout


def test_the_same_shards_merged_in_a_checkout_of_their_tree_pass_and_prove(shards: Shards):
    proc, doc, here = shards.merge(shards.killed_only)
    assert proc.returncode == 0 and doc["merge"]["problems"] == [], proc.stdout + proc.stderr
    assert proof_refs(here) == ["add-minus"]


def test_a_merge_outside_any_project_never_passes_on_a_tree_it_could_not_check(shards: Shards, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run(elsewhere, "merge", "--json", str(shards.killed_only))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3 and doc["exit"] == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert "could not check" in problems and "no project here" in problems, problems


@pytest.mark.parametrize(("claim", "build", "said"), [
    ("EQUIVALENT", None, "contradiction"),          # an outcome no gate runs for, with gate results listed
    ("DISCARDED", "failed", "contradiction"),       # a build that failed: no gate ran
    ("DISCARDED", None, "decide SURVIVED"), ("ERROR", None, "decide SURVIVED"), ("UNSCOPED", None, "decide SURVIVED"),
])
def test_a_survivor_edited_to_an_outcome_that_is_not_re_derived_is_no_decision(shards: Shards, claim: str,
                                                                                build: str | None, said: str):
    # adversarial finding (issue 33): only KILLED and SURVIVED were re-derived; a SURVIVED edited
    # to EQUIVALENT or DISCARDED (its gate result still GREEN) merged with --allow-no-decision, exit 0
    def edit(doc: dict) -> None:
        for item in doc["items"]:
            if item["id"] == "clamp-lo":
                item["verdict"], item["cause"] = claim, "build"
                if build is not None:
                    item["build"] = {"state": build, "reason": "error: edited"}
    k, item = shards.item("clamp-lo")
    proc, doc, here = shards.merge(shards.edited(f"as-{claim}-{build}", lambda f: rewrite_report(f, k, edit)),
                                   "--allow-no-decision")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(doc["merge"]["problems"])
    assert f"clamp-lo reported {claim}" in problems and item["gates"][0]["evidence"][:12] in problems, problems
    assert said in problems, problems
