"""`mutate sweep` over a C++ change (redfirst.mutations.cxx_sweep): tree-sitter's mutants of the
changed lines only, each compiled with the build's own flags before any gate runs (EQUIVALENT,
DUPLICATE), the rest graded by the gate whose build compiles the file; survivors printed as a
compiler warns, carried into JSON and JUnit, and promoted once a test kills them. A CUDA file
with no nvcc is DISCARDED "no nvcc", never SURVIVED. Real g++, make, cmake and doctest."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from cxx_sweep_helpers import cmake_template, copy, make_template, runs  # noqa: F401
from mutate_helpers import git, mutate, write

from redfirst.mutations.cxx_equivalence import Equivalence, find_commands
from redfirst.mutations.cxx_equivalence import _InPlace as InPlace  # the swap find_commands makes
from redfirst.mutations.cxx_mutants import mutants
from redfirst.mutations.cxx_sweep import combined
from redfirst.verdict import MutationOutcome


@pytest.fixture(scope="module")
def swept(make_template: Path, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
          ) -> Iterator[tuple[Path, Path, dict]]:
    """The Makefile project swept once over its last commit: (root, its folder, the --json
    document); its cache (where the sweep keeps its survivors) stays set for the module."""
    tmp = tmp_path_factory.mktemp("swept")
    with pytest.MonkeyPatch.context() as mp:
        root = copy(make_template, tmp, mp)
        write(root, "notes.txt", "staged, not committed\n")
        git(root, "add", "notes.txt")
        write(root, "scratch.txt", "untracked\n")
        before = state(root)
        proc = mutate(root, "sweep", "--since", "HEAD~1", "--json", "--junit", str(tmp / "junit.xml"),
                      "--sarif", str(tmp / "sweep.sarif"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert state(root) == before       # tree, build folder, index and HEAD, byte for byte and mtimes
        yield root, tmp, json.loads(proc.stdout)


def state(root: Path) -> dict[str, object]:
    """Every file of the work tree and build folder (bytes, mtime in ns), the index's entries, HEAD
    and the refs; not git's object store, nor the index's stat cache (`git status` refreshes it),
    nor redfirst's own .redfirst/."""
    files = {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))
             if p.is_file() and not str(p.relative_to(root)).startswith((".git", ".redfirst"))}
    return {"files": files, "index": git(root, "ls-files", "--stage"), "HEAD": (root / ".git/HEAD").read_text(),
            "refs": git(root, "show-ref"), "status": git(root, "status", "--porcelain")}


def outcomes(doc: dict) -> dict[str, str]:
    return {i["id"].removeprefix("src-calc.cpp-"): i["verdict"] for i in doc["cxx"]["items"]}


def test_mutants_on_the_changed_lines_only_compiled_first_then_graded_by_the_gate(swept):
    root, tmp, doc = swept
    got = outcomes(doc)
    assert all(key.startswith(("2-", "3-")) for key in got), got          # line 4 did not change
    assert got == {
        "2-27-cxx_replace_return": "KILLED",      # return 0;
        "2-29-cxx_mul_to_div": "EQUIVALENT",       # x / 1 is x: the compiler made the same object
        "2-31-cxx_const_minus_one": "DUPLICATE",   # x * 0 is return 0
        "2-31-cxx_const_plus_one": "KILLED",       # x * 2
        "3-29-cxx_replace_return": "KILLED",
        "3-31-cxx_ge_to_gt": "SURVIVED",           # no test at 10
        "3-31-cxx_ge_to_lt": "KILLED",
        "3-34-cxx_const_minus_one": "SURVIVED",    # x >= 9: no test at 9
        "3-34-cxx_const_plus_one": "DUPLICATE",    # x >= 11 is x > 10
    }, got
    assert doc["cxx"]["counts"] == {"KILLED": 4, "SURVIVED": 2, "EQUIVALENT": 1, "DUPLICATE": 2}
    # no gate ran for what the compiler decided: the gate's runs saw every other mutant's line
    seen = runs(tmp)
    assert not [line for line in seen if "x / 1" in line or "x * 0" in line or "x >= 11" in line], seen
    assert any("x * 2" in line for line in seen) and any("x > 10" in line for line in seen)
    dup = next(i for i in doc["cxx"]["items"] if i["verdict"] == "DUPLICATE" and i["line"] == 2)
    assert "src/calc.cpp:2:27:cxx_replace_return" in dup["reason"]
    assert (root / "src/calc.cpp").read_text().splitlines()[1] == "int scale(int x) { return x * 1; }"


