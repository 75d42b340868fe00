"""A mutation's builds: the steps its gates declare (`build:`, `build_dir:`), running them with a
bound, telling a machine failure from a compile error, and seeding a worker's build folders."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from redfirst import journal, process, tempdirs
from redfirst.gates.model import Gate
from redfirst.mutations import git
from redfirst.mutations.model import Mutation
from redfirst.mutations.outcome import BuildStatus

BUILD_TIMEOUT_S = 1800.0


def _build_key(argv: tuple[str, ...] | str) -> str:
    return argv if isinstance(argv, str) else "\0".join(argv)


@dataclass(frozen=True)
class BuildStep:
    """One build as mutate runs it, in the workspace's root: a mutation's own, or a gate's
    (run here, once for every gate that declares the same command, so the gates skip it)."""

    argv: tuple[str, ...] | str
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = BUILD_TIMEOUT_S
    build_dirs: tuple[str, ...] = ()     # where it writes its outputs (the gates' `build_dir:`)

    @property
    def key(self) -> str:
        # Same argv, same cwd (always the root), same environment: the same build.
        return _build_key(self.argv) + "".join(f"\0{k}={v}" for k, v in self.env)


def build_steps(m: Mutation, gates: Mapping[str, Gate]) -> list[BuildStep]:
    """The builds a mutation needs: its own, which replaces the gates' (DESIGN section 3),
    else each distinct build of its gates once."""
    named = [gates[g] for g in m.expect.gates if g in gates]
    dirs = tuple(sorted({g.build_dir for g in named if g.build_dir}))
    if m.build is not None:
        return [BuildStep(m.build, build_dirs=dirs)]
    steps: dict[str, BuildStep] = {}
    for gate in named:
        if gate.build is None:
            continue
        step = gate_step(gate)
        known = steps.get(step.key)
        if known is not None:
            step = dataclasses.replace(known, timeout=max(known.timeout, step.timeout),
                                       build_dirs=tuple(sorted({*known.build_dirs, *step.build_dirs})))
        steps[step.key] = step
    return list(steps.values())


def gate_step(gate: Gate) -> BuildStep:
    assert gate.build is not None
    return BuildStep(gate.build, tuple(sorted(dict(gate.driver.env).items())), gate.build_timeout,
                     (gate.build_dir,) if gate.build_dir else ())


def builds_ran(gates: Iterable[Gate], keys: Iterable[str]) -> bool:
    """Whether these gates skip their own builds: some has one, and the engine ran each (`keys`)."""
    built = [g for g in gates if g.build is not None]
    ran = set(keys)
    return bool(built) and all(gate_step(g).key in ran for g in built)


# `file:line[:col]: error: ...` (gcc, clang, nvcc), then the linker's first `undefined reference`
# (GNU ld, gold, mold: the symbol a person adds back, not collect2's closing "ld returned 1"),
# then any line that says error. The location is the line's start (no `:` in it), so a warning
# quoting `x.c:9: error:` is not one.
_FIRST_ERROR = (re.compile(r"^[^\s:][^:\n]*:\d+(?::\d+)?: (?:fatal )?error\b.*$", re.MULTILINE),
                re.compile(r"^.*\bundefined reference to\b.*$", re.MULTILINE),
                re.compile(r"^(?!.*\bwarning\b).*\berror\b.*$", re.MULTILINE | re.IGNORECASE))  # not a warning's


# A build that failed because of the machine, not the code: a disk or quota full, a read-only
# or exhausted file table, memory out (the OOM killer's "Killed signal"), a compiler crash.
_MACHINE_FAILURE = re.compile(
    r"^.*(?:No space left on device|Disk quota exceeded|Read-only file system|Too many open files|"
    r"Cannot allocate memory|virtual memory exhausted|out of memory allocating|Killed signal terminated program|"
    r"internal compiler error).*$", re.MULTILINE | re.IGNORECASE)


def machine_failure(stderr: str, stdout: str) -> str | None:
    """The first line saying a build failed for the machine's reason, else None."""
    for text in (stderr, stdout):
        found = _MACHINE_FAILURE.search(text)
        if found:
            return found.group(0).strip()[:300]
    return None


