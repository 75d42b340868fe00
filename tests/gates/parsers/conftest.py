"""Fixtures that build and run the real test frameworks the parsers read.

Each C++ program is compiled once per test session into a folder keyed by the hash of
its source, flags and compiler, shared by pytest-xdist workers under an fcntl lock.
A missing compiler or framework skips locally and fails when CI is set.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def _compiler_id(cxx: str) -> str:
    return subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def build_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker has its own base temp; their parent is the session's, shared
    session_root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return session_root / "redfirst-parser-builds"


@pytest.fixture(scope="session")
def compile_cpp(build_root: Path) -> Callable[[str, Sequence[str]], Path]:
    """Compile programs/<source> with the given link flags, once; the path of the binary."""
    built: dict[tuple[str, tuple[str, ...]], Path] = {}

    def compile_one(source: str, libs: Sequence[str] = ()) -> Path:
        if (source, tuple(libs)) in built:
            return built[(source, tuple(libs))]
        cxx = _tool("g++")
        src = PROGRAMS / source
        argv_tail = ["-O0", "-std=c++17", *libs]
        key = hashlib.sha256(
            src.read_bytes() + "\0".join([*argv_tail, _compiler_id(cxx)]).encode()
        ).hexdigest()[:16]
        binary = build_root / key / src.stem
        with _locked(build_root / f"{key}.lock"):
            if not binary.exists():
                binary.parent.mkdir(parents=True, exist_ok=True)
                partial = binary.with_suffix(".partial")
                done = run([cxx, "-O0", "-std=c++17", "-o", partial, src, *libs])
                if done.returncode != 0:
                    missing(f"could not build {source} (framework not installed?):\n{done.stderr[-2000:]}")
                os.replace(partial, binary)
        built[(source, tuple(libs))] = binary
        return binary

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
def ctest_build(build_root: Path) -> Path:
    """A configured and built copy of programs/ctest_project; run `ctest` in it."""
    cmake = _tool("cmake")
    _tool("ctest")
    project = PROGRAMS / "ctest_project"
    digest = hashlib.sha256()
    for path in sorted(project.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    build = build_root / f"ctest-{digest.hexdigest()[:16]}"
    with _locked(build_root / f"{build.name}.lock"):
        if not (build / "done").exists():
            shutil.rmtree(build, ignore_errors=True)
            configured = run([cmake, "-S", project, "-B", build, "-G", "Unix Makefiles"])
            if configured.returncode != 0:
                missing(f"cmake could not configure the CTest project:\n{configured.stderr[-2000:]}")
            built = run([cmake, "--build", build])
            if built.returncode != 0:
                missing(f"cmake could not build the CTest project:\n{built.stderr[-2000:]}")
            (build / "done").write_text("")
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
