"""Third adversarial round on issue 34: the store files read beside the ones rounds one and two
moved onto the one JSON loader (redfirst.yamlsrc.load_json). A proof, a record's read set, a
baseline record, the sweep's survivors, a journal entry or a claims file that is a FIFO, nested
past the bound or a JSON list is no proof, no record, no survivor: never a hang, never a
RecursionError or AttributeError traceback, and a journal entry that cannot be read is kept for a
person (RestoreError), never a traceback that leaves the user's file mutated."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redfirst import journal
from redfirst.gates import proofs, proven, reads
from redfirst.mutations import sweep, sweep_cache, timeouts
from redfirst.mutations.paths import repo_cache

KINDS = ["fifo", "deep", "list", "twice"]


def _hostile(path: Path, kind: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "list":
        path.write_text('[{"gate": "g", "kind": "mutation", "ref": "m", "survivors": []}]\n')
    else:  # a key written twice: the forged second value would otherwise win
        path.write_text('{"survivors": [],\n "survivors": 1}\n')
    return path


class Hung(BaseException):  # no reader's `except OSError` or `except Exception` swallows it
    pass


@contextlib.contextmanager
def _no_hang(seconds: int = 20) -> Iterator[None]:
    def _raise(*_: object) -> None:
        raise Hung(f"still reading after {seconds} s")
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_proof_file_is_no_proof(tmp_path: Path, kind: str) -> None:
    good = proofs.proofs_dir(tmp_path) / "g" / "a.json"
    good.parent.mkdir(parents=True)
    good.write_text(json.dumps({"gate": "g", "kind": "mutation", "ref": "m", "evidence": ["e1"], "created": 1}))
    _hostile(proofs.proofs_dir(tmp_path) / "g" / "b.json", kind)
    with _no_hang():
        found = proofs.proofs(tmp_path)
    assert [p.ref for p in found["g"]] == ["m"]  # the readable proof still counts, the hostile one is none


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_record_is_no_document_no_read_set_and_no_baseline(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "evidence" / "e1"
    _hostile(folder / "record.json", kind)
    _hostile(folder / reads.FILE, kind)
    with _no_hang():
        assert proven._document_of(tmp_path / "evidence", "e1") is None
        assert reads.of_record(folder).unknown is not None
        assert timeouts.derived(tmp_path, "e1") is None


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_sweep_files_are_no_survivors_and_no_basis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         kind: str) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    root.mkdir()
    _hostile(repo_cache(root, "sweeps") / "survivors.json", kind)
    basis = _hostile(tmp_path / "basis.json", kind)
    with _no_hang():
        assert sweep.load(root) == []
        assert sweep_cache._load_basis(basis) is None


@pytest.mark.parametrize("kind", ["deep", "list"])
def test_a_journal_entry_that_cannot_be_read_is_kept_for_a_person(tmp_path: Path, kind: str) -> None:
    entry = _hostile(tmp_path / "journal" / f"0001{journal.ENTRY_SUFFIX}", kind)
    with _no_hang(), pytest.raises(journal.RestoreError, match=str(entry)):
        journal.recover(tmp_path / "journal")
    assert entry.exists()


def test_promote_over_a_survivors_file_that_is_a_list_is_a_message(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n")
    (root / "gates").mkdir()
    (root / "mutations").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    _hostile(repo_cache(root, "sweeps") / "survivors.json", "list")
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "promote", "k", "--root", str(root)],
                          capture_output=True, text=True, timeout=120, cwd=root, env=env)
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both and proc.returncode == 2, both
    assert "run mutate sweep first" in both


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_a_hostile_claims_file_holds_no_claims(tmp_path: Path, kind: str) -> None:
    kept = _hostile(tmp_path / "journal" / journal.SECONDS, kind)
    with _no_hang():
        journal._load_claims(kept)  # a damaged file holds nothing; it never blocks the run


@pytest.mark.parametrize("entries", ['[1, "x", null]', '[{"directory": 5, "file": "a.c"}]',
                                     '[{"file": ["a.c"]}]', "[" * 100_000 + "]" * 100_000])
def test_a_hostile_compile_database_is_no_command(tmp_path: Path, entries: str) -> None:
    from redfirst.mutations.cxx_equivalence import find_commands

    (tmp_path / "a.c").write_text("int f(void) { return 1; }\n")
    (tmp_path / "compile_commands.json").write_text(entries)
    with _no_hang():
        found = find_commands(tmp_path, "a.c", [])
    assert isinstance(found, str)  # why no command is known, never a traceback out of `mutate`


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_mutmut_meta_file_is_a_harness_error(tmp_path: Path, kind: str) -> None:
    from redfirst.mutations import mutmut

    meta = _hostile(tmp_path / "mutants" / "calc.py.meta", kind)
    with _no_hang(), pytest.raises(mutmut.MutmutError, match="calc.py.meta"):
        mutmut.exit_codes(tmp_path)  # never a mutant without its exit code, never a traceback
    assert meta.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_read_report_from_the_program_is_an_unknown_read_set(tmp_path: Path, kind: str) -> None:
    report = _hostile(tmp_path / "reads-report.json", kind)  # the program under test writes this file
    with _no_hang():
        found = reads.observed(report, tmp_path, [])
    assert found.unknown is not None  # an unknown read set keys on the whole tree: nothing is hidden
