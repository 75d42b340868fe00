"""Anchored mutations against `mutmut run` on mutmut's own benchmark project.

    python bench/mutations_benchmark.py --mutmut-repo /path/to/boxed/mutmut [--cores 0,1] [--workers 2,3,4]
                                        [--limit N] [--pairs P]
    python bench/mutations_benchmark.py --more-itertools more_itertools-X.tar.gz [...]   (recipes.py)

`--more-itertools` takes the sdist (`pip download --no-deps --no-binary :all: more-itertools`)
and mutates `more_itertools/recipes.py` under its own tests; with `--limit N` both engines
run the same first N mutants (mutmut's own mutant names on its command line).

1. Exports `e2e_projects/benchmark_1k` from a clone of boxed/mutmut twice (two copies).
2. Copy A: `mutmut run --max-children N` (mutmut 3, pinned in redfirst.mutations.mutmut), timed; its
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from redfirst import process

BENCH = "e2e_projects/benchmark_1k"
UNCAPPED_S = 7 * 86400.0      # no --cap: a week
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Project:
    """What differs between the benchmarked projects."""
    name: str
    source: Path                      # the mutmut clone, or the more-itertools sdist
    mutmut_config: str                # the [tool.mutmut] body
    mutated: str                      # the folder under mutants/ whose files mutmut generated
    pytest_ini: str
    preload: tuple[str, ...]

    def export(self, dest: Path) -> None:
        if self.name == "benchmark_1k":
            export(self.source, dest)
            return
        dest.mkdir(parents=True)
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(self.source) as tar:
            tar.extractall(tmp, filter="data")
            (top,) = Path(tmp).iterdir()
            for item in top.iterdir():
                shutil.move(str(item), dest / item.name)


def benchmark_1k(repo: Path) -> Project:
    return Project("benchmark_1k", repo, 'source_paths = ["src/"]\n', "src", "[pytest]\npythonpath = src\n",
                   ("benchmark",))


def more_itertools(sdist: Path) -> Project:
    return Project("more-itertools recipes.py", sdist,
                   'source_paths = ["more_itertools/"]\nonly_mutate = ["more_itertools/recipes.py"]\n'
                   'pytest_add_cli_args_test_selection = ["tests/"]\n', "more_itertools", "[pytest]\n",
                   ("more_itertools",))


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


@dataclass(frozen=True)
class Timed:
    wall: float
    stopped: bool           # still running at the cap: stopped, its wall is a lower bound
    code: int | None
    stdout: str
    stderr: str


def timed(argv: Sequence[str], cwd: Path, env: dict[str, str], cap: float | None) -> Timed:
    """Run argv timed (redfirst.process.run: in its own session, whatever it leaves killed); stopped,
    with everything it started, after `cap` seconds."""
    with tempfile.TemporaryDirectory(prefix="mutbench-run-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        ran = process.run(argv, cwd=cwd, env=env, stdout=out, stderr=err, timeout=cap if cap else UNCAPPED_S)
        if not ran.started:
            raise SystemExit(f"{argv[0]}: {ran.start_error}")
        wall = min(ran.duration_s, cap) if ran.timed_out and cap else ran.duration_s
        return Timed(wall, ran.timed_out, ran.returncode, out.read_text(errors="replace"),
                     err.read_text(errors="replace"))


def run_mutmut(copy: Path, cores: str | None, workers: int, project: Project, names: Sequence[str] = (),
               cap: float | None = None) -> Timed:
    """`mutmut run` on `copy`, timed; `names`: only these mutants (else all)."""
    pyproject = copy / "pyproject.toml"
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", pyproject.read_text())
    pyproject.write_text(text + f"\n[tool.mutmut]\n{project.mutmut_config}use_setproctitle = false\n")
    run = timed([*pinned(cores), sys.executable, "-m", "mutmut", "run", "--max-children", str(workers), *names],
                copy, QUIET_ENV, cap)
    if run.code != 0 and not run.stopped and not list((copy / "mutants").rglob("*.meta")):
        raise SystemExit(f"mutmut run failed: {run.stdout[-2000:]} {run.stderr[-2000:]}")
    return run


def mutmut_verdicts(copy: Path) -> dict[str, str]:
    status = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 36: "timeout"}
    out = {}
    for meta in (copy / "mutants").rglob("*.meta"):
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if code is not None:        # (None: not run yet, in a run stopped at the cap)
                out[key] = status.get(code, f"other({code})")
    return out


def mutants_of(copy: Path, project: Project) -> list[dict[str, str]]:
    """Each mutant as (key, file, original function text, mutated function text), read
    from the source mutmut generated under mutants/ (its trampolined copies)."""
    found = []
    src = copy / "mutants" / project.mutated
    base = src if project.mutated == "src" else src.parent
    for file in sorted(src.rglob("*.py")):
        text = file.read_text()
        lines = text.splitlines(keepends=True)
        module = ".".join(file.relative_to(base).with_suffix("").parts)
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
                              "file": str(file.relative_to(copy / "mutants")),
                              "anchor": source(orig), "replace": source(node)})
    return found


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")


def build_anchored(copy: Path, mutants: list[dict[str, str]], tests: dict[str, list[str]],
                   project: Project) -> list[str]:
    (copy / "pytest.ini").write_text(project.pytest_ini)
    (copy / "gates").mkdir()
    (copy / "mutations").mkdir()
    gates = {}
    for fn, node_ids in tests.items():
        gid = safe(fn)
        gates[fn] = gid
        doc = {"gate": gid, "driver": {"type": "pytest-warm", "run": sorted(node_ids), "preload": list(project.preload)}}
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


def run_anchored(copy: Path, cores: str | None, cache: Path, workers: int,
                 cap: float | None = None) -> tuple[Timed, dict[str, str], str]:
    env = {**QUIET_ENV, "XDG_CACHE_HOME": str(cache)}
    shutil.rmtree(copy / ".redfirst", ignore_errors=True)
    run = timed([*pinned(cores), "mutate", "--root", str(copy), "-n", str(workers), "--no-cache", "--json"],
                copy, env, cap)
    if run.stopped:     # no report: what it decided, from its progress lines
        outcomes = dict(re.findall(r"^mutate: \[\d+/\d+\] (\S+) ([A-Z]+)\b", run.stderr, re.M))
    else:
        outcomes = {i["id"]: i["verdict"] for i in json.loads(run.stdout)["items"]}
    return run, outcomes, run.stderr[-1500:]


def cold_baselines(copy: Path) -> tuple[int, float]:
    """The cold baseline runs of the warm gates (redfirst.mutations.warmth) in the anchored run's
    store: how many, and their programs' seconds summed."""
    runs, seconds = 0, 0.0
    for record in (copy / ".redfirst" / "evidence").glob("*/record.json"):
        data = json.loads(record.read_text())
        argv = (data.get("main") or {}).get("argv") or []
        if (data.get("binding") or {}).get("mutation") == "baseline" and "-S" not in argv and "pytest" in argv:
            runs += 1
            seconds += data["main"]["exited"]["duration_s"]
    return runs, seconds


