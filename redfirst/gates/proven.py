"""Which proofs still prove a gate: those made with the gate, and what it reads, exactly
as they are now.

A proof (redfirst.gates.proofs) names the evidence records of the run that went RED and the key
of the tree it was made on. A proof counts only while one of those records is in the
store, intact, grades RED again from its raw files (rule 4: a GREEN run's record proves
nothing) and ran the same gate document (editing the gate to `run: "true"` leaves its old
proofs behind), and while what it rests on holds (redfirst.gates.rests, as mutate's cache
checks it): the whole-tree digest (redfirst.gates.treekey, mutation files and the state folder
left out; pytest's conftest.py and configuration files above the root in), and each file the
run read outside the root; so weakening a test the gate runs, a conftest (under the root or
above it) or a helper, in the same gate file, voids the proof too. A proof with no tree key
proves nothing.
"""

from __future__ import annotations

from pathlib import Path

from redfirst.gates import proofs
from redfirst.gates.config import Project
from redfirst.gates.model import Gate
from redfirst.gates.record import RECORD_FILE
from redfirst.gates.treekey import TreeState
from redfirst.yamlsrc import load_json_object


def _document_of(evidence: Path, evidence_id: str) -> str | None:
    data = load_json_object(evidence / evidence_id / RECORD_FILE)
    document = data.get("gate_document") if data is not None else None
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


def tree_state(root: Path, unkeyed: tuple[Path, ...], mirrors: tuple[Path, Path] | None = None) -> TreeState:
    """The tree under `root` as proofs key it, with `unkeyed` (the mutation files) and the state
    folder left out (`mirrors`: treekey.surroundings)."""
    return TreeState.of(root, (*unkeyed, root / ".redfirst"), mirrors)


def tree_key(root: Path, unkeyed: tuple[Path, ...]) -> str:
    """The key of the tree under `root`: its whole-tree digest (`tree_state`)."""
    return tree_state(root, unkeyed).digest


def project_tree_key(project: Project) -> str:
    return tree_key(project.root, project.mutation_paths)


def shows_red(evidence: Path, evidence_id: str, gate: Gate) -> bool:
    """Whether the record `evidence_id` could prove `gate`: it ran this gate document, is
    intact and grades RED again from its raw files."""
    return _document_of(evidence, evidence_id) == gate.document and _regrades_red(evidence / evidence_id, gate)


def valid_proofs(project: Project, gate: Gate, tree: TreeState | None = None) -> list[proofs.Proof]:
    """The proofs of `gate` that hold for the gate document and the tree as they are now
    (`tree`: the tree as proofs key it, read when not given)."""
    from redfirst.gates.rests import holds

    evidence = project.state_dir / "evidence"
    found = [p for p in proofs.proofs(project.root).get(gate.id, [])
             if any(shows_red(evidence, e, gate) for e in p.evidence_ids)]
    if not found:
        return []
    now = tree if tree is not None else tree_state(project.root, project.mutation_paths)
    return [p for p in found if p.tree and p.rests.get("tree") == p.tree and holds(p.rests, now)]


def evidence_ids(project: Project) -> set[str]:
    """Every evidence record some proof names (kept by `gates gc`)."""
    return {e for found in proofs.proofs(project.root).values() for p in found for e in p.evidence_ids}
