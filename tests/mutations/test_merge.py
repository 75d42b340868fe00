"""`mutate merge REPORT...`: shard reports joined into one report, NO_DECISION (exit 3) with a
reason naming what is wrong unless they cover the selection exactly once, on one tree and
version, with green baselines; merged kills prove their gates as if run here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mutate_helpers import git, make_repo, write

SIX = '''\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add]}
- mutation: add-times
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a * b"
  expect: {red: [add], green: [sub]}
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
- mutation: clamp-hi
  file: calc/__init__.py
  anchor: "return hi"
  replace: "return lo"
  expect: {red: [clamp]}
- mutation: clamp-x
  file: calc/__init__.py
  anchor: "    return x\\n"
  replace: "    return lo\\n"
  expect: {red: [clamp]}
'''


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mutate", *args], cwd=root, capture_output=True, text=True, env={**os.environ},
                          timeout=300)


class Runs:
    """One repository, one full run and its two shards, shared by the tests of this file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = make_repo(tmp, pytest.MonkeyPatch())
        write(self.root, "mutations/six.yaml", SIX)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "six mutations")
        self.full = self.report("full.json", "--no-cache")
        self.one = self.report("one.json", "--shard", "1/2", "--no-cache")
        self.two = self.report("two.json", "--shard", "2/2", "--no-cache", "-n", "2")

    def report(self, name: str, *args: str, root: Path | None = None) -> Path:
        proc = run(root or self.root, "--root", str(root or self.root), "--json", *args)
        assert proc.stdout, proc.stderr
        path = self.tmp / name
        path.write_text(proc.stdout)
        return path

    def merge(self, *reports: Path, root: Path | None = None, extra: tuple[str, ...] = ()) \
            -> subprocess.CompletedProcess[str]:
        return run(root or self.root, "merge", "--root", str(root or self.root), *extra, *map(str, reports))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    with pytest.MonkeyPatch.context() as mp:
        tmp = tmp_path_factory.mktemp("merge")
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        yield Runs(tmp)


def outcomes(doc: dict) -> dict[str, str]:
    return {i["id"]: i["verdict"] for i in doc["items"]}


def test_six_mutations_in_two_shards_merge_to_the_outcomes_of_one_run(runs: Runs):
    full = json.loads(runs.full.read_text())
    assert outcomes(full) == {"add-minus": "KILLED", "add-times": "KILLED", "sub-plus": "KILLED",
                              "clamp-lo": "SURVIVED", "clamp-hi": "SURVIVED", "clamp-x": "KILLED"}
    one, two = (json.loads(p.read_text()) for p in (runs.one, runs.two))
    assert len(one["items"]) == len(two["items"]) == 3
    proc = runs.merge(runs.two, runs.one, extra=("--json",))
    merged = json.loads(proc.stdout)
    assert outcomes(merged) == outcomes(full)
    assert [i["id"] for i in merged["items"]] == [i["id"] for i in full["items"]]   # the selection's order
    assert proc.returncode == full["exit"] == merged["exit"] == 1, proc.stderr
    assert merged["merge"]["problems"] == [] and merged["merge"]["shards"] == ["1/2", "2/2"]
    text = runs.merge(runs.one, runs.two)
    assert text.returncode == 1
    assert "clamp-lo" in text.stdout and "2 SURVIVED" in text.stdout and "exit 1" in text.stdout


def test_merge_writes_junit_and_html_like_the_run_command(runs: Runs):
    junit, html = runs.tmp / "merged.xml", runs.tmp / "merged.html"
    proc = runs.merge(runs.one, runs.two, extra=("--junit", str(junit), "--html", str(html)))
    assert proc.returncode == 1, proc.stderr
    import xml.etree.ElementTree as ET
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "2", "0")
    page = html.read_text()
    assert "clamp-lo" in page and "SURVIVED" in page and "return hi" in page


def test_a_missing_shard_is_no_decision_naming_it(runs: Runs):
    proc = runs.merge(runs.one, extra=("--json",))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3 and doc["exit"] == 3
    problems = " ".join(doc["merge"]["problems"])
    assert "shard 2/2 missing" in problems
    assert "not in any shard" in problems
    assert all(i in problems for i in json.loads(runs.two.read_text())["shard"]["assigned"])
    assert "shard 2/2 missing" in runs.merge(runs.one).stderr


def test_a_duplicated_shard_is_no_decision_naming_it(runs: Runs):
    proc = runs.merge(runs.one, runs.two, runs.one, extra=("--json",))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3
    problems = " ".join(doc["merge"]["problems"])
    assert "shard 1/2 given twice" in problems and str(runs.one) in problems
    assert "more than once" in problems


