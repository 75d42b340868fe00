"""The raw record of one gate run: what ran, what it printed, how it ended.

Only raw inputs and outputs live here; verdicts are derived from it by gates.grade,
at run time and again by `gates regrade`, so the two can never disagree (rule 4).
The record's id is the sha256 of its canonical JSON, which holds the sha256 of
every raw file: changing any raw byte changes the id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gates.process import Exited

RECORD_VERSION = 1
RECORD_FILE = "record.json"
VERDICT_FILE = "verdict.json"

# Names of raw files inside a record folder.
STDOUT = "stdout"
STDERR = "stderr"
BUILD_OUT = "build.out"
JUNIT = "junit.xml"
ENUM_OUT = "enumerate.out"
EVIDENCE = "evidence"
INPUTS = "inputs"


@dataclass(frozen=True)
class Step:
    """One process of a run (the build, the driver, the ctest enumeration)."""

    argv: list[str] | str
    exited: Exited


@dataclass(frozen=True)
class Record:
    gate_id: str
    gate_file: str                      # relative to the root, as declared
    gate_document: str                  # the gate's YAML as run
    root: str
    cwd: str
    env: dict[str, str]                 # allowlisted, secrets redacted
    source: dict[str, Any]              # commit, dirty
    context: dict[str, Any]             # box, lease, device identity; or the unmet requirement
    build: Step | None
    main: Step | None
    enumerate: Step | None
    started_utc: str
    finished_utc: str
    files: dict[str, str] = field(default_factory=dict)   # relative path -> sha256
    redfirst: str = ""
    version: int = RECORD_VERSION

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("build", "main", "enumerate"):
            if data[key] is not None and not data[key]["exited"]["escaped"]:
                # Written only when a pid escaped: a record from before the field keeps its hash.
                del data[key]["exited"]["escaped"]
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Record:
        def step(value: dict[str, Any] | None) -> Step | None:
            if value is None:
                return None
            return Step(value["argv"], Exited(**value["exited"]))

        fields = dict(data)
        for key in ("build", "main", "enumerate"):
            fields[key] = step(data.get(key))
        return Record(**fields)

    def canonical(self) -> bytes:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    @property
    def id(self) -> str:
        return hashlib.sha256(self.canonical()).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def manifest(folder: Path) -> dict[str, str]:
    """sha256 of every raw file in a record folder (the record and verdict files aside)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel not in (RECORD_FILE, VERDICT_FILE):
            out[rel] = sha256_file(path)
    return out
