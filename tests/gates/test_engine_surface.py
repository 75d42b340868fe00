"""The gate engine's surface end to end: load errors, the store, exports, proofs, JUnit and JSON,
evidence helpers; real `gates` processes over real gate files in tmp folders."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

# -P: the project folder `gates/` (gate files) must not shadow the installed package.
from tests.gates.engine_project import (
    COUNTER_WRITER,
    GATES,
    gates,
    one_record,
    project,
    run_json,
)


def test_unknown_key_is_exit_2_naming_file_and_line(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: typo
        driver:
          type: command
          run: "echo '1 passed, 0 failed'"
          format: plain
          timout: 5
    """)
    for command in ("run", "check"):
        proc = gates(root, command)
        assert proc.returncode == 2
        assert "g.yaml:7" in proc.stderr and "timout" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    root = project(tmp_path, "gate: x\ndriver: {type: command\n  run: true\n")
    proc = gates(root, "check")
    assert proc.returncode == 2 and "g.yaml:" in proc.stderr and "YAML" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_wrong_type_and_duplicate_ids_are_reported_before_anything_runs(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: one
          driver: {type: command, run: "touch ran", format: plain, timeout: soon}
        - gate: one
          driver: {type: command, run: "touch ran", format: plain}
    """)
    proc = gates(root, "run")
    assert proc.returncode == 2 and "timeout" in proc.stderr and "g.yaml:3" in proc.stderr
    assert not (root / "ran").exists()


def test_assertions_floor_on_a_format_without_assertions_is_error(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: gt
        driver: {type: command, run: "true", format: gtest}
        assert: {assertions: {min: 3}}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2 and "does not report assertions" in proc.stderr


def test_selecting_nothing_exits_3(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: a
        driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    """)
    proc = gates(root, "run", "-k", "zzz")
    assert proc.returncode == 3 and "No gate selected" in proc.stdout


def test_allow_no_decision_turns_3_into_0_and_still_prints_it(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: empty
        driver: {type: command, run: "echo '0 passed, 0 failed'", format: plain}
    """)
    proc = gates(root, "run", "--allow-no-decision")
    assert proc.returncode == 0 and "NO_DECISION" in proc.stdout and "All" not in proc.stdout


def test_record_keeps_raw_output_env_allowlist_and_redacts_secrets(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: env
        driver:
          type: command
          run: "echo '1 passed, 0 failed'"
          format: plain
          env: {API_TOKEN: hunter2, MODE: fast}
    """)
    run_json(root)
    folder = one_record(root)
    record = json.loads((folder / "record.json").read_text())
    assert record["env"]["API_TOKEN"] == "<redacted>" and record["env"]["MODE"] == "fast"
    assert "HOME" not in record["env"]
    assert (folder / "stdout").read_text() == "1 passed, 0 failed\n"
    assert record["gate_document"].startswith("\ngate: env") or "gate: env" in record["gate_document"]
    assert (root / ".redfirst" / ".gitignore").read_text() == "*\n"


def test_gc_keeps_the_store_under_its_cap(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: big
        exit_only: "test"
        driver: {type: command, run: "head -c 300000 /dev/zero"}
    """)
    for _ in range(3):
        run_json(root)
    assert len(list((root / ".redfirst" / "evidence").iterdir())) == 3
    proc = gates(root, "gc", "--max-mib", "0.5")
    assert proc.returncode == 0
    assert len(list((root / ".redfirst" / "evidence").iterdir())) == 1


def test_json_schema_and_junit_and_parallel_runs(tmp_path: Path) -> None:
    import jsonschema

    root = project(tmp_path, """
        - gate: a
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
        - gate: b
          driver: {type: command, run: "echo '1 passed, 1 failed'", format: plain}
        - gate: c
          driver: {type: command, run: "echo '0 passed, 0 failed'", format: plain}
    """)
    junit = tmp_path / "out" / "junit.xml"
    proc = gates(root, "run", "--json", "-n", "2", "--junit", str(junit))
    doc = json.loads(proc.stdout)
    schema = json.loads(subprocess.run([*GATES, "schema", "--output"], capture_output=True, text=True).stdout)
    jsonschema.validate(doc, schema)
    assert [i["verdict"] for i in doc["items"]] == ["GREEN", "RED", "NO_DECISION"] and doc["exit"] == 1
    text = junit.read_text()
    assert text.count("<failure") == 2 and "<skipped" not in text


def test_gates_schema_prints_the_gate_schema() -> None:
    proc = subprocess.run([*GATES, "schema"], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["title"] == "redfirst gate file"


@pytest.mark.parametrize("name", ["redfirst.yaml"])
def test_root_is_discovered_from_a_subfolder(tmp_path: Path, name: str) -> None:
    root = project(tmp_path, """
        gate: a
        driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    """)
    sub = root / "deep" / "er"
    sub.mkdir(parents=True)
    proc = subprocess.run([*GATES, "run", "--json", "-q"], capture_output=True, text=True, cwd=sub)
    assert proc.returncode == 0 and json.loads(proc.stdout)["items"][0]["id"] == "a"


def test_list_and_show_read_the_store_and_k_selects(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: alpha-one
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
        - gate: beta-two
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    """)
    proc = gates(root, "run", "-q", "-k", "alpha")
    assert proc.returncode == 0 and "alpha-one" in proc.stdout and "beta-two" not in proc.stdout
    listing = gates(root, "list")
    assert "alpha-one" in listing.stdout and "GREEN" in listing.stdout and "beta-two" not in listing.stdout
    record_id = listing.stdout.splitlines()[1].split()[0]
    shown = subprocess.run([*GATES, "show", record_id, "--root", str(root)], capture_output=True, text=True)
    assert shown.returncode == 0 and '"gate_id": "alpha-one"' in shown.stdout and "1 passed" not in shown.stderr
    missing = subprocess.run([*GATES, "show", "ffffffff", "--root", str(root)], capture_output=True, text=True)
    assert missing.returncode == 2 and "no evidence record" in missing.stderr


