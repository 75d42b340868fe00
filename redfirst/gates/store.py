"""The evidence store: one content-addressed folder per run under `.redfirst/evidence/`.

A record folder holds `record.json` (raw facts and the sha256 of every raw file),
the raw files themselves, and `verdict.json` (the verdict at run time, for listing
only: regrading never reads it).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst import yamlsrc
from redfirst.gates.record import RECORD_FILE, VERDICT_FILE, Record, manifest
from redfirst.verdict import Cause, Verdict


class StoreError(Exception):
    """A record that cannot be found or trusted; the message says which and why."""


def own_folder(path: Path, *within: Path) -> Path:
    """`path`, refused (StoreError naming the link) where it or one of the folders `within` it is a symbolic link.

    A repository may commit `.redfirst` or `.redfirst/evidence` as a link to anywhere (a user's home): the store
    would list that folder's subfolders as records and `gates gc` remove them. What a caller may rely on: every
    folder of the store it goes through this for is a real folder of the project, never a link followed."""
    for folder in (*within, path):
        if folder.is_symlink():
            raise StoreError(f"{folder}: a symbolic link (to {os.readlink(folder)}): the evidence store is real "
                             f"folders, never a link followed out of the project; remove the link")
    return path


def ensure_state(state_dir: Path) -> Path:
    own_folder(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    ignore = state_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    return state_dir


@dataclass(frozen=True)
class Store:
    state_dir: Path

    @property
    def evidence(self) -> Path:
        return own_folder(self.state_dir / "evidence", self.state_dir)

    @property
    def tmp(self) -> Path:
        return own_folder(self.state_dir / "tmp", self.state_dir)

    def new_run(self) -> Path:
        """A private folder for a run in progress, on the same filesystem as the store. The
        run holds an exclusive lock on `<folder>.lock` until it is sealed or its process ends,
        so `gc` can tell a live run from an abandoned one."""
        ensure_state(self.state_dir)
        self.tmp.mkdir(exist_ok=True)
        while True:
            folder = self.tmp / uuid.uuid4().hex
            lock = folder.with_name(folder.name + _LOCK)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            # gc may have removed the lock file between its creation and the lock: start again.
            if _same_file(fd, lock):
                break
            os.close(fd)
        _held[folder] = fd
        folder.mkdir()
        return folder

    def seal(self, folder: Path, record: Record) -> tuple[Path, Record]:
        """Hash the raw files into the record and move the run to its content address."""
        sealed = dataclasses.replace(record, files=manifest(folder))
        final = self.evidence / sealed.id
        (folder / RECORD_FILE).write_text(json.dumps(sealed.to_json(), indent=1, sort_keys=True) + "\n")
        self.evidence.mkdir(parents=True, exist_ok=True)
        if final.exists():
            shutil.rmtree(folder)
        else:
            os.replace(folder, final)
        _release(folder)
        return final, sealed

    @staticmethod
    def write_summary(folder: Path, verdict: dict[str, Any]) -> None:
        """The run-time verdict, for `gates list` only (outside the hash, never regraded from)."""
        (folder / VERDICT_FILE).write_text(json.dumps(verdict, indent=1, sort_keys=True) + "\n")

    def find(self, ref: str) -> Path:
        """A record by id, unique id prefix, or path to a (exported) record folder."""
        path = Path(ref)
        if (path / RECORD_FILE).is_file():
            return path
        if not self.evidence.is_dir():
            raise StoreError(f"no evidence store at {self.evidence}")
        matches = [p for p in self.evidence.iterdir() if p.name.startswith(ref)] if ref else []
        if not matches:
            raise StoreError(f"no evidence record {ref!r} in {self.evidence}")
        if len(matches) > 1:
            raise StoreError(f"evidence id prefix {ref!r} is ambiguous ({len(matches)} records)")
        return matches[0]

    def records(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """Every record folder with its run-time verdict summary, newest first."""
        yield from self.scan().records

    def scan(self) -> Scan:
        """The record folders (real directories, never a link followed), newest first, each with
        its run-time summary ({} where verdict.json is absent or unreadable), and a problem naming
        file (and line) for each entry that is no record folder and each verdict.json that is
        present but not a JSON object. Never raises for what the store holds."""
        if not self.evidence.is_dir():
            return Scan([], [])
        folders: list[tuple[float, Path]] = []
        problems: list[str] = []
        for entry in self.evidence.iterdir():
            try:
                st = entry.lstat()
            except OSError as e:   # removed meanwhile (gc of another process)
                problems.append(f"{entry}: cannot read: {e.strerror or e}")
                continue
            if stat.S_ISDIR(st.st_mode) and _regular(entry / RECORD_FILE):
                folders.append((st.st_mtime, entry))
            elif stat.S_ISDIR(st.st_mode):     # made by hand: a sealed record always holds its record.json
                problems.append(f"{entry}: not a record folder (no {RECORD_FILE}); gates neither lists nor removes it")
            else:
                what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
                problems.append(f"{entry}: not a record folder ({what}); gates neither lists nor removes it")
        records = []
        for _, folder in sorted(folders, key=lambda pair: pair[0], reverse=True):
            summary, problem = read_summary(folder)
            problems += [problem] if problem else []
            records.append((folder, summary))
        return Scan(records, sorted(problems))

    def gc(self, cap_bytes: int, keep: set[str] = frozenset()) -> tuple[int, int]:  # type: ignore[assignment]
        """Delete the oldest records until the store is under `cap_bytes`; records in
        `keep` (proofs) stay. Returns (records removed, bytes freed)."""
        sized = [(p, _size(p)) for p, _ in self.records()]
        total = sum(s for _, s in sized)
        removed = freed = 0
        for folder, size in reversed(sized):
            if total <= cap_bytes:
                break
            if folder.name in keep:
                continue
            shutil.rmtree(folder)
            total -= size
            freed += size
            removed += 1
        self._clean_abandoned()
        return removed, freed

    def _clean_abandoned(self) -> None:
        """Remove run folders whose run has ended without sealing (its lock is free); a live
        run keeps its lock, and its folder."""
        if not self.tmp.is_dir():
            return
        for entry in sorted(self.tmp.iterdir()):
            if entry.name.endswith(_LOCK):
                folder = entry.with_name(entry.name[:-len(_LOCK)])
                try:
                    fd = os.open(entry, os.O_RDWR | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)      # held: a run in progress
                    continue
                try:
                    if entry.is_symlink() or folder.is_symlink():
                        folder.unlink(missing_ok=True)
                    else:
                        shutil.rmtree(folder, ignore_errors=True)
                    entry.unlink(missing_ok=True)
                finally:
                    os.close(fd)
            elif not entry.with_name(entry.name + _LOCK).exists():
                # A folder without a lock predates locking (or its lock was removed): no run owns it.
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)


_LOCK = ".lock"
# Run folder -> the descriptor holding its lock, while this process runs it.
_held: dict[Path, int] = {}


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _release(folder: Path) -> None:
    fd = _held.pop(folder, None)
    if fd is not None:
        folder.with_name(folder.name + _LOCK).unlink(missing_ok=True)
        os.close(fd)


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def links_in(folder: Path) -> list[str]:
    """Every symbolic link inside a record folder (the folder itself included, as '.')."""
    found = ["."] if folder.is_symlink() else []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if path.is_symlink():
                found.append(path.relative_to(folder).as_posix())
    return sorted(found)


@dataclass(frozen=True)
class Scan:
    records: list[tuple[Path, dict[str, Any]]]
    problems: list[str]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def read_summary(folder: Path) -> tuple[dict[str, Any], str | None]:
    """The run-time verdict summary of a record folder ({} while none was written) and a problem
    (file:line) for one that cannot be read as a JSON object."""
    file = folder / VERDICT_FILE
    if not file.exists() and not file.is_symlink():
        return {}, None
    try:
        summary = yamlsrc.load_json(file)
    except yamlsrc.YamlError as e:
        return {}, str(e.problems[0])
    if not isinstance(summary, dict):
        return {}, f"{file}:1: not a JSON object (a verdict summary is one)"
    wrong = _unlike_a_summary(summary)
    if wrong:
        return {}, f"{file}:1: not a verdict summary redfirst writes: {wrong}"
    return summary, None


# An ERROR item names why (the output schema asks it): a record whose run-time summary is absent or unreadable.
NO_SUMMARY = "no run-time verdict summary in this record: `gates regrade ID` grades its raw files"


def _unlike_a_summary(summary: dict[str, Any]) -> str:
    """Why `summary` is not what `write_summary` writes ('' when it is): a verdict and cause of the enums, text
    fields of text, counts a mapping. A store edited by hand is listed from none but such summaries."""
    verdicts = {v.value for v in Verdict}
    if summary.get("verdict") not in verdicts:
        return f"verdict {str(summary.get('verdict'))[:40]!r} is none of {', '.join(sorted(verdicts))}"
    if summary.get("cause") is not None and summary.get("cause") not in {c.value for c in Cause}:
        return f"cause {str(summary.get('cause'))[:40]!r} is no cause"
    for key in ("gate", "reason", "hazard"):
        if key in summary and not isinstance(summary[key], str):
            return f"{key} is not text"
    if not isinstance(summary.get("counts", {}), dict):
        return "counts are not a mapping"
    return ""


def read_record(folder: Path) -> dict[str, Any]:
    """record.json of `folder` as data, through the shared loader (a key written twice, a bound
    passed, a bad byte refused naming file:line); StoreError for anything but a JSON object."""
    file = folder / RECORD_FILE
    try:
        data = yamlsrc.load_json(file)
    except yamlsrc.YamlError as e:
        raise StoreError(str(e.problems[0])) from None
    if not isinstance(data, dict):
        raise StoreError(f"{file}:1: not a JSON object (a record is one)")
    return data


def verify(folder: Path) -> Record:
    """The record in `folder`, after checking that no raw byte changed since it was sealed."""
    data = read_record(folder)
    try:
        record = Record.from_json(data)
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise StoreError(f"{folder / RECORD_FILE}: not a readable record ({e})") from None
    if record.id != folder.name:
        raise StoreError(f"{folder / RECORD_FILE}: content hash {record.id[:12]} does not match the record id "
                         f"{folder.name[:12]}: record.json was changed after the run")
    links = links_in(folder)
    if links:
        raise StoreError(f"{folder / links[0]}: a symbolic link in the record (tampering: a record holds only "
                         f"the files it was sealed with){f' (+{len(links) - 1} more)' if len(links) > 1 else ''}")
    actual = manifest(folder)
    for name in sorted(set(actual) | set(record.files)):
        if actual.get(name) != record.files.get(name):
            what = "missing" if name not in actual else "added" if name not in record.files else "changed"
            raise StoreError(f"{folder / name}: raw file {what} since the run (sha256 mismatch)")
    return record


def export(folder: Path, destination: Path) -> Path:
    """Copy a verified record into `destination/<id>/`, self-contained for another machine."""
    verify(folder)
    if destination.exists() and not destination.is_dir():
        raise StoreError(f"export destination {destination} is a file, not a folder")
    target = destination / folder.name
    if target.resolve() == folder.resolve() or folder.resolve() in target.resolve().parents:
        raise StoreError(f"export destination {destination} is the record's own store folder")
    try:
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(folder, target)
    except OSError as e:
        raise StoreError(f"cannot export into {destination}: {e.strerror or e}") from None
    return target
