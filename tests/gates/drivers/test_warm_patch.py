"""pytest_warm.patcher: a warm process's functions get an edited file's code in place, only when
that is the same as importing the file again. Real modules imported from tmp_path."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redfirst.gates.drivers.pytest_warm.patcher import Warmup, patch, plan, shape

BASE = b'''\
"""doc"""
LIMIT = 3


def add(a, b):
    return a + b


def sub(a, b=1):
    return a - b


class Box:
    def size(self):
        return LIMIT
'''


def test_a_body_edit_names_the_changed_function():
    edit = plan(BASE, BASE.replace(b"return a + b", b"return a - b"), "m.py")
    assert edit is not None
    assert list(edit.changed) == ["add"] and edit.changed["add"].co_qualname == "add"
    assert edit.moved == {}


def test_a_method_body_edit_names_the_method():
    edit = plan(BASE, BASE.replace(b"return LIMIT", b"return LIMIT + 1"), "m.py")
    assert edit is not None and list(edit.changed) == ["Box.size"]


def test_an_edit_that_adds_lines_moves_the_functions_below_it():
    edit = plan(BASE, BASE.replace(b"return a + b", b"x = a\n    return x + b"), "m.py")
    assert edit is not None
    assert list(edit.changed) == ["add"] and sorted(edit.moved) == ["Box.size", "sub"]
    assert edit.moved["sub"].co_firstlineno == 10


@pytest.mark.parametrize("old, new", [
    (b"LIMIT = 3", b"LIMIT = 4"),                          # a module constant
    (b"def sub(a, b=1)", b"def sub(a, b=LIMIT)"),          # a default that is not a literal
    (b"def sub(a, b=1)", b"def sub(a, c=1)"),              # a signature
    (b'"""doc"""', b'"""DOC"""'),                          # the module's docstring
    (b"class Box:", b"class Box(object):"),                # a class statement
    (b"def add(a, b):\n", b"@staticmethod\ndef add(a, b):\n"),   # a decorator
    (b"return a + b", b"return a +"),                      # does not parse
])
def test_an_edit_outside_function_bodies_is_refused(old: bytes, new: bytes):
    assert old in BASE
    assert plan(BASE, BASE.replace(old, new), "m.py") is None


def test_a_changed_docstring_is_refused():
    src = b'def f():\n    """one"""\n    return 1\n'
    assert plan(src, src.replace(b"one", b"two"), "m.py") is None


def test_a_repeated_function_name_is_refused():
    src = b"def f():\n    return 1\n\n\ndef f():\n    return 2\n"
    assert plan(src, src.replace(b"return 2", b"return 3"), "m.py") is None


# -- an edit within one function is looked at in that function alone ------------------

RICH = b'''\
"""doc"""
import functools

LIMIT = 3


def add(a, b):
    return a + b


@functools.lru_cache(maxsize=None)
def cached(n, *, scale=2):
    """Cached."""
    total = 0
    for i in range(n):
        total += i * scale
    return total


async def fetch(x=(1, 2), y="s"):
    return [x, y]


class Box:
    """A box."""

    class Inner:
        def deep(self, k=None):
            return {"k": k,
        "wide": LIMIT}

    def size(self):
        return LIMIT  # the limit

    @staticmethod
    def twice(v):
        s = """a
string"""
        return v * 2, s
'''

# Pieces an edit is made of: tokens, whitespace, brackets and quotes left open, line breaks.
_PIECES = ["\n", "    ", "        ", "return 0", "+ 1", "- 1", "(", ")", "[", "]", "\"\"\"", "\"", "'", "#", "\\",
           "def g():", "class K:", "x = 1", ":", ",", "@functools.cache", "pass", "if x:", "a", "b", "LIMIT",
           "await x", "yield", "None", "2", "=", "\t", ";", "lambda: 0", "async def h():", "elif", "*"]


# Where the functions' texts are, and within them where their lines start: most edits land there.
_STARTS = [i + 1 for i, c in enumerate(RICH) if c == ord("\n")]


# Whole lines put at a line start: blank, comments, statements at every depth, some left open.
_LINES = ["\n", "# c\n", "    # c\n", "    pass\n", "        pass\n", "            pass\n", "x = 1\n", "    x = (1,\n",
          "        return 0\n", "    def extra(self):\n        return 1\n", '        """\n', "    @staticmethod\n",
          "\tpass\n", "        yield\n", "            await x\n"]


