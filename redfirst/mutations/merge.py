"""`mutate merge`: shard reports -> one set of results, with every reason the union cannot
stand for the selection (a part missing or given twice, a mutation missing or run twice,
different trees, versions or partitions, a baseline that was not green, a KILLED or SURVIVED its
shipped evidence records, bound to that mutation, do not decide: rule 4, a worker's word is not
trusted)."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from redfirst.gates.model import Source
from redfirst.mutations.bound import rederive
from redfirst.mutations.engine import MutationResult
from redfirst.mutations.model import Expect, Mutation
from redfirst.mutations.selection import UsageError
from redfirst.mutations.shard import DESCRIBED, documents_hash, mutation_record, partition, record_digest
from redfirst.verdict import Cause, MutationOutcome, Verdict
from redfirst.yamlsrc import YamlError, load_json

_TREE_FIELDS = (("head", "HEAD"), ("mutation_files", "mutation files"), ("tree", "tree key"))


@dataclass(frozen=True)
class ShardReport:
    path: Path
    doc: dict[str, Any]

    @property
    def shard(self) -> dict[str, Any]:
        part: dict[str, Any] = self.doc["shard"]
        return part

    @property
    def spec(self) -> str:
        return str(self.shard["spec"])

    @property
    def label(self) -> str:
        return f"shard {self.spec} ({self.path})"


@dataclass(frozen=True)
class Merged:
    results: tuple[MutationResult, ...]
    problems: tuple[str, ...]             # empty: the union stands for the whole selection
    shards: tuple[str, ...]
    tree: dict[str, str]
    # (gate id, mutation id, record folder): each KILLED's RED records, bound to it and regraded RED
    proving: tuple[tuple[str, str, Path], ...] = ()


@functools.cache
def _validator() -> Any:
    """The shard report's schema, its enums filled in from the verdict types."""
    import jsonschema

    schema = json.loads(resources.files("redfirst.mutations").joinpath("schema/shard-report.schema.json")
                        .read_text(encoding="utf-8"))
    defs = schema["$defs"]
    defs["outcome"]["enum"] = [o.value for o in MutationOutcome]
    defs["verdict"]["enum"] = [v.value for v in Verdict]
    defs["cause"]["enum"] = [c.value for c in Cause] + [None]
    return jsonschema.Draft202012Validator(schema)


