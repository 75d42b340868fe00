"""Speed of the record checkers (results go to bench/RESULTS.md under "## Checkers").

1. trailers + commit_style over a synthetic range of N commits (default 10,000) built with one
   `git fast-import`, timed as the real `checkers` command, beside one git process per commit
   (`git log -1 --format=%(trailers:only,unfold) SHA` for every commit of the range).
2. the agents-record preset on the vllm.cpp corpus snapshot (a depth-1 clone, as CI checks it out),
   beside the corpus's own checker time given in the issue (1.6 to 2.0 s for check-agent-record.py
   on the full repository at that commit; that script and repository are not available here).

Run: python bench/checkers_bench.py [--commits 10000] [--per-commit N] [--write]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("REDFIRST_CORPUS", ROOT / "../shared/corpus/vllm.cpp")).resolve()
POLICY = """checkers:
  trailers:
    require: {Assisted-by: "^[A-Za-z0-9][^:]*:[^ ]+ \\\\[.+\\\\]$"}
    forbid_in: {Signed-off-by: "(?i)\\\\b(claude|gpt|copilot|bot)\\\\b"}
  commit_style:
    subject: "^(feat|fix|spec|docs|test|refactor|chore)(\\\\([A-Za-z0-9_.-]+\\\\))?: .*[^.]$"
    body: required
"""
ENV = {**os.environ, "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
       "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def git(cwd: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, input=data, check=True, capture_output=True).stdout.decode()


def synthetic_range(path: Path, n: int) -> str:
    """N commits above a base holding the policy; every 50th is a merge, every 7th breaks a rule."""
    git(path, "init", "-q", "-b", "main")
    yaml = POLICY.encode()
    who = b"committer Bench <b@example.invalid> 1700000000 +0000\n"
    chunks = [b"commit refs/heads/main\nmark :1\n" + who + b"data 4\nbase\n",
              f"M 644 inline redfirst.yaml\ndata {len(yaml)}\n".encode() + yaml + b"\n"]
    for i in range(n):
        subject = f"feat(core): change number {i}" if i % 7 else f"Change number {i}."
        message = (f"{subject}\n\nWhy change {i} is needed, in a sentence or two.\n\n"
                   f"Assisted-by: Tool:model-{i % 3} [Tool]\nSigned-off-by: Person {i % 11} <p@example.invalid>\n")
        data = message.encode()
        chunks.append(f"commit refs/heads/main\nmark :{i + 2}\n".encode() + who + f"data {len(data)}\n".encode()
                      + data + f"from :{i + 1}\n".encode())
        if i % 50 == 49 and i > 100:
            chunks.append(f"merge :{i - 60}\n".encode())
    git(path, "fast-import", "--quiet", data=b"".join(chunks))
    return git(path, "rev-list", "--max-parents=0", "main").strip()


def timed(cmd: list[str], cwd: Path, repeat: int) -> tuple[float, list[float], int, float]:
    """Median wall time, every wall time, the exit status, and the median CPU time (user+sys of the
    command and its git children), which a loaded machine inflates far less than the wall time."""
    times, cpus = [], []
    rc = 0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        rc = proc.returncode
    return statistics.median(times), times, rc, statistics.median(cpus)


def per_commit(path: Path, shas: list[str]) -> float:
    start = time.perf_counter()
    for sha in shas:  # the naive shape: a process per commit
        subprocess.run(["git", "log", "-1", "--format=%(trailers:only,unfold)", sha], cwd=path, env=ENV,
                       capture_output=True, check=True)
    return time.perf_counter() - start


def corpus_clone(tmp: Path) -> Path | None:
    snap = CORPUS / "snapshot-d85906ae"
    if not snap.is_dir():
        return None
    src = tmp / "snapshot"
    shutil.copytree(snap, src)
    for p in src.rglob("*"):
        if p.is_file():
            p.chmod(0o644)
    (src / "redfirst.yaml").write_text("checkers:\n  preset: agents-record\n")
    git(src, "init", "-q", "-b", "main")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "snapshot d85906ae")
    clone = tmp / "clone"
    git(tmp, "clone", "-q", "--depth", "1", f"file://{src}", str(clone))
    return clone


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--per-commit", type=int, default=0, help="commits timed one git process each (0: all)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="append the results to bench/RESULTS.md")
    args = ap.parse_args()
    checkers = shutil.which("checkers")
    if checkers is None:
        print("the `checkers` script is not installed (pip install -e .)", file=sys.stderr)
        return 2
    lines = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        repo = tmp / "range"
        repo.mkdir()
        base = synthetic_range(repo, args.commits)
        cmd = [checkers, "run", "--base", base, "--head", "main", "--only", "trailers", "--only", "commit_style",
               "--format", "json"]
        med, times, rc, cpu = timed(cmd, repo, args.repeat)
        shas = git(repo, "rev-list", f"{base}..main").split()
        sample = shas[: args.per_commit] if args.per_commit else shas
        loop = per_commit(repo, sample)
        scaled = loop * len(shas) / len(sample)
        lines.append(f"- trailers + commit_style over {len(shas)} commits (one `git log` for the range): "
                     f"median {med:.2f} s wall of {args.repeat} runs ({', '.join(f'{t:.2f}' for t in times)}), "
                     f"median CPU {cpu:.2f} s (user+sys, checkers and git), exit {rc}")
        what = "all" if len(sample) == len(shas) else f"{len(sample)} timed, scaled to {len(shas)}"
        lines.append(f"- one git process per commit (`git log -1 --format=%(trailers:only,unfold)`, {what}): "
                     f"{scaled:.2f} s, {scaled / med:.0f}x slower")
        clone = corpus_clone(tmp)
        if clone is None:
            lines.append(f"- agents-record preset: corpus not found at {CORPUS}")
        else:
            med, times, rc, cpu = timed([checkers, "run", "--format", "json"], clone, args.repeat)
            lines.append(f"- agents-record preset on snapshot-d85906ae (110 engine rows, depth-1 clone): median "
                         f"{med:.2f} s wall of {args.repeat} runs ({', '.join(f'{t:.2f}' for t in times)}), median CPU "
                         f"{cpu:.2f} s, exit {rc} "
                         f"(NO_DECISION for the inputs the corpus lacks); the corpus's own check-agent-record.py: "
                         f"1.6 to 2.0 s on the full repository at that commit (figure from the issue, not re-run here)")
    load = os.getloadavg()
    machine = (f"machine: {os.cpu_count()} cores, `{' '.join(platform.uname())}`, Python {platform.python_version()}, "
               f"git {git(ROOT, '--version').split()[-1]}, load average at the end {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}")
    report = "\n".join([f"### {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "", machine, "", *lines, ""])
    print(report)
    if args.write:
        results = ROOT / "bench" / "RESULTS.md"
        text = results.read_text() if results.exists() else "# Benchmark results\n"
        if "## Checkers" not in text:
            text = text.rstrip("\n") + "\n\n## Checkers\n\n"
            results.write_text(text)
        head, _sep, tail = text.partition("## Checkers\n")
        rest = tail.split("\n## ", 1)
        section = (rest[0].rstrip("\n") + "\n\n" if rest[0].strip() else "\n") + report
        results.write_text(head + "## Checkers\n" + section + ("\n## " + rest[1] if len(rest) > 1 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