# mutmut's verdict and ours that agree. mutmut's "timeout" (its CPU limit) is a kill; so is ours
# (KILLED, cause timeout). Every other pair where both decided disagrees, DISCARDED included:
# a mutation that breaks the package's import is DISCARDED here (DESIGN: never a kill), while
# mutmut's trampolines, switched on after import, grade it by its tests. Counted against us, not
# left out: the agreement figure is the strict one. mutmut's "no tests" and anything it did not
# run are not compared (no gate here has no tests).
AGREE = frozenset({("killed", "KILLED"), ("timeout", "KILLED"), ("survived", "SURVIVED")})
COMPARED = ("killed", "timeout", "survived")


def agreement(verdicts: dict[str, str], outcomes: dict[str, str], chosen: Sequence[str], stopped: bool
              ) -> tuple[int, int, list[tuple[str, str, str | None]]]:
    """Mutants both engines decided, how many of them agree (AGREE), and those that do not. A run
    of ours stopped at the cap decided only the mutants in `outcomes`."""
    both = [k for k in chosen if verdicts.get(k) in COMPARED and (not stopped or safe(k) in outcomes)]
    disagree = [(k, verdicts[k], outcomes.get(safe(k))) for k in both
                if (verdicts[k], outcomes.get(safe(k))) not in AGREE]
    return len(both), len(both) - len(disagree), disagree


