"""redfirst.gates.proofs: the store that links gates to the mutations (and red-first runs) proving them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

from redfirst.gates.proofs import add_proof, is_proven, proofs


def test_a_gate_without_proof_is_not_proven(tmp_path: Path):
    assert proofs(tmp_path) == {}
    assert not is_proven(tmp_path, "seam-g1")


def test_proofs_are_listed_by_gate_with_kind_ref_and_evidence(tmp_path: Path):
    add_proof(tmp_path, "seam-g1", "mutation", "N10", ["abc123"])
    add_proof(tmp_path, "seam-g1", "red-first", "HEAD~1", ["def456", ""])
    add_proof(tmp_path, "seam-g2", "mutation", "N11", [])
    found = proofs(tmp_path)
    assert sorted(found) == ["seam-g1", "seam-g2"]
    assert [(p.kind, p.ref, p.evidence_ids) for p in found["seam-g1"]] == [
        ("mutation", "N10", ("abc123",)), ("red-first", "HEAD~1", ("def456",))]
    assert is_proven(tmp_path, "seam-g2")
    assert (tmp_path / ".redfirst" / ".gitignore").read_text() == "*\n"


def test_the_same_mutation_proving_again_replaces_its_proof(tmp_path: Path):
    add_proof(tmp_path, "g", "mutation", "N10", ["old"])
    add_proof(tmp_path, "g", "mutation", "N10", ["new"])
    assert [p.evidence_ids for p in proofs(tmp_path)["g"]] == [("new",)]


def test_unknown_kind_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="proof kind"):
        add_proof(tmp_path, "g", "vibes", "x", [])
    assert not is_proven(tmp_path, "g")


def test_a_proof_file_under_another_gates_folder_does_not_prove_it(tmp_path: Path):
    add_proof(tmp_path, "g1", "mutation", "N1", [])
    folder = tmp_path / ".redfirst" / "proofs"
    (folder / "g2").mkdir()
    for f in (folder / "g1").glob("*.json"):
        (folder / "g2" / f.name).write_text(f.read_text())
    assert not is_proven(tmp_path, "g2")


def _gates(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", *args, "--root", str(root)],
                          capture_output=True, text=True, cwd=root, timeout=300)


def _proof_line(root: Path, gate_id: str) -> str:
    listing = _gates(root, "proofs").stdout
    return next(line for line in listing.splitlines() if line.split()[:1] == [gate_id]).split("(")[0].strip()


def test_weakening_the_test_a_mutation_killed_voids_its_proof(repo: Path):
    write(repo, "mutations/add.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [add]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mutation")
    assert mutate(repo).returncode == 0
    assert "mutation:add-minus" in _gates(repo, "proofs").stdout
    assert _gates(repo, "run", "add", "--require-proven").returncode == 0
    # Same gate file, a test that no longer checks the sum: the kill no longer proves the gate.
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) is not None\n")
    assert _proof_line(repo, "add").endswith("UNPROVEN")
    assert _gates(repo, "run", "add", "--require-proven").returncode == 3
    git(repo, "commit", "-q", "-am", "weaker test")
    assert _gates(repo, "run", "add", "--require-proven").returncode == 3


def test_weakening_the_test_a_red_first_run_proved_voids_its_proof(repo: Path):
    base = git(repo, "rev-parse", "HEAD").strip()
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
          "\n\ndef test_add_negative():\n    assert add(-2, -3) == -5\n")
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text().replace(
        "    return a + b\n", "    return a + b if a >= 0 else a + b\n"))
    git(repo, "commit", "-q", "-am", "negative")
    # red-first needs a base where the new test fails its assertion: make the base wrong for negatives.
    git(repo, "checkout", "-q", base)
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text().replace(
        "    return a + b\n", "    return a + b if a >= 0 else 0\n"))
    git(repo, "commit", "-q", "-am", "wrong for negatives")
    wrong = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    proved = _gates(repo, "red-first", "add", "--base", wrong)
    assert proved.returncode == 0, proved.stdout + proved.stderr
    assert f"red-first:{wrong}" in _gates(repo, "proofs").stdout
    write(repo, "tests/test_add.py", "def test_add():\n    assert True\n")
    git(repo, "commit", "-q", "-am", "vacuous")
    assert "UNPROVEN" in _proof_line(repo, "add")
    assert _gates(repo, "run", "add", "--require-proven").returncode == 3


def test_gates_keys_its_proofs_by_the_tree_without_importing_mutations(repo: Path):
    # The import direction (DESIGN): leases <- gates <- mutations. `gates proofs` and
    # `gates run --require-proven` key the tree through gates alone.
    probe = ("import sys\nfrom pathlib import Path\nfrom redfirst.gates.config import load_project\n"
             "from redfirst.gates.proven import project_tree_key\n"
             f"key = project_tree_key(load_project(Path({str(repo)!r})))\n"
             "assert len(key) == 64, key\n"
             "print(sorted(m for m in sys.modules if m == 'mutations' or m.startswith('mutations.')))\n")
    out = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, cwd=repo, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
