"""`mutate --format mutation-testing-report`: the open mutation-testing report schema (version 2,
npm `mutation-testing-report-schema`), the JSON Stryker's `mutation-testing-elements` renders,
and the mutation score as Stryker defines it, which the HTML page shows too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from redfirst.mutations.engine import MutationResult
from redfirst.mutations.placed import Placed, place, read_sources
from redfirst.verdict import MutationOutcome, Verdict

SCHEMA_VERSION = "2"
# Each outcome's status in the schema. Not one turns into Killed but KILLED; UNSCOPED (a control
# went red too) is a finding, so it counts against the score as Survived does (its statusReason
# names it); what decided nothing about the tests (DISCARDED, EQUIVALENT, ERROR) is left out of
# the score, as Stryker leaves its compile and runtime errors and ignored mutants.
STATUS = {
    MutationOutcome.KILLED.value: "Killed",
    MutationOutcome.SURVIVED.value: "Survived",
    MutationOutcome.UNSCOPED.value: "Survived",
    MutationOutcome.DISCARDED.value: "RuntimeError",
    MutationOutcome.EQUIVALENT.value: "Ignored",
    MutationOutcome.ERROR.value: "RuntimeError",
}
LANGUAGES = {".py": "python", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cu": "cpp", ".cuh": "cpp",
             ".hpp": "cpp", ".cxx": "cpp", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".sh": "bash"}


def score(outcomes: Iterable[str]) -> float | None:
    """The mutation score in percent, as Stryker counts it: KILLED over KILLED, SURVIVED and
    UNSCOPED; what decided nothing about the tests is not counted. None when nothing counts:
    never 100 for want of mutants."""
    counted = [o for o in outcomes if STATUS.get(o) in ("Killed", "Survived")]
    if not counted:
        return None
    return 100.0 * sum(o == MutationOutcome.KILLED.value for o in counted) / len(counted)


def _status(result: MutationResult) -> str:
    if result.outcome is MutationOutcome.DISCARDED and result.build.state in ("failed", "crashed"):
        return "CompileError"
    return STATUS[result.outcome.value]


def document(results: Sequence[MutationResult], root: Path) -> tuple[dict[str, Any], list[str]]:
    """The report, and one line for each mutant it leaves out because `place` could not put it in
    its file (the caller prints them: the schema has no place for a mutant without a location)."""
    sources = read_sources(root, (r.mutation.file for r in results))
    files: dict[str, dict[str, Any]] = {}
    left_out: list[str] = []
    for r in results:
        placed: Placed | None = place(r.mutation, sources)
        if placed is None:
            left_out.append(f"{r.mutation.id}: {r.outcome.value}, left out of the mutation-testing report: "
                            f"its anchor is not found once in {r.mutation.file} as it is now")
            continue
        entry = files.setdefault(r.mutation.file, {
            "language": LANGUAGES.get(Path(r.mutation.file).suffix, "plaintext"),
            "source": sources[r.mutation.file], "mutants": []})
        reason = r.reason if r.outcome.value == STATUS[r.outcome.value].upper() else f"{r.outcome.value}: {r.reason}"
        entry["mutants"].append({
            "id": r.mutation.id, "mutatorName": "anchor", "replacement": r.mutation.replace,
            "description": r.mutation.why or f"{r.mutation.anchor!r} -> {r.mutation.replace!r}",
            "location": {"start": _pos(placed.start), "end": _pos(placed.end)},
            "status": _status(r), "statusReason": reason, "duration": round(r.seconds * 1000),
            "killedBy": [g.gate_id for g in r.gates if g.verdict is Verdict.RED] if r.outcome is MutationOutcome.KILLED
            else [], "static": False})
    from redfirst.clitools import version

    doc = {"schemaVersion": SCHEMA_VERSION, "thresholds": {"high": 80, "low": 60}, "projectRoot": str(root),
           "files": files, "framework": {"name": "redfirst", "version": version()}}
    return doc, left_out


def _pos(at: tuple[int, int]) -> Mapping[str, int]:
    return {"line": at[0], "column": at[1]}
