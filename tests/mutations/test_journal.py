"""The byte-for-byte restore guarantee (redfirst.journal.mutated / recover)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from redfirst import journal

ORIGINAL = b"line one\r\nline two \xff\xfe no utf-8\n\x00tail"


def test_mutated_restores_bytes_and_returns_the_original_sha(tmp_path: Path):
    target = tmp_path / "f.bin"
    target.write_bytes(ORIGINAL)
    os.chmod(target, 0o751)
    with journal.mutated(target, b"MUTATED", tmp_path / "j") as before:
        assert target.read_bytes() == b"MUTATED"
        assert list((tmp_path / "j").glob("*.entry.json"))
    assert before == hashlib.sha256(ORIGINAL).hexdigest()
    assert target.read_bytes() == ORIGINAL
    assert oct(target.stat().st_mode & 0o777) == oct(0o751)
    assert list((tmp_path / "j").iterdir()) == []


def test_mutated_restores_when_the_block_raises(tmp_path: Path):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    with pytest.raises(RuntimeError), journal.mutated(target, b"x", tmp_path / "j"):
        raise RuntimeError("gate crashed")
    assert target.read_bytes() == ORIGINAL


def test_restore_that_does_not_verify_is_an_error_and_keeps_the_journal(tmp_path: Path, monkeypatch):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    # Deliberately broken restore: writes the wrong bytes; the sha256 check must catch it.
    monkeypatch.setattr(journal, "_replace_bytes", lambda t, data, *rest: t.write_bytes(data[:-1]))
    with pytest.raises(journal.RestoreError, match="sha256 after restore"), \
            journal.mutated(target, b"x", tmp_path / "j"):
        pass
    assert list((tmp_path / "j").glob("*.entry.json"))


def test_recover_restores_after_sigkill_inside_the_block(tmp_path: Path):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    child = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from redfirst import journal
        with journal.mutated(Path({str(target)!r}), b"MUTATED", Path({str(tmp_path / 'j')!r})):
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", child], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert target.read_bytes() == b"MUTATED"
    recovered = journal.recover(tmp_path / "j")
    assert [(r.path, r.restored) for r in recovered] == [(target.resolve(), True)]
    assert target.read_bytes() == ORIGINAL
    assert journal.recover(tmp_path / "j") == []


def test_recover_refuses_a_damaged_backup(tmp_path: Path):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    j = tmp_path / "j"
    with pytest.raises(KeyboardInterrupt), journal.mutated(target, b"MUTATED", j):
        # Simulate a kill: leave the block without the restore running.
        entry = next(j.glob("*.entry.json"))
        backup = next(j.glob("*.orig"))
        saved = (entry.read_bytes(), backup.read_bytes())
        raise KeyboardInterrupt
    entry.write_bytes(saved[0])
    backup.write_bytes(b"not the original")
    target.write_bytes(b"MUTATED")
    with pytest.raises(journal.RestoreError, match="does not hash"):
        journal.recover(j)
    assert target.read_bytes() == b"MUTATED"


def test_a_target_deleted_while_mutated_is_restored_with_its_mode(tmp_path: Path):
    # A gate may delete the file it tests; the user's bytes (and mode) still come back.
    target = tmp_path / "f.bin"
    target.write_bytes(ORIGINAL)
    os.chmod(target, 0o751)
    with journal.mutated(target, b"MUTATED", tmp_path / "j"):
        target.unlink()
    assert target.read_bytes() == ORIGINAL
    assert target.stat().st_mode & 0o777 == 0o751
    assert not list((tmp_path / "j").iterdir())


def test_recover_restores_a_target_that_was_deleted(tmp_path: Path):
    target = tmp_path / "f.bin"
    target.write_bytes(ORIGINAL)
    folder = tmp_path / "j"
    (folder).mkdir()
    (folder / "k.orig").write_bytes(ORIGINAL)
    (folder / f"k{journal.ENTRY_SUFFIX}").write_text(
        f'{{"path": "{target}", "sha256": "{hashlib.sha256(ORIGINAL).hexdigest()}", "backup": "k.orig"}}')
    target.unlink()
    assert [r.restored for r in journal.recover(folder)] == [True]
    assert target.read_bytes() == ORIGINAL


def test_a_link_is_followed_and_one_out_of_the_scratch_tree_is_refused(tmp_path: Path):
    target, link = tmp_path / "real.py", tmp_path / "tree" / "link.py"
    target.write_bytes(ORIGINAL)
    link.parent.mkdir()
    link.symlink_to(target)
    with journal.mutated(link, b"MUTATED", tmp_path / "j"):
        assert link.is_symlink() and target.read_bytes() == b"MUTATED"
    assert link.is_symlink() and target.read_bytes() == ORIGINAL
    with pytest.raises(journal.RestoreError, match="outside"), \
            journal.mutated(link, b"MUTATED", tmp_path / "j", inside=tmp_path / "tree"):
        pass
    assert target.read_bytes() == ORIGINAL


def kill_inside(target: Path, folder: Path, new: bytes = b"MUTATED") -> None:
    """A real process mutates `target` under the journal in `folder` and is SIGKILLed inside."""
    child = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from redfirst import journal
        with journal.mutated(Path({str(target)!r}), {new!r}, Path({str(folder)!r})):
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", child], check=False)
    assert proc.returncode == -signal.SIGKILL and target.read_bytes() == new


def test_recover_keeps_an_edit_made_since_the_crash_and_leaves_the_original_beside_it(tmp_path: Path):
    target = tmp_path / "calc.py"
    target.write_bytes(ORIGINAL)
    folder = tmp_path / ".redfirst" / "journal"
    kill_inside(target, folder)
    target.write_bytes(b"MUTATED and then the user's own new work\n")
    with pytest.raises(journal.JournalConflict) as caught:
        journal.recover(folder)
    assert target.read_bytes() == b"MUTATED and then the user's own new work\n"
    kept = caught.value.kept
    assert [k.relative_to(tmp_path / ".redfirst").parts[0] for k in kept] == ["kept"]
    assert kept[0].read_bytes() == ORIGINAL
    assert str(target) in str(caught.value) and str(kept[0]) in str(caught.value)
    # Settled: the edit is the user's now, the next recovery has nothing to do.
    assert journal.recover(folder) == [] and target.read_bytes().endswith(b"new work\n")


def test_recover_restores_when_the_file_holds_exactly_the_mutated_bytes(tmp_path: Path):
    target = tmp_path / "calc.py"
    target.write_bytes(ORIGINAL)
    folder = tmp_path / ".redfirst" / "journal"
    kill_inside(target, folder)
    assert [r.restored for r in journal.recover(folder)] == [True]
    assert target.read_bytes() == ORIGINAL
    assert not (tmp_path / ".redfirst" / "kept").exists()


# A worktree's swap: no journal entry (a killed run's worktree is removed whole), the same
# whole-file write and verified byte-for-byte restore.

def test_swapped_restores_bytes_and_mode_and_leaves_no_journal_entry(tmp_path: Path):
    target = tmp_path / "f.bin"
    target.write_bytes(ORIGINAL)
    os.chmod(target, 0o751)
    with journal.swapped(target, b"MUTATED", tmp_path / "j") as before:
        assert target.read_bytes() == b"MUTATED"
        assert list((tmp_path / "j").iterdir()) == []
    assert before == hashlib.sha256(ORIGINAL).hexdigest()
    assert target.read_bytes() == ORIGINAL
    assert target.stat().st_mode & 0o777 == 0o751


@pytest.mark.parametrize("size", ["shorter", "longer"])
def test_a_swap_written_in_place_leaves_no_byte_of_the_other_version_and_restores_the_mode(tmp_path: Path,
                                                                                           size: str):
    # A worktree's file is written in place (no rename over it): each version must replace the
    # whole file, and a mode the run changed is put back with the bytes.
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    os.chmod(target, 0o751)
    mutated = ORIGINAL[:3] if size == "shorter" else ORIGINAL * 3
    with journal.swapped(target, mutated, tmp_path / "j"):
        assert target.read_bytes() == mutated
        os.chmod(target, 0o600)
    assert (target.read_bytes(), target.stat().st_mode & 0o777) == (ORIGINAL, 0o751)


def test_swapped_restores_when_the_block_raises_or_deleted_the_target(tmp_path: Path):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    with pytest.raises(RuntimeError), journal.swapped(target, b"x", tmp_path / "j"):
        raise RuntimeError("gate crashed")
    assert target.read_bytes() == ORIGINAL
    with journal.swapped(target, b"x", tmp_path / "j"):
        target.unlink()
    assert target.read_bytes() == ORIGINAL


def test_a_swap_whose_restore_does_not_verify_is_an_error(tmp_path: Path, monkeypatch):
    target = tmp_path / "f.py"
    target.write_bytes(ORIGINAL)
    real = journal._replace_bytes
    with pytest.raises(journal.RestoreError, match="sha256 after restore"), \
            journal.swapped(target, b"x", tmp_path / "j"):
        # Deliberately broken restore: writes the wrong bytes; the sha256 check must catch it.
        monkeypatch.setattr(journal, "_replace_bytes", lambda t, data, *rest: real(t, data[:-1], *rest))


def test_a_swap_through_a_link_out_of_the_scratch_tree_is_refused(tmp_path: Path):
    target, link = tmp_path / "real.py", tmp_path / "tree" / "link.py"
    target.write_bytes(ORIGINAL)
    link.parent.mkdir()
    link.symlink_to(target)
    with pytest.raises(journal.RestoreError, match="outside"), \
            journal.swapped(link, b"MUTATED", tmp_path / "j", inside=tmp_path / "tree"):
        pass
    assert target.read_bytes() == ORIGINAL


def _imported_value(folder: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run([sys.executable, "-c", "import calc; print(calc.add(2, 3))"], cwd=folder, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


def _under_prefix(folder: Path, code: str, prefix: Path) -> str:
    """`code` run in `folder` by a Python that keeps its bytecode under `prefix` (PYTHONPYCACHEPREFIX)."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_no_bytecode_of_the_other_version_outlives_a_swap_under_a_pycache_prefix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The gates' Python keeps its bytecode in a mirror of the tree under PYTHONPYCACHEPREFIX,
    # not beside the source: the stale bytecode of the other version is there.
    prefix = tmp_path / "pycache"
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(prefix))
    folder = tmp_path / "tree"
    target = folder / "calc.py"
    target.parent.mkdir()
    target.write_text("def add(a, b):\n    return a + b\n")
    build = "import py_compile; py_compile.compile('calc.py', doraise=True)"
    run = "import calc; print(calc.add(2, 3))"
    _under_prefix(folder, build, prefix)
    assert list(prefix.rglob("calc.*.pyc")), "the build left no bytecode under the prefix"
    original = target.stat()
    with journal.mutated(target, b"def add(a, b):\n    return a - b\n", tmp_path / "journal", durable=False):
        os.utime(target, ns=(original.st_atime_ns, original.st_mtime_ns))    # the same second
        assert _under_prefix(folder, run, prefix) == "-1"
        _under_prefix(folder, build, prefix)      # a build under the mutation
    os.utime(target, ns=(original.st_atime_ns, original.st_mtime_ns))
    assert _under_prefix(folder, run, prefix) == "5"


