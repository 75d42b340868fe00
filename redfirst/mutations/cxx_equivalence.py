"""Trivial compiler equivalence (Papadakis et al., ICSE 2015) for C, C++ and CUDA mutants:
each mutant's translation unit compiled once, with the flags its build uses, before any gate
runs; an object byte-identical to the original's is EQUIVALENT, to an earlier mutant's DUPLICATE.

One name is not the program's and is read as the same everywhere: nvcc's intermediate file,
`tmpxft_<pid>_<counter>-<k>_NAME`, named after nvcc's process and kept in the object's symbol
table (`object_digest`). The flags come from a `compile_commands.json` the build wrote (CMake's
CMAKE_EXPORT_COMPILE_COMMANDS), else from make itself (`make -n -W FILE`, the command it would
run were the file changed), and they must be the builds' own: each gate's build, run with a
witness definition appended to the file, writes no object holding it that no command makes byte
for byte (`_unfound_objects`). Nothing nondeterministic is stripped: where the original compiled
twice gives two objects, equivalence is off for that file and the reason says so."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from redfirst import tempdirs
from redfirst.gates.model import Gate
from redfirst.verdict import MutationOutcome
from redfirst.yamlsrc import YamlError, load_json

COMPILE_TIMEOUT_S = 300.0
CUDA = frozenset({".cu", ".cuh"})
# Flags that write a depfile beside the object (or name it): the object alone is compared.
_DEP_FLAGS = frozenset({"-MD", "-MMD", "-MP"})
_DEP_FLAGS_WITH_VALUE = frozenset({"-MF", "-MT", "-MQ"})


# nvcc's intermediate files: tmpxft_ then its process id and a counter, 8 hex digits each.
_NVCC_TEMPORARY = re.compile(rb"tmpxft_[0-9a-f]{8}_[0-9a-f]{8}")


def object_digest(data: bytes) -> str:
    """The digest equivalence compares of an object's bytes. A caller may rely on this: two
    objects have one digest only where their bytes are the same but for the process id and
    counter in the names of nvcc's intermediate files (the same length, no code refers to them),
    so the same CUDA source compiled twice is the same object, as it is with g++."""
    return hashlib.sha256(_NVCC_TEMPORARY.sub(b"tmpxft_pid______counter_", data)).hexdigest()


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


def find_commands(scratch: Path, file: str, gates: Sequence[Gate], space: Swapping | None = None,
                  seen: Witnessed | None = None) -> tuple[Command, ...] | str:
    """Every command that compiles `file` (relative to the built `scratch` tree): each entry of
    every compile_commands.json naming it, and each compile of it every make build would rerun were
    it changed; or why none is known (a header, or a build that neither writes
    compile_commands.json nor is make). A caller may rely on this: a file two targets compile
    with different flags gives both commands, so equivalence is judged over every object; and
    where `gates` (those whose build compiles the file) are given, the commands are every compile
    those builds make of it, each as the build makes it (`_unfound_objects`, run in `space`, from
    `seen`: `witness` of those gates, run here where not given), or the answer is why not."""
    target = (scratch / file).resolve()
    found: dict[Command, None] = {}
    for db in _databases(scratch, gates):
        try:
            entries = load_json(db)
        except YamlError:
            continue
        for e in entries if isinstance(entries, list) else ():
            command = _entry_command(e, db.parent, target)
            if command is not None:
                found[command] = None
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
                found[Command(scratch, tuple(argv))] = None
    if found:
        return (_included_elsewhere(scratch, file, gates)
                or _unfound_objects(space or _InPlace(scratch), file, tuple(found), gates, seen) or tuple(found))
    return (f"no compile command compiles {file} (no compile_commands.json names it and no make build "
            "would rebuild it alone): equivalence needs a translation unit of its own")


class _InPlace:
    """The file's bytes swapped in `root` itself, then restored (no journal: a caller's own tree)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextlib.contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        path = self.root / rel_file
        original = path.read_bytes()
        path.write_bytes(new_bytes)
        try:
            yield
        finally:
            path.write_bytes(original)


