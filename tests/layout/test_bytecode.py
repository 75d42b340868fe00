"""The suite's thousands of Python subprocesses (gates, mutate, leases, workers) read redfirst's bytecode,
never compile its source again: where PYTHONDONTWRITEBYTECODE is set (this machine's shells set it, and
`mutate` sets it for its runs) no process writes a .pyc, so each one compiled the package anew, 0.2-0.5 s
of CPU a process. tests/conftest.py compiles it once before the workers start (`compile_redfirst`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import redfirst

PACKAGE = Path(redfirst.__file__).resolve().parent


def _stale(package: Path) -> list[str]:
    """The modules whose bytecode (where this interpreter looks for it) is missing or not of their source."""
    stale = []
    for source in sorted(package.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        st = source.stat()
        try:
            header = cached.read_bytes()[:16]
        except OSError:
            stale.append(str(source.relative_to(package)))
            continue
        fresh = (header[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(header[4:8], "little") == 0
                 and int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
                 and int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF)
        if not fresh:
            stale.append(str(source.relative_to(package)))
    return stale


def test_every_redfirst_module_has_current_bytecode_when_the_tests_run() -> None:
    assert _stale(PACKAGE) == []


def test_a_subprocess_that_may_not_write_bytecode_loads_redfirst_from_it() -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-v", "-c", "import redfirst.mutations.engine"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = [line for line in proc.stderr.splitlines() if line.startswith("# code object from") and str(PACKAGE) in line]
    assert ours and all(".pyc'" in line for line in ours), "\n".join(ours[:10])


def test_the_check_sees_a_module_edited_after_it_was_compiled(tmp_path: Path) -> None:
    import py_compile

    package = tmp_path / "pkg"
    package.mkdir()
    module = package / "m.py"
    module.write_text("A = 1\n")
    py_compile.compile(str(module), doraise=True)
    assert _stale(package) == []
    module.write_text("A = 22\n")      # a size of its own: stale whatever the clock's resolution
    assert _stale(package) == ["m.py"]