def test_survivors_read_as_compiler_warnings_and_reach_junit(swept, make_template: Path,  # noqa: F811
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _, tmp, doc = swept
    failures = {c.get("name"): c.find("failure") for c in ET.parse(tmp / "junit.xml").getroot().iter("testcase")}
    survived = failures["src-calc.cpp-3-31-cxx_ge_to_gt"]
    assert survived is not None and survived.get("type") == "SURVIVED"
    assert "Survived: Replaced >= with > [cxx_ge_to_gt]" in survived.get("message", "")
    assert failures["src-calc.cpp-2-31-cxx_const_plus_one"] is None         # KILLED passes
    root = copy(make_template, tmp_path, monkeypatch)
    text = mutate(root, "sweep", "--since", "HEAD~1")
    assert text.returncode == 1, text.stderr
    assert "src/calc.cpp:3:31: warning: Survived: Replaced >= with > [cxx_ge_to_gt]" in text.stdout.splitlines()
    assert "9 C/C++/CUDA mutant(s) on 1 file(s): 4 KILLED, 2 SURVIVED, 1 EQUIVALENT, 1 DUPLICATE" not in text.stdout
    assert "9 C/C++/CUDA mutant(s) on 1 file(s): 4 KILLED, 2 SURVIVED, 1 EQUIVALENT, 2 DUPLICATE" in text.stdout


def test_a_survivor_is_promoted_only_once_a_test_kills_it(swept):
    root, _, doc = swept
    key = "src/calc.cpp:3:31:cxx_ge_to_gt"
    assert key in [s["key"] for s in doc["cxx"]["survivors"]]
    first = mutate(root, "promote", key)
    assert first.returncode == 1 and "not written: SURVIVED" in first.stdout, first.stdout + first.stderr
    assert not (root / "mutations").exists()
    write(root, "tests/test_calc.cpp", (root / "tests/test_calc.cpp").read_text()
          + 'TEST_CASE("is_big at 10") { CHECK(is_big(10)); }\n')
    second = mutate(root, "promote", key)
    assert second.returncode == 0, second.stdout + second.stderr
    (written,) = (root / "mutations").glob("*.yaml")
    text = written.read_text()
    assert "anchor: 'bool is_big(int x) { return x >= 10; }'" in text or "return x >= 10;" in text
    assert "red:\n  - calc\n" in text
    again = mutate(root, "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [i["verdict"] for i in json.loads(again.stdout)["items"]] == ["KILLED"]


def test_compile_commands_json_gives_the_flags_equivalence_compiles_with(cmake_template: Path):  # noqa: F811
    source = (cmake_template / "src/calc.cpp").read_bytes()
    found = {m.key.split(":", 1)[1]: m for m in mutants("src/calc.cpp", source, {2, 3})}
    # CMake's database names the tree it configured: the template's, restored after each compile
    command = find_commands(cmake_template, "src/calc.cpp", [])
    assert not isinstance(command, str) and len(command) == 1, command
    assert "-O3" in command[0].argv                   # Release, as CMake's database says
    tce = Equivalence(InPlace(cmake_template), "src/calc.cpp", command)
    assert tce.off is None
    said = {k: tce.judge(k, found[k].apply(source)) for k in
            ("2:27:cxx_replace_return", "2:29:cxx_mul_to_div", "2:31:cxx_const_minus_one", "3:29:cxx_replace_return")}
    assert (cmake_template / "src/calc.cpp").read_bytes() == source
    assert said["2:27:cxx_replace_return"] is None                                  # a new object: the gates decide
    assert said["2:29:cxx_mul_to_div"] is not None and said["2:29:cxx_mul_to_div"][0] == "EQUIVALENT"
    assert said["2:31:cxx_const_minus_one"] == (
        "DUPLICATE", "its object is byte-identical to that of 2:27:cxx_replace_return")
    assert said["3:29:cxx_replace_return"] is None


def test_a_mutant_that_does_not_compile_is_discarded_before_any_gate(cmake_template: Path):  # noqa: F811
    command = find_commands(cmake_template, "src/calc.cpp", [])
    assert not isinstance(command, str), command
    tce = Equivalence(InPlace(cmake_template), "src/calc.cpp", command)
    source = (cmake_template / "src/calc.cpp").read_bytes()
    said = tce.judge("broken", source.replace(b"return x * 1;", b"return x *;"))
    assert said is not None and said[0] == "DISCARDED" and "error" in said[1], said
    assert (cmake_template / "src/calc.cpp").read_bytes() == source


def test_a_cuda_file_with_no_nvcc_is_discarded_never_survived(make_template: Path, tmp_path: Path,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch):
    root = copy(make_template, tmp_path, monkeypatch)
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not (Path(d) / "nvcc").exists())
    monkeypatch.setenv("PATH", path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")       # its annotations too, on stderr
    proc = mutate(root, "sweep", "src/k.cu", "--json", "--html", str(tmp_path / "sweep.html"))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["cxx"]["items"] and {i["verdict"] for i in doc["cxx"]["items"]} == {"DISCARDED"}
    assert all(i["reason"].startswith("no nvcc") for i in doc["cxx"]["items"])
    assert runs(tmp_path) == []
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("::warning ")]
    assert len(warnings) == len(doc["cxx"]["items"]) and all("k.cu,line=1" in w for w in warnings), proc.stderr
    assert "no nvcc" in (tmp_path / "sweep.html").read_text()


NOISY = 'g++ "$@" || exit $?\nwhile [ "$1" != "-o" ]; do shift; done\nhead -c 16 /dev/urandom >> "$2"\n'


def test_an_original_that_compiles_to_two_objects_turns_equivalence_off_and_says_so(tmp_path: Path):
    write(tmp_path, "src/calc.cpp", "int scale(int x) { return x * 1; }\n")
    write(tmp_path, "tools/noisy.sh", NOISY)     # a build that stamps each object with something new
    write(tmp_path, "compile_commands.json", json.dumps([{
        "directory": str(tmp_path), "file": "src/calc.cpp",
        "arguments": ["sh", "tools/noisy.sh", "-O2", "-c", "src/calc.cpp", "-o", "build/calc.o"]}]))
    command = find_commands(tmp_path, "src/calc.cpp", [])
    assert not isinstance(command, str), command
    tce = Equivalence(InPlace(tmp_path), "src/calc.cpp", command)
    assert tce.off is not None and "compiled twice gives two different objects" in tce.off
    source = (tmp_path / "src/calc.cpp").read_bytes()
    assert tce.judge("x/1", source.replace(b"*", b"/")) is None            # no word: the gates decide


def test_any_gate_kills_only_every_gate_green_survives_else_the_worst_undecided():
    K, S, D, E, Q = (MutationOutcome.KILLED, MutationOutcome.SURVIVED, MutationOutcome.DISCARDED,
                     MutationOutcome.ERROR, MutationOutcome.EQUIVALENT)
    assert combined([S, K]) is K and combined([D, K]) is K
    assert combined([S, S]) is S and combined([S]) is S
    assert combined([S, D]) is D and combined([D, E]) is E and combined([Q, Q]) is Q and combined([D, Q]) is D
    # one gate's build made the same code (it cannot see the mutant), another's ran it GREEN: a survivor
    assert combined([S, Q]) is S and combined([Q, S]) is S
    assert combined([]) is D


MULTITOOL = Path(__file__).resolve().parents[2] / "build/npm/node_modules/@microsoft/sarif-multitool-linux"


def _need(path: Path) -> Path:
    if not path.exists():
        why = f"{path} is missing: run .ci/setup (npm installs @microsoft/sarif-multitool)"
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)
    return path


