"""`mutate promote KEY`: one sweep survivor -> an anchored mutation file, written only
when `mutate` finds it KILLED (a test now kills it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from redfirst.gates.model import Gate, Source
from redfirst.mutations.anchor import occurrences
from redfirst.mutations.model import Expect, Mutation
from redfirst.mutations.mutmut import Survivor
from redfirst.mutations.sweep import covering_gates
from redfirst.verdict import MutationOutcome


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks: the anchor reads as the code it matches."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_BlockDumper.add_representer(str, _str)


class PromoteError(Exception):
    """The survivor cannot become a mutation file (no anchor, no gate): exit 2."""


def grow_anchor(text: str, survivor: Survivor) -> tuple[str, str]:
    """(anchor, replace): the mutant's lines, grown with context lines around them until
    the anchor occurs exactly once in the file."""
    lines = text.splitlines(keepends=True)
    first = survivor.line - 1
    last = first + len(survivor.removed)
    if [x.rstrip("\r\n") for x in lines[first:last]] != list(survivor.removed):
        raise PromoteError(f"{survivor.file}:{survivor.line} no longer holds the mutant's lines "
                           "(changed since the sweep?); run mutate sweep again")
    ending = lines[first][len(lines[first].rstrip("\r\n")):] or "\n"
    replaced = "".join(line + ending for line in survivor.added)
    before, after = first, last
    while True:
        anchor = "".join(lines[before:after])
        if len(occurrences(text, anchor)) == 1:
            return anchor, "".join(lines[before:first]) + replaced + "".join(lines[last:after])
        if before == 0 and after == len(lines):
            raise PromoteError(f"{survivor.file}:{survivor.line}: no unique anchor even with the whole file")
        before, after = max(0, before - 1), min(len(lines), after + 1)


def mutation_of(root: Path, survivor: Survivor, gates: Mapping[str, Gate],
                run: Callable[[list[Mutation]], Sequence[Any]] | None = None) -> Mutation:
    """The survivor as a mutation file's mutation. A Python survivor's red gates run the tests
    that reach its function; a C/C++/CUDA survivor's (it names `gates`: those that build its
    file) are each run alone with `run` (the engine): red the ones that kill it now, green the
    ones that stay GREEN; where none kills it, all of them (the caller's run then says SURVIVED)."""
    text = (root / survivor.file).read_text(encoding="utf-8", errors="surrogateescape")
    anchor, replace = grow_anchor(text, survivor)
    if survivor.gates:
        return _cxx_mutation(root, survivor, gates, anchor, replace, run)
    red, green = covering_gates(gates, survivor.tests)
    if not red:
        reach = ", ".join(survivor.tests) or "no test at all"
        raise PromoteError(f"{survivor.key}: no pytest gate runs the tests that reach {survivor.function} "
                           f"({reach}); add a gate for them first")
    mid = re.sub(r"[^A-Za-z0-9._-]+", "-", f"mutmut-{survivor.key}").strip("-")
    why = f"mutmut survivor {survivor.key} at {survivor.file}:{survivor.line}, promoted once a test killed it"
    data = {"mutation": mid, "why": why,
            "file": survivor.file, "anchor": anchor, "replace": replace,
            "expect": {"red": red, **({"green": green} if green else {})}}
    document = yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=1000)
    return Mutation(id=mid, file=survivor.file, anchor=anchor, replace=replace,
                    source=Source(root / "mutations" / f"{mid}.yaml", 1), expect=Expect(red=tuple(red),
                    green=tuple(green)), why=why, document=document)


def _cxx_mutation(root: Path, survivor: Survivor, gates: Mapping[str, Gate], anchor: str, replace: str,
                  run: Callable[[list[Mutation]], Sequence[Any]] | None) -> Mutation:
    known = [g for g in survivor.gates if g in gates]
    if not known or run is None:
        raise PromoteError(f"{survivor.key}: none of the gates that built {survivor.file} at the sweep is "
                           f"defined now ({', '.join(survivor.gates)})")
    mid = re.sub(r"[^A-Za-z0-9._-]+", "-", f"cxx-{survivor.key}").strip("-")
    source = Source(root / "mutations" / f"{mid}.yaml", 1)
    trials = [Mutation(id=f"{mid}@{g}", file=survivor.file, anchor=anchor, replace=replace, source=source,
                       expect=Expect(red=(g,))) for g in known]
    # one gate: the caller's run of the mutation is the trial
    outcomes = {r.mutation.expect.red[0]: r.outcome.value for r in run(trials)} if len(known) > 1 else {}
    red = [g for g in known if outcomes.get(g) == MutationOutcome.KILLED.value] or known
    green = [g for g in known if g not in red and outcomes.get(g) == MutationOutcome.SURVIVED.value]
    why = (f"C/C++ survivor {survivor.key} ({survivor.function}) at {survivor.file}:{survivor.line}, "
           "promoted once a test killed it")
    data = {"mutation": mid, "why": why, "file": survivor.file, "anchor": anchor, "replace": replace,
            "expect": {"red": red, **({"green": green} if green else {})}}
    document = yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=1000)
    return Mutation(id=mid, file=survivor.file, anchor=anchor, replace=replace, source=source,
                    expect=Expect(red=tuple(red), green=tuple(green)), why=why, document=document)