def _witnessed(source: bytes, token: str) -> bytes:
    """`source` with a definition at its end that every object compiled from it keeps: `token`'s
    bytes and the main file of the unit compiling it (`__BASE_FILE__`: itself, or the unit that
    #includes it) in a used, file-local array, behind a guard of its own (a header included twice)."""
    name = token.replace("-", "_")
    return (source + (b"" if source.endswith(b"\n") or not source else b"\n")
            + f'#ifndef {name}\n#define {name}\nstatic const char {name}_[] __attribute__((used)) = "{token}:" '
              f"__BASE_FILE__;\n#endif\n".encode())


def _output(command: Command) -> Path | None:
    """Where `command` writes its object (`-o X`, `-oX`), or None where it does not say."""
    argv = command.argv
    for i, a in enumerate(argv):
        if a == "-o" and i + 1 < len(argv):
            return Path(os.path.normpath(command.directory / argv[i + 1]))
        if a.startswith("-o") and len(a) > 2:
            return Path(os.path.normpath(command.directory / a[2:]))
    return None


def _linked(path: str) -> bool:
    """Whether `path` is what a link writes (an ELF executable or shared object, an ar archive):
    it holds the objects' code, and is made from them, not from the source."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return False
    return head.startswith(b"!<arch>\n") or (head.startswith(b"\x7fELF") and len(head) == 18
                                              and int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")
                                              in (2, 3))


def _units(path: str, needle: bytes) -> tuple[str, ...]:
    """The units whose witness `path` holds: the main file named after each `needle`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ()
    found, at = [], data.find(needle)
    while at >= 0:
        end = data.find(b"\0", at + len(needle))
        found.append(os.fsdecode(data[at + len(needle):end if end >= 0 else len(data)]))
        at = data.find(needle, at + len(needle))
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Witnessed:
    """What each gate's build did with a file given a witness definition at its end: the
    witnessed bytes (`source`), per gate id the outputs it wrote holding the witness (absolute
    path -> `object_digest`), and per gate id why its build failed with it."""

    source: bytes
    outputs: Mapping[str, Mapping[str, str | None]]
    failed: Mapping[str, str]
    units: Mapping[str, tuple[str, ...]]      # each output -> the main files of the units it holds

    def builds(self, gate_id: str) -> bool:
        """Whether the gate's build compiled the file: an output it wrote holds the witness."""
        return bool(self.outputs.get(gate_id))


def witness(space: Swapping, file: str, gates: Sequence[Gate]) -> Witnessed:
    """Each gate's build run once in `space` with a witness appended to `file` (`_witnessed`,
    outside every #if): the outputs it then wrote that hold the witness are those it compiled
    from the file, or from a unit that #includes it, or linked from those (gates sharing one build
    share its answer). A caller may rely on this: a gate whose build compiles the file, however its
    `build:` is spelled and whether or not it leaves a depfile, has such an output."""
    from redfirst.mutations.builds import gate_step, run_steps
    from redfirst.mutations.compiled import stamps

    scratch = space.root
    token = f"redfirst_witness_{secrets.token_hex(8)}"
    needle = token.encode() + b":"          # then the unit's main file: the source spells it `:" __BASE_FILE__`
    witnessed = _witnessed((scratch / file).read_bytes(), token)
    outputs: dict[str, dict[str, str | None]] = {}
    units: dict[str, tuple[str, ...]] = {}
    failed: dict[str, str] = {}
    done: dict[str, str] = {}               # build step key -> the first gate id that ran it
    with space.mutated(file, witnessed, "equivalence witness"):
        for gate in gates:
            if gate.build is None:
                continue
            step = gate_step(gate)
            if step.key in done:
                first = done[step.key]
                outputs[gate.id] = outputs.get(first, {})
                if first in failed:
                    failed[gate.id] = failed[first]
                continue
            done[step.key] = gate.id
            before = stamps([scratch], [scratch / ".git"])
            status = run_steps([step], scratch)
            if status.state != "ok":
                failed[gate.id] = f"{status.state}: {status.reason}" if status.reason else status.state
                continue
            after = stamps([scratch], [scratch / ".git"])
            for p in sorted(after):
                if before.get(p) != after[p] and Path(p) != scratch / file and (held := _units(p, needle)):
                    units[p] = held
            outputs[gate.id] = {p: _digest_of(p) for p in sorted(after) if p in units and before.get(p) != after[p]}
    return Witnessed(witnessed, outputs, failed, units)