def _pieces_edit(data: st.DataObject) -> bytes:
    mode = data.draw(st.integers(0, 2))
    if mode == 2:
        i = data.draw(st.sampled_from(_STARTS))
        return RICH[:i] + data.draw(st.sampled_from(_LINES)).encode() + RICH[i:]
    if mode == 0:
        i = data.draw(st.integers(0, len(RICH)))
    else:
        i = data.draw(st.sampled_from(_STARTS)) + data.draw(st.integers(0, 12))
    i = min(i, len(RICH))
    j = data.draw(st.integers(i, min(len(RICH), i + 20)))
    middle = "".join(data.draw(st.lists(st.sampled_from(_PIECES), max_size=4)))
    return RICH[:i] + middle.encode() + RICH[j:]


@pytest.mark.filterwarnings("ignore::SyntaxWarning")     # edits that write `1x` and the like
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")   # and `\c` (Python 3.11)
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_an_edit_looked_at_locally_plans_what_the_whole_module_plans(data: st.DataObject):
    old = shape(RICH)
    assert old is not None and old.spans
    new = _pieces_edit(data)
    assert plan(old, new, "m.py") == plan(old, new, "m.py", local=False)


def test_an_edit_within_one_function_does_not_parse_the_whole_module(monkeypatch: pytest.MonkeyPatch):
    import redfirst.gates.drivers.pytest_warm.patcher as patcher
    old = shape(RICH)
    assert old is not None
    parsed: list[bytes] = []
    monkeypatch.setattr(patcher, "shape", lambda source: parsed.append(source))
    edit = plan(old, RICH.replace(b"total += i * scale", b"total -= i * scale"), "m.py")
    assert edit is not None and list(edit.changed) == ["cached"] and edit.moved == {}
    assert parsed == []


@pytest.mark.parametrize("old, new, changed, moved", [
    # A blank line put before a method: it moves (its first line), and so do the ones after it.
    (b"    def size(self):", b"\n    def size(self):", [], ["Box.size", "Box.twice"]),
    # A comment within a body: nothing changes, nothing after it moves.
    (b"        return LIMIT  # the limit", b"        return LIMIT  # the bound", [], []),
    # A literal default of a changed method.
    (b"def deep(self, k=None):\n            return", b"def deep(self, k=1):\n            return 0 or", ["Box.Inner.deep"],
     []),
])
def test_a_local_edit_names_what_a_whole_module_edit_names(old: bytes, new: bytes, changed: list[str], moved: list[str]):
    assert old in RICH
    shaped = shape(RICH)
    assert shaped is not None
    edit = plan(shaped, RICH.replace(old, new), "m.py")
    assert edit is not None
    assert sorted(edit.changed) == changed and sorted(edit.moved) == moved
    assert edit == plan(shaped, RICH.replace(old, new), "m.py", local=False)


@pytest.mark.parametrize("old, new", [
    (b"    return a + b\n", b"    return a + b\nLIMIT = 4\n"),             # a line dedented out of the body
    (b"\n    def size(self):", b"\n   def size(self):"),                     # a def's own indentation
    (b"    return [x, y]", b'    return [x, y]  """'),                      # a string left open into what follows
    (b"    return a + b", b"    return (a + b"),                           # a bracket left open
    (b"def cached(n, *, scale=2):", b"def cached(n, *, scale=LIMIT):"),    # a default that is not a literal
    (b'"""Cached."""', b'"""Cache."""'),                                   # a docstring
])
def test_an_edit_that_reaches_out_of_its_function_is_refused(old: bytes, new: bytes):
    assert old in RICH
    shaped = shape(RICH)
    assert shaped is not None
    assert plan(shaped, RICH.replace(old, new), "m.py") is None


@pytest.mark.parametrize("source", [
    RICH.replace(b"\n", b"\r\n"),                       # line ends the parser reads differently
    b"# -*- coding: latin-1 -*-\n" + RICH,               # another encoding
    b"\xef\xbb\xbf" + RICH,                               # a byte order mark
    RICH.replace(b"LIMIT = 3", b"LIMIT = 3\x0c"),         # a form feed
])
def test_a_source_whose_offsets_are_not_the_parsers_is_looked_at_whole(source: bytes):
    shaped = shape(source)
    assert shaped is not None and shaped.spans == ()
    edit = plan(shaped, source.replace(b"return a + b", b"return a - b"), "m.py")
    assert edit is not None and list(edit.changed) == ["add"]


# -- patch() against modules really imported, under a real Warmup -----------------------