@pytest.mark.parametrize("swap", ["mutated", "swapped"])
def test_no_bytecode_of_the_other_version_outlives_a_swap(tmp_path: Path, swap: str):
    # Python trusts a .pyc whose recorded source time (whole seconds) and size match the source:
    # `+` for `-` keeps the size, and a swap within the same second as the bytecode's source keeps
    # the time. A build (py_compile) or an earlier run left such bytecode beside the target.
    import py_compile

    folder = tmp_path / "tree"
    target = folder / "calc.py"
    target.parent.mkdir()
    target.write_text("def add(a, b):\n    return a + b\n")
    py_compile.compile(str(target), doraise=True)
    original = target.stat()
    scratch = tmp_path / "journal"
    mutated_bytes = b"def add(a, b):\n    return a - b\n"
    context = journal.mutated(target, mutated_bytes, scratch, durable=False) if swap == "mutated" else \
        journal.swapped(target, mutated_bytes, scratch)
    with context:
        os.utime(target, ns=(original.st_atime_ns, original.st_mtime_ns))    # the same second
        assert _imported_value(folder) == "-1"
        py_compile.compile(str(target), doraise=True)     # a build under the mutation
    os.utime(target, ns=(original.st_atime_ns, original.st_mtime_ns))
    assert _imported_value(folder) == "5"


