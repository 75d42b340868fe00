"""Byte-for-byte restore under a journal.

`mutated()` is the one place that edits a target file: it records the original bytes
and their sha256 in the journal before the first byte changes, and restores and
verifies them on the way out. `recover()` repairs whatever a killed run left behind;
every `mutate` run (and `gates run`) calls it before it does anything else. It restores a
file only while it holds exactly the bytes the mutation wrote: one edited since is the
user's, kept as it is, with the original from before the mutation left under
`.redfirst/kept/` (JournalConflict, exit 2).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst.yamlsrc import YamlError, load_json, load_json_object

ENTRY_SUFFIX = ".entry.json"


class RestoreError(Exception):
    """A restored file does not hash to what it was before: never silently accepted."""


class JournalConflict(RestoreError):
    """A file a killed run mutated was edited since: the edit is kept, the original is
    left beside it, and the run must stop so the person sees both."""

    def __init__(self, message: str, kept: list[Path]) -> None:
        super().__init__(message)
        self.kept = kept


@dataclass(frozen=True)
class Recovered:
    path: Path
    restored: bool          # False when the file already had its original bytes


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durable(path: Path, data: bytes, durable: bool = True) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())


# For each .py file written here (resolved path): (whole-second mtime, size) -> sha256 of the
# version given them. Python trusts a timestamp .pyc by its source's pair alone, wherever the
# .pyc lies (a prefix only a gate's own environment or command names, a name after a link).
# Only pairs at or after the clock's second matter (a write never lands before it); those a run
# in the user's tree hands out are kept in its journal folder (SECONDS), so a later run or a
# recovery after a kill, in another process, avoids them too.
_claims: dict[str, dict[tuple[int, int], str]] = {}
_kept_in: dict[str, Path] = {}       # path -> the SECONDS file its claims are kept in
_loaded: set[Path] = set()           # SECONDS files read into _claims
_claims_lock = threading.Lock()
SECONDS = "seconds.json"


def _load_claims(kept: Path) -> None:
    """Every file's claims in `kept` still ahead of the clock, into this process's, once: a save
    writes back every path kept there, so a run that touches one file keeps the others'. A
    damaged file holds nothing (the claims of this process still hold)."""
    now = int(time.time())
    doc = load_json_object(kept) or {}  # a FIFO is refused before a byte is read: never a hang
    for path, entries in (doc.items() if isinstance(doc, dict) else ()):
        _kept_in.setdefault(path, kept)
        seen = _claims.setdefault(path, {})
        for entry in entries if isinstance(entries, list) else ():
            try:
                second, size, digest = int(entry[0]), int(entry[1]), str(entry[2])
            except (TypeError, ValueError, IndexError, KeyError, OverflowError):
                continue
            if second >= now:
                seen.setdefault((second, size), digest)


def _save_claims(kept: Path) -> None:
    """Every path kept in `kept`, its claims still ahead of the clock; where it cannot be written
    (a folder in its place), the claims hold in this process only."""
    now = int(time.time())
    doc = {path: [[sec, size, digest] for (sec, size), digest in sorted(_claims.get(path, {}).items()) if sec >= now]
           for path, where in _kept_in.items() if where == kept}
    tmp = kept.with_name(f"{SECONDS}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps({p: e for p, e in doc.items() if e}), encoding="utf-8")
        os.replace(tmp, kept)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _claim(target: Path, data: bytes, replaced: tuple[tuple[int, int], str] | None, kept: Path | None) -> None:
    """Give the version of `target` now on disk (its bytes `data`) a (whole-second mtime, size)
    pair that no other version of it had (`replaced`: the pair and sha256 of the version it
    replaced), moving its mtime forward by whole seconds where one had it: a same-size mutation
    written within the second of the original's bytecode would otherwise run the original's
    code, and a restore within the second of a mutation's bytecode the mutation's. Forward
    only: a build must see the source as new. `kept`: where the claims of this path are kept
    across processes (None: this process only, a scratch tree's file)."""
    if target.suffix not in (".py", ".pyw"):
        return
    st = target.stat()
    digest = sha256(data)
    path = str(target)
    with _claims_lock:
        if kept is not None and kept not in _loaded:
            _loaded.add(kept)
            _load_claims(kept)
        if kept is not None:
            _kept_in[path] = kept
        seen = _claims.setdefault(path, {})
        if replaced is not None:
            seen.setdefault(*replaced)
        second = int(st.st_mtime)
        while seen.get((second, st.st_size), digest) != digest:
            second += 1
        seen[(second, st.st_size)] = digest
        if second != int(st.st_mtime):
            # On the whole second: still later than before, and no fraction a float mtime rounds up.
            os.utime(target, ns=(st.st_atime_ns, second * 1_000_000_000))
        if _kept_in.get(path) is not None:
            _save_claims(_kept_in[path])


def move_forward(target: Path, stamp_ns: int) -> None:
    """Set `target`'s mtime to `stamp_ns` or, for a Python source, the first later whole second
    that no other version of it was given (`_claim`): a build's outputs stamped ahead must
    not push the restored original onto a mutation's pair."""
    os.utime(target, ns=(stamp_ns, stamp_ns))
    if target.suffix not in (".py", ".pyw"):
        return
    with _claims_lock:
        kept = _kept_in.get(str(target))
    _claim(target, target.read_bytes(), None, kept)


def _replace_bytes(target: Path, data: bytes, scratch: Path, durable: bool, mode: int | None,
                   replaced_sha: str | None) -> None:
    """`data` over `target`, whose bytes now hash to `replaced_sha` (None: it is missing)."""
    replaced = None
    if replaced_sha is not None:
        with contextlib.suppress(OSError):
            st = target.stat()
            replaced = (int(st.st_mtime), st.st_size), replaced_sha
    _write_over(target, data, scratch, durable, mode)
    # A user's tree (durable): its claims outlive this process, in its journal folder.
    _claim(target, data, replaced, scratch / SECONDS if durable else None)


def _write_over(target: Path, data: bytes, scratch: Path, durable: bool, mode: int | None) -> None:
    if not durable and _written_in_place(target, data, mode):
        return
    # Written beside the journal and renamed over the target: a kill never leaves a half
    # file in the user's tree, nor a stray temporary next to it.
    tmp = scratch / f"{target.name}.{os.getpid()}.tmp"
    _write_durable(tmp, data, durable)
    if mode is not None:
        os.chmod(tmp, mode)
    elif target.exists():
        shutil.copymode(target, tmp)
    try:
        os.replace(tmp, target)
    except OSError:
        # Another filesystem: write in place; the journal still holds the original.
        target.write_bytes(data)
        tmp.unlink(missing_ok=True)


def _written_in_place(target: Path, data: bytes, mode: int | None) -> bool:
    """`data` over a scratch tree's file, in place (no rename: ext4 flushes the data of a file
    renamed over another at the rename, milliseconds a mutation on a busy disk). A killed run's
    recovery removes a scratch tree whole, so a half-written file there is never run; False
    where the file is not a plain file this process may write (the rename then replaces it)."""
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            return False
        with open(target, "r+b") as f:
            f.write(data)
            f.truncate()
        if mode is not None and stat.S_IMODE(os.stat(target).st_mode) != mode:
            os.chmod(target, mode)
    except OSError:
        return False
    return True


def ensure_journal_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = folder.parent if folder.parent.name == ".redfirst" else None
    if state is not None and not (state / ".gitignore").exists():
        (state / ".gitignore").write_text("*\n", encoding="utf-8")
    return folder


def real_target(target: Path, inside: Path | None = None) -> Path:
    """The file a mutation of `target` edits: through a symbolic link, the file it names
    (replacing the link itself would leave a regular file where the user has a link).
    RestoreError when the file lies outside `inside` (a scratch tree's link into the user's)."""
    real = target.resolve()
    # (A resolved path under `inside` as given: `inside` is real too, as every prefix of a resolved
    # path is; resolving it, a walk of every folder on its way, only when that does not hold.)
    if inside is not None and not real.is_relative_to(inside) and not real.is_relative_to(inside.resolve()):
        raise RestoreError(f"{target} is a link to {real}, outside {inside}: editing it would edit that file")
    return real


@contextmanager
def mutated(target: Path, new_bytes: bytes, journal_dir: Path, durable: bool = True,
            inside: Path | None = None) -> Iterator[str]:
    """Replace `target`'s bytes with `new_bytes` for the duration of the block, then put
    the original bytes back and verify their sha256 (RestoreError if they differ).

    Yields the sha256 of the original bytes. A journal entry exists from before the
    first write until after the verified restore, so `recover()` can finish the job
    after a SIGKILL at any point. `durable=False` skips the fsyncs: for scratch trees
    (worktrees) that a crash throws away anyway, never for the user's tree.
    """
    target = real_target(target, inside)
    journal = ensure_journal_dir(journal_dir)
    original = target.read_bytes()
    mode = stat.S_IMODE(target.stat().st_mode)
    before = sha256(original)
    key = sha256(str(target.resolve()).encode())[:16]
    backup, entry = journal / f"{key}.orig", journal / f"{key}{ENTRY_SUFFIX}"
    if entry.exists():
        raise RestoreError(f"{target}: a journal entry already exists ({entry}); run recovery first")
    _write_durable(backup, original, durable)
    tmp_entry = journal / f"{key}.entry.tmp"
    # The mutated bytes' sha256 too: recovery restores only a file that still holds them.
    _write_durable(tmp_entry, json.dumps({"path": str(target), "sha256": before, "mutated": sha256(new_bytes),
                                          "backup": backup.name, "mode": mode}).encode(), durable)
    os.replace(tmp_entry, entry)
    if durable:
        _fsync_dir(journal)
    try:
        _replace_bytes(target, new_bytes, journal, durable, None, before)
        forget_bytecode(target)
        yield before
    finally:
        _restore(target, original, before, journal, durable, mode)
        forget_bytecode(target)
        entry.unlink()
        backup.unlink(missing_ok=True)
        if durable:
            _fsync_dir(journal)


@contextmanager
def swapped(target: Path, new_bytes: bytes, scratch: Path, inside: Path | None = None) -> Iterator[str]:
    """`mutated` for a scratch tree that a killed run's recovery removes whole (a worktree): the
    same whole-file write and verified byte-for-byte restore, without a journal entry (nothing
    is left to recover). Yields the sha256 of the original bytes."""
    target = real_target(target, inside)
    ensure_journal_dir(scratch)
    original = target.read_bytes()
    mode = stat.S_IMODE(target.stat().st_mode)
    before = sha256(original)
    try:
        _replace_bytes(target, new_bytes, scratch, False, mode, before)
        forget_bytecode(target)
        yield before
    finally:
        _restore(target, original, before, scratch, False, mode)
        forget_bytecode(target)


def forget_bytecode(target: Path) -> None:
    """Remove the bytecode Python keeps for a Python source: beside it (`__pycache__/NAME.*.pyc`,
    pytest's rewrite included) and, where the gates' Python keeps it under a prefix
    (PYTHONPYCACHEPREFIX in this environment, which gates inherit, or this interpreter's
    `-X pycache_prefix`), in that prefix's mirror of the source's folder. Python trusts a .pyc
    whose recorded source time, in whole seconds, and size match the source's: a swap that keeps
    the size (`+` for `-`) within the same second as that bytecode's source would run the other
    version's code (the original's under the mutation, or, after the restore, the mutation's
    that a build compiled). Caches only: Python makes them again."""
    if target.suffix != ".py":
        return
    folders = {target.parent / "__pycache__"}
    for prefix in {p for p in (os.environ.get("PYTHONPYCACHEPREFIX"), sys.pycache_prefix) if p}:
        # Python's own layout: the prefix, then the source's absolute folder without its root
        # (`target` is resolved: real_target).
        folders.add(Path(prefix).absolute() / target.parent.relative_to(target.parent.anchor))
    for folder in folders:
        with contextlib.suppress(OSError):
            for pyc in folder.glob(f"{target.stem}.*.pyc"):
                with contextlib.suppress(OSError):
                    pyc.unlink()


def _restore(target: Path, original: bytes, before: str, scratch: Path, durable: bool = True,
             mode: int | None = None) -> None:
    # A gate may have deleted the target: the mode comes from the journal, not from it.
    current = sha256(target.read_bytes()) if target.exists() else None
    if current != before:
        _replace_bytes(target, original, scratch, durable, mode, current)
    after = sha256(target.read_bytes())
    if after != before:
        raise RestoreError(f"{target}: sha256 after restore is {after}, was {before}")


def _kept_path(journal_dir: Path, target: Path) -> Path:
    """Where the original of an edited file is left: `.redfirst/kept/<its path>`."""
    state = journal_dir.parent
    try:
        rel = target.relative_to(state.parent.resolve())
    except ValueError:
        rel = Path(sha256(str(target).encode())[:16]) / target.name     # a link's target outside the tree
    kept = state / "kept" / rel
    n = 1
    while kept.exists():
        kept = kept.with_name(f"{rel.name}.{n}")
        n += 1
    return kept


def _entry(entry: Path, journal_dir: Path) -> tuple[dict[str, Any], Path, str, Path]:
    """(the entry, the file, its sha256 before the mutation, its backup) of a journal entry; RestoreError
    naming the entry (kept for a person) when it cannot be read or is not one this journal wrote."""
    try:
        record = load_json(entry)
        if not isinstance(record, dict):
            raise TypeError("not an object")
        target, before, backup = Path(record["path"]), record["sha256"], journal_dir / record["backup"]
    except (YamlError, KeyError, TypeError) as e:
        why = str(e) if isinstance(e, YamlError) else "not a journal entry (no path, sha256 and backup)"
        raise RestoreError(f"{entry}: cannot be read: {why}") from None
    if not isinstance(before, str):
        raise RestoreError(f"{entry}: cannot be read: not a journal entry (its sha256 is no string)")
    return record, target, before, backup


def recover(journal_dir: Path) -> list[Recovered]:
    """Finish every restore a killed run left in `journal_dir`; RestoreError when a
    backup is damaged (then the entry is kept for a person to look at); JournalConflict,
    after every other entry is done, for each file edited since the mutation (the edit
    stays, the original goes to `.redfirst/kept/`, the entry is settled)."""
    if not journal_dir.is_dir():
        return []
    done: list[Recovered] = []
    conflicts: list[str] = []
    kept: list[Path] = []
    for tmp in journal_dir.glob("*.tmp"):
        tmp.unlink(missing_ok=True)
    for entry in sorted(journal_dir.glob(f"*{ENTRY_SUFFIX}")):
        record, target, before, backup = _entry(entry, journal_dir)
        current = sha256(target.read_bytes()) if target.exists() else None
        original = backup.read_bytes() if current != before else b""
        if current != before and sha256(original) != before:
            raise RestoreError(f"{target}: journal backup {backup} does not hash to {before}")
        # Missing (a gate deleted it): nothing of the user's is in the way of the original.
        if current is not None and current != before and current != record.get("mutated"):
            saved = _kept_path(journal_dir, target)
            saved.parent.mkdir(parents=True, exist_ok=True)
            _write_durable(saved, original)
            conflicts.append(f"{target} was edited after a killed run mutated it (its sha256 is {current}, "
                             f"not the mutation's): your edit is kept; the file as it was before the mutation "
                             f"is at {saved}")
            kept.append(saved)
        elif current != before:
            _replace_bytes(target, original, journal_dir, True, record.get("mode"), current)
            if sha256(target.read_bytes()) != before:
                raise RestoreError(f"{target}: sha256 after recovery differs from {before}")
            forget_bytecode(target)
            done.append(Recovered(target, True))
        else:
            done.append(Recovered(target, False))
        entry.unlink()
        backup.unlink(missing_ok=True)
    for orphan in journal_dir.glob("*.orig"):
        # A backup whose entry was never written: the target was not touched yet.
        orphan.unlink(missing_ok=True)
    if conflicts:
        raise JournalConflict("\n".join(conflicts), kept)
    return done