def _unfound_objects(space: Swapping, file: str, commands: Sequence[Command], gates: Sequence[Gate],
                     seen: Witnessed | None = None) -> str | None:
    """Why `commands` are not every compile the `gates`' builds make of `file`, or None. From
    `witness` (`seen`, else run here): each output a build wrote holding the witness must be the
    object of one of `commands`, byte for byte what that command makes of the witnessed file, or
    a link of objects; and each build must write one of those objects. A caller may rely on this:
    None only where no build compiled the file into an object no command names (another gate's
    flags, a unit that #includes it, a compile database of another configuration)."""
    seen = seen if seen is not None else witness(space, file, gates)
    scratch = space.root
    made: dict[str, str | None] = {}
    for command in commands:
        out = _output(command)
        if out is not None:
            made[str(out)] = _compile(command, out.name, lambda: space.mutated(file, seen.source, "equivalence")).digest
    for gate in gates:
        if gate.build is None:
            continue
        if gate.id in seen.failed:
            return (f"the build of gate {gate.id} did not build {file} with a definition appended "
                    f"({seen.failed[gate.id]}): which objects it makes of it is not known")
        ours = 0
        for path, digest in seen.outputs.get(gate.id, {}).items():
            rel = os.path.relpath(path, scratch)
            others = [u for u in seen.units.get(path, ()) if os.path.basename(u) != os.path.basename(file)]
            if others:
                return (f"{rel}, which the build of gate {gate.id} writes, holds {file} compiled into a unit of "
                        f"{others[0]} (it #includes {file}): its mutants' effect there is not compared, "
                        "equivalence is off for it")
            if path in made:
                if made[path] is None or digest != made[path]:
                    return (f"{rel}, which the build of gate {gate.id} compiles from {file}, is not what the "
                            "compile command naming it makes (other flags, another configuration's command): "
                            "equivalence is off for it")
                ours += 1
            elif not _linked(path):
                return (f"{rel}, which the build of gate {gate.id} compiles from {file} (or a unit that "
                        "#includes it), is no compile command's object: its mutants' effect there is not "
                        "compared, equivalence is off for it")
        if not ours:
            return (f"the build of gate {gate.id} compiles {file} by no command found (none of the objects "
                    "it wrote is one): equivalence is off for it")
    return None


def _included_elsewhere(scratch: Path, file: str, gates: Sequence[Gate]) -> str | None:
    """Why `file`'s own objects do not show every mutant's effect: a depfile in the build's folders
    (gcc's and nvcc's -MD, CMake's compiler_depend.make) lists it as a prerequisite of an object
    whose source is another file (a test that #includes a .cpp to reach its static functions, a
    unity build); or None. Builds that keep no depfile (ninja's .ninja_deps) are not read."""
    target = (scratch / file).resolve()
    folders = dict.fromkeys([scratch / g.build_dir for g in gates if g.build_dir] + [scratch / "build"])
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if not (path.suffix == ".d" or path.name in ("compiler_depend.make", "depend.make")) or not path.is_file():
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for rule in text.replace("\\\n", " ").splitlines():
                head, sep, tail = rule.partition(": ")
                names = [p.replace("\0", " ") for p in tail.replace("\\ ", "\0").split()] if sep else []
                if len(names) > 1 and not _same(names[0], target, (scratch, folder)) and any(
                        _same(p, target, (scratch, folder)) for p in names[1:]):
                    return (f"{file} is #included by another translation unit ({head.strip()}, as "
                            f"{path.relative_to(scratch)} says): its own object cannot show every mutant's "
                            "effect, equivalence is off for it")
    return None


