"""gates.proofs: the store that links gates to the mutations (and red-first runs) proving them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gates.proofs import add_proof, is_proven, proofs


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