def test_survivors_are_sarif_results_at_file_line_col_valid_and_clean_under_githubs_rules(swept):
    _, tmp, doc = swept
    sarif = json.loads((tmp / "sweep.sarif").read_text())
    schema = json.loads(_need(MULTITOOL / "sarif-2.1.0.json").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(sarif)
    (run,) = sarif["runs"]
    got = {(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in run["results"]}
    assert got == {("cxx_ge_to_gt", "warning", "src/calc.cpp", 3, 31),
                   ("cxx_const_minus_one", "warning", "src/calc.cpp", 3, 34)}, got   # the two survivors, no more
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["cxx_ge_to_gt"]["shortDescription"]["text"] == "A mutant survived: Replaced >= with > [cxx_ge_to_gt]."
    # what is not a result is a notification: the EQUIVALENT and DUPLICATE mutants, as notes
    notes = [(n["level"], n["message"]["text"]) for n in run["invocations"][0]["toolExecutionNotifications"]]
    assert sorted(level for level, text in notes) == ["note", "note", "note"], notes
    assert run["invocations"][0]["executionSuccessful"] is True
    given, out = tmp / "given.sarif", tmp / "multitool.sarif"
    given.write_text(json.dumps(sarif))
    proc = subprocess.run([str(_need(MULTITOOL / "Sarif.Multitool")), "validate", "--rule-kind", "Sarif;Gh",
                           "-o", str(out), str(given)], capture_output=True, text=True, timeout=120)
    assert out.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    flagged = [r for r in json.loads(out.read_text())["runs"][0].get("results", []) if r.get("level") == "error"]
    assert flagged == [], flagged
