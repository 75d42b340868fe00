"""Parity of the `agents-record` preset with vllm.cpp's own checkers, on vllm.cpp's real history.

For each range (first-parent merges, PR ranges, windows of 1-13 commits from the commit that added
`scripts/check-doc-checkpoint.py` to HEAD, and each commit at which `check-agent-record.py` fails) it checks the head out, runs vllm.cpp's scripts as they
were at that head (and the `commit-protocol-tag` job of its ci.yml), then `checkers run --config`
with the preset on the same range, and prints per checker: same verdict, same finding count, wall
time of both.

    python bench/vllmcpp_parity.py [--corpus ../shared/corpus] [--json OUT] [--ranges N] [--scan-history]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

DOC_CHECKPOINT_ADDED = "a40a9e3b"  # the commit that added scripts/check-doc-checkpoint.py
# vllm.cpp's checker -> the redfirst checkers (by `checkers run` item id prefix) that stand for it
PAIRS: dict[str, tuple[str, ...]] = {
    "check-agent-record.py": ("specs", "matrices"),
    "check-doc-checkpoint.py": ("doc_checkpoint",),
    "check-device-leakage.py": ("ratchets",),
    "commit-protocol-tag": ("trailers",),
    "check-readme-structure.py": ("script:scripts/check-readme-structure.py",),
    "check-model-checklist.py": ("script:scripts/check-model-checklist.py",),
}
# blobs the corpus tarball does not hold (large tokenizer goldens); no checker reads them
ABSENT = ("tests/parity/goldens/tokenizer_deepseek_v2/tokenizer.json", "tests/parity/goldens/tokenizer_qwen36/tokenizer.json",
          "a.out")
POLICY = "checkers:\n  preset: agents-record\n"
RECORD_SCRIPT_ADDED = "2be29a16"  # the commit that added scripts/check-agent-record.py
# The commits at which vllm.cpp's own check-agent-record.py fails, from a scan of every commit from
# RECORD_SCRIPT_ADDED to d85906ae (`--scan-history` repeats it): each is a range parent..commit of kind
# `failing`, judged for that script's pair only (the other scripts did not all exist then).
AGENT_RECORD_FAILS = ("f61cc8ba", "0f1a60bd", "69d92598", "1115648d", "622b77e7", "58fb6c5b", "7c96dd9f", "d4bd4acf",
                      "9ef45b34", "c351dff2", "b8aeff1d")
ERROR_LINE = re.compile(r"^(?:ERROR:|::error::)", re.M)


@dataclass(frozen=True)
class Range:
    kind: str  # merge | pr | window
    base: str
    head: str


@dataclass
class Side:
    verdict: str  # GREEN | RED | NO_DECISION | ERROR | absent
    findings: int
    seconds: float
    lines: list[str] = field(default_factory=list)  # what it reported, for the explanations


@dataclass
class Pair:
    range: Range
    checker: str
    script: Side
    redfirst: Side
    detail: list[str] = field(default_factory=list)

    @property
    def same_verdict(self) -> bool:
        return self.script.verdict == self.redfirst.verdict

    @property
    def same_count(self) -> bool:
        return self.script.findings == self.redfirst.findings


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def prepare(corpus: Path, work: Path) -> Path:
    """A non-bare clone of the corpus repository, sparse-checked-out without the blobs the tarball lacks."""
    clone = work / "clone"
    if (clone / ".git").is_dir():
        return clone
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "repo").is_dir():
        with tarfile.open(corpus / "vllm.cpp" / "vllm.cpp.git.tar.gz") as tar:
            tar.extractall(work, filter="data")
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(work / "repo"), str(clone)], check=True)
    git(clone, "sparse-checkout", "set", "--no-cone", "/*", *(f"!/{p}" for p in ABSENT))
    return clone


def ranges(clone: Path, want: int) -> list[Range]:
    """Every first-parent merge and its PR range, then windows of 1..13 commits spread evenly, the
    last ending at the corpus's tip (the clone's origin/HEAD, whatever is checked out)."""
    tip = git(clone, "rev-parse", "origin/HEAD")
    out: list[Range] = []
    for line in git(clone, "log", "--first-parent", "--merges", "--format=%H %P", f"{DOC_CHECKPOINT_ADDED}..{tip}").splitlines():
        merge, first, second = line.split()[:3]
        out.append(Range("merge", first, merge))
        out.append(Range("pr", git(clone, "merge-base", first, second), second))
    mainline = git(clone, "rev-list", "--first-parent", "--reverse", f"{DOC_CHECKPOINT_ADDED}..{tip}").splitlines()
    windows = max(want - len(out), 1)
    heads = [mainline[round(i * (len(mainline) - 1) / max(windows - 1, 1))] for i in range(windows)]
    heads[-1] = mainline[-1]
    for i, head in enumerate(heads):
        size = 1 + (i * 5) % 13  # 1..13 commits, varied
        base = git(clone, "rev-parse", f"{head}~{size}")
        out.append(Range("window", base, head))
    return out


def checkout(clone: Path, sha: str) -> None:
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-f", "--detach", sha],
                   capture_output=True, text=True)  # the absent goldens print errors; all else is checked out
    git(clone, "clean", "-qffdx")
    if git(clone, "rev-parse", "HEAD") != sha:
        raise SystemExit(f"checkout of {sha} failed")


CPU = {"scripts": 0.0, "redfirst": 0.0}  # user+sys seconds of each side's processes and their children


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], cwd: Path, side: str = "scripts") -> tuple[subprocess.CompletedProcess[str], float]:
    """Wall seconds; CPU seconds are added to CPU[side] (the machine is shared: wall time moves with load)."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    CPU[side] += _children_cpu() - cpu
    return proc, time.perf_counter() - start


