"""Named policies a redfirst.yaml can start from (`checkers: {preset: agents-record}`)."""

from __future__ import annotations

from typing import Any

LIFECYCLE = ["INVENTORIED", "SPIKE", "READY", "ACTIVE", "GATING", "PARTIAL", "DONE", "BLOCKED", "ANCHOR-BACKFILL"]
READY_OR_LATER = ["READY", "ACTIVE", "GATING", "DONE"]
ENGINE_IDS = r"(ENG|KV|PAR|SAMPLE|TOOLS|SPEC|SERVE|LORA|ATTN|LOAD)-[A-Z0-9][A-Za-z0-9._-]*"
AGENT_IDENTITY = r"(?i)\b(claude|anthropic|gpt|codex|openai|copilot|gemini|bot)\b"

# The `.agents/` record of mudler/vllm.cpp (the corpus in ../shared/corpus/vllm.cpp), as of d85906ae.
AGENTS_RECORD: dict[str, Any] = {
    "append_only": [{"path": ".agents/issue-index.md", "mode": "insert"}],
    "specs": [{
        "glob": ".agents/specs/*.md",
        "sections": ["Scope", "Upstream chain", "Our baseline", "Port map", "Tests to port", "Gates",
                     "Dependencies", "Work breakdown", "Risks/decisions"],
    }],
    "matrices": {
        "states": LIFECYCLE,
        "columns": {"id": "ID", "state": "State", "owner": "Owner", "spec": "Spike/spec",
                    "evidence": "Our tests/evidence"},
        "files": [
            {"path": ".agents/engine-matrix.md", "id_pattern": ENGINE_IDS, "rows": 110,
             # The corpus's own checker compares only the Total row; its per-area rows are
             # not kept (the KV row is off by one at d85906ae), so areas stay off here.
             "summary": {"first_column": "Area", "rows_column": "Rows", "total_row": "Total", "areas": False}},
            {"path": ".agents/model-matrix.md", "id_pattern": r"MODEL-[A-Za-z0-9][A-Za-z0-9._-]*", "rows": 326,
             "columns": {"evidence": "Tests/evidence"}},
            {"path": ".agents/quantization-matrix.md", "id_pattern": r"QUANT-[A-Za-z0-9][A-Za-z0-9._-]*", "rows": 82,
             "columns": {"evidence": "Tests/evidence"}},
            {"path": ".agents/kernel-matrix.md", "id_pattern": r"KERNEL-[A-Za-z0-9][A-Za-z0-9._-]*", "rows": 34,
             "columns": {"evidence": "Tests/evidence"}},
            {"path": ".agents/backend-matrix.md", "id_pattern": r"BACKEND-[A-Za-z0-9][A-Za-z0-9._-]*", "rows": 57,
             "columns": {"evidence": "Tests/evidence"}},
        ],
        "obligations": [
            {"rule": "spec-link", "states": READY_OR_LATER, "column": "spec", "spec_link": r"(^|/)specs/[^/]+\.md$",
             "names_row": True, "message": "a `planned: specs/...` mention is not an accepted spike"},
            {"rule": "done-test-anchor", "states": ["DONE"], "column": "evidence",
             "pattern": r"\b(tests|ci|\.github)/[^\s`]+:\d+",
             "message": "exact test/evidence anchor: cite the test as `tests/<file>:<line>`"},
            {"rule": "done-ledger-link", "states": ["DONE"], "column": "evidence",
             "pattern": r"parity-ledger\.md#L\d+",
             "message": "exact parity-ledger link: link the closing ledger line as parity-ledger.md#L<n>"},
            {"rule": "done-ledger-line", "states": ["DONE"], "column": "evidence", "link_line": r"parity-ledger\.md$"},
            {"rule": "done-closing-commit", "states": ["DONE"], "column": "owner", "pattern": r"^`?[0-9a-f]{7,40}`?$",
             "message": "the hexadecimal closing commit as owner: write the closing commit id in Owner"},
            {"rule": "done-commit-in-history", "states": ["DONE"], "column": "owner", "commit": True},
        ],
        "claims": [{"path": ".agents/coordination.md", "table": "Claim", "rows_column": "Row IDs",
                    "states": ["SPIKE", "ACTIVE"]}],
    },
    "trailers": {
        "when": [{"message": r"^FOLLOWING_AGENTS_PROTOCOL$",
                  "require": {"Assisted-by": r"^[A-Za-z0-9][^:]*:\S+ \[.+\]"}}],
        "forbid_in": {"Signed-off-by": AGENT_IDENTITY, "Co-authored-by": AGENT_IDENTITY},
    },
    "commit_style": {"subject": r"^[a-z]+(\([A-Za-z0-9_./,-]+\))?!?: \S", "body": "required"},
    "doc_checkpoint": [{"when": [".agents/coordination.md", ".agents/parity-ledger.md", ".agents/state.md"],
                        "require": ["README.md"]}],
    "symbol_anchors": [{"records": [".agents/*-matrix.md", ".agents/specs/*.md"],
                        "roots": ["src/", "include/", "tests/", "tools/", "examples/"], "min_checked": 1}],
    "caps": [{"paths": [".agents/*.md", ".agents/specs/*.md"], "file_bytes": 1_000_000, "cell_chars": 40_000,
              "paragraph_chars": 6_000}],
    "ratchets": [{
        "baseline": "scripts/device-leakage-baseline.json",
        "paths": ["src/vllm/**", "include/vllm/**"],
        "buckets": {"kcuda": r"\bkCUDA\b", "is_cuda": r"\bis_cuda\s*\(", "cuda_inc": r"#\s*include\s*[<\"]cuda",
                    "vt_ifdef": r"#\s*if(?:def|ndef)?\b.*\bVT_(?:CUDA|ROCM|HIP|METAL)\b"},
        "exempt": r"DSR-ALLOW",
    }],
    "env_documented": {
        "code": ["src/**", "include/**", "tools/**", "examples/**"],
        "docs": ["docs/**/*.md", "README.md"],
        "names": r"^(?:VT|VLLM)_[A-Z0-9_]+$",
        "allowlist": "scripts/env-doc-allowlist.txt",
    },
}

PRESETS: dict[str, dict[str, Any]] = {"agents-record": AGENTS_RECORD}