@dataclass(frozen=True)
class Row:
    workers: int
    mutmut: tuple[int, float]         # mutants, wall seconds
    ours: tuple[int, float]
    pairs: int                        # mutants decided by both (agreement)
    agree: int
    disagree: list[tuple[str, str, str | None]]
    counts: dict[str, int]            # mutmut's verdicts
    outcomes: dict[str, int]          # the anchored engine's
    load: tuple[float, float]         # 1-minute load average before mutmut, after ours
    stopped: tuple[bool, bool] = (False, False)     # mutmut's run, ours: stopped at --cap

    def ratio(self) -> str:
        """Ours over mutmut in mutants per minute; where a run was stopped at the cap, the bound
        its wall time gives (the whole run takes longer than the cap)."""
        (mn, mw), (on, ow) = self.mutmut, self.ours
        if self.stopped == (False, False):
            return f"{(on / ow) / (mn / mw):.2f}x"
        if self.stopped == (True, False):
            return f">= {mw / ow:.2f}x (mutmut stopped at the cap with {mn} decided)"
        if self.stopped == (False, True):
            return f"<= {mw / ow:.2f}x (ours stopped at the cap)"
        return "unknown (both stopped at the cap)"


def prepare(project: Project, work: Path, cores: str | None) -> tuple[list[dict[str, str]], dict[str, list[str]]]:
    """mutmut's mutants and its test map, from an untimed `mutmut run` that generates them,
    runs its stats and then matches no mutant (its assertion ends it)."""
    copy = work / "mutmut-prepare"
    project.export(copy)
    run_mutmut(copy, cores, 1, project, ["redfirst.bench.matches.no.mutant*"])
    stats = json.loads((copy / "mutants" / "mutmut-stats.json").read_text())
    return mutants_of(copy, project), {k: v for k, v in stats["tests_by_mangled_function_name"].items() if v}


