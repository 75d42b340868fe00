"""Hostile input never tracebacks or hangs: real `gates`, `mutate`, `checkers` and `leases`
processes over real files in tmp git repositories. Every refusal is exit 2 and names file:line.

Each subprocess has a generous `timeout=`: a bound on a hang (the defect), not a timed assertion.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]
CHECKERS = [sys.executable, "-P", "-m", "redfirst.checkers.cli"]
LEASES = [sys.executable, "-P", "-m", "redfirst.leases.cli"]

GOOD_GATE = 'gate: g\ndriver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\n'
GOOD_MUTATION = textwrap.dedent("""\
    mutation: m
    file: calc.py
    anchor: "a + b"
    replace: "a - b"
    expect: {red: [g]}
""")


def _alias_bomb(levels: int = 9) -> str:
    """~500 bytes that expand to 9**9 (387 million) strings."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        ref = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([ref] * 9)}]")
    return "\n".join(lines) + "\n"


def repo(tmp_path: Path, gate: str = GOOD_GATE, mutation: str = GOOD_MUTATION, config: str = "") -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "mutations").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n" + config)
    (root / "gates" / "g.yaml").write_text(gate)
    (root / "mutations" / "m.yaml").write_text(mutation)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=root,
                   check=True)
    return root


# An alias bomb is refused before it expands (well under a second); unbounded it never ends, so
# its bound is shorter than the others' (the selftest breaks the bound and waits this long).
BOMB_BOUND = 20


def run(argv: list[str], root: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*argv, "--root", str(root)], capture_output=True, text=True, timeout=timeout, cwd=root)


def refused(proc: subprocess.CompletedProcess[str], file: str, line: int | None = None) -> None:
    """Exit 2, no traceback, and a message naming file:line."""
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both, both
    assert proc.returncode == 2, both
    pattern = rf"{re.escape(file)}:{line if line is not None else r'[0-9]+'}\b"
    assert re.search(pattern, both), both


# --- YAML alias expansion is bounded before anything is built -------------------------------------

@pytest.mark.parametrize("where", ["gate", "mutation", "config"])
def test_alias_bomb_is_refused_with_file_and_line(tmp_path: Path, where: str) -> None:
    bomb = _alias_bomb()
    assert len(bomb) < 600
    root = repo(tmp_path, gate=bomb + GOOD_GATE if where == "gate" else GOOD_GATE,
                mutation=bomb + GOOD_MUTATION if where == "mutation" else GOOD_MUTATION,
                config=bomb if where == "config" else "")
    file = {"gate": "g.yaml", "mutation": "m.yaml", "config": "redfirst.yaml"}[where]
    if where != "mutation":
        refused(run([*GATES, "check"], root, BOMB_BOUND), file)
    refused(run([*MUTATE, "check"], root, BOMB_BOUND), file)


def test_recursive_alias_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    root = repo(tmp_path, gate=GOOD_GATE + "claim: &c [*c]\n", mutation="loop: &l {a: *l}\n" + GOOD_MUTATION)
    refused(run([*GATES, "check"], root, BOMB_BOUND), "g.yaml", 3)
    refused(run([*MUTATE, "check"], root, BOMB_BOUND), "m.yaml", 1)


def test_alias_bomb_in_redfirst_yaml_is_refused_by_checkers_and_leases(tmp_path: Path) -> None:
    root = repo(tmp_path, config="checkers:\n  commit_style: {max_subject: 72}\n" + _alias_bomb())
    proc = subprocess.run([*CHECKERS, "run", "--root", str(root)], capture_output=True, text=True, timeout=BOMB_BOUND,
                          cwd=root)
    assert "Traceback" not in proc.stderr and proc.returncode == 2, proc.stdout + proc.stderr
    assert "redfirst.yaml" in proc.stdout + proc.stderr
    root2 = repo(tmp_path / "2", config="leases: {backend: local}\n" + _alias_bomb())
    proc = subprocess.run([*LEASES, "status"], capture_output=True, text=True, timeout=BOMB_BOUND, cwd=root2)
    assert "Traceback" not in proc.stderr and proc.returncode == 2, proc.stdout + proc.stderr
    assert re.search(r"redfirst\.yaml:[0-9]+", proc.stdout + proc.stderr)


# --- numbers out of range for their context --------------------------------------------------------

BIG = "9" * 400


@pytest.mark.parametrize(("body", "line"), [
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain, timeout: {BIG}}}\n', 2),
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain, timeout: {2**64}}}\n', 2),
    (f'build: "true"\nbuild_timeout: {2**63}\ndriver: {{type: command, run: "echo 1 passed", format: plain}}\n',
     3),
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain}}\nassert: {{cases: {{min: {BIG}}}}}\n',
     3),
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain}}\nassert:\n  counters:\n'
     f'    c: {{min: {BIG}}}\n', 5),
    ('driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\nassert:\n  counters:\n'
     f'    c: {{equals: "{BIG} + 1"}}\n', 5),
    ('driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\nassert:\n  counters:\n'
     '    c: {min: 1e400}\n', 5),
    ('driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\nassert:\n  cases: {min: 1.5}\n', 4),
    ('driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\nassert:\n  counters:\n'
     '    c: {max: "1e308 * 10"}\n', 5),
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain}}\nvalues: {{n: {BIG}}}\n', 3),
    (f'driver: {{type: command, run: "echo 1 passed, 0 failed", format: plain}}\nvalues: {{n: {"9" * 5000}}}\n',
     3),
], ids=["timeout-400-digits", "timeout-2**64", "build_timeout-2**63", "cases-400-digits", "counter-400-digits",
        "counter-expression-400-digits", "counter-1e400", "cases-float", "counter-expression-inf",
        "value-400-digits", "value-5000-digits"])
