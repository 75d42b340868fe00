"""Result cache: a decided mutation is not run again while the target file, the
mutation, the gate files it names and the redfirst version are all unchanged."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gates import __version__
from mutations.model import Mutation
from mutations.paths import cache_dir

# Only outcomes that depend on nothing but the keyed inputs; ERROR and DISCARDED can come
# from the environment (a red baseline, no device) and are always run again.
CACHEABLE = frozenset({"KILLED", "SURVIVED", "UNSCOPED"})


def key(mutation: Mutation, target_bytes: bytes, gate_documents: Iterable[str], tree: str = "") -> str:
    h = hashlib.sha256()
    for part in (__version__, mutation.id, mutation.document, mutation.mode, mutation.file,
                 hashlib.sha256(target_bytes).hexdigest(), *gate_documents, tree):
        h.update(part.encode("utf-8", errors="surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


def _file(k: str) -> Path:
    return cache_dir() / "mutation-results" / k[:2] / f"{k}.json"


def load(k: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(_file(k).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if data.get("outcome") in CACHEABLE else None


def store(k: str, record: dict[str, Any]) -> None:
    if record.get("outcome") not in CACHEABLE:
        return
    file = _file(k)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
    os.replace(tmp, file)


def _durations_file() -> Path:
    return cache_dir() / "mutation-durations.json"


def durations() -> dict[str, float]:
    """Mutation id -> seconds of its last run here (what `--shard` can balance on)."""
    try:
        data = json.loads(_durations_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
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