def main() -> int:
    p = argparse.ArgumentParser()
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--mutmut-repo", type=Path, help="a clone of boxed/mutmut: its e2e_projects/benchmark_1k")
    which.add_argument("--more-itertools", type=Path, help="the more-itertools sdist: more_itertools/recipes.py")
    p.add_argument("--cores", default="0,1")
    p.add_argument("--workers", default="2", help="worker counts to compare, e.g. 2,3,4 (mutmut --max-children, "
                   "mutate -n)")
    p.add_argument("--pairs", type=int, default=1, help="interleaved pairs per worker count (mutmut, ours, ...)")
    p.add_argument("--limit", type=int, help="only the first N mutants, for both engines")
    p.add_argument("--write", action="store_true", help="append the table at the end of bench/RESULTS.md")
    p.add_argument("--cap", type=float, help="stop either engine after this many seconds (its wall time is then a "
                   "lower bound, and only the mutants it decided are compared)")
    args = p.parse_args()
    from importlib import metadata

    project = benchmark_1k(args.mutmut_repo) if args.mutmut_repo else more_itertools(args.more_itertools)
    mutmut_version = metadata.version("mutmut")
    # Both engines run pytest with every plugin this environment installs: a plugin that hooks
    # into collection (Hypothesis's) keeps pytest-warm from collecting ahead (its standby).
    plugins = sorted({f"{e.name} ({e.dist.name if e.dist else '?'})"
                      for e in metadata.entry_points(group="pytest11")} - {"redfirst (redfirst)"})
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="mutbench-") as tmp:
        work = Path(tmp)
        b = work / "anchored-copy"
        project.export(b)
        mutants, tests = prepare(project, work, args.cores)
        if args.limit:
            mutants = [m for m in mutants if m["function"] in tests][: args.limit]
        chosen = build_anchored(b, mutants, tests, project)
        names = [k for k in chosen] if args.limit else []
        n = 0
        for workers in (int(w) for w in args.workers.split(",")):
            for _ in range(args.pairs):
                a = work / f"mutmut-copy-{n}"
                n += 1
                project.export(a)
                load_before = os.getloadavg()[0]
                mutmut_run = run_mutmut(a, args.cores, workers, project, names, args.cap)
                verdicts = mutmut_verdicts(a)
                if names:
                    verdicts = {k: v for k, v in verdicts.items() if k in set(names)}
                anchored_run, outcomes, tail = run_anchored(b, args.cores, work / "cache", workers, args.cap)
                cold_runs, cold_s = cold_baselines(b)
                sent_cold = len(re.findall(r"^mutate: \S+ runs cold: ", anchored_run.stderr, re.M))
                print(f"cold baselines: {cold_runs} runs, {cold_s:.1f} s of pytest summed over {workers} worker(s) "
                      f"(~{cold_s / workers:.1f} s of wall), {sent_cold} gate(s) sent cold", file=sys.stderr, flush=True)
                if tail and not outcomes:
                    print(tail, file=sys.stderr)
                pairs, agree, disagree = agreement(verdicts, outcomes, chosen, anchored_run.stopped)
                decided_by_ours = len(outcomes) if anchored_run.stopped else len(chosen)
                rows.append(Row(workers, (len(verdicts), mutmut_run.wall), (decided_by_ours, anchored_run.wall),
                                pairs, agree, disagree, dict(Counter(verdicts.values())),
                                dict(Counter(outcomes.values())), (load_before, os.getloadavg()[0]),
                                (mutmut_run.stopped, anchored_run.stopped)))
                print(f"workers {workers}: mutmut {len(verdicts)} in {mutmut_run.wall:.1f} s"
                      f"{' (stopped)' if mutmut_run.stopped else ''}, anchored {len(outcomes)} in "
                      f"{anchored_run.wall:.1f} s{' (stopped)' if anchored_run.stopped else ''}: {rows[-1].ratio()}, "
                      f"agreement {agree}/{pairs}, load {load_before:.1f}->{os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
    table = ["| pair | workers | engine | mutants | wall s | mutants/min | anchored / mutmut | verdicts agreeing | "
             "1-min load (start, end) |", "|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for i, r in enumerate(rows, 1):
        (mn, mw), (on, ow) = r.mutmut, r.ours
        mm, ours = mn / mw * 60, on / ow * 60
        stop = (" (stopped at the cap)" if r.stopped[0] else "", " (stopped at the cap)" if r.stopped[1] else "")
        table.append(f"| {i} | {r.workers} | `mutmut run --max-children {r.workers}`{stop[0]} | {mn} | {mw:.1f} | "
                     f"{mm:.0f} | | | {r.load[0]:.1f}, {r.load[1]:.1f} |")
        table.append(f"| {i} | {r.workers} | `mutate -n {r.workers}` (anchored, pytest-warm gates){stop[1]} | {on} | "
                     f"{ow:.1f} | {ours:.0f} | **{r.ratio()}** | {r.agree}/{r.pairs} | |")
    last = rows[-1]
    disagreements = [d for r in rows for d in r.disagree]
    source = "--mutmut-repo <boxed/mutmut clone>" if args.mutmut_repo else "--more-itertools <sdist>"
    report = (
        f"\n### {project.name}: anchored engine vs mutmut run ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
        f"\n\n`python bench/mutations_benchmark.py {source} --cores {args.cores} --workers {args.workers} "
        f"--pairs {args.pairs}{f' --limit {args.limit}' if args.limit else ''}"
        f"{f' --cap {args.cap:g}' if args.cap else ''}`. Machine: {os.cpu_count()} cores "
        f"visible, every command pinned to cores {args.cores} (`taskset`), `{' '.join(platform.uname())}`, Python "
        f"{platform.python_version()}, mutmut {mutmut_version}, pytest plugins installed besides redfirst's: "
        f"{', '.join(plugins) or 'none'}. Each pair: mutmut on a fresh copy, then the "
        "anchored engine, one after the other.\n\n"
        + "\n".join(table) + "\n\n"
        f"mutmut verdicts: {last.counts}. Anchored outcomes: {last.outcomes}."
        + (f" Disagreements (first 10): {disagreements[:10]}." if disagreements else "") + "\n"
    )
    print(report)
    if args.write:
        results = HERE / "RESULTS.md"
        results.write_text(results.read_text().rstrip("\n") + "\n" + report)
    return 0


# -- `python bench/mutations_benchmark.py scale`: what issue 17 changed, side by side -----------

SCALE_FILES = {
    "calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n\n\n"
                        "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n"
                        "        return hi\n    return x\n",
    "spin.py": "def spin(n):\n    while n > 0:\n        n -= 1\n    return n\n",
    "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    "tests/test_sub.py": "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
    "tests/test_clamp.py": "from calc import clamp\n\n\ndef test_clamp():\n    assert clamp(5, 0, 10) == 5\n",
    "tests/test_slow.py": "import time\n\nfrom calc import add\n\n\ndef test_slow():\n    time.sleep(1.5)\n"
                          "    assert add(1, 1) == 2\n",
    "tests/test_many.py": "import time\n\nimport pytest\n\nfrom calc import add\n\n\n"
                          "@pytest.mark.parametrize('i', range(30))\ndef test_many(i):\n    time.sleep(0.05)\n"
                          "    assert add(i, 1) == i + 1\n",
    ".gitignore": "__pycache__/\n",
}


def _scale_gate(name: str, run: str, timeout: str = "  timeout: 60\n") -> str:
    return f"gate: {name}\ndriver:\n  type: pytest\n  run: [{run}]\n{timeout}"


SCALE_GATES = {
    "add": _scale_gate("add", "tests/test_add.py"), "sub": _scale_gate("sub", "tests/test_sub.py"),
    "clamp": _scale_gate("clamp", "tests/test_clamp.py"), "slow": _scale_gate("slow", "tests/test_slow.py"),
    "many": _scale_gate("many", "tests/test_many.py"),
    "many-all": _scale_gate("many-all", "--maxfail=1000, tests/test_many.py"),   # opts out of -x
    "spin": 'gate: spin\nexit_only: "a plain assert"\ndriver:\n  type: command\n'
            '  run: [python3, -c, "from spin import spin; assert spin(3) == 0"]\n',   # no timeout: derived
}

SCALE_MUTATIONS = [
    ("x-on", "calc/__init__.py", "return a + b", "return a - b", {"red": ["many"]}),
    ("x-off", "calc/__init__.py", "return a + b", "return a - b", {"red": ["many-all"]}),
    ("stop-on", "calc/__init__.py", "return lo", "return hi", {"red": ["clamp", "slow"]}),
    ("stop-off", "calc/__init__.py", "    return x\n", "    return lo\n", {"red": ["clamp"], "green": ["slow"]}),
    ("spin-forever", "spin.py", "n -= 1", "n -= 0", {"red": ["spin"]}),
]
SHARD_MUTATIONS = [
    ("s-add-minus", "calc/__init__.py", "return a + b", "return a - b", {"red": ["add"]}),
    ("s-add-times", "calc/__init__.py", "return a + b", "return a * b", {"red": ["add"]}),
    ("s-sub-plus", "calc/__init__.py", "return a - b", "return a + b", {"red": ["sub"]}),
    ("s-clamp-lo", "calc/__init__.py", "return lo", "return hi", {"red": ["clamp"]}),
    ("s-clamp-hi", "calc/__init__.py", "return hi", "return lo", {"red": ["clamp"]}),
    ("s-clamp-x", "calc/__init__.py", "    return x\n", "    return lo\n", {"red": ["clamp"]}),
]


def _scale_repo(root: Path) -> None:
    files = {**SCALE_FILES, **{f"gates/{k}.yaml": v for k, v in SCALE_GATES.items()}}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for name, items in (("scale", SCALE_MUTATIONS), ("shards", SHARD_MUTATIONS)):
        docs = [{"mutation": i, "file": f, "anchor": a, "replace": r, "expect": e} for i, f, a, r, e in items]
        (root / "mutations").mkdir(exist_ok=True)
        (root / "mutations" / f"{name}.yaml").write_text(yaml.safe_dump(docs, sort_keys=False))
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "scale bench"]):
        subprocess.run(["git", *argv], cwd=root, check=True, env=env)


