"""Named policies a redfirst.yaml can start from (`checkers: {preset: agents-record}`)."""

from __future__ import annotations

import re
from typing import Any

LIFECYCLE = ["INVENTORIED", "SPIKE", "READY", "ACTIVE", "GATING", "PARTIAL", "DONE", "BLOCKED", "ANCHOR-BACKFILL",
             "BUILD-ONLY", "UNTRACED"]
READY_OR_LATER = ["READY", "ACTIVE", "GATING", "DONE", "BLOCKED"]
EVIDENCED = ["PARTIAL", "ANCHOR-BACKFILL", "GATING", "DONE", "BUILD-ONLY", "UNTRACED"]
ENGINE_IDS = r"(ENG|KV|PAR|SAMPLE|TOOLS|SPEC|SERVE|LORA|ATTN|LOAD)-[A-Za-z0-9_.-]+"
RECORD_SCRIPT = "scripts/check-agent-record.py"
SPEC_SECTIONS = {
    "Scope": ["scope"], "Upstream chain": ["upstream chain"], "Our baseline": ["our baseline"],
    "Port map": ["port map", "port and harness map"], "Tests to port": ["tests to port"], "Gates": ["gates"],
    "Dependencies": ["dependencies"],
    "Work breakdown": ["work breakdown", "non overlapping work breakdown", "work decomposition"],
    "Risks/decisions": ["risks", "risk", "risks/decisions"],
}
CODE_PREFIXES = ["src/", "include/", "examples/", "cmake/", "scripts/", "tools/", ".github/workflows/"]
TEST_PREFIXES = ["tests/", "scripts/", ".github/workflows/"]
C_SOURCES = [f"/{root}/**/*.{ext}" for root in ("src/vllm", "include/vllm") for ext in ("h", "hpp", "cpp", "cc", "cu", "cuh")]


def _matrix(path: str, prefix: str) -> dict[str, Any]:
    """A matrix whose row count vllm.cpp states in its own checker script (read there, not pinned here)."""
    return {"path": f".agents/{path}", "id_pattern": rf"{prefix}-[A-Za-z0-9_.-]+", "other_rows": "skip",
            "rows": {"from": RECORD_SCRIPT, "pattern": rf'"{prefix}": \(AGENTS / "{re.escape(path)}", (\d+)\)'}}


# check_model_invariants of its script: totals over the MODEL rows naming aliases and a `module::Class`
# target, compared with the `expected = {...}` the script states
_INVENTORY_TOTALS = {"rows": "rows", "memberships": "members", "architectures": "distinct_members",
                     "targets": "distinct_targets", "modules": "distinct_target_prefixes"}
MODEL_INVENTORY = {
    "members": ["architecture aliases"], "target": ["upstream"], "separator": "::",
    "totals": {label: {"measure": measure, "from": RECORD_SCRIPT,
                       "pattern": rf'^\s*expected = \{{[^}}]*?"{label}": (\d+)'}
               for label, measure in _INVENTORY_TOTALS.items()},
}
# check_roadmap of its script: the ROAD-V1 portfolio rows in the order its `expected_blocks` list states
ROADMAP_ORDER = {
    "path": ".agents/roadmap_v1.md", "position": ["order"], "id": ["block"], "state": ["state"],
    "id_pattern": r"ROAD-V1-[A-Z0-9]+",
    "expected": {"from": RECORD_SCRIPT, "pattern": r"^\s*expected_blocks = \[([^\]]*)\]", "item": r'"([^"]+)"'},
}


