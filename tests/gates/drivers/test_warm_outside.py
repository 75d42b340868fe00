"""pytest_warm.imported.collect_outside: the warm-up's collection outside the root (what installed
plugins import lazily, imported once) walks only its own empty folder, and keeps the bytecode
of what it imports in redfirst's cache folder, never beside a source. Real pytest, run
in-process as the warm process runs it."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

from redfirst.gates.drivers.pytest_warm import imported


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "redfirst" / "pycache"


def test_the_outside_collection_walks_no_folder_but_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            cache: Path):
    # A temporary folder holding other folders, as a shared /tmp does (thousands on a busy machine).
    temp = tmp_path / "tmp"
    for i in range(20):
        (temp / f"other{i}").mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen: list[Path] = []

    class Recorder:
        def pytest_collect_directory(self, path: Path, parent: object) -> None:
            seen.append(path)

    real = pytest.main
    monkeypatch.setattr(pytest, "main", lambda args, plugins=None: real(args, plugins=[Recorder()]))
    imported.collect_outside(tmp_path / "root")
    assert seen, "the collection ran"
    assert [p for p in seen if not p.name.startswith("rf-warm-empty-")] == []


def test_bytecode_of_what_is_imported_outside_lands_in_the_cache_folder_only(tmp_path: Path, cache: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "site"
    package.mkdir()
    (package / "rf_outside_mod.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)     # PYTHONDONTWRITEBYTECODE
    before = sys.pycache_prefix
    try:
        with imported.bytecode_kept(tmp_path / "root"):
            module = importlib.import_module("rf_outside_mod")
    finally:
        sys.modules.pop("rf_outside_mod", None)
    assert module.VALUE == 7
    assert sys.dont_write_bytecode is True and sys.pycache_prefix == before
    assert not (package / "__pycache__").exists(), "no bytecode beside the source"
    kept = list(cache.rglob("rf_outside_mod*.pyc"))
    assert len(kept) == 1 and str(package).lstrip("/") in str(kept[0])


def test_a_cache_folder_that_cannot_be_made_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))      # a file where the folder would go
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    with imported.bytecode_kept(tmp_path):
        assert sys.dont_write_bytecode is True
    assert sys.dont_write_bytecode is True


def test_no_bytecode_of_a_module_under_the_root_is_kept_or_read_back(tmp_path: Path, cache: Path,
                                                                      monkeypatch: pytest.MonkeyPatch):
    # A project that is itself a pytest plugin is imported by the outside collection. Its bytecode
    # must never come from the cache: a mutation may keep a file's size and second (`+` -> `-`).
    root = tmp_path / "root"
    root.mkdir()
    source = root / "rf_root_plugin.py"
    source.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    try:
        with imported.bytecode_kept(root):
            importlib.import_module("rf_root_plugin")
    finally:
        sys.modules.pop("rf_root_plugin", None)
    assert list(cache.rglob("rf_root_plugin*.pyc")) == []
    # One planted by an earlier run, for a source of the same size and time as the edited one:
    stat = source.stat()
    with imported.bytecode_kept(root):
        pass
    planted = cache / str(root).lstrip("/") / f"rf_root_plugin.{sys.implementation.cache_tag}.pyc"
    planted.parent.mkdir(parents=True, exist_ok=True)
    sys.pycache_prefix, saved = str(cache), sys.pycache_prefix
    try:
        import py_compile
        py_compile.compile(str(source), cfile=str(planted))
    finally:
        sys.pycache_prefix = saved
    source.write_text("VALUE = 2\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    try:
        with imported.bytecode_kept(root):
            module = importlib.import_module("rf_root_plugin")
    finally:
        sys.modules.pop("rf_root_plugin", None)
    assert module.VALUE == 2