def failure_line(stderr: str, stdout: str) -> str:
    """Why a build failed, in one line: the compiler's first `error:` line (what a person fixes
    first), else the linker's first `undefined reference` line, not the last line (make's
    `*** [target] Error 1`, collect2's `ld returned 1 exit status`)."""
    for pattern in _FIRST_ERROR:
        for text in (stderr, stdout):
            found = pattern.search(text)
            if found:
                return found.group(0).strip()[:300]
    return (stderr.strip().splitlines() or stdout.strip().splitlines() or [""])[-1][:200]


def run_build(argv: tuple[str, ...] | str, cwd: Path, env: Mapping[str, str] | None = None,
              timeout: float = BUILD_TIMEOUT_S) -> BuildStatus:
    """Run a build command; a compile error is `failed` (its reason the first error line), a
    build that could not start (126/127) is `error`, a signal, a timeout or a failure the machine
    caused (disk full, out of memory, a compiler crash) is `crashed`."""
    with tempdirs.folder("mutate-build-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        exited = process.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, stdout=out, stderr=err,
                             timeout=timeout)
        said_err, said_out = err.read_text(errors="replace"), out.read_text(errors="replace")
    tail = (said_err.strip().splitlines() or said_out.strip().splitlines() or [""])[-1][:200]
    if not exited.started or exited.returncode in (126, 127):
        return BuildStatus("error", f"{exited.describe()} {tail}".strip())
    if exited.timed_out or exited.signal is not None:
        return BuildStatus("crashed", exited.describe())
    if exited.returncode != 0 and (machine := machine_failure(said_err, said_out)):
        # not a compile error: never a `build: fails` kill (the outcome reads `crashed` so)
        return BuildStatus("crashed", f"{exited.describe()}: {machine}")
    if exited.returncode != 0:
        why = failure_line(said_err, said_out)
        return BuildStatus("failed", f"{exited.describe()}: {why}" if why else exited.describe())
    return BuildStatus("ok", "")


def run_steps(steps: Sequence[BuildStep], root: Path) -> BuildStatus:
    """Each build in turn, stopping at the first that is not ok; `none` when there is none."""
    status = BuildStatus("none")
    for step in steps:
        status = run_build(step.argv, root, dict(step.env), step.timeout)
        if status.state != "ok":
            return status
    return status


def _newest_output_ns(folders: Iterable[Path]) -> int:
    newest = 0
    for folder in folders:
        if not folder.is_dir():     # an output file of its own (an untracked one at the root)
            with contextlib.suppress(OSError):
                newest = max(newest, os.lstat(folder).st_mtime_ns)
            continue
        for path, _, names in os.walk(folder):
            for name in names:
                with contextlib.suppress(OSError):
                    newest = max(newest, os.lstat(os.path.join(path, name)).st_mtime_ns)
    return newest


def outdate_outputs(source: Path, folders: Sequence[Path]) -> None:
    """Make `source` newer than every output in `folders`, so the next build recompiles it:
    a file written (mutated or restored) within the timestamp granularity of an object, or
    before outputs stamped ahead, must never leave a stale object passing as its build."""
    newest = _newest_output_ns(folders)
    for step in (1, 2):
        if not newest or source.stat().st_mtime_ns > newest:
            return
        stamp = newest + step * 1_000_000_000      # whole seconds: coarse filesystems keep them
        journal.move_forward(source, stamp)


def build_outputs(root: Path, steps: Sequence[BuildStep]) -> list[Path]:
    """Where the builds write: their declared `build_dir:`s and whatever else git does not track
    under `root` (ignored included). A caller may rely on this: every file a build writes that
    git does not track is in one of them, declared or not (a Makefile writing its depfiles to the
    declared build/ and its objects to obj/), so byte-identical outputs are all of them."""
    if not steps:
        return []       # no build: nothing writes outputs (and nothing is outdated)
    declared = [root / d for s in steps for d in s.build_dirs]
    try:
        untracked = git.z_list(root, "ls-files", "--others", "--directory", "--no-empty-directory")
    except git.GitError:
        return declared
    inside = [os.path.abspath(d) + os.sep for d in declared]
    return declared + [root / p.rstrip("/") for p in untracked
                       if not (os.path.abspath(root / p.rstrip("/")) + os.sep).startswith(tuple(inside))]


