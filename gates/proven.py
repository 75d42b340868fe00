"""Which proofs still prove a gate: those made with the gate exactly as it is now.

A proof (gates.proofs) names the evidence records of the run that went RED. A proof
counts only while one of those records is in the store and ran the same gate document:
editing the gate (to `run: "true"`, say) leaves its old proofs behind.
"""

from __future__ import annotations

import json
from pathlib import Path

from gates import proofs
from gates.config import Project
from gates.model import Gate
from gates.record import RECORD_FILE


def _document_of(evidence: Path, evidence_id: str) -> str | None:
    try:
        data = json.loads((evidence / evidence_id / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return None
    document = data.get("gate_document") if isinstance(data, dict) else None
    return document if isinstance(document, str) else None


def valid_proofs(project: Project, gate: Gate) -> list[proofs.Proof]:
    evidence = project.state_dir / "evidence"
    return [p for p in proofs.proofs(project.root).get(gate.id, [])
            if any(_document_of(evidence, e) == gate.document for e in p.evidence_ids)]


def evidence_ids(project: Project) -> set[str]:
    """Every evidence record some proof names (kept by `gates gc`)."""
    return {e for found in proofs.proofs(project.root).values() for p in found for e in p.evidence_ids}
