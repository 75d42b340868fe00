"""A small `.agents/` record in the layout of mudler/vllm.cpp, written by this project for its tests.

Same files, columns, id prefixes, stated row counts and obligations as the `agents-record` preset
expects (so the preset runs end to end on a fresh clone); the rows, specs and code are invented here.
`scripts/check-agent-record.py` here only states the row counts, as vllm.cpp's script does; it is
never run."""

from __future__ import annotations

ENGINE_AREAS = ["ENG", "KV", "PAR", "SAMPLE", "TOOLS", "SPEC", "SERVE", "LORA", "ATTN", "LOAD"]
OTHER_MATRICES = {"model": ("MODEL", 326), "quantization": ("QUANT", 82), "kernel": ("KERNEL", 34),
                  "backend": ("BACKEND", 57)}
SPEC_SECTIONS = ["Scope", "Upstream chain", "Our baseline", "Port map", "Tests to port", "Gates",
                 "Dependencies", "Work breakdown", "Risks/decisions"]
ENGINE = ".agents/engine-matrix.md"
SPEC = ".agents/specs/async-serving.md"
INDEX = ".agents/issue-index.md"

# Rows that carry obligations: (id, state). Every other engine row is INVENTORIED.
ACTIVE_ROW = "SERVE-ASYNC-1"
READY_ROW = "SERVE-ASYNC-2"
DONE_ROW = "SERVE-ASYNC-3"

SOURCE = ('#include "vllm/engine.h"\n\nnamespace vllm {\n\nstruct Engine {\n  int step();\n};\n\n'
          'int Engine::step() {\n  const char* v = getenv("VT_ENGINE_THREADS");\n  return v ? 1 : 0;\n}\n\n'
          "}  // namespace vllm\n")
TEST = "".join(f"// line {i}\n" for i in range(1, 12)) + "TEST(Engine, Step) { EXPECT_EQ(1, 1); }\n"


def _state(row_id: str) -> str:
    return {ACTIVE_ROW: "ACTIVE", READY_ROW: "READY", DONE_ROW: "DONE"}.get(row_id, "INVENTORIED")


def _engine_row(row_id: str, closing: str) -> str:
    state = _state(row_id)
    spec = "[async serving](specs/async-serving.md)" if state != "INVENTORIED" else "—"
    evidence = "—"
    owner = "—"
    code = "`src/vllm/engine.cc::Engine`"
    if state == "DONE":
        evidence = "`tests/unit/test_engine.cpp:12`, [ledger](parity-ledger.md#L5)"
        owner = f"`{closing}`"
        code = "`src/vllm/engine.cc:9`"
    elif state == "ACTIVE":
        owner = "`CLAIM-ASYNC-1`"
    return (f"| `{row_id}` | {row_id.lower()} work | P1 | `vllm/engine.py:40` | {code} | "
            f"{evidence} | {spec} | `{state}` | {owner} |")


def engine_matrix(closing: str) -> str:
    """110 rows in ten `## ` areas of eleven, and the lifecycle summary the rows must equal."""
    out = ["# Engine matrix", "", "Lifecycle summary:", "",
           "| Area | Rows | `INVENTORIED` | `ACTIVE` | `READY` | `DONE` |", "|---|---|---|---|---|---|"]
    states = [_state(f"{a}-{k}") if a != "SERVE" else _state(f"SERVE-ASYNC-{k}") for a in ENGINE_AREAS
              for k in range(1, 12)]
    for area in ENGINE_AREAS:
        out.append(f"| {area} | 11 | | | | |")
    totals = [states.count(s) for s in ("INVENTORIED", "ACTIVE", "READY", "DONE")]
    out.append(f"| **Total** | {len(states)} | " + " | ".join(map(str, totals)) + " |")
    for area in ENGINE_AREAS:
        out += ["", f"## {area.title()}", "",
                "| ID | Item | Tier | Upstream code/tests | Our code | Our tests/evidence | Spike/spec | State | Owner |",
                "|---|---|---|---|---|---|---|---|---|"]
        for k in range(1, 12):
            row_id = f"SERVE-ASYNC-{k}" if area == "SERVE" else f"{area}-{k}"
            out.append(_engine_row(row_id, closing))
    return "\n".join(out) + "\n"


def other_matrix(prefix: str, rows: int) -> str:
    head = ["# Matrix", "", "## Rows", "", "| ID | Item | Tests/evidence | Spike/spec | State | Owner |",
            "|---|---|---|---|---|---|"]
    return "\n".join(head + [f"| `{prefix}-{k}` | item {k} | — | — | `INVENTORIED` | — |"
                             for k in range(1, rows + 1)]) + "\n"


