"""The proof store: records that a gate can go RED, under `.redfirst/proofs/`.

A proof links a gate id to a KILLED mutation (`kind="mutation"`, `ref` = mutation id)
or a red-first run (`kind="red-first"`, `ref` = the base revision), with the ids of the
evidence records that show it, and what it rests on (`rests`: redfirst.gates.rests.rests_on, as
mutate's cache keeps it: the whole tree's digest (`tree`), pytest's conftest.py and configuration
files above the root among it, and each file the run read outside the root). One file per
(gate, kind, ref); a newer proof of the same pair replaces the older one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redfirst.yamlsrc import load_json_object

KINDS = ("mutation", "red-first")


@dataclass(frozen=True)
class Proof:
    gate_id: str
    kind: str                        # mutation | red-first
    ref: str                         # the mutation id, or the red-first base revision
    evidence_ids: tuple[str, ...]
    created: float                   # seconds since the epoch
    tree: str = ""                   # tree key it was made on (redfirst.gates.proven.tree_key); "" when unknown
    # what it rests on (redfirst.gates.rests.rests_on); {"tree": tree} where only that was kept
    rests: Mapping[str, Any] = field(default_factory=dict)


def proofs_dir(root: Path) -> Path:
    return Path(root) / ".redfirst" / "proofs"


def add_proof(root: Path, gate_id: str, kind: str, ref: str, evidence_ids: Sequence[str], tree: str = "",
              rests: Mapping[str, Any] | None = None) -> Proof:
    """Store that `gate_id` was seen RED by `kind`/`ref` on the tree keyed `tree`, resting on
    `rests` (redfirst.gates.rests.rests_on; None: on that tree alone); returns the stored proof."""
    if kind not in KINDS:
        raise ValueError(f"proof kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if not gate_id or not ref:
        raise ValueError("a proof needs a gate id and a ref")
    rests = dict(rests) if rests is not None else {"tree": tree} if tree else {}
    proof = Proof(gate_id, kind, ref, tuple(e for e in evidence_ids if e), time.time(), tree, rests)
    state = Path(root) / ".redfirst"
    folder = proofs_dir(root) / gate_id
    folder.mkdir(parents=True, exist_ok=True)
    if not (state / ".gitignore").exists():
        (state / ".gitignore").write_text("*\n", encoding="utf-8")
    name = hashlib.sha256(f"{kind}\0{ref}".encode()).hexdigest()[:24] + ".json"
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"gate": gate_id, "kind": kind, "ref": ref, "evidence": list(proof.evidence_ids),
                               "created": proof.created, "tree": tree,
                               "rests": rests}, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, folder / name)
    return proof


def proofs(root: Path) -> dict[str, list[Proof]]:
    """Every stored proof by gate id, oldest first; unreadable files are skipped."""
    found: dict[str, list[Proof]] = {}
    folder = proofs_dir(root)
    if not folder.is_dir():
        return found
    for file in sorted(folder.glob("*/*.json")):
        try:
            data = load_json_object(file)
            if data is None:
                continue
            tree = str(data.get("tree") or "")
            raw = data.get("rests")
            rests: Mapping[str, Any] = raw if isinstance(raw, dict) else {"tree": tree} if tree else {}
            proof = Proof(str(data["gate"]), str(data["kind"]), str(data["ref"]),
                          tuple(str(e) for e in data.get("evidence", [])), float(data.get("created", 0)),
                          tree, rests)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if proof.gate_id != file.parent.name or proof.kind not in KINDS:
            continue
        found.setdefault(proof.gate_id, []).append(proof)
    for items in found.values():
        items.sort(key=lambda p: p.created)
    return found


def is_proven(root: Path, gate_id: str) -> bool:
    """True when at least one stored proof shows `gate_id` going RED, for any version of
    the gate. Whether a proof still holds for the gate as it is now (what `gates run
    --require-proven` asks) is redfirst.gates.proven.valid_proofs."""
    return bool(proofs(root).get(gate_id))
