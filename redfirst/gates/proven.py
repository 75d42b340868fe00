"""Which proofs still prove a gate: those made with the gate, and what it reads, exactly
as they are now.

A proof (redfirst.gates.proofs) names the evidence records of the run that went RED and the key
of the tree it was made on. A proof counts only while one of those records is in the
store, intact, grades RED again from its raw files (rule 4: a GREEN run's record proves
nothing) and ran the same gate document (editing the gate to `run: "true"` leaves its old
proofs behind), and while the tree key is the one of the tree now: the whole-tree
digest (redfirst.gates.treekey, mutation files and the state folder left out), which mutate
proves by too, so weakening a test the gate runs, a conftest or a helper, in
the same gate file, voids the proof too. A proof with no tree key proves nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from redfirst.gates import proofs
from redfirst.gates.config import Project
from redfirst.gates.model import Gate
from redfirst.gates.record import RECORD_FILE


def _document_of(evidence: Path, evidence_id: str) -> str | None:
    try:
        data = json.loads((evidence / evidence_id / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None
    document = data.get("gate_document") if isinstance(data, dict) else None
    return document if isinstance(document, str) else None


def _regrades_red(folder: Path, gate: Gate) -> bool:
    """Whether the record in `folder` is intact and its raw files grade RED: a proof shows the
    gate going RED, and a record of a GREEN run (or a changed one) shows nothing."""
    from redfirst.gates.grade import grade
    from redfirst.gates.store import StoreError, verify
    from redfirst.verdict import Verdict

    try:
        record = verify(folder)
    except StoreError:
        return False
    return grade(record, folder, gate).outcome.verdict is Verdict.RED


def tree_key(root: Path, unkeyed: tuple[Path, ...]) -> str:
    """The key of the tree under `root`: its whole-tree digest, with `unkeyed` (the mutation
    files) and the state folder left out."""
    from redfirst.gates.treekey import tree_digest

    return tree_digest(root, (*unkeyed, root / ".redfirst"))


def project_tree_key(project: Project) -> str:
    return tree_key(project.root, project.mutation_paths)


def shows_red(evidence: Path, evidence_id: str, gate: Gate) -> bool:
    """Whether the record `evidence_id` could prove `gate`: it ran this gate document, is
    intact and grades RED again from its raw files."""
    return _document_of(evidence, evidence_id) == gate.document and _regrades_red(evidence / evidence_id, gate)


def valid_proofs(project: Project, gate: Gate, tree: str | None = None) -> list[proofs.Proof]:
    """The proofs of `gate` that hold for the gate document and the tree as they are now
    (`tree`: the tree key, computed when not given)."""
    evidence = project.state_dir / "evidence"
    found = [p for p in proofs.proofs(project.root).get(gate.id, [])
             if any(shows_red(evidence, e, gate) for e in p.evidence_ids)]
    if not found:
        return []
    now = tree if tree is not None else project_tree_key(project)
    return [p for p in found if p.tree and p.tree == now]


def evidence_ids(project: Project) -> set[str]:
    """Every evidence record some proof names (kept by `gates gc`)."""
    return {e for found in proofs.proofs(project.root).values() for p in found for e in p.evidence_ids}