def _mutate(root: Path, *args: str) -> tuple[float, dict]:
    mutate = str(Path(sys.executable).parent / "mutate")
    start = time.monotonic()
    proc = subprocess.run([mutate, *args, "--root", str(root), "--json", "--no-cache"] if args[:1] != ("merge",)
                          else [mutate, *args, "--root", str(root), "--json"], cwd=root, capture_output=True,
                          text=True, env=QUIET_ENV)
    wall = time.monotonic() - start
    try:
        return wall, json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"mutate {' '.join(args)}: no JSON: {proc.stderr[-2000:]}") from None


def scale() -> int:
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mutbench-scale-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        _scale_repo(root)
        _, doc = _mutate(root, *(m[0] for m in SCALE_MUTATIONS))
        items = {i["id"]: i for i in doc["items"]}
        shard_ids = [m[0] for m in SHARD_MUTATIONS]
        full_wall, full = _mutate(root, *shard_ids)
        reports = []
        start = time.monotonic()
        procs = [subprocess.Popen([str(Path(sys.executable).parent / "mutate"), *shard_ids, "--shard", f"{k}/2",
                                   "--root", str(root), "--json", "--no-cache"], cwd=root, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=QUIET_ENV) for k in (1, 2)]
        for k, proc in enumerate(procs, 1):
            out, _ = proc.communicate()
            path = Path(tmp) / f"shard-{k}.json"
            path.write_text(out)
            reports.append(str(path))
        shards_wall = time.monotonic() - start
        merge_wall, merged = _mutate(root, "merge", *reports)
    same = {i["id"]: i["verdict"] for i in merged["items"]} == {i["id"]: i["verdict"] for i in full["items"]}

    def sec(i: str) -> float:
        return float(items[i]["seconds"])

    spin = items["spin-forever"]
    print(f"\n### Issue 17, cheap per mutation and shards ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
    print(f"`python bench/mutations_benchmark.py scale` (one run, everything below side by side). Machine: "
          f"{os.cpu_count()} cores, `{' '.join(platform.uname())}`, Python {platform.python_version()}; 1-minute "
          f"load average {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at the end (shared by other jobs).\n")
    print("| what | with the change | without | ratio | outcome |\n|---|---:|---:|---:|---|")
    print(f"| pytest -x under a mutation (30 failing tests) | {sec('x-on'):.2f} s | {sec('x-off'):.2f} s "
          f"(gate opts out with --maxfail) | **{sec('x-off') / sec('x-on'):.2f}x** | {items['x-on']['verdict']} / "
          f"{items['x-off']['verdict']} |")
    print(f"| stop once decided (survivor; a 1.5 s gate not run) | {sec('stop-on'):.2f} s | {sec('stop-off'):.2f} s "
          f"(same two gates, both run: a kill) | **{sec('stop-off') / sec('stop-on'):.2f}x** | "
          f"{items['stop-on']['verdict']} / {items['stop-off']['verdict']} |")
    print(f"| infinite-loop mutant, gate without timeout | {sec('spin-forever'):.1f} s | 600 s (the default limit; "
          f"not run) | **{600 / sec('spin-forever'):.0f}x** | {spin['verdict']} ({spin['cause']}) |")
    print(f"| 6 mutations: one run vs 2 shards at once + merge | {shards_wall:.1f} s + {merge_wall:.1f} s | "
          f"{full_wall:.1f} s | **{full_wall / (shards_wall + merge_wall):.2f}x** | merged = one run: {same}, "
          f"merge exit {merged['exit']} |")
    print(f"\nDerived timeout: {spin['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(scale() if sys.argv[1:2] == ["scale"] else main())
