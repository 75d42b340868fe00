"""Result cache: a decided mutation is not run again while nothing its result rests on
has changed.

A result is filed under its mutation's key (`key`): the redfirst version and the digest of
its own code (an install from a newer commit carries the same version), the mutation
document, the target file's bytes, the documents of the gates it names, the project's
redfirst.yaml, the environment the gates inherit (`environment`) and the paths of the tree
(redfirst.gates.treekey: a file added or removed anywhere, a new conftest.py under or above the
root, a module that shadows an import, is a miss). Each result filed there keeps what else it
rests on (redfirst.gates.rests.rests_on, as a proof does): every file its gates read, on the
untouched tree and under the mutation (redfirst.gates.reads), inside or outside the root, with its
mode and link target, and pytest's conftest.py and configuration files above the root; or the
whole tree's digest with those where what they read is not known (a build, a gate that cannot
report or started a process, a fleet worker's result). It is reused only while each of those is
as it is now; the look-up needs no run, so a hit skips the baseline.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from redfirst import __version__
from redfirst.gates.config import CONFIG_NAME, cache_home
from redfirst.gates.reads import ReadSet

# Every variable of the environment the gates inherit is part of the key, but the session's
# (rests.environment: Python raises no audit event for a read of os.environ).
from redfirst.gates.rests import environment, holds, rests_on
from redfirst.gates.treekey import TreeState
from redfirst.mutations.model import Mutation
from redfirst.projectconfig import PYPROJECT  # its [tool.redfirst] configures as redfirst.yaml does
from redfirst.yamlsrc import YamlError, load_json

# Only outcomes that depend on nothing but the keyed inputs; ERROR and DISCARDED can come
# from the environment (a red baseline, no device), EQUIVALENT from the compiler, and are
# always run again.
CACHEABLE = frozenset({"KILLED", "SURVIVED", "UNSCOPED"})
# Results kept under one key, each resting on another content of what it read (a branch
# and back finds its results again); the newest first.
KEPT = 8



def code_digest(folders: Iterable[Path]) -> str:
    """The digest of every Python source under `folders` (redfirst's packages): results decided
    by other code of the same version (an install from another commit) are not reused."""
    h = hashlib.sha256()
    for folder in folders:
        for file in sorted(folder.rglob("*.py")):
            h.update(f"{file.relative_to(folder).as_posix()}\0".encode())
            h.update(hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


@functools.cache
def own_code() -> str:
    import redfirst  # the whole package: the shared layer grades and keys too
    return code_digest(Path(m.__file__).parent for m in (redfirst,) if m.__file__)


def key(mutation: Mutation, target_bytes: bytes, gate_documents: Iterable[str], tree: TreeState,
        env: str | None = None) -> str:
    """`env`: `environment()` of this run, worked out once for all its mutations (None: here)."""
    h = hashlib.sha256()
    for part in (__version__, own_code(), mutation.id, mutation.document, mutation.mode, mutation.file,
                 hashlib.sha256(target_bytes).hexdigest(), *gate_documents, tree.content(CONFIG_NAME),
                 tree.content(PYPROJECT), tree.structure, environment() if env is None else env):
        h.update(part.encode("utf-8", errors="surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def _file(k: str) -> Path:
    return cache_home() / "mutation-results" / k[:2] / f"{k}.json"


def _filed(k: str) -> list[dict[str, Any]]:
    try:
        data = load_json(_file(k))
    except YamlError:   # missing, torn, or not a regular file: no result filed
        return []
    kept = data.get("results") if isinstance(data, dict) else None
    return [r for r in kept if isinstance(r, dict) and isinstance(r.get("basis"), dict)
            and isinstance(r.get("result"), dict)] if isinstance(kept, list) else []


def load(k: str, tree: TreeState) -> dict[str, Any] | None:
    """The result filed under `k` whose basis holds on `tree`, if any."""
    for filed in _filed(k):
        if filed["result"].get("outcome") in CACHEABLE and holds(filed["basis"], tree):
            result: dict[str, Any] = filed["result"]
            return result
    return None


def store(k: str, record: dict[str, Any], reads: ReadSet | None, tree: TreeState) -> None:
    """File a decided result under `k`, resting on `reads` (None: not known) as `tree` holds them."""
    if record.get("outcome") not in CACHEABLE:
        return
    rests = rests_on(tree, reads)
    kept = [{"basis": rests, "result": record}, *(f for f in _filed(k) if f["basis"] != rests)][:KEPT]
    file = _file(k)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"results": kept}, sort_keys=True), encoding="utf-8")
    os.replace(tmp, file)


def _durations_file() -> Path:
    return cache_home() / "mutation-durations.json"


def durations() -> dict[str, float]:
    """Mutation id -> seconds of its last run here (what `--shard` can balance on)."""
    try:
        data = load_json(_durations_file())
    except YamlError:
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)} if isinstance(data, dict) else {}


def remember_durations(seconds: dict[str, float]) -> None:
    if not seconds:
        return
    known = {**durations(), **{k: round(v, 3) for k, v in seconds.items()}}
    file = _durations_file()
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(known, sort_keys=True), encoding="utf-8")
    os.replace(tmp, file)
