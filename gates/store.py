"""The evidence store: one content-addressed folder per run under `.redfirst/evidence/`.

A record folder holds `record.json` (raw facts and the sha256 of every raw file),
the raw files themselves, and `verdict.json` (the verdict at run time, for listing
only: regrading never reads it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gates.record import RECORD_FILE, VERDICT_FILE, Record, manifest


class StoreError(Exception):
    """A record that cannot be found or trusted; the message says which and why."""


def ensure_state(state_dir: Path) -> Path:
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
        return self.state_dir / "evidence"

    def new_run(self) -> Path:
        """A private folder for a run in progress, on the same filesystem as the store."""
        folder = ensure_state(self.state_dir) / "tmp" / uuid.uuid4().hex
        folder.mkdir(parents=True)
        return folder

    def seal(self, folder: Path, record: Record) -> tuple[Path, Record]:
        """Hash the raw files into the record and move the run to its content address."""
        sealed = dataclasses.replace(record, files=manifest(folder))
        (folder / RECORD_FILE).write_text(json.dumps(sealed.to_json(), indent=1, sort_keys=True) + "\n")
        final = self.evidence / sealed.id
        self.evidence.mkdir(parents=True, exist_ok=True)
        if final.exists():
            shutil.rmtree(folder)
        else:
            os.replace(folder, final)
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
        if not self.evidence.is_dir():
            return
        folders = sorted(self.evidence.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for folder in folders:
            try:
                summary = json.loads((folder / VERDICT_FILE).read_text())
            except (OSError, ValueError):
                summary = {}
            yield folder, summary

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
        tmp = self.state_dir / "tmp"
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        return removed, freed


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def verify(folder: Path) -> Record:
    """The record in `folder`, after checking that no raw byte changed since it was sealed."""
    try:
        data = json.loads((folder / RECORD_FILE).read_text())
        record = Record.from_json(data)
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise StoreError(f"{folder / RECORD_FILE}: not a readable record ({e})") from None
    if record.id != folder.name:
        raise StoreError(f"{folder / RECORD_FILE}: content hash {record.id[:12]} does not match the record id "
                         f"{folder.name[:12]}: record.json was changed after the run")
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
