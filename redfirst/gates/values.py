"""Resolve a gate's `values:` (model.ValueSpec) to numbers: a literal, a key of a JSON or
YAML file under the root, or an evidence counter.

A value that cannot be resolved is a problem naming the value, the file and the key (or
the counter); the grader makes it NO_DECISION (evidence missing), never a pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from redfirst import yamlsrc
from redfirst.gates.model import ValueSpec
from redfirst.gates.observations import Evidence

Number = int | float
_MISSING = object()
_LIMIT = 2**64


def _is_number(value: Any) -> bool:
    # NaN or infinity as a bound would make every comparison quietly false or true; a chained
    # comparison is exact for an int too large for a float (math.isfinite would overflow).
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -_LIMIT <= value <= _LIMIT


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    # YAML is a superset of JSON: any other suffix reads as YAML, checked against the bounds
    # first (an alias bomb or a value PyYAML cannot build is a problem naming the line, not a crash).
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is not None:
        yamlsrc.check_bounds(node, path, recursion_ok=True)
    return yaml.safe_load(text)


def _lookup(document: Any, key: str) -> Any:
    """`a.b.0.c`: mapping keys, and list indices where the part is a number."""
    node = document
    for part in key.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def resolve(
    specs: Mapping[str, ValueSpec] | Iterable[tuple[str, ValueSpec]],
    root: Path,
    evidence: Evidence | None,
) -> tuple[dict[str, Number], list[str]]:
    """The values that resolved, and a problem for each that did not.

    Files are relative to `root` and read once per call; a counter recorded several times
    resolves to its last value; `evidence` None means the run recorded no evidence.
    """
    items = specs.items() if isinstance(specs, Mapping) else specs
    values: dict[str, Number] = {}
    problems: list[str] = []
    documents: dict[Path, Any] = {}
    for name, spec in items:
        value, problem = _resolve_one(name, spec, root, evidence, documents)
        if value is None:
            problems.append(problem or f"value {name!r}: unresolved")
        else:
            values[name] = value
    return values, problems


def _resolve_one(
    name: str, spec: ValueSpec, root: Path, evidence: Evidence | None, documents: dict[Path, Any]
) -> tuple[Number | None, str | None]:
    if spec.literal is not None:
        if not _is_number(spec.literal):
            return None, f"value {name!r}: literal {spec.literal!r} is not a finite number"
        return spec.literal, None
    if spec.evidence is not None:
        found = evidence.counter(spec.evidence) if evidence is not None else None
        if found is None:
            return None, f"value {name!r}: evidence counter {spec.evidence!r} was not recorded"
        return found, None
    if spec.file is not None:
        if not spec.key:
            return None, f"value {name!r}: file {spec.file} needs a key"
        path = root / spec.file
        if path not in documents:
            try:
                documents[path] = _load(path)
            except FileNotFoundError:
                return None, f"value {name!r}: file {spec.file} not found (under {root})"
            except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError, yamlsrc.YamlError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                return None, f"value {name!r}: cannot read {spec.file}: {first}"
        found = _lookup(documents[path], spec.key)
        if found is _MISSING:
            return None, f"value {name!r}: {spec.file} has no key {spec.key!r}"
        if not _is_number(found):
            return None, f"value {name!r}: {spec.file} key {spec.key!r} is {found!r}, not a finite number"
        return found, None
    return None, f"value {name!r}: no literal, file or evidence given"
