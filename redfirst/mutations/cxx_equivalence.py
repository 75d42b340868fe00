"""Trivial compiler equivalence (Papadakis et al., ICSE 2015) for C, C++ and CUDA mutants:
each mutant's translation unit compiled once, with the flags its build uses, before any gate
runs; an object byte-identical to the original's is EQUIVALENT, to an earlier mutant's DUPLICATE.

The flags come from a `compile_commands.json` the build wrote (CMake's
CMAKE_EXPORT_COMPILE_COMMANDS), else from make itself (`make -n -W FILE`, the command it would
run were the file changed). Nothing nondeterministic is stripped: where the original compiled
twice gives two objects, equivalence is off for that file and the reason says so."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from redfirst.gates.model import Gate
from redfirst.yamlsrc import YamlError, load_json

COMPILE_TIMEOUT_S = 300.0
CUDA = frozenset({".cu", ".cuh"})
# Flags that write a depfile beside the object (or name it): the object alone is compared.
_DEP_FLAGS = frozenset({"-MD", "-MMD", "-MP"})
_DEP_FLAGS_WITH_VALUE = frozenset({"-MF", "-MT", "-MQ"})


class Swapping(Protocol):
    root: Path

    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class Command:
    """One translation unit's compile: run in `directory`, `argv` as the build runs it."""

    directory: Path
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Compiled:
    """A compile's object digest, or why there is none (`failed`: the compiler's first lines)."""

    digest: str | None
    failed: str = ""


def no_nvcc(file: str) -> str | None:
    """Why a CUDA file's mutants cannot be compiled here (no nvcc on PATH), or None."""
    if os.path.splitext(file)[1].lower() in CUDA and shutil.which("nvcc") is None:
        return "no nvcc: a CUDA mutant compiles only with nvcc, and this machine has none on PATH"
    return None


def find_command(scratch: Path, file: str, gates: Sequence[Gate]) -> Command | str:
    """The command that compiles `file` (relative to the built `scratch` tree), or why none is
    known: a header, or a build that neither writes compile_commands.json nor is make."""
    target = (scratch / file).resolve()
    for db in _databases(scratch, gates):
        try:
            entries = load_json(db)
        except YamlError:
            continue
        for e in entries if isinstance(entries, list) else ():
            found = _entry_command(e, db.parent, target)
            if found is not None:
                return found
    for gate in gates:
        build = gate.build
        if isinstance(build, str | None) or os.path.basename(build[0]) != "make":
            continue
        try:
            dry = subprocess.run([*build, "-n", "-W", file], cwd=scratch, capture_output=True, text=True,
                                 timeout=COMPILE_TIMEOUT_S, errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in dry.stdout.splitlines():
            try:
                argv = shlex.split(line)
            except ValueError:
                continue
            if "-c" in argv and any(a == file or (scratch / a).resolve() == target for a in argv):
                return Command(scratch, tuple(argv))
    return (f"no compile command compiles {file} (no compile_commands.json names it and no make build "
            "would rebuild it alone): equivalence needs a translation unit of its own")


def _entry_command(e: object, folder: Path, target: Path) -> Command | None:
    """The command of one compile_commands.json entry when it compiles `target`; None for an entry
    that does not, or is not one (the build wrote the file: a malformed entry is no command)."""
    if not isinstance(e, dict):
        return None
    directory, file = e.get("directory", str(folder)), e.get("file", "")
    arguments, command = e.get("arguments"), e.get("command", "")
    if not (isinstance(directory, str) and isinstance(file, str) and isinstance(command, str)):
        return None
    if arguments is not None and not (isinstance(arguments, list) and all(isinstance(a, str) for a in arguments)):
        return None
    if (Path(directory) / file).resolve() != target:
        return None
    try:
        argv = arguments or shlex.split(command)
    except ValueError:  # an unbalanced quote
        return None
    return Command(Path(directory), tuple(argv))


def _databases(scratch: Path, gates: Sequence[Gate]) -> list[Path]:
    places = [scratch / g.build_dir for g in gates if g.build_dir] + [scratch, scratch / "build"]
    return [p / "compile_commands.json" for p in dict.fromkeys(places) if (p / "compile_commands.json").is_file()]


def _object_argv(argv: Sequence[str], out: Path) -> list[str]:
    """The compile writing its object to `out`, and no depfile."""
    found: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "-o" or a in _DEP_FLAGS_WITH_VALUE:
            skip = True
            if a == "-o":
                found += ["-o", str(out)]
            continue
        if a in _DEP_FLAGS or a.startswith(("-MF", "-MT", "-MQ")) or a.startswith("-o") and len(a) > 2:
            if a.startswith("-o"):
                found += ["-o", str(out)]
            continue
        found.append(a)
    return found if "-o" in found else [*found, "-o", str(out)]


class Equivalence:
    """The objects of one file's mutants, compiled in the built scratch tree `space` (a
    Worktree: its `mutated` swaps the file and restores it byte for byte, journalled). `off`: why
    equivalence is not decided for the file."""

    def __init__(self, space: Swapping, file: str, command: Command | str) -> None:
        self.space, self.file = space, file
        self.original = (space.root / file).read_bytes()
        self.command = command if isinstance(command, Command) else None
        self.off: str | None = command if isinstance(command, str) else None
        self.seen: dict[str, str] = {}       # object digest -> the first mutant's key that made it
        self.base: str | None = None
        if self.command is not None:
            first, second = self.compile(self.original), self.compile(self.original)
            if first.digest is None:
                self.off = f"the original {file} did not compile with its build's command: {first.failed}"
            elif first.digest != second.digest:
                self.off = (f"the original {file} compiled twice gives two different objects (a date, a random "
                            "seed): equivalence is off for it")
            else:
                self.base = first.digest

    def compile(self, source: bytes) -> Compiled:
        assert self.command is not None
        with tempfile.TemporaryDirectory(prefix="redfirst-tce-") as tmp:
            out = Path(tmp) / "mutant.o"
            try:
                with self.space.mutated(self.file, source, "equivalence"):
                    run = subprocess.run(_object_argv(self.command.argv, out), cwd=self.command.directory,
                                         capture_output=True, text=True, errors="replace",
                                         timeout=COMPILE_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as e:
                return Compiled(None, f"the compiler could not run: {e}")
            if run.returncode != 0 or not out.is_file():
                said = [line for line in (run.stderr or run.stdout).splitlines() if "error" in line]
                return Compiled(None, (said or (run.stderr or run.stdout).splitlines() or [f"exit {run.returncode}"])[0])
            return Compiled(hashlib.sha256(out.read_bytes()).hexdigest())

    def judge(self, key: str, source: bytes) -> tuple[str, str] | None:
        """("EQUIVALENT" | "DUPLICATE" | "DISCARDED", reason) for the mutant `key` of the file's
        bytes `source`, or None: its object is new (the gates decide). A caller may rely on this:
        never None for a mutant that did not compile, never a word where equivalence is off."""
        if self.off is not None or self.base is None:
            return None
        done = self.compile(source)
        if done.digest is None:
            return "DISCARDED", f"not compiled: {done.failed}"
        if done.digest == self.base:
            return "EQUIVALENT", "its object is byte-identical to the original's: the compiler made the same code"
        if done.digest in self.seen:
            return "DUPLICATE", f"its object is byte-identical to that of {self.seen[done.digest]}"
        self.seen[done.digest] = key
        return None

