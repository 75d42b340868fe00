"""The suite's cache of real test programs (tests/gates/builds.py) reuses a build only while
everything it read is unchanged, and never a build that did not finish."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gates import builds


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REDFIRST_TEST_BUILDS", str(tmp_path / "cache"))
    return tmp_path


def test_a_build_is_reused_while_what_it_read_is_unchanged_and_made_again_after(cache: Path) -> None:
    header = cache / "header.h"
    header.write_text("int x;\n")
    made: list[Path] = []

    def make(folder: Path) -> list[str]:
        made.append(folder)
        (folder / "out").write_text(header.read_text())
        return [str(header)]

    first = builds.built("prog", [b"source"], make)
    assert builds.built("prog", [b"source"], make) == first and len(made) == 1
    header.write_text("int x, y;\n")                    # another size
    assert (builds.built("prog", [b"source"], make) / "out").read_text() == "int x, y;\n" and len(made) == 2
    os.utime(header, ns=(1, 1))                          # same size, another time
    builds.built("prog", [b"source"], make)
    assert len(made) == 3
    builds.built("prog", [b"other source"], make)        # other inputs: another folder
    assert len(made) == 4 and made[3] != first
    header.unlink()                                      # what it read is gone
    with pytest.raises(FileNotFoundError):
        builds.built("prog", [b"source"], make)


def test_a_build_that_did_not_finish_is_made_again(cache: Path) -> None:
    def broken(folder: Path) -> list[str]:
        (folder / "out").write_text("half")
        raise RuntimeError("compiler killed")

    with pytest.raises(RuntimeError):
        builds.built("prog", [b"source"], broken)
    folder = builds.built("prog", [b"source"], lambda folder: [(folder / "out").write_text("whole") and str(folder / "out")])
    assert (folder / "out").read_text() == "whole"


def test_a_depfile_names_every_prerequisite(tmp_path: Path) -> None:
    deps = tmp_path / "deps"
    deps.write_text("suite: suite.cpp /usr/include/a.h \\\n /usr/include/b.h\n")
    assert builds.depfile_paths(deps) == [str(tmp_path / "suite.cpp"), "/usr/include/a.h", "/usr/include/b.h"]