def test_stale_junit_report_from_before_the_run_is_not_evidence(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: stale
        driver: {type: command, run: "true", format: junit, junit: report.xml}
    """, {"report.xml": '<testsuite><testcase name="a"/><testcase name="b"/></testsuite>'})
    code, items = run_json(root)
    assert code == 3 and items["stale"]["verdict"] == "NO_DECISION" and "report.xml" in items["stale"]["reason"]


def test_junit_report_path_is_required_and_must_stay_under_the_root(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: no-path
          driver: {type: command, run: "true", format: junit}
        - gate: outside
          driver: {type: command, run: "true", format: junit, junit: ../elsewhere.xml}
        - gate: wrong-format
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain, junit: r.xml}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2
    assert "g.yaml:3" in proc.stderr and "g.yaml:5" in proc.stderr and "g.yaml:7" in proc.stderr, proc.stderr


def test_every_plain_summary_line_counts(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: two-binaries
          driver: {type: command, run: "echo '3 passed, 2 failed'; echo '5 passed, 0 failed'", format: plain}
        - gate: stderr-first
          driver: {type: command, run: "echo '0 passed, 2 failed'; echo '5 passed, 0 failed' >&2", format: plain}
    """)
    code, items = run_json(root)
    assert items["two-binaries"]["verdict"] == "RED" and items["stderr-first"]["verdict"] == "RED"


def test_evidence_folder_replaced_by_a_link_is_not_evidence(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "evidence.jsonl").write_text('{"counter": "c", "value": 3}\n')
    root = project(tmp_path, f"""
        gate: linked
        driver: {{type: command, run: "rm -rf $GATES_EVIDENCE; ln -s {victim} $GATES_EVIDENCE"}}
        assert: {{counters: {{c: {{min: 1}}}}}}
    """)
    code, items = run_json(root)
    assert code == 3 and "link" in items["linked"]["reason"]


def test_value_file_outside_the_root_is_error(tmp_path: Path) -> None:
    outside = tmp_path / "abs.json"
    outside.write_text('{"n": 1}')
    root = project(tmp_path, f"""
        gate: absolute
        values: {{n: {{file: {outside}, key: n}}}}
        driver: {{type: command, run: "true"}}
        assert: {{counters: {{c: {{equals: n}}}}}}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2 and "under the root" in proc.stderr


def test_non_finite_bounds_and_counters_never_pass(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: inf-counter
          driver: {type: command, run: "echo '{\\"counter\\": \\"x\\", \\"value\\": 1e999}' > $GATES_EVIDENCE/evidence.jsonl"}
          assert: {counters: {x: {min: 4}}}
    """, {"count.py": COUNTER_WRITER})
    code, items = run_json(root)
    assert items["inf-counter"]["verdict"] == "NO_DECISION"
    # A constant bound is known at load: NaN is refused there, naming file and line.
    (root / "gates" / "g.yaml").write_text(textwrap.dedent("""
        - gate: nan-bound
          driver: {type: command, run: [python3, count.py, x, "5"]}
          assert: {counters: {x: {min: 1e400 - 1e400}}}
    """))
    proc = gates(root, "check")
    assert proc.returncode == 2 and "g.yaml:4" in proc.stderr + proc.stdout, proc.stdout + proc.stderr


