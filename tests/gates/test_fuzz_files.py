"""Fuzz every kind of file redfirst reads (gate, mutation, config, lease, preset, store files): mutated valid
documents never traceback, and every refusal names file:line.

Thousands of documents go through the real loaders in-process (the same functions `gates check`,
`mutate check`, `leases` and `checkers run` call); a few go through the real CLIs as subprocesses,
which must exit with a DESIGN code (0 or 2 for a check) and print no traceback.
`REDFIRST_FUZZ_EXAMPLES` sets the number per kind (default 500; `bench/fuzz_files.py` runs more).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("REDFIRST_FUZZ_EXAMPLES", "500"))

GATE_SEED = """\
- gate: reach
  claim: a production forward reaches the break point
  kind: G2
  requires: {device: cpu}
  build: "true"
  build_timeout: 60
  values:
    layers: {file: cfg.json, key: n}
    seen: {evidence: segs}
    two: 2
  driver:
    type: command
    run: [python3, prog.py, "--x"]
    format: doctest
    timeout: 600
    env: {MODE: fast, API_TOKEN: hunter22}
    cwd: .
  assert:
    exit: 0
    cases: {min: 2}
    assertions: {min: 1}
    failed: 0
    counters:
      segs: {equals: layers + 1}
      replays: {min: two, max: 9}
    bit_exact:
      - {reference: logits.eager, candidate: logits.graph, min_values: 5}
    close:
      - {reference: ref.out, candidate: out, rtol: 0, atol: 0.5, max_ulp: 2}
- gate: unit
  driver: {type: pytest, run: [tests/test_a.py]}
  assert: {cases: 3}
"""

MUTATION_SEED = """\
- mutation: off-by-one
  why: the loop stops early
  file: calc.py
  anchor: "a + b"
  replace: "a - b"
  occurrence: 1
  mode: worktree
  expect: {red: [reach], green: [unit]}
- mutation: build-breaks
  file: calc.py
  anchor: "return"
  replace: "retrun"
  build: [python3, -m, py_compile, calc.py]
  expect: {build: fails}
"""

CONFIG_SEED = """\
gates:
  paths: [gates]
mutations:
  paths: [mutations]
evidence: {max_mib: 64}
leases:
  backend: local
  ttl: 30
  boxes:
    local: {gpus: 0, labels: {checkpoint: llama-8b}}
checkers:
  commit_style:
    subject: "^[A-Z]"
    max_subject: 72
  doc_checkpoint:
    - {when: ["gates/*.json"], require: [README.md]}
