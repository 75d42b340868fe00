"""Anchored mutations against `mutmut run` on mutmut's own benchmark project.

    python bench/mutations_benchmark.py --mutmut-repo /path/to/boxed/mutmut [--cores 0,1] [--workers 2,3,4]
                                        [--limit N]

1. Exports `e2e_projects/benchmark_1k` from a clone of boxed/mutmut twice (two copies).
2. Copy A: `mutmut run --max-children N` (mutmut 3, pinned in mutations.mutmut), timed; its
   result files give each mutant's verdict and its test map gives the tests per function.
3. Copy B: every mutant mutmut generated becomes an anchored mutation file (the original
   function as anchor, mutmut's mutated function as replacement), one `pytest-warm` gate per
   function running exactly the tests mutmut runs for it; `mutate -n N --no-cache`, timed.
4. For each N of --workers, the two engines alternate (mutmut first, on a fresh copy each
   time); prints mutants per minute of both, their ratio and the verdict agreement, and
   appends them to bench/RESULTS.md under "## Mutations". Both are pinned to the same cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

BENCH = "e2e_projects/benchmark_1k"
HERE = Path(__file__).resolve().parent


def export(repo: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", "HEAD", BENCH],
                             check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        tar_path = Path(tmp) / "b.tar"
        tar_path.write_bytes(archive)
        with tarfile.open(tar_path) as tar:
            tar.extractall(tmp, filter="data")
        for item in (Path(tmp) / BENCH).iterdir():
            shutil.move(str(item), dest / item.name)
    for stale in ("benchmark_results.json", "run_benchmark.py"):
        (dest / stale).unlink(missing_ok=True)


# Both engines run without third-party pytest plugins (the same pytest for both).
QUIET_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def pinned(cores: str | None) -> list[str]:
    return ["taskset", "-c", cores] if cores and shutil.which("taskset") else []


def run_mutmut(copy: Path, cores: str | None, workers: int) -> float:
    pyproject = copy / "pyproject.toml"
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", pyproject.read_text())
    pyproject.write_text(text + '\n[tool.mutmut]\nsource_paths = ["src/"]\nuse_setproctitle = false\n')
    start = time.monotonic()
    proc = subprocess.run([*pinned(cores), sys.executable, "-m", "mutmut", "run", "--max-children", str(workers)],
                          cwd=copy,
                          capture_output=True, text=True, env=QUIET_ENV)
    wall = time.monotonic() - start
    if proc.returncode != 0 and not list((copy / "mutants").rglob("*.meta")):
        raise SystemExit(f"mutmut run failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return wall


def mutmut_verdicts(copy: Path) -> dict[str, str]:
    status = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout"}
    out = {}
    for meta in (copy / "mutants").rglob("*.meta"):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            out[key] = status.get(code, f"other({code})")
    return out


def mutants_of(copy: Path) -> list[dict[str, str]]:
    """Each mutant as (key, file, original function text, mutated function text), read
    from the source mutmut generated under mutants/ (its trampolined copies)."""
    found = []
    src = copy / "mutants" / "src"
    for file in sorted(src.rglob("*.py")):
        text = file.read_text()
        lines = text.splitlines(keepends=True)
        module = ".".join(file.relative_to(src).with_suffix("").parts)
        tree = ast.parse(text)
        scopes: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
        scopes += [(n.name, n.body) for n in tree.body if isinstance(n, ast.ClassDef)]
        for _, body in scopes:
            funcs = {n.name: n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            for name, node in funcs.items():
                m = re.match(r"^(.*)__mutmut_(\d+)$", name)
                if not m or (m.group(1) + "__mutmut_orig") not in funcs:
                    continue
                orig = funcs[m.group(1) + "__mutmut_orig"]
                original_name = m.group(1).split("ǁ")[-1] if "ǁ" in m.group(1) else m.group(1)[2:]

                def source(n: ast.AST, original_name: str = original_name, lines: list[str] = lines) -> str:
                    seg = "".join(lines[n.lineno - 1:n.end_lineno])  # type: ignore[attr-defined]
                    return re.sub(r"def \S+?\(", f"def {original_name}(", seg, count=1)

                found.append({"key": f"{module}.{name}", "function": f"{module}.{m.group(1)}",
                              "file": str(Path("src") / file.relative_to(src)),
                              "anchor": source(orig), "replace": source(node)})
    return found


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")


def build_anchored(copy: Path, mutants: list[dict[str, str]], tests: dict[str, list[str]]) -> list[str]:
    (copy / "pytest.ini").write_text("[pytest]\npythonpath = src\n")
    (copy / "gates").mkdir()
    (copy / "mutations").mkdir()
    gates = {}
    for fn, node_ids in tests.items():
        gid = safe(fn)
        gates[fn] = gid
        doc = {"gate": gid, "driver": {"type": "pytest-warm", "run": sorted(node_ids), "preload": ["benchmark"]}}
        (copy / "gates" / f"{gid}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    chosen = []
    by_file: dict[str, list[dict[str, object]]] = {}
    for m in mutants:
        if m["function"] not in gates:
            continue
        original = (copy / m["file"]).read_text()
        if original.count(m["anchor"]) != 1:
            continue
        chosen.append(m["key"])
        by_file.setdefault(m["file"], []).append({
            "mutation": safe(m["key"]), "file": m["file"], "anchor": m["anchor"], "replace": m["replace"],
            "expect": {"red": [gates[m["function"]]]}})
    for file, items in by_file.items():
        (copy / "mutations" / f"{safe(file)}.yaml").write_text(yaml.safe_dump(items, sort_keys=False, width=1000))
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "bench"]):
        subprocess.run(cmd, cwd=copy, check=True)
    return chosen


def run_anchored(copy: Path, cores: str | None, cache: Path, workers: int) -> tuple[float, dict[str, str], str]:
    env = {**QUIET_ENV, "XDG_CACHE_HOME": str(cache)}
    start = time.monotonic()
    shutil.rmtree(copy / ".redfirst", ignore_errors=True)
    proc = subprocess.run([*pinned(cores), "mutate", "--root", str(copy), "-n", str(workers), "--no-cache", "--json"],
                          cwd=copy, capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    doc = json.loads(proc.stdout)
    return wall, {i["id"]: i["verdict"] for i in doc["items"]}, proc.stderr[-1500:]


@dataclass(frozen=True)
class Row:
    workers: int
    mutmut: tuple[int, float]         # mutants, wall seconds
    ours: tuple[int, float]
    pairs: int                        # mutants decided by both
    agree: int
    disagree: list[tuple[str, str, str | None]]
    counts: dict[str, int]            # mutmut's verdicts
    outcomes: dict[str, int]          # the anchored engine's


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--mutmut-repo", type=Path, required=True)
    p.add_argument("--cores", default="0,1")
    p.add_argument("--workers", default="2", help="worker counts to compare, e.g. 2,3,4 (mutmut --max-children, "
                   "mutate -n)")
    p.add_argument("--limit", type=int, help="only the first N mutants (a quick check)")
    p.add_argument("--no-write", action="store_true", help="do not append to bench/RESULTS.md")
    args = p.parse_args()
    from importlib import metadata

    mutmut_version = metadata.version("mutmut")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="mutbench-") as tmp:
        work = Path(tmp)
        b = work / "anchored-copy"
        export(args.mutmut_repo, b)
        chosen: list[str] = []
        for n, workers in enumerate(int(w) for w in args.workers.split(",")):
            a = work / f"mutmut-copy-{n}"
            export(args.mutmut_repo, a)
            mutmut_wall = run_mutmut(a, args.cores, workers)
            verdicts = mutmut_verdicts(a)
            if not chosen:
                stats = json.loads((a / "mutants" / "mutmut-stats.json").read_text())
                tests = {k: v for k, v in stats["tests_by_mangled_function_name"].items() if v}
                mutants = mutants_of(a)
                if args.limit:
                    mutants = mutants[: args.limit]
                chosen = build_anchored(b, mutants, tests)
            anchored_wall, outcomes, tail = run_anchored(b, args.cores, work / "cache", workers)
            if tail and not outcomes:
                print(tail, file=sys.stderr)
            decided = {k: v for k, v in verdicts.items() if v in ("killed", "survived")}
            pairs = [(decided[k], outcomes.get(safe(k))) for k in chosen if k in decided]
            agree = sum(1 for mm, ours in pairs if (mm, ours) in (("killed", "KILLED"), ("survived", "SURVIVED")))
            disagree = [(k, decided[k], outcomes.get(safe(k))) for k in chosen if k in decided
                        and (decided[k], outcomes.get(safe(k))) not in (("killed", "KILLED"), ("survived", "SURVIVED"))]
            rows.append(Row(workers, (len(verdicts), mutmut_wall), (len(chosen), anchored_wall), len(pairs), agree,
                            disagree, dict(Counter(verdicts.values())), dict(Counter(outcomes.values()))))
            mm, ours = len(verdicts) / mutmut_wall * 60, len(chosen) / anchored_wall * 60
            print(f"workers {workers}: mutmut {mm:.0f}/min, anchored {ours:.0f}/min ({ours / mm:.2f}x), "
                  f"agreement {agree}/{len(pairs)}", file=sys.stderr)
    load = os.getloadavg()[0]
    table = ["| workers | engine | mutants | wall s | mutants/min | anchored / mutmut | verdicts agreeing |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        (mn, mw), (on, ow) = r.mutmut, r.ours
        mm, ours = mn / mw * 60, on / ow * 60
        table.append(f"| {r.workers} | `mutmut run --max-children {r.workers}` | {mn} | {mw:.1f} | {mm:.0f} | | |")
        table.append(f"| {r.workers} | `mutate -n {r.workers}` (anchored, pytest-warm gates) | {on} | {ow:.1f} | "
                     f"{ours:.0f} | **{ours / mm:.2f}x** | {r.agree}/{r.pairs} |")
    last = rows[-1]
    disagreements = [d for r in rows for d in r.disagree]
    report = (
        f"\n### benchmark_1k: anchored engine vs mutmut run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
        f"`python bench/mutations_benchmark.py --mutmut-repo <boxed/mutmut clone> --cores {args.cores} "
        f"--workers {args.workers}`{f' --limit {args.limit}' if args.limit else ''}. Machine: {os.cpu_count()} cores "
        f"visible, every command pinned to cores {args.cores} (`taskset`), `{' '.join(platform.uname())}`, Python "
        f"{platform.python_version()}, mutmut {mutmut_version}; 1-minute load average {load:.1f} when it finished. "
        "For each worker count the two engines ran one after the other, mutmut on a fresh copy.\n\n"
        + "\n".join(table) + "\n\n"
        f"mutmut verdicts: {last.counts}. Anchored outcomes: {last.outcomes}."
        + (f" Disagreements (first 10): {disagreements[:10]}." if disagreements else "") + "\n"
    )
    print(report)
    if not args.no_write:
        results = HERE / "RESULTS.md"
        text = results.read_text() if results.exists() else "# Benchmark results\n"
        if "\n## Mutations\n" not in text:
            text += "\n## Mutations\n"
        head, _, rest = text.partition("\n## Mutations\n")
        nxt = rest.find("\n## ")
        section, tail_text = (rest, "") if nxt < 0 else (rest[:nxt], rest[nxt:])
        results.write_text(head + "\n## Mutations\n" + section.rstrip("\n") + "\n" + report + tail_text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
