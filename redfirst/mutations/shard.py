"""`mutate --shard K/N`: one deterministic part of the selection, and the identity a shard
report carries so that `mutate merge` can prove the parts cover the selection exactly once.

The partition depends only on the selected ids and the durations it is given (never on
the machine, the worker count or the order files were found in): mutations are sorted by
id, then dealt longest first to the least loaded shard (ties: the lower shard). With no
durations every mutation weighs the same and the deal is round robin over sorted ids.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst import __version__
from redfirst.gates.config import Project
from redfirst.gates.treekey import tree_digest
from redfirst.mutations import git
from redfirst.mutations.cache import own_code
from redfirst.mutations.engine import Baseline, MutationResult
from redfirst.mutations.loader import mutation_files, mutation_paths
from redfirst.mutations.model import Mutation
from redfirst.mutations.selection import UsageError
from redfirst.yamlsrc import YamlError, load_json

_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class ShardSpec:
    index: int          # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


MAX_SHARDS = 10_000     # more parts than any CI matrix runs jobs (GitHub's: 256)


def parse_spec(text: str) -> ShardSpec:
    """`K/N`, 1 <= K <= N; anything else is a usage error (a 0-based index would skip a part)."""
    found = _SPEC.fullmatch(text.strip())
    if found is None:
        raise UsageError(f"--shard {text!r}: expected K/N, e.g. 1/4 (K counts from 1)")
    index, count = int(found.group(1)), int(found.group(2))
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text!r}: K must be between 1 and {count} (K counts from 1)")
    return ShardSpec(index, count)


def partition(ids: Sequence[str], count: int, durations: Mapping[str, float] | None = None) -> list[list[str]]:
    """`count` lists of ids, each id in exactly one; longest first to the least loaded."""
    known = {i: float(durations[i]) for i in ids if durations and i in durations and durations[i] >= 0}
    # An id with no duration weighs what a typical one does: the median of those known.
    typical = sorted(known.values())[len(known) // 2] if known else 1.0
    weight = {i: known.get(i, typical) for i in ids}
    order = sorted(dict.fromkeys(ids), key=lambda i: (-weight[i], i))
    least = [(0.0, k) for k in range(count)]     # (load, part): the least loaded part, lowest index first
    parts: list[list[str]] = [[] for _ in range(count)]
    for i in order:
        load, target = heapq.heappop(least)
        parts[target].append(i)
        heapq.heappush(least, (load + weight[i], target))
    return [sorted(p) for p in parts]


def pick(mutations: Sequence[Mutation], spec: ShardSpec,
         durations: Mapping[str, float] | None = None) -> list[Mutation]:
    mine = set(partition([m.id for m in mutations], spec.count, durations)[spec.index - 1])
    return [m for m in mutations if m.id in mine]


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8", errors="surrogateescape")).hexdigest()


# What a mutation does and expects: its description in a shard report, less where it was written
# (a path that differs between checkouts).
DESCRIBED = ("file", "anchor", "replace", "occurrence", "red", "green", "expect_build", "build", "mode")


def record_digest(record: Mapping[str, Any]) -> str:
    """The sha256 of a mutation's description (`mutation_record`): what merge checks each
    shard's description against, so that a description edited in one report is seen."""
    return _digest({k: record.get(k) for k in DESCRIBED})


def documents(mutations: Sequence[Mutation]) -> dict[str, str]:
    """Each mutation's id -> the digest of its description."""
    return {m.id: record_digest(mutation_record(m)) for m in mutations}


def documents_hash(docs: Mapping[str, str]) -> str:
    return _digest(sorted(docs.items()))


def selection_hash(mutations: Sequence[Mutation]) -> str:
    """Ids and their documents: two shards that selected different mutations differ here."""
    return documents_hash(documents(mutations))