"""

# Fragments that break YAML or the schema in the ways users (and attackers) do.
TOKENS = [
    "&a ", "*a", "*b", "<<: *a\n", "&b [*b]", "9" * 400, "-" + "9" * 40, "1e400", "-1e400", ".nan", ".inf",
    "2.5", "0x1f", "0o17", "~", "null", "true", "no", "[", "]", "{", "}", ":", ": ", ", ", "- ", "\n", "\n  ",
    "\t", "#", "'", '"', "|", ">", "!!python/object:os.system", "!!binary AAAA", "!!int", "? ", "%YAML 1.1\n",
    "---\n", "...\n", "@", "`", "\\", "\x00", "\x85", "é", "\u2028", "gate", "driver", "assert", "mutation",
    "expect", "paths", "../../etc/passwd", "/abs", "$HOME", "{a: 1}", "[1, 2]", "[[a]]", "0", "-1", "",
]


@dataclass(frozen=True)
class Kind:
    name: str
    seed: str
    file: str  # where the document is written, relative to the project root
    load: Callable[[Path, Path], list[str] | None]  # (root, file) -> the problems, or None when it loaded


def _project(root: Path) -> object:
    from redfirst.gates.config import Project

    return Project(root, None)


def _load_gate(root: Path, file: Path) -> list[str] | None:
    from redfirst.gates.loader import LoadError, load_gates

    try:
        load_gates(_project(root), [file])  # type: ignore[arg-type]
    except LoadError as e:
        return e.problems
    return None


def _load_mutation(root: Path, file: Path) -> list[str] | None:
    from redfirst.mutations.loader import MutationFileError, load_mutations

    try:
        load_mutations(_project(root), [file])  # type: ignore[arg-type]
    except MutationFileError as e:
        return e.problems
    return None


@dataclass(frozen=True)
class _TextTree:
    """A checkers Tree holding one file: the policy text under test."""

    text: str
    label: str = "fuzz"

    def paths(self) -> tuple[str, ...]:
        return ("redfirst.yaml",)

    def read(self, path: str) -> str | None:
        return self.text if path == "redfirst.yaml" else None


def _load_config(root: Path, file: Path) -> list[str] | None:
    from redfirst.checkers.config import ConfigError, load_policy
    from redfirst.checkers.presets import PRESETS
    from redfirst.checkers.registry import REGISTRY
    from redfirst.gates.config import load_project
    from redfirst.leases.config import ConfigError as LeasesConfigError
    from redfirst.leases.config import load as load_leases
    from redfirst.mutations.loader import mutation_paths
    from redfirst.yamlsrc import YamlError

    problems: list[str] = []
    try:
        project = load_project(root)
        mutation_paths(project)
        _ = project.gate_paths, project.evidence_cap_bytes
    except YamlError as e:
        problems += [str(p) for p in e.problems]
    try:
        load_leases(root)
    except LeasesConfigError as e:
        problems.append(str(e))
    try:
        load_policy(_TextTree(file.read_text(encoding="utf-8", errors="replace")), REGISTRY, PRESETS)
    except ConfigError as e:
        # checkers names the file as it is in the tree: redfirst.yaml@<label>.
        problems += [p.replace("redfirst.yaml@fuzz", str(file), 1) for p in e.problems]
    return problems or None


LEASE_SEED = """\
leases:
  backend: local
  ttl: 30
  db: state/leases.db
  boxes:
    local: {gpus: 0, labels: {checkpoint: llama-8b, cuda: 12.10}}
    thor: {gpus: 2, labels: {fast: yes}}
"""

PRESET_SEED = """\
checkers:
  preset: [agents-record]
  append_only:
    - {path: index.md}
  commit_style: false