def spec() -> str:
    body = {
        "Scope": f"Async serving: rows {ACTIVE_ROW}, {READY_ROW} and {DONE_ROW}.",
        "Upstream chain": "`vllm/engine.py` calls the scheduler, then the model runner.",
        "Our baseline": "`src/vllm/engine.cc::Engine` steps synchronously.",
        "Port map": "| Upstream | Ours |\n|---|---|\n| `vllm/engine.py` | `src/vllm/engine.cc` |",
        "Tests to port": "The engine step test, `tests/unit/test_engine.cpp:12`.",
        "Gates": "`ctest -R Engine` passes on the CPU box.",
        "Dependencies": "None beyond the scheduler row.",
        "Work breakdown": "1. Split the step. 2. Overlap it with I/O.",
        "Risks/decisions": "Decided: no new thread pool; the risk is lock contention.",
    }
    return "# Spec: async serving\n\n" + "".join(f"## {t}\n\n{body[t]}\n\n" for t in SPEC_SECTIONS)


def coordination() -> str:
    return ("# Coordination\n\n| Claim | Row IDs | Who | Since |\n|---|---|---|---|\n"
            f"| `CLAIM-ASYNC-1` | `{ACTIVE_ROW}` | agent-a | 2026-07-01 |\n")


def ledger() -> str:
    return "# Parity ledger\n\n| Row | Closed by |\n|---|---|\n" f"| {DONE_ROW} | engine step test |\n"


def index() -> str:
    return ("# Issue index\n\nAppend-only: one row per issue.\n\n| Issue | Title | Rows |\n|---|---|---|\n"
            f"| #1 | async serving | {ACTIVE_ROW} |\n| #2 | engine step | {DONE_ROW} |\n")


PROTOCOL = "FOLLOWING_AGENTS_PROTOCOL"
POLICY = "checkers:\n  preset: agents-record\n  append_only:\n    - {path: .agents/issue-index.md}\n"


def record_script() -> str:
    """The row counts, stated as vllm.cpp's own checker states them (the preset reads them there)."""
    lines = ['AGENTS = ROOT / ".agents"', "MATRICES = {"]
    lines += [f'    "{prefix}": (AGENTS / "{name}-matrix.md", {rows}),' for name, (prefix, rows) in OTHER_MATRICES.items()]
    return "\n".join([*lines, "}", "ENGINE_ROWS = 110", ""])


def seed_files() -> dict[str, str]:
    """The code the record cites, committed first so a DONE row can name a closing commit."""
    return {
        "redfirst.yaml": POLICY,
        "README.md": "# engine\n\nSee docs/ENV.md for the environment.\n",
        "docs/BENCHMARKS.md": "# Benchmarks\n\nNone measured yet.\n",
        "scripts/check-agent-record.py": record_script(),
        "docs/ENV.md": "# Environment\n\n- `VT_ENGINE_THREADS`: threads of the engine step.\n",
        "src/vllm/engine.cc": SOURCE,
        "include/vllm/engine.h": "#pragma once\nnamespace vllm { struct Engine; }\n",
        "tests/unit/test_engine.cpp": TEST,
        "scripts/device-leakage-baseline.json":
            '{"buckets": {"kcuda": 0, "is_cuda": 0, "cuda_inc": 0, "vt_ifdef": 0}}\n',
        "scripts/env-doc-allowlist.txt": "# names exempt from the env doc rule\n",
    }


def record_files(closing: str) -> dict[str, str]:
    """The `.agents/` record; `closing` is the commit the DONE row names as its owner."""
    files = {ENGINE: engine_matrix(closing), SPEC: spec(), ".agents/coordination.md": coordination(),
             ".agents/parity-ledger.md": ledger(), INDEX: index()}
    for name, (prefix, rows) in OTHER_MATRICES.items():
        files[f".agents/{name}-matrix.md"] = other_matrix(prefix, rows)
    return files


def build(repo) -> str:
    """Seed and record committed on main, in the order a real history has them; returns the seed sha."""
    seed = repo.commit(f"chore(engine): seed the engine\n\nThe code the record cites.\n\n{PROTOCOL}\n", seed_files())
    repo.commit(f"docs(agents): start the record\n\nMatrices, a spec, the claims and the index.\n\n{PROTOCOL}\n",
                record_files(seed[:12]))
    return seed