# The rules mudler/vllm.cpp (the corpus in ../shared/corpus/vllm.cpp) states in its own checkers:
# scripts/check-agent-record.py, check-doc-checkpoint.py, check-device-leakage.py, the
# commit-protocol-tag CI job, and its README and model-checklist scripts (run as they are). Checkers
# the project does not have (append-only index, subject style, caps, symbol anchors, env docs) are off.
AGENTS_RECORD: dict[str, Any] = {
    "matrices": {
        "states": LIFECYCLE,
        # by meaning, as its script matches headers (`Our tests/evidence`, `Spike/spec`, `Owner (claim)`)
        "columns": {"id": "ID", "state": ["state"], "owner": ["owner"], "spec": ["spike"], "code": ["our code", "local evidence"],
                    "evidence": ["tests evidence", "test evidence", "local evidence", "evidence"]},
        "files": [
            {"path": ".agents/engine-matrix.md", "id_pattern": ENGINE_IDS, "other_rows": "skip",
             "rows": {"from": RECORD_SCRIPT, "pattern": r"^ENGINE_ROWS = (\d+)"},
             # Its checker compares only the Total row; the per-area rows are not kept.
             "summary": {"first_column": "Area", "rows_column": "Rows", "total_row": "Total", "areas": False}},
            {**_matrix("model-matrix.md", "MODEL"), "inventory": MODEL_INVENTORY},
            _matrix("quantization-matrix.md", "QUANT"),
            _matrix("kernel-matrix.md", "KERNEL"), _matrix("backend-matrix.md", "BACKEND"),
        ],
        "obligations": [
            {"rule": "spec-link", "states": READY_OR_LATER, "column": "spec", "spec_link": r"(^|/)specs/[^/]+\.md(#.*)?$",
             "names_row": True, "sections": SPEC_SECTIONS,
             "message": "a real .agents/specs link (a `planned: specs/...` mention is not a spec)"},
            {"rule": "code-anchor", "states": EVIDENCED, "column": "code",
             "anchor": {"prefixes": CODE_PREFIXES, "files": ["CMakeLists.txt"]}, "message": "an exact local code anchor"},
            {"rule": "test-anchor", "states": EVIDENCED, "column": "evidence",
             "anchor": {"prefixes": TEST_PREFIXES, "files": [".agents/parity-ledger.md", ".agents/state.md"]},
             "message": "an exact test/evidence anchor"},
            {"rule": "done-ledger-link", "states": ["DONE"], "column": "evidence",
             "anchor": {"files": [".agents/parity-ledger.md"]}, "message": "an exact parity-ledger link"},
            {"rule": "claim-owner", "states": ["SPIKE", "ACTIVE"], "column": "owner", "pattern": r"CLAIM-[A-Za-z0-9_.-]+",
             "message": "a CLAIM-* owner"},
            {"rule": "done-closing-commit", "states": ["DONE"], "column": "owner", "pattern": r"^`?[0-9a-f]{7,40}`?$",
             "message": "the hexadecimal closing commit as owner: write the closing commit id in Owner"},
            {"rule": "done-commit-in-history", "states": ["DONE"], "column": "owner", "commit": True},
        ],
        "orders": [ROADMAP_ORDER],
        "claims": [{"path": ".agents/coordination.md", "table": "Claim", "rows_column": "Row IDs",
                    "states": ["SPIKE", "ACTIVE"]}],
        "references": [".agents/roadmap_v1.md", ".agents/coordination.md"],  # check_roadmap's unknown stable rows
        "shapes": True,  # check_table_shapes of its script (the specs a row links: not restated)
        # REQUIRED of its script (the matrices are files above; a tree without one has it off)
        "required": ["AGENTS.md", "README.md", "docs/BENCHMARKS.md", ".agents/roadmap_v1.md", ".agents/coordination.md",
                     ".agents/feature-matrix.md", ".agents/specs/model-family-inventory.md",
                     ".agents/specs/feature-anchor-backfill.md"],
    },
    # the commit-protocol-tag job: every first-parent non-merge commit carries the tag
    "trailers": {"first_parent": True, "include_merges": False, "message_require": ["FOLLOWING_AGENTS_PROTOCOL"]},
    # check-doc-checkpoint.py: each commit (against its first parent) that touches a checkpoint path
    # updates both public documents
    "doc_checkpoint": [{
        "per_commit": True,
        "when": [*(f"/{p}**" for p in (".agents/completed/", ".agents/specs/", ".github/workflows/", "cmake/", "examples/",
                                       "include/", "scripts/", "src/", "tests/", "tools/")),
                 *(f"/{f}" for f in ("CMakeLists.txt", ".agents/backend-matrix.md", ".agents/coordination.md",
                                     ".agents/engine-matrix.md", ".agents/feature-matrix.md", ".agents/kernel-matrix.md",
                                     ".agents/model-matrix.md", ".agents/parity-ledger.md", ".agents/porting-inventory.md",
                                     ".agents/quantization-matrix.md", ".agents/roadmap_v1.md", ".agents/state.md"))],
        "require": ["/README.md", "/docs/BENCHMARKS.md"],
    }],
    # check-device-leakage.py: device-specific references in the shared layer, comments and strings
    # stripped, the platform legs allowlisted with exact counts
    "ratchets": [{
        "baseline": "scripts/device-leakage-baseline.json",
        "paths": C_SOURCES,
        "strip": "c",
        "buckets": {"kcuda": r"\bkCUDA\b", "is_cuda": r"\bis_cuda\s*\(\s*\)",
                    "cuda_inc": {"pattern": r'^\s*#\s*include\s*[<"](?:vt/cuda/|cuda_runtime)', "raw": True,
                                 "outside": r"\b(VLLM_CPP_CUDA|VT_\w+|__CUDACC__|CUDA_VERSION)\b"},
                    "vt_ifdef": {"pattern": r"^\s*#\s*(?:ifdef\s+VT_\w+|if\s+defined\s*\(\s*VT_\w+)", "raw": True}},
        "exempt": r"//\s*DSR-ALLOW\(\s*[A-Za-z0-9_.\-]+\s*\)\s*:\s*\S",
        "exempt_next_line": True,
        "allowlist": {"src/vllm/platforms/cuda.cpp": {"kcuda": "*", "cuda_inc": "*"},
                      "src/vllm/platforms/platform.cpp": {"kcuda": 1},
                      "include/vllm/platforms/interface.h": {"kcuda": 1, "is_cuda": 1},
                      "src/vllm/v1/attention/backend.cpp": {"kcuda": 2},
                      "src/vllm/v1/attention/backends/gdn_attn.cpp": {"kcuda": 1}},
    }],
    # scripts redfirst does not restate: run as the project keeps them
    "script": [{"path": "scripts/check-readme-structure.py"}, {"path": "scripts/check-model-checklist.py"}],
}

PRESETS: dict[str, dict[str, Any]] = {"agents-record": AGENTS_RECORD}