def script_side(proc: subprocess.CompletedProcess[str], seconds: float) -> Side:
    errors = list(dict.fromkeys(line for line in (proc.stdout + proc.stderr).splitlines() if ERROR_LINE.match(line)))
    return Side("GREEN" if proc.returncode == 0 else "RED", len(errors), seconds, errors)


def protocol_tag_job(clone: Path, rng: Range) -> str | None:
    """The `commit-protocol-tag` job's shell, as ci.yml had it at the head, for a pull_request event."""
    ci = clone / ".github/workflows/ci.yml"
    if not ci.is_file():
        return None
    job = (yaml.safe_load(ci.read_text(encoding="utf-8")).get("jobs") or {}).get("commit-protocol-tag")
    if not job:
        return None
    script = "\n".join(step["run"] for step in job["steps"] if "run" in step)
    return (script.replace("${{ github.event_name }}", "pull_request")
            .replace("${{ github.event.pull_request.base.sha }}", rng.base)
            .replace("${{ github.event.pull_request.head.sha }}", rng.head))


def scan_history(clone: Path) -> list[str]:
    """Every commit from RECORD_SCRIPT_ADDED to the tip at which check-agent-record.py, as it was
    there, exits non-zero (a commit of a side branch without the script is skipped)."""
    fails = []
    for sha in git(clone, "rev-list", "--reverse", f"{RECORD_SCRIPT_ADDED}^..origin/HEAD").splitlines():
        checkout(clone, sha)
        script = clone / "scripts" / "check-agent-record.py"
        if script.is_file() and subprocess.run([sys.executable, str(script)], cwd=clone,
                                               capture_output=True).returncode != 0:
            fails.append(sha[:8])
            print(f"check-agent-record.py fails at {sha[:8]}", file=sys.stderr)
    return fails


def checked_scripts(rng: Range) -> tuple[str, ...]:
    return ("check-agent-record.py",) if rng.kind == "failing" else tuple(PAIRS)


def run_scripts(clone: Path, rng: Range) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for script in checked_scripts(rng):
        if script == "commit-protocol-tag":
            job = protocol_tag_job(clone, rng)
            if job is None:
                out[script] = Side("absent", 0, 0.0)
                continue
            out[script] = script_side(*timed(["bash", "-c", job], clone))
            continue
        path = clone / "scripts" / script
        if not path.is_file():
            out[script] = Side("absent", 0, 0.0)
            continue
        args = ["--base", rng.base, "--head", rng.head] if script == "check-doc-checkpoint.py" else []
        out[script] = script_side(*timed([sys.executable, str(path), *args], clone))
    return out