def _where(path: Sequence[Any]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "top level"


def read(path: Path) -> ShardReport:
    """A `mutate --shard K/N --json` report; anything else, or one whose fields are not as that
    command writes them, is a usage error naming the file and the field."""
    try:
        doc = load_json(path)
    except YamlError as e:
        raise UsageError(f"{e} (not a shard report)") from None
    part = doc.get("shard") if isinstance(doc, dict) else None
    if not isinstance(part, dict) or not isinstance(doc.get("items"), list):
        raise UsageError(f"{path}: not a shard report (no `shard` section: run `mutate --shard K/N --json`)")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        shown = "; ".join(f"{_where(e.absolute_path)}: {e.message[:200]}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise UsageError(f"{path}: not a shard report as `mutate --shard K/N --json` writes it: {shown}{more}")
    return ShardReport(path, doc)


def _selection(r: ShardReport) -> list[str]:
    """Why a report's own selection does not hold together: its ids against the documents and
    hash it carries, its spec against its index and count, and (balanced on nothing) its part
    against the partition of its selection."""
    problems = []
    part, selection = r.shard, r.shard["selection"]
    ids, docs = selection["ids"], selection["documents"]
    if len(set(ids)) != len(ids) or set(ids) != set(docs) or documents_hash(docs) != selection["hash"]:
        problems.append(f"{r.label}: its selection's ids do not match its selection hash")
    edited = sorted(i for i, described in r.shard["mutations"].items() if record_digest(described) != docs.get(i))
    if edited:
        problems.append(f"{r.label}: the description of {', '.join(edited)} does not match its selection's "
                        "document (edited after the run)")
    if part["spec"] != f"{part['index']}/{part['count']}" or part["index"] > part["count"]:
        problems.append(f"{r.label}: its spec does not match its index {part['index']} and count {part['count']}")
    elif part["partition"]["durations"] is None and len(set(ids)) == len(ids):
        expected = sorted(partition(ids, part["count"])[part["index"] - 1])
        if sorted(part["assigned"]) != expected:
            problems.append(f"{r.label}: its part is not part {part['spec']} of its selection's partition")
    return problems


def _result(item: Mapping[str, Any], described: Mapping[str, Any]) -> MutationResult:
    file, _, line = str(described["source"]).rpartition(":")
    build = described.get("build")
    mutation = Mutation(id=item["id"], file=described["file"], anchor=described["anchor"],
                        replace=described["replace"], source=Source(Path(file), int(line) if line.isdigit() else 0),
                        occurrence=described.get("occurrence"), build=tuple(build) if isinstance(build, list) else build,
                        expect=Expect(described["expect_build"], tuple(described["red"]), tuple(described["green"])),
                        mode=described["mode"])
    r = MutationResult.from_record(mutation, {**item, "outcome": item["verdict"]})
    return dataclasses.replace(r, cached=bool(item.get("cached")))


def _differ(reports: Sequence[ShardReport], what: str, value: Any) -> str | None:
    values = [value(r) for r in reports]
    if len(set(map(json.dumps, values))) <= 1:
        return None
    return f"shards ran with different {what}: " + "; ".join(
        f"{r.spec} ({r.path}) {v if v is not None else 'none'}" for r, v in zip(reports, values, strict=True))


def _coverage(reports: Sequence[ShardReport]) -> list[str]:
    problems = []
    count = Counter(int(r.shard["count"]) for r in reports).most_common(1)[0][0]
    given: dict[str, list[ShardReport]] = {}
    for r in reports:
        given.setdefault(r.spec, []).append(r)
    for spec, same in given.items():
        if len(same) > 1:
            times = "twice" if len(same) == 2 else f"{len(same)} times"
            problems.append(f"shard {spec} given {times} ({', '.join(str(r.path) for r in same)})")
    for k in range(1, count + 1):
        if f"{k}/{count}" not in given:
            problems.append(f"shard {k}/{count} missing")
    selection = list(reports[0].shard["selection"]["ids"])
    seen = Counter(str(i["id"]) for r in reports for i in r.doc["items"])
    absent = [i for i in selection if i not in seen]
    if absent:
        problems.append(f"mutation(s) of the selection not in any shard: {', '.join(absent)}")
    twice = [i for i in selection if seen[i] > 1]
    if twice:
        problems.append(f"mutation(s) reported more than once: {', '.join(f'{i} ({seen[i]}x)' for i in twice)}")
    stray = sorted(i for i in seen if i not in set(selection))
    if stray:
        problems.append(f"mutation(s) not in the selection: {', '.join(stray)}")
    for r in reports:
        ran = sorted(str(i["id"]) for i in r.doc["items"])
        if ran != sorted(r.shard["assigned"]):
            problems.append(f"{r.label}: reports {', '.join(ran) or 'nothing'} but was assigned "
                            f"{', '.join(sorted(r.shard['assigned'])) or 'nothing'}")
    return problems


def _baselines(reports: Sequence[ShardReport]) -> list[str]:
    problems = []
    for r in reports:
        base = r.shard["baseline"]
        for g in base["gates"]:
            if g["verdict"] != Verdict.GREEN.value:
                cause = f" ({g['cause']})" if g.get("cause") else ""
                reason = " ".join(str(g.get("reason") or "").split())[:200]
                problems.append(f"{r.label}: baseline not green: gate {g['gate']} {g['verdict']}{cause}"
                                + (f": {reason}" if reason else ""))
        for b in base["builds"]:
            if b["state"] != "ok":
                problems.append(f"{r.label}: baseline build not ok: {b['build']} {b['state']} {b.get('reason') or ''}"
                                .rstrip())
        green = {g["gate"] for g in base["gates"]}
        for item in r.doc["items"]:
            described = r.shard["mutations"].get(item["id"])
            if item.get("cached") or described is None:
                continue    # a cached result was decided on this very tree, after a green baseline
            lacking = [g for g in (*described["red"], *described["green"]) if g not in green]
            if lacking and item["verdict"] != MutationOutcome.ERROR.value:
                problems.append(f"{r.label}: no baseline for gate(s) {', '.join(lacking)} of {item['id']}")
    return problems


def against_files(reports: Sequence[ShardReport], here: Mapping[str, Sequence[Mutation]]) -> tuple[list[str], list[str]]:
    """Each mutation as the shards describe it against the same id in this checkout's mutation
    files (`here`: id -> the mutations of that id found here): (problems, ids not found here).
    The reports' own digests only show that a report agrees with itself; an edited report
    whose documents and hash were made to agree is seen here."""
    problems, unchecked = [], []
    for r in reports:
        for i, described in sorted(r.shard["mutations"].items()):
            mine = here.get(i) or ()
            if not mine:
                unchecked.append(i)
            elif all(record_digest(described) != record_digest(mutation_record(m)) for m in mine):
                problems.append(f"{r.label}: mutation {i} as the shard describes it is not {mine[0].source.file}'s "
                                f"(differs in {', '.join(_fields(described, mine[0])) or 'its description'})")
    return problems, unchecked


def against_checkout(reports: Sequence[ShardReport], here: Mapping[str, str] | None, where: str,
                     passing: bool) -> tuple[list[str], str]:
    """The shards' tree against the checkout the merge decides for: (problems, what was not checked,
    or ""). `here` is that checkout's tree (redfirst.mutations.shard.tree_id: the tree key `mutate`
    keys its results, records and proofs by, edits not committed included) and `where` names it;
    None outside any project (`where` then says why). A caller may rely on: with `here`, no
    problem only where every report ran on `here`'s tree key; outside a project nothing is checked,
    and a merge that would pass (`passing`) is a problem: a tree not checked never passes."""
    def named(tree: Mapping[str, Any]) -> str:
        return f"tree key {str(tree.get('tree') or 'none')[:12]} (HEAD {str(tree.get('head') or 'none')[:12]})"
    if here is None:
        said = ", ".join(sorted({named(r.shard["tree"]) for r in reports}))
        note = f"the shards' tree ({said}) not checked against a checkout: {where}"
        return ([f"could not check that the shards' tree ({said}) is the one merged for: {where}; a merge "
                 "that would pass is no decision (run it in a checkout of the shards' commit)"] if passing else []), note
    problems = []
    for tree in sorted({str(r.shard["tree"].get("tree") or "") for r in reports} - {here["tree"]}):
        ran = [r for r in reports if str(r.shard["tree"].get("tree") or "") == tree]
        problems.append(f"shard(s) {', '.join(r.spec for r in ran)} ran on {named(ran[0].shard['tree'])}, not this "
                        f"checkout's {named(here)} ({where}): their verdicts are about another tree (merge in a "
                        "checkout of the shards' commit)")
    return problems, ""


def _fields(described: Mapping[str, Any], mine: Mutation) -> list[str]:
    here = mutation_record(mine)
    return [k for k in DESCRIBED if json.dumps(described.get(k)) != json.dumps(here.get(k))]


def merge(reports: Sequence[ShardReport], evidence: Sequence[Path] = ()) -> Merged:
    """The union of `reports`, every KILLED and SURVIVED re-derived from the records found in the
    `evidence` folders (redfirst.mutations.bound.rederive); the problems say why it does not stand."""
    if not reports:
        raise UsageError("mutate merge: give the shard reports (REPORT...)")
    problems = [p for r in reports for p in _selection(r)]
    problems += _coverage(reports)
    for what, value in (("redfirst versions", lambda r: r.shard["version"]),
                        ("redfirst code (the digest of its sources)", lambda r: r.shard["code"]),
                        ("shard counts", lambda r: r.shard["count"]),
                        ("selections (selection hash)", lambda r: r.shard["selection"]["hash"]),
                        ("partitions (durations balanced on)", lambda r: r.shard["partition"]["durations"])):
        found = _differ(reports, what, value)
        if found:
            problems.append(found)
    differing = [(k, label) for k, label in _TREE_FIELDS
                 if len({json.dumps(r.shard["tree"].get(k)) for r in reports}) > 1]
    if differing:
        problems.append(f"shards ran on different trees ({', '.join(label for _, label in differing)} differ): " +
                        "; ".join(f"{r.spec} ({r.path}) " + ", ".join(
                            f"{label} {str(r.shard['tree'].get(k) or 'none')[:12]}" for k, label in differing)
                            for r in reports))
    problems += _baselines(reports)
    by_id: dict[str, MutationResult] = {}
    proving: list[tuple[str, str, Path]] = []
    for r in reports:
        for item in r.doc["items"]:
            described = r.shard["mutations"].get(item["id"])
            if described is None:
                problems.append(f"{r.label}: mutation {item['id']} is not described in its shard section")
                continue
            result = _result(item, described)
            again = rederive(result, str(r.shard["tree"].get("tree") or ""), str(r.shard["version"]), evidence)
            if again.problem is not None:
                problems.append(f"{r.label}: {again.problem}")
            proving += [(gate_id, item["id"], folder) for gate_id, folder in again.proving]
            by_id.setdefault(item["id"], result)
    order = [i for i in reports[0].shard["selection"]["ids"] if i in by_id]
    order += [i for i in by_id if i not in order]
    return Merged(tuple(by_id[i] for i in order), tuple(problems), tuple(sorted({r.spec for r in reports},
                  key=lambda s: int(s.split("/")[0]))), dict(reports[0].shard["tree"]), tuple(proving))