def outside_reads(root: Path, folders: Sequence[Path], skip: Sequence[Path] = ()) -> frozenset[str]:
    """Every file a depfile in `folders` (gcc's and nvcc's -MD, CMake's compiler_depend.make and
    depend.make, Ninja's .ninja_deps as `ninja -t deps` lists it) names as an object's
    prerequisite that lies outside `root` and `skip`, by its absolute path: what the build read
    there (a header of `-I` a folder beside the project). `skip` (redfirst's store) is not read."""
    inside = tuple(os.path.join(os.path.abspath(p), "") for p in (root, *skip))
    left_out = {os.path.abspath(p) for p in skip}
    found: set[str] = set()

    def add(base: str, named: str) -> None:
        full = os.path.normpath(os.path.join(base, named))
        if not full.startswith(inside) and os.path.isfile(full):
            found.add(full)

    for folder in folders:
        if not folder.is_dir():
            continue
        if os.path.abspath(folder) in left_out:
            continue
        for path, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if os.path.abspath(os.path.join(path, d)) not in left_out]
            if ".ninja_deps" in names:
                for named in _ninja_deps(Path(path)):
                    add(path, named)
            for name in names:
                if not (name.endswith(".d") or name in ("compiler_depend.make", "depend.make")):
                    continue
                try:
                    text = Path(path, name).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                for rule in text.replace("\\\n", " ").splitlines():
                    _head, sep, tail = rule.partition(": ")
                    for named in tail.replace("\\ ", "\0").split() if sep else ():
                        add(str(root), named.replace("\0", " "))
    return frozenset(found)


def _ninja_deps(folder: Path) -> list[str]:
    """The prerequisites Ninja keeps in `folder`'s .ninja_deps (`ninja -t deps`: an indented path
    a line under each object), relative to `folder` where not absolute; none where ninja cannot
    say (not installed, a log of another version)."""
    try:
        listed = subprocess.run(["ninja", "-C", str(folder), "-t", "deps"], capture_output=True, text=True,
                                errors="surrogateescape", timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in listed.stdout.splitlines() if line.startswith((" ", "\t")) and line.strip()]


def seedable(folder: Path, source_root: Path | None = None) -> bool:
    """A build directory that still works when copied elsewhere: CMake and Meson record their
    absolute source and build paths in it (at any depth), and so does any file that holds
    `source_root`'s absolute path (a depfile of `-I$(CURDIR)/include`, a generated Makefile): make
    or ninja in the copy would check the first worktree's sources, never its own. Those are built
    in each worker instead."""
    if not folder.is_dir():
        return False
    # at any depth: `build_dir: out` may hold its CMake build in out/cmake
    if any("CMakeCache.txt" in names or "meson-private" in dirs for _p, dirs, names in os.walk(folder)):
        return False
    return source_root is None or naming(folder, source_root) is None


def naming(folder: Path, root: Path) -> Path | None:
    """The first file under `folder` whose bytes hold `root`'s absolute path (as given or resolved)."""
    needles = {os.fsencode(str(root)), os.fsencode(os.path.realpath(root))}
    keep = max(map(len, needles)) - 1
    for path, _, names in os.walk(folder):
        for name in names:
            found = Path(path, name)
            if found.is_symlink():
                continue
            try:
                with found.open("rb") as f:
                    tail = b""
                    while chunk := f.read(1 << 20):
                        if any(n in tail + chunk for n in needles):
                            return found
                        tail = chunk[-keep:]
            except OSError:
                return found     # unreadable: not known to be free of it
    return None


def seed(step: BuildStep, source_root: Path, root: Path) -> bool:
    """Copy the step's build directories from `source_root` (mtimes kept) into `root`;
    False when any of them cannot be copied (`seedable`: the step must then be built there)."""
    if not step.build_dirs or not all(seedable(source_root / d, source_root) for d in step.build_dirs):
        return False
    for d in step.build_dirs:
        shutil.copytree(source_root / d, root / d, symlinks=True, dirs_exist_ok=True)
    return True
