"""`mutate promote KEY`: turn a sweep survivor into a mutation file, if it is KILLED."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from redfirst import clitools
from redfirst.mutations import report
from redfirst.mutations.commands.common import Exit, gates_of, project_at, say
from redfirst.mutations.engine import Engine
from redfirst.mutations.loader import mutation_paths
from redfirst.mutations.mutmut import MutmutError
from redfirst.mutations.promote import PromoteError, mutation_of
from redfirst.mutations.sweep import load, remap
from redfirst.mutations.workspaces import WorkspaceError
from redfirst.verdict import EXIT_ERROR, MutationOutcome, exit_code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mutate promote", description="Turn a survivor of the last `mutate sweep` "
                                "into an anchored mutation file; written only when it comes out KILLED.")
    p.add_argument("key", help="the survivor's mutmut key, as `mutate sweep` printed it")
    p.add_argument("--root", help="the project root (default: redfirst.yaml's folder, else the git top-level)")
    clitools.add_version(p)
    return clitools.add_conventions(p)


def main(argv: Sequence[str]) -> int:
    p = parser()
    try:
        args = clitools.parse_args(p, argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code else 0
    try:
        project = project_at(args.root)
        survivors = {s.key: s for s in load(project.root)}
        if args.key not in survivors:
            known = ", ".join(survivors) or "none: run mutate sweep first"
            print(f"mutate promote: no survivor {args.key!r} from the last sweep (known: {known})", file=sys.stderr)
            return EXIT_ERROR
        gates = gates_of(project)
        survivor = survivors[args.key]
        if not survivor.tests and not survivor.gates:
            # mutmut saw no test reach it at the sweep: which tests reach it now?
            say(f"{survivor.key}: no test reached {survivor.function} at the sweep; mapping the tests again (mutmut)")
            survivor = remap(project.root, survivor, gates)
            if not survivor.tests and not survivor.gates:
                print(f"mutate promote: {survivor.key}: no test reaches {survivor.function} yet "
                      f"({survivor.file}:{survivor.line}); add a test that calls it, then promote again",
                      file=sys.stderr)
                return EXIT_ERROR
            say(f"{survivor.key}: {len(survivor.tests)} test(s) reach {survivor.function} now: "
                + ", ".join(survivor.tests))
        engine = Engine(project.root, gates, progress=say, use_cache=False, unkeyed=mutation_paths(project))
        mutation = mutation_of(project.root, survivor, gates, engine.run)
        results = engine.run([mutation])
    except Exit as e:
        print(e.message, file=sys.stderr)
        return e.code
    except (PromoteError, WorkspaceError, MutmutError) as e:
        print(f"mutate promote: {e}", file=sys.stderr)
        return EXIT_ERROR
    code = exit_code([r.outcome for r in results])
    print(report.table(report.document(results, code)))
    if results[0].outcome is MutationOutcome.KILLED:
        target = mutation_paths(project)[0] / f"{mutation.id}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(mutation.document, encoding="utf-8")
        print(f"wrote {target}")
    else:
        print(f"not written: {results[0].outcome.value} (a promoted mutation must be KILLED; add the test that "
              "kills it, then promote again)")
    return code