def _gate(folder: Path, code: str, where: str, prefix: Path, write: bool) -> str:
    """`code` run by a gate's Python that keeps its bytecode where only the gate knows: under a
    prefix of its own environment or command line, or (a link to the module) named after the link.
    `write`: that Python writes bytecode (a build, or a gate that sets no PYTHONDONTWRITEBYTECODE)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    xargs = []
    if where == "gate-env-prefix":
        env["PYTHONPYCACHEPREFIX"] = str(prefix)
    elif where == "gate-X-prefix":
        xargs = ["-X", f"pycache_prefix={prefix}"]
    return subprocess.run([sys.executable, *xargs, "-c", code], cwd=folder, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("stale", ["original", "mutation"])
@pytest.mark.parametrize("where", ["gate-env-prefix", "gate-X-prefix", "link-to-module"])
def test_no_version_passes_for_another_by_its_second_and_size(tmp_path: Path, where: str, stale: str):
    # Python trusts a timestamp .pyc by its source's whole-second time and size alone, wherever the
    # .pyc lies. Where the journal cannot know (a prefix only the gate's own environment or command
    # names; bytecode named after a link to the module), it cannot remove it: each version it
    # writes must differ from the one it replaces in that pair, else a same-size mutation written
    # within the second of the original's bytecode runs the original (a false SURVIVED), and the
    # restore within the second of the mutation's bytecode runs the mutation afterwards.
    folder = tmp_path / "tree"
    folder.mkdir()
    real = folder / ("impl.py" if where == "link-to-module" else "calc.py")
    if where == "link-to-module":
        (folder / "calc.py").symlink_to("impl.py")
    prefix = tmp_path / "pycache"
    run, build = "import calc; print(calc.add(2, 3))", "import calc"
    for _ in range(10):
        real.write_text("def add(a, b):\n    return a + b\n")
        time.sleep(1.01 - time.time() % 1)       # all that follows within one second, if the machine allows
        second = int(time.time())
        os.utime(real)
        if stale == "original":
            _gate(folder, build, where, prefix, write=True)     # the original's bytecode, of this second
        with journal.mutated(folder / "calc.py", b"def add(a, b):\n    return a - b\n", tmp_path / "journal",
                             durable=False):
            written = int(time.time())
            under = _gate(folder, run, where, prefix, write=False)
            _gate(folder, build, where, prefix, write=True)     # the mutation's bytecode (a build)
        restored = int(time.time())
        after = _gate(folder, run, where, prefix, write=False)
        if second == written == restored:
            break                 # every write fell in one second: the case this test is about
    else:
        pytest.fail("ten tries did not fit the writes into one second: this machine is too loaded for the test")
    assert (under, after) == ("-1", "5")


_RUN = textwrap.dedent("""
    import os, subprocess, sys
    from pathlib import Path
    from redfirst import journal
    target, new, journal_dir, prefix = Path(sys.argv[1]), sys.argv[2].encode(), Path(sys.argv[3]), sys.argv[4]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix          # a gate's own prefix, unknown to the journal
    with journal.mutated(target, new, journal_dir):
        if len(sys.argv) > 5:
            os.kill(os.getpid(), 9)              # killed under the mutation: a recovery restores it
        print(subprocess.run([sys.executable, "-c", "import calc; print(calc.add(2, 3))"], cwd=target.parent,
                             env=env, capture_output=True, text=True, check=True).stdout.strip())
