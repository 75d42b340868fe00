"""The raw record of one gate run: what ran, what it printed, how it ended.

Only raw inputs and outputs live here; verdicts are derived from it by redfirst.gates.grade,
at run time and again by `gates regrade`, so the two can never disagree (rule 4).
The record's id is the sha256 of its canonical JSON, which holds the sha256 of
every raw file: changing any raw byte changes the id.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from redfirst.process import Exited

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
READS = "reads.json"      # what the run read under the root (redfirst.gates.reads)


@dataclass(frozen=True)
class GradingContext:
    """The facts of a run the grader reads besides its raw files, built by the runner: where it
    ran (the lease's identity: keys of each backend's own) and what the runner saw that decides
    NO_DECISION or ERROR (an unmet requirement, a lost lease, links, a JUnit report not written).
    A misspelt fact is a TypeError here, never a NO_DECISION silently gone. Stored as one flat
    `context` object in record.json with the keys records had before this type, so they regrade."""

    placement: Mapping[str, Any] = field(default_factory=dict)  # box, lease, device identity
    unmet: str | None = None              # the requirement no box met: nothing ran
    build_replaced: str | None = None     # the caller ran the build itself (a mutation's)
    ran: bool = False                     # the program was started: `ran_sha256` is recorded
    ran_sha256: str | None = None         # sha256 of the program file or shell text (None: not hashable)
    junit_missing: str | None = None      # why the JUnit report the driver names is not this run's
    lease_lost: str | None = None         # the lease was superseded while the gate ran
    lease_refused: str | None = None      # the lease's wrapper refused to start a step: it never ran
    evidence_links: tuple[str, ...] | None = None    # links the program left in its folder (removed)
    secrets_scrubbed: tuple[str, ...] | None = None  # files whose secret values were replaced
    hazard: str | None = None             # the graph hazard `mutate hazards` injected: not the gate's own run

    def __post_init__(self) -> None:
        clash = sorted(set(self.placement) & _FACT_KEYS)
        if clash:
            raise TypeError(f"placement key {clash[0]!r} is a grading fact, not part of the placement")
        for key in self.placement:
            # a stored fact spelt wrong would be kept as placement and decide nothing: the run would regrade GREEN
            near = difflib.get_close_matches(str(key).lower(), _FACT_KEYS, n=1, cutoff=0.85)
            if near:
                raise TypeError(f"context key {key!r} is no fact: a misspelt {near[0]!r}?")
        for name in (*_TEXT_FACTS, "ran_sha256"):
            if not isinstance(getattr(self, name), (str, type(None))):
                raise TypeError(f"context {name!r} must be a string, not {type(getattr(self, name)).__name__}")
        for name in _TEXT_FACTS:
            value = getattr(self, name)
            if value is not None and not value.strip():
                # the grader reads a fact by its text: an empty one would be a fact that decides nothing
                raise TypeError(f"context {name!r} says nothing: a fact needs its reason")
        for name in _LIST_FACTS:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, tuple) and all(isinstance(v, str) for v in value)):
                raise TypeError(f"context {name!r} must be a list of strings")

    def with_facts(self, **facts: Any) -> GradingContext:
        """This context with more facts (a name that is no fact is a TypeError)."""
        return replace(self, **facts)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.placement)
        for name in (*_TEXT_FACTS, *_LIST_FACTS):
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        if self.ran:
            out["ran_sha256"] = self.ran_sha256
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> GradingContext:
        """The context of a stored record; keys that name no fact are the placement's, kept as they are."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a record's context must be an object, not {type(data).__name__}")
        facts: dict[str, Any] = {k: data[k] for k in _TEXT_FACTS if k in data}
        for name in _LIST_FACTS:
            if name in data:
                value = data[name]
                facts[name] = tuple(value) if isinstance(value, list) else value
        ran = "ran_sha256" in data
        placement = {k: v for k, v in data.items() if k not in _FACT_KEYS}
        return GradingContext(placement, ran=ran, ran_sha256=data.get("ran_sha256"), **facts)


_TEXT_FACTS = ("unmet", "build_replaced", "junit_missing", "lease_lost", "lease_refused", "hazard")
_LIST_FACTS = ("evidence_links", "secrets_scrubbed")
_FACT_KEYS = frozenset({*_TEXT_FACTS, *_LIST_FACTS, "ran_sha256"})


BASELINE = "baseline"     # the mutation and patch of a run on the untouched tree (a baseline, a plain `gates run`)


@dataclass(frozen=True)
class Subject:
    """What a caller runs gates for: a mutation's id and the digest of its patch (both
    BASELINE on the untouched tree) and the digest of the tree it applies to."""

    mutation: str = BASELINE
    patch: str = BASELINE
    tree: str = ""


@dataclass(frozen=True)
class Binding:
    """What a record was produced for, sealed with it (part of its canonical JSON, hence of its
    id: a binding edited after the run is an edited record). A caller may rely on: a record
    whose binding names mutation M, patch P, tree T, gate digest G and version V ran the gate
    document of digest G (the sha256 of `gate_document`) under redfirst V, for M's patch P
    applied to tree T (or untouched, when M and P are BASELINE)."""

    mutation: str
    patch: str
    tree: str
    gate: str                           # sha256 of the gate document as run
    redfirst: str

    @staticmethod
    def of(subject: Subject, gate_document: str, version: str) -> Binding:
        return Binding(subject.mutation, subject.patch, subject.tree, gate_digest(gate_document), version)

    def mismatches(self, expected: Binding) -> list[str]:
        """The fields in which this binding is not `expected`'s, as `field X (expected Y)`."""
        return [f"{f.name} {str(getattr(self, f.name))[:12] or 'none'} (expected {str(getattr(expected, f.name))[:12]})"
                for f in fields(self) if getattr(self, f.name) != getattr(expected, f.name)]


def gate_digest(document: str) -> str:
    return hashlib.sha256(document.encode("utf-8", errors="surrogateescape")).hexdigest()


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
    context: GradingContext             # box, lease, device identity; the facts the runner saw
    build: Step | None
    main: Step | None
    enumerate: Step | None
    started_utc: str
    finished_utc: str
    files: dict[str, str] = field(default_factory=dict)   # relative path -> sha256
    redfirst: str = ""
    version: int = RECORD_VERSION
    binding: Binding | None = None      # what the run was for (None: a record from before bindings)

    def to_json(self) -> dict[str, Any]:
        data = _plain(replace(self, context=GradingContext()))
        data["context"] = self.context.to_json()
        if data["binding"] is None:
            del data["binding"]         # written only when bound: a record from before the field keeps its hash
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
        if "context" in data:
            fields["context"] = GradingContext.from_json(data["context"])
        if data.get("binding") is not None:
            fields["binding"] = Binding(**data["binding"])
        return Record(**fields)

    def canonical(self) -> bytes:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":")).encode()

    @cached_property
    def id(self) -> str:
        # Cached: a frozen record's content, hence its id, never changes.
        return hashlib.sha256(self.canonical()).hexdigest()


def _plain(value: Any) -> Any:
    """dataclasses.asdict's JSON for a record (dataclasses to dicts, lists and tuples kept), without
    its deep copy of every leaf: a record's leaves are JSON scalars, and a seal converts it twice."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


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
