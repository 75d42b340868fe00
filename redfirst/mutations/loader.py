"""Mutation files -> `Mutation` records. Every file is validated (schema, then meaning)
before anything runs; every problem names file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from redfirst.gates.config import Project
from redfirst.gates.model import Source
from redfirst.mutations.model import Expect, Mutation
from redfirst.yamlsrc import Document, Problem, YamlError, load_file, validate

SUFFIXES = (".yaml", ".yml")


class MutationFileError(Exception):
    """Mutation files that cannot be run; `.problems` lists "file:line: message" strings."""

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


@cache
def schema() -> dict[str, Any]:
    text = resources.files("redfirst.mutations").joinpath("schema/mutation.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def mutation_paths(project: Project) -> tuple[Path, ...]:
    return project.mutation_paths


def mutation_files(paths: Iterable[Path]) -> list[Path]:
    """Every YAML file under `paths` (files are taken as they are). Not `is_file()`: a FIFO or a
    dangling link named like a mutation file is refused by the reader, never silently left out."""
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and not p.is_dir()))
    return files


def load_mutations(project: Project, files: Iterable[Path]) -> list[Mutation]:
    """Load and check every file; MutationFileError with all problems if any is wrong."""
    problems: list[Problem] = []
    mutations: list[Mutation] = []
    for file in files:
        try:
            doc = load_file(file)
        except YamlError as e:
            problems.extend(e.problems)
            continue
        if doc.data is None:
            problems.append(Problem(file, 1, "empty mutation file"))
            continue
        found = validate(doc, schema())
        if found:
            problems.extend(found)
            continue
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for i, item in enumerate(items):
            prefix: tuple[str | int, ...] = (i,) if isinstance(doc.data, list) else ()
            mutation, item_problems = _build(project, doc, item, prefix, _yaml_of(doc, item, isinstance(doc.data, list)))
            problems.extend(item_problems)
            if mutation is not None:
                mutations.append(mutation)
    seen: dict[str, Mutation] = {}
    for m in mutations:
        if m.id in seen:
            problems.append(Problem(m.source.file, m.source.line,
                                    f"duplicate mutation id {m.id!r} (first at {seen[m.id].source})"))
        seen.setdefault(m.id, m)
    if problems:
        unique: list[Problem] = sorted(set(problems), key=lambda p: (str(p.file), p.line, p.message))
        raise MutationFileError(unique)
    return mutations


def _yaml_of(doc: Document, item: Any, is_list: bool) -> str:
    dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(item, Dumper=dumper, sort_keys=False) if is_list else doc.text


def _build(project: Project, doc: Document, item: dict[str, Any], prefix: tuple[str | int, ...],
           text: str) -> tuple[Mutation | None, list[Problem]]:
    problems: list[Problem] = []

    def at(*key: str | int) -> int:
        return doc.line_of((*prefix, *key))

    expect_data = item.get("expect", {})
    expect = Expect(build=expect_data.get("build", "ok"), red=tuple(expect_data.get("red", [])),
                    green=tuple(expect_data.get("green", [])))
    if expect.build == "ok" and not expect.red:
        problems.append(Problem(doc.file, at("expect"),
                                "expect.red: name the gates this mutation must turn RED (required unless "
                                "expect.build is 'fails')"))
    both = sorted(set(expect.red) & set(expect.green))
    if both:
        problems.append(Problem(doc.file, at("expect", "green"),
                                f"expect.green: {', '.join(both)} also in expect.red; a gate cannot be both"))
    target = PurePosixPath(item["file"])
    if target.is_absolute() or ".." in target.parts:
        problems.append(Problem(doc.file, at("file"), f"file: {item['file']!r} must be relative to the root, "
                                                      "inside it"))
    if item["anchor"] == item["replace"]:
        problems.append(Problem(doc.file, at("replace"), "replace: equals the anchor; the mutation changes nothing"))
    build = item.get("build")
    occurrence = item.get("occurrence")
    if isinstance(occurrence, float):
        # JSON Schema's integer takes 1.0; the anchor counts whole occurrences
        problems.append(Problem(doc.file, at("occurrence"), f"occurrence: {occurrence!r} must be a whole number "
                                                            "(1 for the first), without a decimal point"))
    if problems:
        return None, problems
    return Mutation(
        id=item["mutation"], file=str(target), anchor=item["anchor"], replace=item["replace"],
        source=Source(doc.file, at("mutation")), expect=expect, why=item.get("why"),
        occurrence=item.get("occurrence"), build=tuple(build) if isinstance(build, list) else build,
        mode=item.get("mode", "worktree"), document=text,
    ), []
