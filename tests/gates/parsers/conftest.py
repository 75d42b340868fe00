"""Fixtures that build and run the real test frameworks the parsers read.

Each C++ program is compiled once per machine into a folder keyed by the hash of its
source, flags and compiler, reused while the headers and libraries it read are unchanged,
shared by pytest-xdist workers and later sessions under an fcntl lock (tests/gates/builds.py).
A missing compiler or framework skips locally and fails when CI is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.gates import builds

PROGRAMS = Path(__file__).parent / "programs"


def missing(what: str) -> None:
    """A required component is absent: fail under CI, skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"required for CI but missing: {what}")
    pytest.skip(f"missing: {what}")


@dataclass(frozen=True)
class Ran:
    """One real run: exit status (negative: killed by that signal) and both streams."""

    returncode: int
    stdout: str
    stderr: str


def run(argv: Sequence[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Ran:
    full_env = {**os.environ, **(env or {})}
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=120, check=False
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        missing(f"`{name}` on PATH")
    assert path is not None
    return path


@pytest.fixture(scope="session")
def compile_cpp() -> Callable[[str, Sequence[str]], Path]:
    """Compile programs/<source> with the given link flags, once per machine (tests/gates/builds.py);
    the path of the binary."""
    built: dict[tuple[str, tuple[str, ...]], Path] = {}

    def compile_one(source: str, libs: Sequence[str] = ()) -> Path:
        if (source, tuple(libs)) in built:
            return built[(source, tuple(libs))]
        cxx = _tool("g++")
        src = PROGRAMS / source

        def make(folder: Path) -> list[str]:
            # a copy: the cache outlives this checkout (the selftest's worktrees are removed)
            copy = folder / src.name
            shutil.copyfile(src, copy)
            done = run([cxx, "-O0", "-std=c++17", "-MD", "-MF", folder / "deps", "-o", folder / src.stem, copy, *libs],
                       cwd=folder)
            if done.returncode != 0:
                missing(f"could not build {source} (framework not installed?):\n{done.stderr[-2000:]}")
            return [*builds.depfile_paths(folder / "deps"), *builds.libraries(cxx, libs)]

        folder = builds.built(src.stem, [src.read_bytes(), "\0".join(libs).encode(), builds.compiler_id(cxx)], make)
        built[(source, tuple(libs))] = folder / src.stem
        return folder / src.stem

    return compile_one


@pytest.fixture(scope="session")
def doctest_bin(compile_cpp: Callable[[str, Sequence[str]], Path]) -> Path:
    return compile_cpp("doctest_suite.cpp", [])


@pytest.fixture(scope="session")
def gtest_bin(compile_cpp: Callable[[str, Sequence[str]], Path]) -> Path:
    return compile_cpp("gtest_suite.cpp", ["-lgtest", "-pthread"])


@pytest.fixture(scope="session")
def catch2_bin(compile_cpp: Callable[[str, Sequence[str]], Path]) -> Path:
    # Catch2 v3 is a compiled library; v2 (Debian 12's `catch2`) is a single header
    v3 = any(Path(d, "catch2/catch_session.hpp").exists() for d in ("/usr/include", "/usr/local/include"))
    return compile_cpp("catch2_suite.cpp", ["-lCatch2"] if v3 else [])


@pytest.fixture(scope="session")
def ctest_build() -> Path:
    """A configured and built copy of programs/ctest_project; run `ctest` in it. Built once per
    machine (tests/gates/builds.py); cmake itself rebuilds what a changed header touches."""
    cmake = _tool("cmake")
    _tool("ctest")
    project = PROGRAMS / "ctest_project"
    inputs = [path.name.encode() + b"\0" + path.read_bytes() for path in sorted(project.iterdir())]

    def make(folder: Path) -> list[str]:
        # configured from a copy: the cache outlives this checkout (the selftest's worktrees go)
        shutil.copytree(project, folder / "src")
        configured = run([cmake, "-S", folder / "src", "-B", folder, "-G", "Unix Makefiles"])
        if configured.returncode != 0:
            missing(f"cmake could not configure the CTest project:\n{configured.stderr[-2000:]}")
        return [cmake]

    build = builds.built("ctest", [*inputs, builds.compiler_id(cmake)], make)
    with builds.locked(build.with_name(build.name + ".lock")):
        done = run([cmake, "--build", build])
    if done.returncode != 0:
        missing(f"cmake could not build the CTest project:\n{done.stderr[-2000:]}")
    return build


@pytest.fixture(scope="session")
def prove() -> str:
    return _tool("prove")


def run_pytest(folder: Path, *args: str) -> Ran:
    """The real pytest, on the files in `folder`, isolated from this project's configuration."""
    (folder / "pytest.ini").write_text("[pytest]\n")
    # plugin autoload off: the run reads only pytest's own output, and starts in half the time
    return run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(folder), *args],
        cwd=folder,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""},
    )


@pytest.fixture(scope="session")
def run_program() -> Callable[..., Ran]:
    """`run(argv, cwd=, env=)` -> Ran: a real process, both streams captured."""
    return run


@pytest.fixture(scope="session")
def real_pytest() -> Callable[..., Ran]:
    """`real_pytest(folder, *args)` -> Ran: the real pytest run on a generated folder."""
    return run_pytest


@pytest.fixture(scope="session")
def missing_component() -> Callable[[str], None]:
    """The skip-locally, fail-in-CI helper, for its own test."""
    return missing


@pytest.fixture(scope="session")
def doctest_expected_bin(compile_cpp: Callable[[str, Sequence[str]], Path]) -> Path:
    return compile_cpp("doctest_expected.cpp", [])


def _gates_run(tmp_path: Path, gate_yaml: str) -> dict[str, object]:
    """The one gate in `gate_yaml`, run by the real `gates run --json`: its report item."""
    import json
    import textwrap

    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True, exist_ok=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gate_yaml))
    done = run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--json", "-q", "--root", root], cwd=root)
    doc = json.loads(done.stdout)
    (item,) = doc["items"]
    assert isinstance(item, dict), done.stderr
    return item


@pytest.fixture(scope="session")
def gates_run() -> Callable[[Path, str], dict[str, object]]:
    """`gates_run(tmp_path, gate_yaml)` -> the JSON report item of its one gate, from a real `gates run`."""
    return _gates_run