def test_counter_compared_with_itself_through_values_is_error(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: tautology
        values: {n: {evidence: c}}
        driver: {type: command, run: "true"}
        assert: {counters: {c: {equals: n}}}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2 and "itself" in proc.stderr


def test_hard_linked_candidate_is_the_same_data(tmp_path: Path) -> None:
    writer = textwrap.dedent("""
        import json, os, struct
        d = os.environ["GATES_EVIDENCE"]
        open(os.path.join(d, "r.bin"), "wb").write(struct.pack("<4f", 1, 2, 3, 4))
        os.link(os.path.join(d, "r.bin"), os.path.join(d, "c.bin"))
        with open(os.path.join(d, "evidence.jsonl"), "a") as f:
            for name, file in (("a", "r.bin"), ("b", "c.bin")):
                f.write(json.dumps({"tensor": name, "dtype": "float32", "shape": [4], "file": file}) + "\\n")
    """)
    root = project(tmp_path, """
        gate: hardlink
        driver: {type: command, run: [python3, w.py]}
        assert: {bit_exact: [{reference: a, candidate: b}]}
    """, {"w.py": writer})
    code, items = run_json(root)
    assert code == 3 and items["hardlink"]["verdict"] == "NO_DECISION"


def test_yaml_merge_keys_load_and_bad_yaml_never_tracebacks(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - &base
          gate: one
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
        - <<: *base
          gate: two
    """)
    code, items = run_json(root)
    assert code == 0 and set(items) == {"one", "two"}


def test_export_into_the_store_itself_or_onto_a_file_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: keep
        exit_only: "test"
        driver: {type: command, run: "true"}
    """)
    _, items = run_json(root)
    rid = items["keep"]["evidence"]
    for target in (root / ".redfirst" / "evidence", tmp_path / "a-file"):
        (tmp_path / "a-file").write_text("x")
        proc = subprocess.run([*GATES, "export", rid, str(target), "--root", str(root)], capture_output=True,
                              text=True)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert (root / ".redfirst" / "evidence" / rid / "record.json").is_file()


def test_bad_evidence_cap_is_a_config_error(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: a
        exit_only: "test"
        driver: {type: command, run: "true"}
    """)
    for cap in ("abc", "-5"):
        (root / "redfirst.yaml").write_text(f"gates: {{paths: [gates]}}\nevidence: {{max_mib: {cap}}}\n")
        proc = gates(root, "gc")
        assert proc.returncode == 2 and "redfirst.yaml:2" in proc.stderr and "Traceback" not in proc.stderr


def test_bounds_may_use_values_and_bad_bounds_are_errors(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: floor-from-values
          values: {n: 2}
          driver: {type: command, run: "echo '2 passed, 0 failed'", format: plain}
          assert: {cases: {min: n}}
        - gate: divides-by-zero
          values: {z: 0}
          driver: {type: command, run: "echo '2 passed, 0 failed'", format: plain}
          assert: {cases: {min: 1 / z}}
    """)
    code, items = run_json(root)
    assert items["floor-from-values"]["verdict"] == "GREEN"
    assert items["divides-by-zero"]["verdict"] == "ERROR"


def test_nan_timeout_and_blank_exit_only_and_impossible_floor_are_errors(tmp_path: Path) -> None:
    root = project(tmp_path, """
        - gate: nan-timeout
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain, timeout: .nan}
        - gate: never
          driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
          assert: {cases: {max: 0}}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2
    for line in ("g.yaml:3", "g.yaml:6"):
        assert line in proc.stderr, proc.stderr
    (root / "gates" / "g.yaml").write_text('gate: blank\nexit_only: "   "\ndriver: {type: command, run: "true"}\n')
    proc = gates(root, "check")
    assert proc.returncode == 2 and "g.yaml:2" in proc.stderr and "blank" in proc.stderr


def test_json_output_is_one_document_even_on_load_errors(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: a
        driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    """)
    proc = gates(root, "run", "--json", "nonexistent")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["exit"] == 2 and doc["items"] == [] and "nonexistent" in doc["errors"][0]


def test_require_proven_ignores_a_proof_made_for_another_version_of_the_gate(tmp_path: Path) -> None:
    from redfirst.gates import proofs

    root = project(tmp_path, """
        gate: proven
        driver: {type: command, run: "echo \\"$(cat said)\\"", format: plain}
    """)
    (root / "said").write_text("0 passed, 1 failed")
    _, items = run_json(root)
    assert items["proven"]["verdict"] == "RED"
    (root / "said").write_text("1 passed, 0 failed")
    from redfirst.gates.config import load_project
    from redfirst.gates.proven import project_tree_key

    proofs.add_proof(root, "proven", "mutation", "M1", [items["proven"]["evidence"]],
                     project_tree_key(load_project(root)))
    proc = gates(root, "run", "--json", "-q", "--require-proven")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "GREEN", proc.stdout
    (root / "gates" / "g.yaml").write_text("gate: proven\nexit_only: anything\ndriver: {type: command, run: 'true'}\n")
    proc = gates(root, "run", "--json", "-q", "--require-proven")
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 3 and item["verdict"] == "NO_DECISION" and "proof" in item["reason"]


def test_require_proven_refuses_a_proof_whose_record_is_a_green_run(tmp_path: Path) -> None:
    # a proof shows the gate going RED: one naming the record of a GREEN run (an edited shard
    # report's gate, a hand-made proof) proves nothing
    from redfirst.gates import proofs
    from redfirst.gates.config import load_project
    from redfirst.gates.proven import project_tree_key

    root = project(tmp_path, """
        gate: proven
        driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    """)
    _, items = run_json(root)
    assert items["proven"]["verdict"] == "GREEN"
    proofs.add_proof(root, "proven", "mutation", "M1", [items["proven"]["evidence"]],
                     project_tree_key(load_project(root)))
    proc = gates(root, "run", "--json", "-q", "--require-proven")
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 3 and item["verdict"] == "NO_DECISION" and "proof" in item["reason"], item


def test_gc_keeps_the_evidence_that_proofs_point_to(tmp_path: Path) -> None:
    from redfirst.gates import proofs

    root = project(tmp_path, """
        gate: big
        exit_only: "test"
        driver: {type: command, run: "head -c 300000 /dev/zero"}
    """)
    _, first = run_json(root)
    proofs.add_proof(root, "big", "mutation", "M1", [first["big"]["evidence"]])
    for _ in range(2):
        run_json(root)
    assert gates(root, "gc", "--max-mib", "0.1").returncode == 0
    kept = {p.name for p in (root / ".redfirst" / "evidence").iterdir()}
    assert kept == {first["big"]["evidence"]}


def test_a_malformed_lease_selector_is_an_error_at_load(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: leased
        exit_only: "placement test"
        requires: {select: "gpu_model=h200,,"}
        driver: {type: command, run: "true"}
    """)
    proc = gates(root, "check")
    assert proc.returncode == 2 and "g.yaml:4" in proc.stderr and "selector" in proc.stderr


def test_pytest_driver_without_pytest_is_error_not_red(tmp_path: Path) -> None:
    # A package named pytest without a __main__ stands in for "pytest is not installed":
    # python -m pytest then stops with "No module named pytest...", before any test could run.
    root = project(tmp_path, """
        gate: no-pytest
        driver: {type: pytest, run: [tests], env: {PYTHONPATH: shadow}}
    """, {"shadow/pytest/__init__.py": "", "tests/test_a.py": "def test_a():\n    assert True\n"})
    code, items = run_json(root)
    assert code == 2 and items["no-pytest"]["verdict"] == "ERROR" and "not installed" in items["no-pytest"]["reason"]


def test_pytest_gate_records_evidence_through_the_fixture(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: fixture-evidence
        driver: {type: pytest, run: [tests]}
        assert:
          counters: {segments_captured: {equals: 5}}
          bit_exact: [{reference: out.eager, candidate: out.graph, min_values: 3}]
    """, {"pytest.ini": "[pytest]\n", "tests/test_ev.py": textwrap.dedent("""
        def test_records(gates_evidence):
            assert gates_evidence.active
            assert gates_evidence.counter("segments_captured", 5)
            gates_evidence.tensor("out.eager", [1.0, 2.0, -0.0])
            gates_evidence.tensor("out.graph", [1.0, 2.0, -0.0])
    """)})
    code, items = run_json(root)
    item = items["fixture-evidence"]
    assert code == 0 and item["verdict"] == "GREEN", item
    assert item["counts"]["segments_captured"] == 5 and item["counts"]["values"] == 3


def test_evidence_helpers_are_inactive_outside_a_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    from redfirst.gates import evidence

    monkeypatch.delenv("GATES_EVIDENCE", raising=False)
    assert evidence.counter("x", 1) is False and evidence.recorder().active is False


def test_the_hash_of_what_ran_follows_the_program_file_within_one_process(tmp_path: Path) -> None:
    import hashlib

    from redfirst.gates.runner import _sha256_of_program

    prog = tmp_path / "prog"
    prog.write_text("#!/bin/sh\necho one\n")
    first = _sha256_of_program(["./prog"], tmp_path, {})
    assert first == hashlib.sha256(prog.read_bytes()).hexdigest()
    prog.write_text("#!/bin/sh\necho two\n")          # same size, new bytes
    assert _sha256_of_program(["./prog"], tmp_path, {}) == hashlib.sha256(prog.read_bytes()).hexdigest() != first