@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def load(name: str, source: str) -> tuple[Warmup, object, Path]:
        file = tmp_path / f"{name}.py"
        file.write_text(textwrap.dedent(source))
        warmup = Warmup()
        warmup.start()
        try:
            module = importlib.import_module(name)
        finally:
            warmup.stop()
        names.append(name)
        warmup.index([(name, str(file))])
        return warmup, module, file

    yield load
    for name in names:
        sys.modules.pop(name, None)


def test_a_plain_function_is_patched_where_every_namespace_sees_it(load):
    warmup, m, file = load("wp_refs", """\
        def add(a, b):
            return a + b

        class C:
            def m(self):
                return 1
        """)
    # `from wp_refs import add` in another module: one more namespace naming the function.
    sys.modules["wp_refs_user"] = type(sys)("wp_refs_user")
    sys.modules["wp_refs_user"].add = m.add
    try:
        warmup._count_names()
        file.write_text(file.read_text().replace("return a + b", "return a - b").replace("return 1", "return 2"))
        assert patch(warmup, m)
        assert (m.add(5, 3), sys.modules["wp_refs_user"].add(5, 3), m.C().m()) == (2, 2, 2)
    finally:
        del sys.modules["wp_refs_user"]


@pytest.mark.parametrize("holder", [
    "import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef f(a):\n    return a + 1\n",   # a wrapper
    "def f(a):\n    return a + 1\n\n\nTABLE = [f]\n",                                      # a registry
    "def f(a):\n    return a + 1\n\n\nCODE = f.__code__\n",                                 # its code kept
    "import inspect\n\n\ndef f(a):\n    return a + 1\n\n\nSRC = inspect.getsource(f)\n",   # its source read
    "def jit(fn):\n    return fn\n\n\n@jit\ndef f(a):\n    return a + 1\n",              # handed to a decorator
])
def test_a_function_something_made_at_import_may_hold_is_not_patched(load, holder: str):
    name = f"wp_hold_{abs(hash(holder)) % 10**8}"
    warmup, m, file = load(name, holder)
    file.write_text(file.read_text().replace("return a + 1", "return a + 2"))
    assert not patch(warmup, m)


def test_a_replaced_profile_hook_makes_the_warm_up_blind(load, tmp_path: Path):
    (tmp_path / "wp_prof.py").write_text("import sys\n\n\ndef values():\n    return [1]\n\n\n"
                                         "sys.setprofile(lambda *a: None)\nV = values()\nsys.setprofile(None)\n")
    warmup = Warmup()
    warmup.start()
    try:
        m = importlib.import_module("wp_prof")
    finally:
        warmup.stop()
    warmup.index([("wp_prof", str(tmp_path / "wp_prof.py"))])
    (tmp_path / "wp_prof.py").write_text((tmp_path / "wp_prof.py").read_text().replace("return [1]", "return [2]"))
    try:
        assert warmup.blind and not patch(warmup, m)
    finally:
        sys.modules.pop("wp_prof", None)


@pytest.mark.parametrize("source, old, new", [
    # ran at import: its result is already in a constant
    ("def f():\n    return 1\n\nX = f()\n", "return 1", "return 2"),
    # a closure made at import holds the old inner code
    ("def make():\n    def inner():\n        return 1\n    return inner\n\nH = make()\n", "return 1", "return 2"),
    # a generator made at import (never started) holds a frame of the old code
    ("def gen():\n    yield 1\n\nG = gen()\n", "yield 1", "yield 2"),
    # the new body needs a cell (__class__ for super()) the old one did not have
    ("class B:\n    def m(self):\n        return 1\n\nclass D(B):\n    def m(self):\n        return 1\n",
     "        return 1\n", "        return super().m() + 1\n"),
])
def test_a_patch_that_would_not_equal_a_fresh_import_is_refused(load, source: str, old: str, new: str):
    name = f"wp_refuse_{abs(hash(source)) % 10**8}"
    warmup, m, file = load(name, source)
    text = file.read_text()
    assert old in text
    head, _, tail = text.rpartition(old)
    file.write_text(head + new + tail)   # the last occurrence
    before = {k: getattr(v, "__code__", None) for k, v in vars(m).items()}
    assert not patch(warmup, m)
    assert {k: getattr(v, "__code__", None) for k, v in vars(m).items()} == before   # nothing half done