def _same(name: str, target: Path, bases: Sequence[Path]) -> bool:
    return any((base / name).resolve() == target for base in bases)


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


def _digest_of(path: str) -> str | None:
    try:
        return object_digest(Path(path).read_bytes())
    except OSError:
        return None


def _compile(command: Command, name: str, swapped: Callable[[], AbstractContextManager[None]] | None) -> Compiled:
    """`command`'s object digest, written to a temporary `name`, with the source `swapped` in
    (None: as the tree has it now), or the compiler's first error line."""
    with tempdirs.folder("redfirst-tce-") as tmp:
        out = Path(tmp) / name
        try:
            with swapped() if swapped is not None else contextlib.nullcontext():
                run = subprocess.run(_object_argv(command.argv, out), cwd=command.directory,
                                     capture_output=True, text=True, errors="replace",
                                     timeout=COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            return Compiled(None, f"the compiler could not run: {e}")
        if run.returncode != 0 or not out.is_file():
            said = [line for line in (run.stderr or run.stdout).splitlines() if "error" in line]
            return Compiled(None, (said or (run.stderr or run.stdout).splitlines() or [f"exit {run.returncode}"])[0])
        return Compiled(object_digest(out.read_bytes()))


class Equivalence:
    """The objects of one file's mutants, compiled in the built scratch tree `space` (a
    Worktree: its `mutated` swaps the file and restores it byte for byte, journalled) by each of
    `commands` (every translation unit the build makes of it): a mutant's digest is that of all
    its objects together. `off`: why equivalence is not decided for the file."""

    def __init__(self, space: Swapping, file: str, commands: Command | Sequence[Command] | str) -> None:
        self.space, self.file = space, file
        self.original = (space.root / file).read_bytes()
        self.commands = (commands,) if isinstance(commands, Command) else () if isinstance(commands, str) \
            else tuple(commands)
        self.off: str | None = commands if isinstance(commands, str) else None
        self.seen: dict[str, str] = {}       # object digest -> the first mutant's key that made it
        self.base: str | None = None
        if self.commands:
            first, second = self.compile(self.original), self.compile(self.original)
            if first.digest is None:
                self.off = f"the original {file} did not compile with its build's command: {first.failed}"
            elif first.digest != second.digest:
                self.off = (f"the original {file} compiled twice gives two different objects (a date, a random "
                            "seed): equivalence is off for it")
            else:
                self.base = first.digest

    def compile(self, source: bytes) -> Compiled:
        """The digest of the objects of every command, in order, or the first failure."""
        digests = []
        for command in self.commands:
            done = self._compile(command, source)
            if done.digest is None:
                return done
            digests.append(done.digest)
        return Compiled(hashlib.sha256(" ".join(digests).encode()).hexdigest())

    def _compile(self, command: Command, source: bytes) -> Compiled:
        return _compile(command, "mutant.o", lambda: self.space.mutated(self.file, source, "equivalence"))

    def judge(self, key: str, source: bytes) -> tuple[str, str] | None:
        """("EQUIVALENT" | "DUPLICATE" | "DISCARDED", reason) for the mutant `key` of the file's
        bytes `source`, or None: its object is new (the gates decide). A caller may rely on this:
        never None for a mutant that did not compile, never a word where equivalence is off."""
        if self.off is not None or self.base is None:
            return None
        done = self.compile(source)
        if done.digest is None:
            return MutationOutcome.DISCARDED.value, f"not compiled: {done.failed}"
        if done.digest == self.base:
            return MutationOutcome.EQUIVALENT.value, "its object is byte-identical to the original's: the compiler made the same code"
        if done.digest in self.seen:
            return MutationOutcome.DUPLICATE.value, f"its object is byte-identical to that of {self.seen[done.digest]}"
        self.seen[done.digest] = key
        return None