def test_numbers_out_of_range_are_load_errors_with_file_and_line(tmp_path: Path, body: str, line: int) -> None:
    root = repo(tmp_path, gate="gate: g\n" + body)
    refused(run([*GATES, "check"], root), "g.yaml", line)
    refused(run([*GATES, "run"], root), "g.yaml", line)


def test_a_400_digit_counter_in_evidence_is_not_a_traceback(tmp_path: Path) -> None:
    root = repo(tmp_path, gate="gate: g\ndriver: {type: command, run: [python3, w.py], format: plain}\n"
                               "assert: {counters: {c: {min: 1}}}\n")
    (root / "w.py").write_text(textwrap.dedent(f"""\
        import os
        with open(os.path.join(os.environ["GATES_EVIDENCE"], "evidence.jsonl"), "w") as f:
            f.write('{{"counter": "c", "value": {BIG}}}\\n')
        print("1 passed, 0 failed")
    """))
    proc = run([*GATES, "run"], root)
    assert "Traceback" not in proc.stdout + proc.stderr and proc.returncode == 3, proc.stdout + proc.stderr
    assert "beyond 2**64" in proc.stdout


def test_a_400_digit_value_in_a_values_file_is_not_a_traceback(tmp_path: Path) -> None:
    root = repo(tmp_path, gate="gate: g\nvalues: {n: {file: cfg.json, key: n}}\n"
                               'driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\n'
                               "assert: {cases: {min: n}}\n")
    (root / "cfg.json").write_text(f'{{"n": {BIG}}}')
    proc = run([*GATES, "run"], root)
    assert "Traceback" not in proc.stdout + proc.stderr and proc.returncode == 3, proc.stdout + proc.stderr


@pytest.mark.parametrize(("config", "line"), [
    ("mutations: {paths: [[a, b]]}\n", 1),
    ("gates: {paths: [{a: 1}]}\n", 1),
    ("mutations: {paths: 3}\n", 1),
    ("mutations: {paths: [mutations], extra: 1}\n", 1),
    ("mutations:\n  paths:\n    - mutations\n    - 7\n", 4),
    (f"evidence: {{max_mib: {BIG}}}\n", 1),
])
def test_wrong_nested_types_in_redfirst_yaml_are_errors_with_file_and_line(tmp_path: Path, config: str,
                                                                           line: int) -> None:
    root = repo(tmp_path)
    (root / "redfirst.yaml").write_text(config)
    refused(run([*GATES, "check"], root), "redfirst.yaml", line)
    refused(run([*MUTATE, "check"], root), "redfirst.yaml", line)


@pytest.mark.parametrize("ttl", [BIG, "1e400", ".nan"])
def test_leases_ttl_out_of_range_is_an_error_with_file_and_line(tmp_path: Path, ttl: str) -> None:
    root = repo(tmp_path, config=f"leases:\n  ttl: {ttl}\n")
    proc = subprocess.run([*LEASES, "status"], capture_output=True, text=True, timeout=60, cwd=root)
    assert "Traceback" not in proc.stderr and proc.returncode == 2, proc.stdout + proc.stderr
    assert re.search(r"redfirst\.yaml:[0-9]+", proc.stdout + proc.stderr)


@pytest.mark.parametrize("value", ["!!int", "!!float", "!!int '12x'", "!!timestamp 2020-13-45", "!!binary '@@'",
                                   "!!bool maybe"])
def test_a_tagged_value_pyyaml_cannot_build_is_an_error_at_its_line(tmp_path: Path, value: str) -> None:
    # Found by bench/fuzz_files.py: an empty `!!int` is an IndexError inside PyYAML.
    root = repo(tmp_path, gate=GOOD_GATE + f"claim: {value}\n", mutation=GOOD_MUTATION + f"why: {value}\n",
                config=f"leases:\n  backend: {value}\ncheckers:\n  commit_style: {{max_subject: {value}}}\n")
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n")
    refused(run([*GATES, "check"], root), "g.yaml", 3)
    refused(run([*MUTATE, "check"], root), "m.yaml", 6)
    (root / "redfirst.yaml").write_text(f"leases:\n  backend: {value}\n")
    proc = subprocess.run([*LEASES, "status"], capture_output=True, text=True, timeout=60, cwd=root)
    assert "Traceback" not in proc.stderr and proc.returncode == 2 and "redfirst.yaml:2" in proc.stderr, \
        proc.stdout + proc.stderr
    (root / "redfirst.yaml").write_text(f"checkers:\n  commit_style: {{max_subject: {value}}}\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "policy"], cwd=root,
                   check=True)
    proc = subprocess.run([*CHECKERS, "run", "--root", str(root), "--base", "HEAD"], capture_output=True,
                          text=True, timeout=60, cwd=root)
    assert "Traceback" not in proc.stderr and proc.returncode == 2 and "redfirst.yaml" in proc.stderr, \
        proc.stdout + proc.stderr


@pytest.mark.parametrize("text", ["n: !!int\n", _alias_bomb() + "n: 3\n", "n: &n [*n]\n"])
def test_a_hostile_values_file_is_no_decision_naming_it_not_a_traceback(tmp_path: Path, text: str) -> None:
    root = repo(tmp_path, gate="gate: g\nvalues: {n: {file: cfg.yaml, key: n}}\n"
                               'driver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\n'
                               "assert: {cases: {min: n}}\n")
    (root / "cfg.yaml").write_text(text)
    proc = run([*GATES, "run"], root)
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both and proc.returncode == 3 and "cfg.yaml" in proc.stdout, both