def run_redfirst(clone: Path, rng: Range, policy: Path) -> tuple[dict[str, list[dict]], float]:
    proc, seconds = timed([sys.executable, "-m", "redfirst.checkers.cli", "run", "--root", str(clone), "--base", rng.base,
                           "--head", rng.head, "--config", str(policy), "--format", "json"], clone, "redfirst")
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"checkers run printed no JSON (rc {proc.returncode}): {proc.stderr[-2000:]}") from None
    items: dict[str, list[dict]] = {}
    for item in doc["items"]:
        items.setdefault(item["id"], []).append(item)
    return items, seconds


def redfirst_side(items: dict[str, list[dict]], prefixes: tuple[str, ...], share: float) -> tuple[Side, list[str]]:
    mine = [i for key, group in items.items() for i in group
            if any(key == p or key.startswith(p + ":") for p in prefixes)]
    if not mine:
        return Side("absent", 0, share), []
    verdicts = {i["verdict"] for i in mine}
    verdict = next(v for v in ("ERROR", "RED", "NO_DECISION", "GREEN") if v in verdicts)
    findings = [f for i in mine for f in i["findings"]]
    detail = [f"{f['file']}:{f['line']}: {f['rule']}: {f['message'][:160]}" for f in findings]
    detail += [f"{i['id']}: {i['verdict']}: {i['reason'][:200]}" for i in mine if i["verdict"] in ("NO_DECISION", "ERROR")]
    return Side(verdict, len(findings), share, detail), detail


@dataclass(frozen=True)
class Timing:
    """One range's cost on each side: wall seconds and CPU seconds (user+sys of the processes and
    their children), and the 1-minute load average when the range started (the machine is shared)."""
    range: Range
    scripts_wall: float
    scripts_cpu: float
    redfirst_wall: float
    redfirst_cpu: float
    load: float


def compare(clone: Path, rng: Range, policy: Path, redfirst_first: bool = False) -> tuple[list[Pair], Timing]:
    """Both sides on one range; `redfirst_first` alternates which runs first, so a load that moves
    during the bench weighs on both sides alike."""
    checkout(clone, rng.head)
    load = os.getloadavg()[0]
    before = dict(CPU)
    if redfirst_first:
        items, redfirst_seconds = run_redfirst(clone, rng, policy)
        scripts = run_scripts(clone, rng)
    else:
        scripts = run_scripts(clone, rng)
        items, redfirst_seconds = run_redfirst(clone, rng, policy)
    pairs = []
    for script in checked_scripts(rng):
        side, detail = redfirst_side(items, PAIRS[script], 0.0)
        pairs.append(Pair(rng, script, scripts[script], side, detail))
    timing = Timing(rng, sum(s.seconds for s in scripts.values()), CPU["scripts"] - before["scripts"],
                    redfirst_seconds, CPU["redfirst"] - before["redfirst"], load)
    return pairs, timing