def test_a_shard_on_another_head_is_no_decision_naming_it(runs: Runs, tmp_path: Path):
    other = tmp_path / "other"
    git(runs.tmp, "clone", "-q", str(runs.root), str(other))
    write(other, "README", "another commit, same mutations\n")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "another head")
    moved = runs.report("two-other-head.json", "--shard", "2/2", "--no-cache", root=other)
    proc = runs.merge(runs.one, moved, extra=("--json",))
    assert proc.returncode == 3
    problems = " ".join(json.loads(proc.stdout)["merge"]["problems"])
    assert "different trees" in problems and "HEAD" in problems
    assert git(other, "rev-parse", "HEAD").strip()[:12] in problems


def test_shards_of_another_version_are_no_decision(runs: Runs, tmp_path: Path):
    doc = json.loads(runs.two.read_text())
    doc["shard"]["version"] = "0.0.0-other"
    edited = tmp_path / "two-other-version.json"
    edited.write_text(json.dumps(doc))
    proc = runs.merge(runs.one, edited)
    assert proc.returncode == 3
    assert "redfirst version" in proc.stderr and "0.0.0-other" in proc.stderr


def test_a_shard_whose_baseline_was_red_is_no_decision_naming_it(tmp_path: Path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        runs = Runs.__new__(Runs)
        runs.tmp, runs.root = tmp_path, make_repo(tmp_path, mp)
        write(runs.root, "mutations/six.yaml", SIX)
        write(runs.root, "tests/test_sub.py", "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 3\n")
        git(runs.root, "add", "-A")
        git(runs.root, "commit", "-q", "-m", "a red sub test")
        one = runs.report("one.json", "--shard", "1/2", "--no-cache")
        two = runs.report("two.json", "--shard", "2/2", "--no-cache")
        red = next(s for s in (one, two) if "sub-plus" in json.loads(s.read_text())["shard"]["assigned"])
        spec = json.loads(red.read_text())["shard"]["spec"]
        proc = runs.merge(one, two, extra=("--json",))
        assert proc.returncode == 3, proc.stdout + proc.stderr
        problems = " ".join(json.loads(proc.stdout)["merge"]["problems"])
        assert f"shard {spec}" in problems and "baseline" in problems and "sub" in problems


def test_a_report_that_is_not_a_shard_report_is_a_usage_error(runs: Runs):
    proc = runs.merge(runs.full)
    assert proc.returncode == 2
    assert str(runs.full) in proc.stderr and "--shard" in proc.stderr
    assert runs.merge().returncode == 2


def test_merged_kills_prove_their_gates_where_the_merge_runs(runs: Runs, tmp_path: Path):
    clone = tmp_path / "clone"
    git(runs.tmp, "clone", "-q", str(runs.root), str(clone))
    proc = runs.merge(runs.one, runs.two, root=clone,
                      extra=("--evidence", str(runs.root / ".redfirst" / "evidence")))
    assert proc.returncode == 1, proc.stderr
    gates = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
    listing = subprocess.run([*gates, "proofs", "--root", str(clone)], capture_output=True, text=True).stdout
    assert "mutation:add-minus" in listing and "mutation:clamp-x" in listing
    assert "clamp-lo" not in listing                                  # a survivor proves nothing
    proven = subprocess.run([*gates, "run", "add", "--require-proven", "--root", str(clone)],
                            capture_output=True, text=True)
    assert proven.returncode == 0, proven.stdout + proven.stderr


def test_a_folder_of_downloaded_shard_artifacts_is_merged_with_its_evidence(runs: Runs, tmp_path: Path):
    import shutil
    artifacts = tmp_path / "shards"
    for n, report in enumerate((runs.one, runs.two), 1):
        folder = artifacts / f"shard-{n}"
        folder.mkdir(parents=True)
        shutil.copy(report, folder / "mutate-shard.json")
        shutil.copytree(runs.root / ".redfirst" / "evidence", folder / "evidence")
    clone = tmp_path / "clone"
    git(runs.tmp, "clone", "-q", str(runs.root), str(clone))
    proc = runs.merge(artifacts, root=clone, extra=("--json",))
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["merge"]["shards"] == ["1/2", "2/2"]
    assert "not stored" not in proc.stderr
    gates = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
    proven = subprocess.run([*gates, "run", "add", "--require-proven", "--root", str(clone)],
                            capture_output=True, text=True)
    assert proven.returncode == 0, proven.stdout + proven.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runs.merge(empty).returncode == 2


def test_shards_balanced_on_different_durations_are_no_decision(runs: Runs, tmp_path: Path):
    doc = json.loads(runs.two.read_text())
    doc["shard"]["partition"]["durations"] = "0" * 64
    edited = tmp_path / "two-other-partition.json"
    edited.write_text(json.dumps(doc))
    proc = runs.merge(runs.one, edited)
    assert proc.returncode == 3 and "partitions (durations balanced on)" in proc.stderr


def test_a_shard_reporting_other_mutations_than_its_part_is_no_decision(runs: Runs, tmp_path: Path):
    doc = json.loads(runs.two.read_text())
    doc["shard"]["assigned"] = doc["shard"]["assigned"][:-1]
    edited = tmp_path / "two-other-part.json"
    edited.write_text(json.dumps(doc))
    proc = runs.merge(runs.one, edited)
    assert proc.returncode == 3 and "but was assigned" in proc.stderr


def test_a_shard_whose_outcome_was_edited_past_its_gates_results_is_no_decision(runs: Runs, tmp_path: Path):
    # rule 4: the merge re-decides each outcome from the gate results the shard reports, as the
    # engine does, and never takes a worker's KILLED over a gate that stayed GREEN
    edited = {}
    for path in (runs.one, runs.two):
        doc = json.loads(path.read_text())
        for item in doc["items"]:
            if item["verdict"] == "SURVIVED":
                item["verdict"], item["cause"], item["reason"] = "KILLED", None, "RED: clamp (assertion)"
        edited[path] = tmp_path / path.name
        edited[path].write_text(json.dumps(doc))
    proc = runs.merge(*edited.values(), extra=("--json",))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3, proc.stdout
    problems = " ".join(doc["merge"]["problems"])
    assert "clamp-lo" in problems and "clamp-hi" in problems and "SURVIVED" in problems, problems
    assert runs.merge(runs.one, runs.two).returncode == 1    # the reports as written merge as before


def _edited(runs: Runs, tmp_path: Path, source: Path, name: str, edit) -> Path:
    doc = json.loads(source.read_text())
    edit(doc)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize(("name", "edit", "field"), [
    ("no-verdict", lambda d: d["items"][0].pop("verdict"), "items[0]"),
    ("gates-null", lambda d: d["items"][0].__setitem__("gates", None), "items[0].gates"),
    ("selection-list", lambda d: d["shard"].__setitem__("selection", []), "shard.selection"),
    ("count-text", lambda d: d["shard"].__setitem__("count", "two"), "shard.count"),
    ("verdict-unknown", lambda d: d["items"][0].__setitem__("verdict", "KILLED!"), "items[0].verdict"),
    ("no-tree", lambda d: d["shard"].__setitem__("tree", {}), "shard.tree"),
])
def test_a_malformed_shard_report_is_a_usage_error_naming_its_file_and_field(runs: Runs, tmp_path: Path, name, edit,
                                                                              field):
    # helper-13 findings 8 and 9: a traceback and exit 1 (read as SURVIVED), or a merge decided
    # with no tree to compare
    bad = _edited(runs, tmp_path, runs.two, f"{name}.json", edit)
    proc = runs.merge(runs.one, bad)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and field in proc.stderr, proc.stderr


def test_selection_ids_that_do_not_hash_to_the_selection_hash_are_no_decision(runs: Runs, tmp_path: Path):
    # helper-13 finding 6: the survivor dropped from the selection and from its shard, the hash left as it was
    def drop(doc):
        gone = next(i["id"] for i in doc["items"] if i["verdict"] == "SURVIVED")
        doc["items"] = [i for i in doc["items"] if i["id"] != gone]
        doc["shard"]["assigned"] = [i for i in doc["shard"]["assigned"] if i != gone]
        doc["shard"]["mutations"].pop(gone)
        doc["shard"]["selection"]["ids"].remove(gone)
        doc["shard"]["selection"]["documents"].pop(gone)
    source = next(p for p in (runs.one, runs.two) if "SURVIVED" in p.read_text())
    other = runs.two if source == runs.one else runs.one
    both = [_edited(runs, tmp_path, p, p.name, drop if p == source else lambda d: (
        d["shard"]["selection"]["ids"].remove(gone_id(source)), d["shard"]["selection"]["documents"].pop(gone_id(source))))
        for p in (source, other)]
    proc = runs.merge(*both)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "selection hash" in proc.stderr


def gone_id(path: Path) -> str:
    return next(i["id"] for i in json.loads(path.read_text())["items"] if i["verdict"] == "SURVIVED")


def test_a_shard_relabelled_as_the_whole_is_no_decision(runs: Runs, tmp_path: Path):
    # helper-13 finding 6: shard 1/2 called 1/1 and merged alone
    def relabel(doc):
        doc["shard"]["spec"], doc["shard"]["count"] = "1/1", 1
    proc = runs.merge(_edited(runs, tmp_path, runs.one, "one-as-all.json", relabel))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "not in any shard" in proc.stderr or "partition" in proc.stderr


def test_the_junit_of_an_incomplete_merge_is_not_green(runs: Runs, tmp_path: Path):
    # helper-13 finding 10: tests="N" failures="0" errors="0" for a merge that exits 3
    import xml.etree.ElementTree as ET
    junit = tmp_path / "incomplete.xml"
    proc = runs.merge(runs.one, extra=("--junit", str(junit)))
    assert proc.returncode == 3
    suite = ET.parse(junit).getroot()
    assert int(suite.get("errors")) >= 1
    assert "shard 2/2 missing" in ET.tostring(suite, encoding="unicode")


def test_no_proof_is_stored_for_a_kill_whose_record_is_not_here(runs: Runs, tmp_path: Path):
    # helper-13 finding 7: add_proof called for an evidence id that exists nowhere; since issue
    # 33 a verdict whose records were not shipped is no decision at all
    clone = tmp_path / "clone"
    git(runs.tmp, "clone", "-q", str(runs.root), str(clone))
    proc = runs.merge(runs.one, runs.two, root=clone)       # no --evidence: no record of any kill here
    assert proc.returncode == 3, proc.stderr
    assert "add-minus reported KILLED, but no record" in proc.stderr and "evidence" in proc.stderr
    assert not (clone / ".redfirst" / "proofs").exists() or not any((clone / ".redfirst" / "proofs").rglob("*.json"))


def test_shards_of_other_redfirst_code_of_the_same_version_are_no_decision(runs: Runs, tmp_path: Path):
    # helper-14 finding 5: one shard from an install of another commit (the same 0.1.0, another
    # derived timeout) reported a false KILLED, and the merge took it
    other = _edited(runs, tmp_path, runs.two, "two-other-code.json", lambda d: d["shard"].__setitem__("code", "0" * 64))
    proc = runs.merge(runs.one, other)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "redfirst code" in proc.stderr


def test_a_shard_count_past_any_ci_matrix_is_a_usage_error(runs: Runs, tmp_path: Path):
    # helper-14 finding 7: --shard 1/100000000 and a report saying so ran out of memory (a
    # MemoryError traceback, exit 1)
    proc = run(runs.root, "--root", str(runs.root), "--shard", "1/100000000")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--shard" in proc.stderr, proc.stderr
    big = _edited(runs, tmp_path, runs.one, "one-huge.json",
                  lambda d: d["shard"].update(count=100_000_000, spec="1/100000000"))
    proc = runs.merge(big)
    assert proc.returncode == 2 and "shard.count" in proc.stderr, proc.stderr


def _tampered_build_fails(doc: dict) -> None:
    """helper-13 finding 7: every survivor made a KILLED whose description says `expect.build:
    fails` (a kill the merge cannot re-decide from gate results)."""
    for item in doc["items"]:
        if item["verdict"] == "SURVIVED":
            item["verdict"], item["cause"], item["reason"] = "KILLED", None, "build failed"
            doc["shard"]["mutations"][item["id"]]["expect_build"] = "fails"


def test_a_description_edited_past_its_selection_document_is_no_decision(runs: Runs, tmp_path: Path):
    # helper-13 finding 7: the merge re-decided each KILLED from the description the report
    # itself carries; one edited to `expect_build: fails` merged as KILLED
    edited = [_edited(runs, tmp_path, p, p.name, _tampered_build_fails) for p in (runs.one, runs.two)]
    proc = runs.merge(*edited, extra=("--json",))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(json.loads(proc.stdout)["merge"]["problems"])
    assert "clamp-lo" in problems and "description" in problems, problems


def test_descriptions_edited_with_their_documents_are_checked_against_the_mutation_files_here(
        runs: Runs, tmp_path: Path):
    # the same edit, with the selection's documents and hash made to match in every shard: the
    # reports agree with each other, not with this project's mutation files at the shards' HEAD
    edited = [_edited(runs, tmp_path, p, p.name, _tampered_consistently(runs)) for p in (runs.one, runs.two)]
    proc = runs.merge(*edited, extra=("--json",))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(json.loads(proc.stdout)["merge"]["problems"])
    assert "clamp-lo" in problems and "six.yaml" in problems, problems
    assert "selection's document" not in problems and "differs in expect_build" in problems, problems
    assert runs.merge(runs.one, runs.two).returncode == 1      # the reports as written merge as before


def _tampered_consistently(runs: Runs, head: str | None = None):
    """`_tampered_build_fails` with each shard's documents and selection hash made to agree with
    the edit (the same in every shard), and its HEAD replaced where given."""
    from redfirst.mutations.shard import documents_hash, record_digest

    def tamper(doc: dict) -> None:
        _tampered_build_fails(doc)
        docs = doc["shard"]["selection"]["documents"]
        for i, described in doc["shard"]["mutations"].items():
            docs[i] = record_digest(described)
        for i in ("clamp-lo", "clamp-hi"):
            docs[i] = record_digest({**_described(runs, i), "expect_build": "fails"})
        doc["shard"]["selection"]["hash"] = documents_hash(docs)
        if head is not None:
            doc["shard"]["tree"]["head"] = head
    return tamper


def _described(runs: Runs, mutation_id: str) -> dict:
    for path in (runs.one, runs.two):
        described = json.loads(path.read_text())["shard"]["mutations"].get(mutation_id)
        if described is not None:
            return described
    raise AssertionError(mutation_id)


def test_descriptions_edited_with_their_documents_and_another_head_are_still_checked(runs: Runs, tmp_path: Path):
    # helper-15 finding 1: the check ran only where the reports' own HEAD was this checkout's;
    # the edited reports named another HEAD and merged as all KILLED, exit 0
    edited = [_edited(runs, tmp_path, p, p.name, _tampered_consistently(runs, head="0" * 40))
              for p in (runs.one, runs.two)]
    proc = runs.merge(*edited, extra=("--json",))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "differs in expect_build" in " ".join(json.loads(proc.stdout)["merge"]["problems"])


def test_a_merge_outside_any_project_says_it_did_not_check_the_descriptions(runs: Runs, tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run(elsewhere, "merge", "--json", "--evidence", str(runs.root / ".redfirst" / "evidence"),
               str(runs.one), str(runs.two))
    assert proc.returncode == 1, proc.stdout + proc.stderr     # as the shards decided: survivors
    assert "not checked against" in proc.stderr, proc.stderr
    assert "not checked against" in json.loads(proc.stdout)["merge"]["unchecked"]


def test_shards_of_a_mutation_file_outside_the_mutation_folders_merge_as_decided(runs: Runs, tmp_path: Path):
    # helper-15 finding 6: `mutate --shard K/N extra/more.yaml`: the check looked only in the
    # mutation folders and made the merge NO_DECISION
    extra = runs.tmp / "extra-root"
    git(runs.tmp, "clone", "-q", str(runs.root), str(extra))
    write(extra, "extra/more.yaml", SIX.split("- mutation: clamp-lo")[0].replace("mutation: ", "mutation: x-"))
    git(extra, "add", "-A")
    git(extra, "commit", "-q", "-m", "a mutation file of its own")
    shards = [runs.report(f"extra-{k}.json", "--shard", f"{k}/2", "--no-cache", "extra/more.yaml", root=extra)
              for k in (1, 2)]
    proc = runs.merge(*shards, root=extra, extra=("--json",))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and not doc["merge"]["problems"], proc.stdout + proc.stderr
    assert doc["merge"]["unchecked"] is None, doc["merge"]


def test_a_red_its_record_does_not_grade_red_is_no_decision_and_proves_nothing(runs: Runs, tmp_path: Path):
    # helper-15 finding 9: a survivor's GREEN gate result edited to RED (and its item to KILLED)
    # merged with exit 0, and a proof was stored citing the GREEN run's record
    def forge(doc: dict) -> None:
        for item in doc["items"]:
            if item["verdict"] == "SURVIVED":
                item["verdict"], item["cause"], item["reason"] = "KILLED", None, "RED: clamp (assertion)"
                for g in item["gates"]:
                    g["verdict"], g["cause"] = "RED", "assertion"
    forged = [_edited(runs, tmp_path, p, p.name, forge) for p in (runs.one, runs.two)]
    proc = runs.merge(*forged, extra=("--json",))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    problems = " ".join(json.loads(proc.stdout)["merge"]["problems"])
    assert "clamp-lo" in problems and "does not grade RED" in problems, problems
    refs = [json.loads(p.read_text())["ref"] for p in (runs.root / ".redfirst" / "proofs").rglob("*.json")]
    assert "clamp-lo" not in refs and "clamp-hi" not in refs, refs