def test_a_changed_function_with_no_live_object_is_refused(load):
    # Nothing holds g after import: there is nothing to give the new code to, and a
    # function the index cannot see must not be assumed absent.
    warmup, m, file = load("wp_gone", "def g():\n    return 1\n\n\nKEEP = 1\ndel g\n")
    file.write_text(file.read_text().replace("return 1", "return 2"))
    assert not patch(warmup, m)


def test_a_literal_default_is_given_to_the_live_function(load):
    warmup, m, file = load("wp_defaults", """\
        def backoff(attempt, base=1.0, *, cap=60.0):
            return min(base * 2 ** attempt, cap)


        def tagged(x, tag=str(1)):
            return f"{tag}{x}"
        """)
    file.write_text(file.read_text().replace("base=1.0", "base=2.0").replace("cap=60.0", "cap=3.0"))
    assert patch(warmup, m)
    assert (m.backoff(0), m.backoff(5)) == (2.0, 3.0)
    # A default that is not a literal is evaluated at import: that edit is not patched.
    file.write_text(file.read_text().replace("tag=str(1)", "tag=str(2)"))
    assert not patch(warmup, m)


# -- review findings: edits the local look must leave to the whole module ------------------

@pytest.mark.parametrize("old, new", [
    # A method's def indented under the one before it: now nested there, after its return.
    (b"class A:\n    def e(self):\n        return 0\n    def f(self):\n        return 1\n",
     b"class A:\n    def e(self):\n        return 0\n        def f(self):\n            return 1\n"),
    # An encoding declaration put on line 2: the whole file decodes otherwise.
    ("# helpers\ndef f():\n    return 1\n\n\nS = 'é'\n".encode(),
     "# helpers\n# coding: latin-1\ndef f():\n    return 1\n\n\nS = 'é'\n".encode()),
    ("def f():\n    return 1\n\n\nS = 'é'\n".encode(),
     "def f():\n    # coding: latin-1\n    return 1\n\n\nS = 'é'\n".encode()),
    # A lone carriage return in a body: Python reads it as a line end, so what follows moves.
    (b"def f():\n    x = 1; return x\n\n\ndef g():\n    raise ValueError\n",
     b"def f():\n    x = 1\r    return x\n\n\ndef g():\n    raise ValueError\n"),
])
def test_an_edit_the_local_look_cannot_judge_plans_as_the_whole_module(old: bytes, new: bytes):
    shaped = shape(old)
    assert shaped is not None
    assert plan(shaped, new, "m.py") == plan(shaped, new, "m.py", local=False)


@pytest.mark.parametrize("old, new, value", [
    (b"def f(x=1):\n    return x is True\n", b"def f(x=True):\n    return x is True\n", True),
    (b"def f(x=0.0):\n    return str(x)\n", b"def f(x=-0.0):\n    return str(x)\n", -0.0),
    (b"def f(x=1):\n    return type(x)\n", b"def f(x=1.0):\n    return type(x)\n", 1.0),
])
@pytest.mark.parametrize("local", [True, False])
def test_a_default_equal_in_value_but_not_the_same_literal_is_given_to_the_function(
        old: bytes, new: bytes, value: object, local: bool):
    edit = plan(shape(old), new, "m.py", local=local)
    assert edit is not None and list(edit.changed) == ["f"]
    positional, _ = edit.defaults["f"]
    assert positional is not None and repr(positional[0]) == repr(value) and type(positional[0]) is type(value)


LAMBDAS = b'''\
def clamp(x, lo):
    if x < lo:
        return lo
    return x


RULES = {"positive": lambda x: x > 0}
SQUARES = [n * n for n in range(3)]


class Box:
    LIMIT = 3
'''


def test_an_edit_that_moves_lines_above_a_lambda_is_refused():
    # helper-16 F2: the lambda is not replaced and keeps its old line numbers (inspect.getsource
    # read the wrong line); a class body and a list comprehension run once at import and are not kept
    assert plan(LAMBDAS, LAMBDAS.replace(b"    if x < lo:\n        return lo\n", b""), "m.py") is None
    assert plan(LAMBDAS, LAMBDAS.replace(b"return x\n", b"y = x\n    return y\n"), "m.py") is None
    same = plan(LAMBDAS, LAMBDAS.replace(b"return lo", b"return x"), "m.py")
    assert same is not None and list(same.changed) == ["clamp"]
    below = LAMBDAS.replace(b'RULES = {"positive": lambda x: x > 0}\n', b"")
    grown = plan(below, below.replace(b"return x\n", b"y = x\n    return y\n"), "m.py")
    assert grown is not None and list(grown.changed) == ["clamp"]
