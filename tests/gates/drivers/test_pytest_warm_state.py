"""Driver `pytest-warm` is a package whose state lives in objects: no module of it binds a
mutable value (a dict, list or set, a lock, an instance, a None slot) at module or class
level, and none rebinds a module name through `global`. The driver, the client, the
warm process and each of its forks then own what they change."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import redfirst.gates.drivers

DRIVERS = Path(redfirst.gates.drivers.__file__).parent
PACKAGE = DRIVERS / "pytest_warm"

# Calls whose result cannot change: a module may bind these.
# field(): a dataclass field, made per instance; MappingProxyType: a read-only mapping.
IMMUTABLE_CALLS = frozenset({"frozenset", "tuple", "str", "bytes", "int", "float", "Struct", "TypeVar", "NewType",
                             "field", "MappingProxyType"})
# The registry reads `DRIVER` from the package (redfirst.gates.drivers.get): its one instance.
REGISTRY_INSTANCE = "DRIVER"


def _bodies(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at import: module and class level, inside if/try/with/for too,
    never inside a function."""
    for node in body:
        yield node
        if isinstance(node, ast.ClassDef):
            yield from _bodies(node.body)
        elif isinstance(node, ast.If | ast.For | ast.While | ast.With | ast.Try):
            for part in ("body", "orelse", "finalbody"):
                yield from _bodies(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from _bodies(handler.body)


def _mutable(value: ast.expr | None) -> bool:
    if value is None:
        return False          # an annotation alone binds nothing
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Constant) and value.value is None:
        return True           # a slot that something fills in later
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name not in IMMUTABLE_CALLS
    return False


def module_state(source: str, filename: str) -> list[str]:
    """Each place in the source that keeps mutable state outside an object, as file:line."""
    tree = ast.parse(source, filename)
    found = [f"{filename}:{node.lineno}: global {', '.join(node.names)}"
             for node in ast.walk(tree) if isinstance(node, ast.Global)]
    for node in _bodies(tree.body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        else:
            continue
        names = [t.id if isinstance(t, ast.Name) else ast.unparse(t) for t in targets]
        if names == [REGISTRY_INSTANCE] and isinstance(node, ast.Assign):
            continue
        if isinstance(node, ast.AugAssign) or _mutable(value):
            found.append(f"{filename}:{node.lineno}: {', '.join(names)} = {ast.unparse(value) if value else ''}")
    return found


def test_pytest_warm_is_a_package_of_small_modules():
    assert not (DRIVERS / "pytest_warm.py").exists() and not (DRIVERS / "warm_patch.py").exists()
    names = {p.stem for p in PACKAGE.glob("*.py")}
    assert {"__init__", "driver", "client", "server", "patcher"} <= names, names


def test_no_module_of_the_package_holds_mutable_module_state():
    modules = sorted(PACKAGE.glob("*.py"))
    assert modules, f"no modules under {PACKAGE}"
    found = [line for path in modules for line in module_state(path.read_text(encoding="utf-8"), path.name)]
    assert found == [], "state at module or class level: keep it in an object (constants: tuple, frozenset, " \
                        "MappingProxyType)"


@pytest.mark.parametrize("source", [
    "_servers: dict[str, int] = {}\n",
    "_seen = set()\n",
    "_names = [n for n in 'ab']\n",
    "_libc = None\n",
    "import threading\n_lock = threading.Lock()\n",
    "class Warmup:\n    pass\n\n\n_warmup = Warmup()\n",
    "class C:\n    cache = {}\n",
    "_count = 0\n_count += 1\n",
    "try:\n    import x\nexcept ImportError:\n    _fallback = []\n",
    "def f():\n    global _count\n    _count = 1\n",
])
def test_the_check_finds_each_kind_of_module_state(source: str):
    assert module_state(textwrap.dedent(source), "m.py") != []


def test_the_check_allows_constants_and_the_registry_instance():
    source = ("import struct\nimport types\n\nLIMIT = 3\nMEANINGS = types.MappingProxyType({5: 'none ran'})\n"
              "NAMES = frozenset({'a'})\nPAIR = ('a', 'b')\nHEADER = struct.Struct('!Q')\n"
              "class D:\n    option_keys: frozenset[str] = frozenset()\n\n\nDRIVER = D()\n\n\n"
              "def f():\n    seen = []\n    return seen\n")
    assert module_state(source, "m.py") == []


def test_the_warm_process_entry_point_still_runs():
    # The driver starts its warm process as `python -m redfirst.gates.drivers.pytest_warm --serve ...`.
    proc = subprocess.run([sys.executable, "-m", "redfirst.gates.drivers.pytest_warm"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "usage: python -m redfirst.gates.drivers.pytest_warm --serve" in proc.stderr, proc