def table(pairs: list[Pair], script_total: float, redfirst_total: float, n_ranges: int,
          timings: list[Timing] | None = None) -> str:
    rows = ["| vllm.cpp checker | pairs | same verdict | same finding count | script RED | redfirst RED |",
            "|---|---:|---:|---:|---:|---:|"]
    for script in PAIRS:
        mine = [p for p in pairs if p.checker == script]
        rows.append(f"| `{script}` | {len(mine)} | {sum(p.same_verdict for p in mine)} | "
                    f"{sum(p.same_count for p in mine)} | {sum(p.script.verdict == 'RED' for p in mine)} | "
                    f"{sum(p.redfirst.verdict == 'RED' for p in mine)} |")
    same = sum(p.same_verdict for p in pairs)
    rows.append(f"| **all** | {len(pairs)} | {same} ({100 * same / len(pairs):.1f}%) | "
                f"{sum(p.same_count for p in pairs)} | | |")
    rows.append("")
    rows.append(f"Wall time over {n_ranges} ranges: vllm.cpp scripts {script_total:.1f} s "
                f"({script_total / n_ranges:.2f} s/range), `checkers run` with the preset {redfirst_total:.1f} s "
                f"({redfirst_total / n_ranges:.2f} s/range), ratio {redfirst_total / script_total:.2f}x.")
    rows.append(f"CPU time (user+sys, with child processes): scripts {CPU['scripts']:.1f} s, `checkers run` "
                f"{CPU['redfirst']:.1f} s, ratio {CPU['redfirst'] / max(CPU['scripts'], 1e-9):.2f}x.")
    if timings:
        cpu = sorted(t.redfirst_cpu / max(t.scripts_cpu, 1e-9) for t in timings)
        wall = sorted(t.redfirst_wall / max(t.scripts_wall, 1e-9) for t in timings)
        rows.append(f"Per range (sides alternating which runs first): CPU ratio median {cpu[len(cpu) // 2]:.2f}x "
                    f"(min {cpu[0]:.2f}, max {cpu[-1]:.2f}), wall ratio median {wall[len(wall) // 2]:.2f}x "
                    f"(min {wall[0]:.2f}, max {wall[-1]:.2f}); load average {min(t.load for t in timings):.1f}-"
                    f"{max(t.load for t in timings):.1f}.")
        rows += ["", "| range | scripts wall s | scripts CPU s | redfirst wall s | redfirst CPU s | CPU ratio | load |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        rows += [f"| {t.range.kind} {t.range.base[:8]}..{t.range.head[:8]} | {t.scripts_wall:.2f} | {t.scripts_cpu:.2f} | "
                 f"{t.redfirst_wall:.2f} | {t.redfirst_cpu:.2f} | {t.redfirst_cpu / max(t.scripts_cpu, 1e-9):.2f} | "
                 f"{t.load:.1f} |" for t in timings]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=Path(os.environ.get("REDFIRST_CORPUS", "../shared/corpus")))
    p.add_argument("--work", type=Path, default=Path("/tmp/redfirst-vllmcpp-parity"))
    p.add_argument("--ranges", type=int, default=34, help="how many ranges (at least 30 for the issue)")
    p.add_argument("--json", type=Path, help="write every pair, with redfirst's findings, here")
    p.add_argument("--fresh", action="store_true", help="re-extract the tarball into --work")
    p.add_argument("--scan-history", action="store_true",
                   help="find the commits where check-agent-record.py fails anew (minutes) instead of AGENT_RECORD_FAILS")
    args = p.parse_args(argv)
    if args.fresh and args.work.exists():
        shutil.rmtree(args.work)
    clone = prepare(args.corpus, args.work)
    policy = args.work / "redfirst.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    all_pairs: list[Pair] = []
    timings: list[Timing] = []
    fails = scan_history(clone) if args.scan_history else list(AGENT_RECORD_FAILS)
    chosen = ranges(clone, args.ranges) + [Range("failing", git(clone, "rev-parse", f"{sha}^"), git(clone, "rev-parse", sha))
                                           for sha in fails]
    for n, rng in enumerate(chosen, 1):
        pairs, t = compare(clone, rng, policy, redfirst_first=n % 2 == 0)
        timings.append(t)
        all_pairs += pairs
        off = [f"{p.checker}: script {p.script.verdict}/{p.script.findings} redfirst "
               f"{p.redfirst.verdict}/{p.redfirst.findings}" for p in pairs if not p.same_verdict]
        print(f"[{n}/{len(chosen)}] {rng.kind} {rng.base[:8]}..{rng.head[:8]}: scripts {t.scripts_wall:.2f} s "
              f"(CPU {t.scripts_cpu:.2f}), redfirst {t.redfirst_wall:.2f} s (CPU {t.redfirst_cpu:.2f}), load {t.load:.1f}"
              + (f"; DIFFER: {'; '.join(off)}" if off else ""), file=sys.stderr)
    script_total = sum(t.scripts_wall for t in timings)
    redfirst_total = sum(t.redfirst_wall for t in timings)
    print(table(all_pairs, script_total, redfirst_total, len(chosen), timings))
    if args.json:
        doc = {"pairs": [asdict(p) for p in all_pairs], "timings": [asdict(t) for t in timings],
               "cpu": dict(CPU), "wall": {"scripts": script_total, "redfirst": redfirst_total}}
        args.json.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