""")


def _run_in_place(tmp_path: Path, target: Path, new: str, prefix: Path, kill: bool = False) -> str:
    """One `mutate` run in the user's tree, in a process of its own: `new` swapped in, a gate that
    compiles what it imports (under its own prefix) prints add(2, 3)."""
    proc = subprocess.run([sys.executable, "-c", _RUN, str(target), new, str(tmp_path / "journal"), str(prefix),
                           *(["kill"] if kill else [])], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == (-9 if kill else 0), proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("then", ["another-run", "recovery", "outputs-stamped-ahead"])
def test_a_second_given_to_a_version_is_not_given_to_another_later(tmp_path: Path, then: str):
    # The first run writes `a * b` in the original's second: it is moved to the next second,
    # where a gate compiles it. What follows in that second, in another process (the next run, a
    # recovery after a kill) or after a build's outputs stamped ahead moved the source, must not
    # land on that pair: `a * b`'s bytecode (6) would run for `a - b` (a false SURVIVED) or for the
    # restored original.
    folder = tmp_path / "tree"
    folder.mkdir()
    target = folder / "calc.py"
    prefix = tmp_path / "pycache"
    times = "a * b", "a - b"
    for _ in range(10):
        target.write_text("def add(a, b):\n    return a + b\n")
        time.sleep(1.01 - time.time() % 1)
        second = int(time.time())
        os.utime(target)
        if then == "outputs-stamped-ahead":      # the engine's own process, as outdate_outputs runs there
            with journal.mutated(target, f"def add(a, b):\n    return {times[0]}\n".encode(), tmp_path / "journal"):
                first = _prefixed_add(folder, prefix)
        else:
            first = _run_in_place(tmp_path, target, f"def add(a, b):\n    return {times[0]}\n", prefix)
        if then == "another-run":
            seen = _run_in_place(tmp_path, target, f"def add(a, b):\n    return {times[1]}\n", prefix)
            expected = "-1"
        elif then == "recovery":
            # killed under another size's mutation (its own pair in the original's second); the
            # recovery writes the original back in the next second, `a * b`'s
            _run_in_place(tmp_path, target, "def add(a, b):\n    return a // b\n", prefix, kill=True)
            time.sleep(max(0.0, second + 1.01 - time.time()))
            journal.recover(tmp_path / "journal")
            seen = _prefixed_add(folder, prefix)
            expected = "5"
        else:
            outputs = tmp_path / "build"
            outputs.mkdir(exist_ok=True)
            (outputs / "calc.o").write_bytes(b"")
            stamp = second * 1_000_000_000 + 900_000_000      # late in the original's second
            os.utime(outputs / "calc.o", ns=(stamp, stamp))
            from redfirst.mutations.builds import outdate_outputs
            outdate_outputs(target, [outputs])
            seen = _prefixed_add(folder, prefix)
            expected = "5"
        if int(time.time()) <= second + 1:
            break             # all of it within the original's second and the next
    else:
        pytest.fail("ten tries did not fit the runs into two seconds: this machine is too loaded for the test")
    assert (first, seen) == ("6", expected)
    assert target.read_text() == "def add(a, b):\n    return a + b\n"


def _prefixed_add(folder: Path, prefix: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return subprocess.run([sys.executable, "-c", "import calc; print(calc.add(2, 3))"], cwd=folder, env=env,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_claims_kept_for_other_files_survive_a_run_that_touches_one(tmp_path: Path):
    # One seconds.json holds every file's claims still ahead of the clock: a run (or a recovery)
    # that writes only a.py must keep b.py's, else b.py's next mutation may land on the pair of
    # an earlier mutation whose bytecode a gate kept (a false SURVIVED).
    folder, journal_dir = tmp_path / "tree", tmp_path / "journal"
    folder.mkdir()
    journal_dir.mkdir()
    (folder / "a.py").write_text("A = 1\n")
    ahead = int(time.time()) + 600
    kept = {str((folder / "b.py").resolve()): [[ahead, 10, "0" * 64]]}
    (journal_dir / journal.SECONDS).write_text(json.dumps(kept))
    with journal.mutated(folder / "a.py", b"A = 2\n", journal_dir):
        pass
    stored = json.loads((journal_dir / journal.SECONDS).read_text())
    assert stored[str((folder / "b.py").resolve())] == [[ahead, 10, "0" * 64]]


@pytest.mark.parametrize("content", ['{"P": 5}', '{"P": null}', '{"P": "1"}', '{"P": [[1]]}', '{"P": [{"a": 1}]}',
                                     '{"P": [[1e400, 6, "x"]]}', "[" * 200_000, "[]", "5", "not json", "DIR"])
def test_a_broken_seconds_file_neither_stops_a_swap_nor_its_restore(tmp_path: Path, content: str):
    # A hand-edited or damaged seconds.json: the claims it held are lost (this process's still
    # hold), the swap and the byte-for-byte restore go on.
    folder, journal_dir = tmp_path / "tree", tmp_path / "journal"
    folder.mkdir()
    journal_dir.mkdir()
    target = folder / "calc.py"
    target.write_bytes(ORIGINAL)
    if content == "DIR":
        (journal_dir / journal.SECONDS).mkdir()
    else:
        (journal_dir / journal.SECONDS).write_text(content.replace("P", str(target.resolve())))
    with journal.mutated(target, b"MUTATED\n", journal_dir):
        assert target.read_bytes() == b"MUTATED\n"
    assert target.read_bytes() == ORIGINAL
    assert not list(journal_dir.glob(f"*{journal.ENTRY_SUFFIX}"))