"""

STORE_SEED = """\
{
 "cause": null,
 "counts": {"cases": 2, "failed": 0},
 "gate": "reach",
 "reason": "",
 "verdict": "GREEN"
}
"""


def _load_lease(root: Path, file: Path) -> list[str] | None:
    from redfirst.leases.config import ConfigError, load

    try:
        load(root)
    except ConfigError as e:
        return [str(e)]
    return None


def _load_store(root: Path, file: Path) -> list[str] | None:
    """A record folder whose verdict.json (and record.json, the same bytes) are the document."""
    from redfirst.gates.store import Store, StoreError, read_record

    (file.parent / "record.json").write_bytes(file.read_bytes())
    problems = list(Store(root / ".redfirst").scan().problems)
    try:
        read_record(file.parent)
    except StoreError as e:
        problems.append(str(e).replace("record.json", "verdict.json", 1))
    return problems or None


KINDS = {
    "gate": Kind("gate", GATE_SEED, "gates/g.yaml", _load_gate),
    "lease": Kind("lease", LEASE_SEED, "redfirst.yaml", _load_lease),
    "preset": Kind("preset", PRESET_SEED, "redfirst.yaml", _load_config),
    "store": Kind("store", STORE_SEED, ".redfirst/evidence/" + "a" * 64 + "/verdict.json", _load_store),
    "mutation": Kind("mutation", MUTATION_SEED, "mutations/m.yaml", _load_mutation),
    "config": Kind("config", CONFIG_SEED, "redfirst.yaml", _load_config),
}


@st.composite
def mutated(draw: st.DrawFn, seed: str) -> str:
    """The seed with 1-4 edits: a token inserted, a span deleted or duplicated, two lines swapped,
    or a scalar replaced."""
    text = seed
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "duplicate", "swap", "replace"]))
        at = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(TOKENS) | st.text(max_size=8)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)):]
        elif op == "duplicate":
            text = text[:at] + text[at:at + draw(st.integers(1, 80))] + text[at:]
        elif op == "swap":
            lines = text.split("\n")
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        else:
            scalars = [m.span() for m in re.finditer(r"(?<=: )[^\s{}\[\],]+", text)]
            if scalars:
                start, end = draw(st.sampled_from(scalars))
                text = text[:start] + draw(st.sampled_from(TOKENS)) + text[end:]
    return text


def _names_file_and_line(problem: str, file: Path) -> bool:
    return re.match(rf"^{re.escape(str(file))}:[0-9]+: \S", problem) is not None


def check_one(kind: Kind, root: Path, text: str) -> None:
    """Load one document in-process: it loads, or every problem names file:line; never an exception."""
    file = root / kind.file
    file.write_text(text, encoding="utf-8", errors="surrogateescape")
    problems = kind.load(root, file)
    for problem in problems or []:
        assert _names_file_and_line(problem, file), f"{problem!r} does not name {file}:line\n--- document:\n{text}"


def new_root(base: Path) -> Path:
    root = base / "redfirst-fuzz"
    for folder in ("gates", "mutations", ".redfirst/evidence/" + "a" * 64):
        (root / folder).mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return root


@pytest.mark.parametrize("name", sorted(KINDS))
def test_mutated_documents_never_traceback_and_every_error_names_file_and_line(name: str, tmp_path: Path) -> None:
    kind = KINDS[name]
    root = new_root(tmp_path)
    seen = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutated(kind.seed))
    def one(text: str) -> None:
        seen.append(text)
        check_one(kind, root, text)

    check_one(kind, root, kind.seed)  # the seed itself is valid
    assert kind.load(root, root / kind.file) is None
    one()
    assert len(seen) >= EXAMPLES * 0.9  # hypothesis ran (about) the number asked for
    count_file = os.environ.get("REDFIRST_FUZZ_COUNT_FILE")
    if count_file:  # bench/fuzz_files.py reports how many documents were checked
        with open(count_file, "a") as f:
            f.write(f"{name} {len(seen)} {len(set(seen))}\n")


CLI = {
    "gate": [sys.executable, "-P", "-m", "redfirst.gates.cli", "check"],
    "lease": [sys.executable, "-P", "-m", "redfirst.leases.cli", "--root", "{root}", "status", "--json"],
    "preset": [sys.executable, "-P", "-m", "redfirst.gates.cli", "check"],
    "store": [sys.executable, "-P", "-m", "redfirst.gates.cli", "list", "--json"],
    "mutation": [sys.executable, "-P", "-m", "redfirst.mutations.cli", "check"],
    "config": [sys.executable, "-P", "-m", "redfirst.gates.cli", "check"],
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_few_mutated_documents_through_the_real_cli(name: str, tmp_path: Path) -> None:
    """The in-process verdict is the CLI's: exit 0 (valid) or 2 (refused, naming file:line)."""
    kind = KINDS[name]
    root = tmp_path / "proj"
    for folder in ("gates", "mutations"):
        (root / folder).mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n")
    (root / "gates" / "g.yaml").write_text(GATE_SEED)
    target = root / kind.file
    if name == "store":
        # a real record folder (a folder without record.json is no record: refused before its verdict is read)
        subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--root", str(root)],
                       capture_output=True, text=True, timeout=120, cwd=root)
        records = sorted((root / ".redfirst" / "evidence").glob("*/record.json"))
        assert records, "gates run left no record"
        target = records[0].parent / "verdict.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(name)
    docs = [kind.seed]
    for _ in range(2):  # a few random token insertions, the same on every run
        text = kind.seed
        for _ in range(3):
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice(TOKENS) + text[at:]
        docs.append(text)
    docs.append(kind.seed + "x: &x [*x]\n")
    for text in docs:
        target.write_text(text, encoding="utf-8", errors="surrogateescape")
        argv = [w.replace("{root}", str(root)) for w in CLI[name]]
        argv += [] if "{root}" in CLI[name] else ["--root", str(root)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              cwd=root)
        both = proc.stdout + proc.stderr
        assert "Traceback" not in both and proc.returncode in (0, 2), f"{both}\n--- document:\n{text}"
        if proc.returncode == 2:
            assert re.search(r"\.(yaml|json):[0-9]+: ", both), both