def durations_digest(ids: Sequence[str], durations: Mapping[str, float] | None) -> str | None:
    """What the partition was balanced on (None: nothing, round robin)."""
    used = {i: round(float(durations[i]), 3) for i in ids if durations and i in durations}
    return _digest(used) if used else None


def tree_id(project: Project) -> dict[str, str]:
    """HEAD, the mutation files' hash and the tree key (the proofs' key: staged and
    unstaged edits included)."""
    try:
        head = git.head(git.toplevel(project.root))
    except git.GitError:
        head = ""
    h = hashlib.sha256()
    for file in sorted(mutation_files(mutation_paths(project))):
        rel = file.resolve().relative_to(project.root.resolve()).as_posix() if file.resolve().is_relative_to(
            project.root.resolve()) else str(file)
        h.update(f"{rel}\0{hashlib.sha256(file.read_bytes()).hexdigest()}\0".encode())
    tree = tree_digest(project.root, (*mutation_paths(project), project.root / ".redfirst"))
    return {"head": head, "mutation_files": h.hexdigest(), "tree": tree}


def read_durations(path: Path) -> dict[str, float]:
    """Mutation id -> seconds, from an earlier `mutate --json` or `mutate merge --json` report."""
    try:
        doc = load_json(path)
    except YamlError as e:
        raise UsageError(f"--durations {e}") from None
    try:
        return {str(item["id"]): float(item["seconds"]) for item in doc["items"]
                if not item.get("cached") and isinstance(item.get("seconds"), int | float)}
    except (AttributeError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--durations {path}: not a mutate JSON report ({e})") from None


def baseline_record(baselines: Sequence[Baseline]) -> dict[str, Any]:
    gates: dict[str, dict[str, Any]] = {}
    builds: dict[str, dict[str, Any]] = {}
    for b in baselines:
        for g in b.gates.values():
            gates[g.gate_id] = {"gate": g.gate_id, "verdict": g.verdict.value,
                                "cause": g.cause.value if g.cause else None, "reason": g.reason}
        for command, status in b.builds.items():
            builds[command] = {"build": command, "state": status.state, "reason": status.reason}
    return {"gates": [gates[k] for k in sorted(gates)], "builds": [builds[k] for k in sorted(builds)]}


def mutation_record(m: Mutation, root: Path | None = None) -> dict[str, Any]:
    """What merge needs to rebuild a report row and its diff without the mutation files; the
    mutation file's path relative to `root` (where merge looks for it in its own checkout)."""
    source = m.source
    if root is not None and source.file.is_absolute() and source.file.resolve().is_relative_to(root.resolve()):
        source = dataclasses.replace(source, file=source.file.resolve().relative_to(root.resolve()))
    return {"file": m.file, "anchor": m.anchor, "replace": m.replace, "occurrence": m.occurrence,
            "red": list(m.expect.red), "green": list(m.expect.green), "expect_build": m.expect.build,
            "build": list(m.build) if isinstance(m.build, tuple) else m.build, "mode": m.mode,
            "source": str(source)}


def section(project: Project, spec: ShardSpec, selection: Sequence[Mutation], assigned: Sequence[Mutation],
            durations: Mapping[str, float] | None, baselines: Sequence[Baseline],
            tree: Mapping[str, str]) -> dict[str, Any]:
    """The `shard` section of a shard's JSON report."""
    ids = [m.id for m in selection]      # the selection's order: a merged report keeps it
    return {"spec": str(spec), "index": spec.index, "count": spec.count, "version": __version__,
            "code": own_code(),
            "tree": dict(tree), "selection": {"ids": ids, "hash": selection_hash(selection),
                                                              "documents": documents(selection)},
            "partition": {"durations": durations_digest(ids, durations)},
            "assigned": sorted(m.id for m in assigned), "baseline": baseline_record(baselines),
            "mutations": {m.id: mutation_record(m, project.root) for m in assigned}}


def results_seconds(results: Sequence[MutationResult]) -> dict[str, float]:
    return {r.mutation.id: r.seconds for r in results if not r.cached}
