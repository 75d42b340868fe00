"""Give a warm process's functions the code of an edited source file, in place.

A fork of the warm process must run the code as it is on disk now. The safe way is to
import again every module from under the root (and everything that imported them); that
costs the project's import time on every run. When an edit only changes the bodies of
functions, the fork can instead compile the edited file and give each live function
object the new code (`fn.__code__ = new`): every reference to the function (`from m
import f`, a dispatch table, a bound method, a decorator's wrapper) then runs the edited
body, exactly as after a fresh import.

That holds only when nothing computed at import time depended on the old body, so a
patch is refused (and the fork imports again) unless all of these hold:

- both versions parse, and are equal once the bodies of module- and class-level
  functions are set aside: same statements, constants, decorators, signatures, defaults,
  annotations and docstrings;
- each changed function has a unique qualified name in both versions, at least one live
  function object, and the same free variables;
- no changed function, and no function nested in one, ran while the warm process
  imported and collected (its result may sit in a module constant, a parametrize list or
  a closure), and no generator or coroutine of one was alive when it finished;
- nothing opened the file as text while the warm process imported, collected or made a
  session (a test's `open(module.__file__)`, `inspect.getsource(module)`, a module reading
  its own file): only its import read it; and nothing read a changed function's `__code__`,
  `__defaults__` or `__kwdefaults__` there (`K = f.__defaults__[0]` keeps the old value);
- the module was loaded by the standard source loader (pytest's assertion rewriting
  compiles test modules differently: those are imported again).
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import functools
import gc
import importlib.machinery
import os
import sys
import sysconfig
import threading
import time
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# Installed distributions may live below the standard library's folder: they are not it.
_INSTALLED = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# The clock, as code reads it: a reading kept at import (a start time, an expiry) is every
# fork's, where each cold run takes its own just before its tests.
_CLOCKS = frozenset({time.time, time.time_ns, time.monotonic, time.monotonic_ns, time.perf_counter,
                     time.perf_counter_ns, time.process_time, time.process_time_ns, time.localtime, time.gmtime,
                     time.ctime, time.asctime, time.strftime, datetime.datetime.now, datetime.datetime.utcnow,
                     datetime.datetime.today, datetime.date.today})


def _rewriting_unprofiled(on: bool) -> None:
    """pytest's assertion rewriting of a test module, run without the profile hook (`on`) or as
    pytest has it: a rewrite of the module's syntax tree that runs no code of the project, one
    call per tree node, which under the hook made most of a collection's cost."""
    rewrite = sys.modules.get("_pytest.assertion.rewrite")
    current = getattr(rewrite, "rewrite_asserts", None)
    if rewrite is None or current is None:
        return
    original = getattr(current, _UNPROFILED, None)
    if on and original is None:
        @functools.wraps(current)
        def unprofiled(*args: Any, **kwargs: Any) -> Any:
            hook = sys.getprofile()
            sys.setprofile(None)
            try:
                return current(*args, **kwargs)
            finally:
                sys.setprofile(hook)
        setattr(unprofiled, _UNPROFILED, current)
        rewrite.rewrite_asserts = unprofiled   # type: ignore[attr-defined]
    elif not on and original is not None:
        rewrite.rewrite_asserts = original     # type: ignore[attr-defined]


_UNPROFILED = "_redfirst_profiled"      # on the stand-in: pytest's own function


class Warmup:
    """What a warm process learns while it imports: which code under the root ran, and
    afterwards every live function object of the root's source files."""

    def __init__(self) -> None:
        self.ran: set[types.CodeType] = set()
        self.functions: dict[tuple[str, str], list[types.FunctionType]] = {}
        self.sources: dict[str, bytes] = {}      # file -> its bytes as imported
        self.before: set[str] = set()            # modules imported before anything was noted
        self.shapes: dict[str, Shape | None] = {}   # file -> the shape of its bytes as imported
        # file -> (its bytes now, the patch that brings it there), worked out in the warm process for
        # the request it forks next: the fork uses it where the file still holds those bytes.
        self.planned: dict[str, tuple[bytes, Plan | None]] = {}
        # the same, worked out in a standby for the bytes its run was guessed to find (predict)
        self.predicted: dict[str, tuple[bytes, Plan | None]] = {}
        self.handled: set[types.CodeType] = set()     # code of functions handed to a call at warm-up
        self.blind = ""                               # why what ran cannot be trusted (profile replaced)
        self.clock = ""                               # where the root's code read the clock, if it did
        self.roots: tuple[str, ...] = ()              # the root's folder (as given, resolved), each ending in a separator
        self._own = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))))), "")        # redfirst's own package
        self.names: dict[int, int] = {}               # id of an indexed function -> namespaces naming it
        self.read_as_text: set[str] = set()           # files opened other than by an import, while noting (realpath)
        self._noting_reads = False
        self._audit_installed = False
        self._in_audit = False
        self._hook = self._profile
        self._collector: tuple[str, ...] = ()         # pytest's and pluggy's folders
        self._stdlib = tuple(dict.fromkeys(os.path.join(sysconfig.get_paths()[key], "")
                                           for key in ("stdlib", "platstdlib")))

    # -- while importing ------------------------------------------------------------
    def _profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            if not self.clock and type(arg) is types.BuiltinFunctionType and arg in _CLOCKS \
                    and frame.f_code.co_filename.startswith(self.roots) and not frame.f_code.co_filename.startswith(
                    (*self._collector, self._own)) and not any(part in frame.f_code.co_filename for part in _INSTALLED):
                self.clock = (f"{frame.f_code.co_filename}:{frame.f_lineno} read the clock "
                              f"({getattr(arg, '__qualname__', arg)}) while the warm process imported it: every "
                              "fork would share that reading, where each cold run takes its own")
            return
        if event == "call":     # every code object: cheaper than asking where it lives
            self.ran.add(frame.f_code)
            # A function handed to a call (a decorator, inspect.getsource, a JIT reading
            # its source) may have been read, not run: its old body can live on in what
            # that call made. Module and class bodies are left out: they hold every name;
            # so are pytest's collection and what it calls directly (inspect.isclass...),
            # which look at every name of a test module.
            # The standard library between them counts as the collector's (pytest >= 9.1
            # runs inspect.unwrap over every module-level name).
            if frame.f_code.co_flags & _CO_OPTIMIZED and not frame.f_code.co_filename.startswith(self._collector):
                functions = [v for v in frame.f_locals.values() if type(v) is types.FunctionType]
                if functions and not self._collecting(frame.f_back):
                    self.handled.update(fn.__code__ for fn in functions)

    def _collecting(self, frame: types.FrameType | None) -> bool:
        """Whether the first frame at or above this one outside the standard library is the
        collector's."""
        while frame is not None and frame.f_code.co_filename.startswith(self._stdlib) \
                and not any(part in frame.f_code.co_filename for part in _INSTALLED):
            frame = frame.f_back
        return frame is not None and frame.f_code.co_filename.startswith(self._collector)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        """Audit hook: a file opened while the warm process imports, collects or makes a session,
        other than by the import system loading a module (its source or bytecode): its text may
        live on in what read it (a constant, a config attribute, a module's own copy of itself).
        And a function whose code or defaults were read there (`K = f.__defaults__[0]`): what
        was read may live on too, so it counts as handed to a call (never patched)."""
        if not self._noting_reads:
            return
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in _READ_OFF and type(args[0]) is types.FunctionType \
                    and not self._in_audit:
                self._in_audit = True       # reading __code__ here raises this event again
                try:
                    self.handled.add(args[0].__code__)
                finally:
                    self._in_audit = False
            return
        if event != "open":
            return
        try:
            path = args[0]
            if isinstance(path, int):
                return
            caller = sys._getframe(1).f_code
            if caller.co_name == "get_data" and caller.co_filename == "<frozen importlib._bootstrap_external>":
                return      # the import system: what it reads is the module's code, which a patch replaces
            self.read_as_text.add(os.path.realpath(os.fsdecode(path)))
        except Exception:  # noqa: S110  (an audit hook that raises fails the open it watches)
            self.blind = "the warm-up's read hook failed"

    def _note_reads(self, on: bool) -> None:
        if on and not self._audit_installed:
            sys.addaudithook(self._audit)
            self._audit_installed = True
        self._noting_reads = on

    def start(self) -> None:
        self._note_reads(True)
        self.before = set(sys.modules)
        self._collector = tuple(os.path.dirname(m.__file__) + os.sep for m in
                                (sys.modules.get("_pytest"), sys.modules.get("pluggy")) if m and m.__file__)
        _rewriting_unprofiled(True)
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)

    def stop(self) -> None:
        if sys.getprofile() is not self._hook:
            # Something (a profiler in a conftest) replaced ours: calls went unseen.
            self.blind = f"the warm-up's profile hook was replaced by {sys.getprofile()!r}"
        sys.setprofile(None)
        threading.setprofile(None)
        _rewriting_unprofiled(False)
        self._note_reads(False)

    @contextlib.contextmanager
    def calls(self) -> Iterator[set[types.CodeType]]:
        """Note every code object that runs inside, as `start`/`stop` do, through the C profiler
        (a fraction of the Python hook's cost), for work that runs no import: a pytest session
        made ready up to its first test (prepared.py). Functions handed to a call are not
        noted (a decorator or a source reader runs at import, which is not done here). The set
        yielded holds, once the block is left, the code objects that ran inside it."""
        import cProfile

        ran: set[types.CodeType] = set()

        profile = cProfile.Profile()
        self._note_reads(True)
        profile.enable()
        try:
            yield ran
        finally:
            if sys.getprofile() is not profile:
                self.blind = f"the profile of a prepared session was replaced by {sys.getprofile()!r}"
            profile.disable()
            self._note_reads(False)
            ran.update(e.code for e in profile.getstats() if isinstance(e.code, types.CodeType))
            self.ran.update(ran)

    def learn_shapes(self, files: Iterable[str]) -> None:
        """The shape of each of these files as imported, where not known yet: worked out once here,
        so a fork (a standby) that patches one of them inherits it instead of parsing it again."""
        for file in files:
            if file in self.sources and file not in self.shapes:
                self.shapes[file] = shape(self.sources[file])

    def predict(self, files: Mapping[str, bytes]) -> None:
        """In a standby, before its run is asked for: the patch to each of these files (file ->
        the bytes the run is guessed to find), so that `prepare` need not work it out where the
        file then holds those bytes."""
        for file, now in files.items():
            file = os.path.abspath(file)
            if file in self.sources and now != self.sources[file]:
                self.learn_shapes([file])
                self.predicted[file] = (now, plan(self.shapes[file], now, file))

    def prepare(self, files: Iterable[str]) -> None:
        """Work out, once, the shape of each of these files as imported (files an edit has
        touched), and the patch to each one's bytes now: a fork inherits both instead of
        parsing either version itself (a fresh fork pays for every page it touches)."""
        self.planned = {}
        files = list(files)
        self.learn_shapes(files)
        for file in files:
            if file not in self.sources:
                continue
            try:
                with open(file, "rb") as f:
                    now = f.read()
            except OSError:
                continue
            if now != self.sources[file]:
                known = self.predicted.get(file)
                self.planned[file] = known if known is not None and known[0] == now else \
                    (now, plan(self.shapes[file], now, file))

    # -- once imported --------------------------------------------------------------
    def index(self, modules: Iterable[tuple[str, str]]) -> None:
        """Every function object (and every started or pending generator) whose code
        comes from one of the modules' files, found in one pass over the collector's
        objects; the files' bytes as they were imported."""
        files = set()
        for name, file in modules:
            if file in self.sources:
                files.add(file)   # indexed before: functions made since are added
                continue
            if name in self.before:
                continue      # its import-time calls were not seen: never patched
            files.add(file)
            try:
                with open(file, "rb") as f:
                    self.sources[file] = f.read()
            except OSError:
                continue
        known = {id(fn) for fns in self.functions.values() for fn in fns}
        for obj in gc.get_objects():
            if isinstance(obj, types.FunctionType):
                code = obj.__code__
                if code.co_filename in files and id(obj) not in known:
                    self.functions.setdefault((code.co_filename, code.co_qualname), []).append(obj)
            elif isinstance(obj, types.GeneratorType | types.CoroutineType | types.AsyncGeneratorType):
                # Its frame holds the old code, which an edit would not reach.
                code = (obj.gi_code if isinstance(obj, types.GeneratorType) else
                        obj.cr_code if isinstance(obj, types.CoroutineType) else obj.ag_code)
                self.ran.add(code)
        self._count_names()

    def _count_names(self) -> None:
        """How many module and class namespaces name each indexed function."""
        targets = {id(fn) for fns in self.functions.values() for fn in fns}
        counts = dict.fromkeys(targets, 0)
        seen: set[int] = set()

        def visit(owner: Any) -> None:      # a module or a class, by its own identity
            if id(owner) in seen:
                return
            seen.add(id(owner))
            namespace: Any = getattr(owner, "__dict__", None)
            if not hasattr(namespace, "values"):
                return
            for value in list(namespace.values()):
                if id(value) in counts:
                    counts[id(value)] += 1
                elif isinstance(value, type):
                    visit(value)

        for module in list(sys.modules.values()):
            visit(module)
        self.names = counts


def _swappable(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, _FunctionNode]]:
    """Functions defined directly at module level or in a class body (classes nested)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _swappable(node.body, f"{prefix}{node.name}.")


Defaults = tuple[tuple[Any, ...] | None, dict[str, Any] | None]


def _literal_defaults(node: _FunctionNode) -> Defaults | None:
    """The function's defaults when every one is a literal (a number, a string, None, a
    tuple of those...): evaluating one again has no effect but its value, so a new value
    can be given to the live function. None otherwise."""
    try:
        positional = tuple(ast.literal_eval(d) for d in node.args.defaults)
        keyword = {a.arg: ast.literal_eval(d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults,
                                                                 strict=True) if d is not None}
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return (positional or None, keyword or None)


def _bodies(tree: ast.Module) -> dict[str, tuple[str, int, Defaults | None]] | None:
    """Each swappable function's full dump, first line and literal defaults, then its body
    (and literal defaults) set aside in the tree (the docstring stays: it is the
    function's __doc__); None when a name repeats."""
    found: dict[str, tuple[str, int, Defaults | None]] = {}
    for name, node in list(_swappable(tree.body)):
        if name in found:
            return None
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        defaults = _literal_defaults(node)
        found[name] = (ast.dump(node), first, defaults)
        _set_aside(node, defaults)
    return found


def _set_aside(node: _FunctionNode, defaults: Defaults | None) -> None:
    """The function's body set aside in its tree (the docstring stays: it is the function's
    __doc__), and its defaults where all are literal."""
    doc = node.body[:1] if ast.get_docstring(node, clean=False) is not None else []
    node.body = [*doc, ast.Pass()]
    if defaults is not None:
        # A literal default may change (set in place); how many there are may not.
        node.args.defaults = [ast.Constant(None) for _ in node.args.defaults]
        node.args.kw_defaults = [None if d is None else ast.Constant(None) for d in node.args.kw_defaults]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _codes(const)


@dataclass(frozen=True)
class Plan:
    changed: dict[str, types.CodeType]   # qualified name -> new code: the body differs
    moved: dict[str, types.CodeType]     # the same body on other lines (tracebacks only)
    defaults: dict[str, Defaults] = field(default_factory=dict)   # new literal defaults


@dataclass(frozen=True)
class Span:
    """Where a swappable function's text lies in the bytes its Shape was made from."""
    name: str
    start: int      # offset of the start of its first line (its first decorator's, or its def's)
    lead: int       # offset of that line's first character after its indentation
    end: int        # offset just past its last character
    indented: bool  # a method (inside a class body), not a module-level function
    header: str     # its dump with body and literal defaults set aside, as in the skeleton


@dataclass(frozen=True)
class Shape:
    """What an edit of a source file is compared against: the module with function bodies
    set aside, and each body's dump and first line; with the source and each function's
    span where an edit can be looked at locally (`_local`)."""
    skeleton: str
    bodies: dict[str, tuple[str, int, Defaults | None]]
    source: bytes = b""
    spans: tuple[Span, ...] = ()


def _spans(source: bytes, tree: ast.Module) -> tuple[Span, ...]:
    """The span of each swappable function of a tree parsed from `source`, whose bodies
    `_bodies` has set aside (their dumps are the headers); () where offsets into the bytes
    would not be the parser's: another encoding than UTF-8, or line ends the parser reads
    differently (carriage returns, form feeds), or a future import that changes parsing."""
    if not _offsets_read_as_parsed(source):
        return ()
    starts = [0]
    for line in source.split(b"\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for name, node in _swappable(tree.body):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if node.end_lineno is None or node.end_col_offset is None:
            return ()
        spans.append(Span(name, starts[first - 1], starts[first - 1] + node.col_offset,
                          starts[node.end_lineno - 1] + node.end_col_offset, node.col_offset > 0, ast.dump(node)))
    return tuple(spans)


def _offsets_read_as_parsed(source: bytes) -> bool:
    """Whether offsets into these bytes are the parser's, and a part of them parses as it does
    in the whole: UTF-8 without a byte order mark or an encoding declaration, "\n" the only line
    end (a lone "\r" ends a line too), no form feed, no future import that changes parsing."""
    return not (source.startswith(b"\xef\xbb\xbf") or any(c in source for c in (b"\r", b"\x0c", b"barry_as_FLUFL"))
                or any(_declares_coding(line) for line in source.split(b"\n", 2)[:2]))


def _declares_coding(line: bytes) -> bool:
    """Whether a line may be an encoding declaration (PEP 263: a comment naming `coding:` or
    `coding=`), by any name, UTF-8 included: looked at whole, not locally."""
    return line.lstrip(b" \t\x0c").startswith(b"#") and (b"coding:" in line or b"coding=" in line)


def shape(source: bytes) -> Shape | None:
    """None when the source does not parse, a function name repeats, or it nests deeper than
    the parser and `ast.dump` can follow (a long elif chain): then a fork runs it cold."""
    try:
        tree = ast.parse(source)
        bodies = _bodies(tree)
        return None if bodies is None else Shape(ast.dump(tree), bodies, source, _spans(source, tree))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _common(a: bytes, b: bytes) -> tuple[int, int]:
    """The lengths of the longest common prefix of a and b, and of the longest common suffix
    of what follows it, found by halving (each step one comparison of two slices)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, n - prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, lo


def _differ(new: Defaults, old: Defaults | None) -> bool:
    """Whether literal defaults differ as values a function would see: `1`, `True` and `1.0`
    are equal but not the same default, nor are `0.0` and `-0.0` (compared by their reprs,
    which literals round-trip)."""
    return repr(new) != repr(old)


def _local(old: Shape, new: bytes) -> tuple[list[str], list[str], dict[str, Defaults]] | None:
    """The changed and moved functions and new literal defaults of an edit that lies within
    one function's text, found by parsing that function alone; None when the edit is not
    such an edit (the caller compares the whole module).

    The bytes before and after the function are the old ones, so they read as before: the
    function starts a logical line after the same text, at the same indentation (the edit
    starts after it), and its new text parses alone as one
    complete statement (no bracket, string or line continuation left open into what
    follows, and no line dedented out of it), so what follows it starts a logical line too.
    Its header (name, decorators, signature, docstring: the dump with the body and literal
    defaults set aside) being the old one then makes the skeleton the old one."""
    if not old.spans or not old.source:
        return None
    prefix, suffix = _common(old.source, new)
    lo, hi = prefix, len(old.source) - suffix
    # After its first line's first character: its indentation is compared against the enclosing
    # levels, which the segment alone does not have (whitespace put before `def` nests it).
    span = next((sp for sp in old.spans if sp.lead < lo and hi <= sp.end), None)
    if span is None:
        return None
    delta = len(new) - len(old.source)
    segment = new[span.start:span.end + delta]
    # The new bytes as the old were (spans exist): what the edit put in may not change that.
    if not _offsets_read_as_parsed(new):
        return None
    try:
        text = segment.decode("utf-8")
        tree = ast.parse("if 1:\n" + text if span.indented else text)
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return None
    body = tree.body
    if span.indented:
        if len(body) != 1 or not isinstance(body[0], ast.If) or body[0].orelse:
            return None
        body = body[0].body
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    node = body[0]
    # Its first line within the segment (the wrapper's aside): 1 unless lines were put before it.
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - (1 if span.indented else 0)
    full = ast.dump(node)
    defaults = _literal_defaults(node)
    _set_aside(node, defaults)
    if ast.dump(node) != span.header:
        return None
    old_full, _, old_defaults = old.bodies[span.name]
    changed = [span.name] if full != old_full else []
    lines = segment.count(b"\n") - old.source[span.start:span.end].count(b"\n")
    moved = [] if changed or first == 1 else [span.name]
    moved += [sp.name for sp in old.spans if sp.start > span.start] if lines else []
    new_defaults = {span.name: defaults} if changed and defaults is not None and _differ(defaults, old_defaults) \
        else {}
    return changed, moved, new_defaults


def plan(old: bytes | Shape | None, new: bytes, filename: str, *, local: bool = True) -> Plan | None:
    """`_plan`; None (a cold run) where the module nests deeper than the parser or `ast.dump`
    can follow."""
    try:
        return _plan(old, new, filename, local=local)
    except (RecursionError, MemoryError):
        return None


def _stale_lines(old: Shape, new: bytes, module_code: types.CodeType) -> bool:
    """Whether an edit that changes the number of lines leaves code the patch does not replace
    below it: a lambda, a function defined in an `if` or `try` at module level, a comprehension.
    Those live on with their old line numbers, and code that reads its own source
    (`inspect.getsource`) or its line numbers then reads the wrong lines."""
    if new.count(b"\n") == old.source.count(b"\n"):
        return False
    edited = old.source[:_common(old.source, new)[0]].count(b"\n") + 1 if old.source else 0
    swapped = tuple(old.bodies)
    for code in _codes(module_code):
        name = code.co_qualname
        if name in swapped or any(name.startswith(f"{s}.<locals>.") for s in swapped):
            continue        # compiled again with the function the patch replaces or moves
        if not code.co_flags & _CO_OPTIMIZED or name.rpartition(".")[2] in _RUN_ONCE:
            continue        # a class body or a list, set or dict comprehension: run at import, not kept
        if code.co_firstlineno >= edited:
            return True
    return False


def _plan(old: bytes | Shape | None, new: bytes, filename: str, *, local: bool = True) -> Plan | None:
    """The new code of each function whose body the edit changed (and of those it only
    moved), by qualified name; None when the edit reaches anything else (or either
    version does not parse). `old` may be given as its Shape (the warm process keeps
    the shape of a file it has seen edited). An edit within one function is looked at in
    that function alone (`_local`; `local=False`: always the whole module)."""
    if isinstance(old, bytes):
        if old == new:
            return Plan({}, {})
        old = shape(old)
    if old is None:
        return None
    found = _local(old, new) if local else None
    if found is not None:
        changed, moved, defaults = found
    else:
        fresh = shape(new)
        if fresh is None or old.bodies.keys() != fresh.bodies.keys() or old.skeleton != fresh.skeleton:
            return None
        changed = [name for name in fresh.bodies if fresh.bodies[name][0] != old.bodies[name][0]]
        moved = [name for name in fresh.bodies if name not in changed and fresh.bodies[name][1] != old.bodies[name][1]]
        defaults = {}
        for name in changed:
            value = fresh.bodies[name][2]
            if value is not None and _differ(value, old.bodies[name][2]):
                defaults[name] = value
    # Compiled even where nothing changed (a comment edited): what only the whole module can
    # refuse, `return` or `nonlocal` at its top, is refused (None) on either path.
    try:
        module_code = compile(new, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    if _stale_lines(old, new, module_code):
        return None
    by_name: dict[str, list[types.CodeType]] = {}
    for code in _codes(module_code):
        by_name.setdefault(code.co_qualname, []).append(code)
    if any(len(by_name.get(name, [])) != 1 for name in changed + moved):
        return None
    return Plan({name: by_name[name][0] for name in changed}, {name: by_name[name][0] for name in moved}, defaults)


_CO_OPTIMIZED = 0x1
_RUN_ONCE = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})
# A function's attributes whose values a patch replaces: read at warm-up, the old value may live on.
_READ_OFF = frozenset({"__code__", "__defaults__", "__kwdefaults__"})


def _plain(warmup: Warmup, fn: types.FunctionType) -> bool:
    """Whether only namespaces (modules, classes: `from m import f` binds the same object)
    and the warm-up's index hold the function, and only the function holds its code:
    nothing made at import (a wrapper, a registry, a JIT kernel, `X = f.__code__`) can
    keep the old body."""
    # Counted besides the namespaces: the index list, `fn` in patch(), `fn` here, and the
    # argument of getrefcount; for the code: the function, the constants of the module or
    # class body that made it (kept alive in `ran`), `code` here, the argument.
    code = fn.__code__
    return sys.getrefcount(fn) <= warmup.names.get(id(fn), 0) + 4 and sys.getrefcount(code) <= 4


def _ran(code: types.CodeType, ran: set[types.CodeType]) -> bool:
    return code in ran or any(inner in ran for inner in _codes(code))


def patch(warmup: Warmup, module: types.ModuleType) -> bool:
    """Bring the module's functions to its file's current bytes in place; False (and
    nothing changed) when that cannot be done safely: the caller imports again."""
    file = getattr(module, "__file__", None)
    spec = getattr(module, "__spec__", None)
    if not file or spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
        return False
    file = os.path.abspath(file)
    old = warmup.sources.get(file)
    try:
        with open(file, "rb") as f:
            new = f.read()
    except OSError:
        return False
    if old is None:
        return False
    if old != new and os.path.realpath(file) in warmup.read_as_text:
        return False      # its text was read, not only imported: what read it keeps the old text
    known = warmup.planned.get(file)
    edit = known[1] if known is not None and known[0] == new else \
        plan(old if old == new or file not in warmup.shapes else warmup.shapes[file], new, file)
    if edit is None:
        return False
    if warmup.blind:
        return False
    swaps = []
    for name, code in edit.changed.items():
        functions = warmup.functions.get((file, name), [])
        if len(functions) != 1:
            return False      # none seen, or copies (types.FunctionType) made at import
        fn = functions[0]
        if fn.__code__.co_freevars != code.co_freevars or _ran(fn.__code__, warmup.ran) \
                or _ran(fn.__code__, warmup.handled) or not _plain(warmup, fn):
            return False
        swaps.append((fn, code))
    for name, code in edit.moved.items():
        # Unchanged behaviour, new line numbers: a traceback must name the lines on disk.
        swaps.extend((fn, code) for fn in warmup.functions.get((file, name), [])
                     if fn.__code__.co_freevars == code.co_freevars)
    for fn, code in swaps:
        fn.__code__ = code
        if code.co_qualname in edit.defaults:
            fn.__defaults__, fn.__kwdefaults__ = edit.defaults[code.co_qualname]
    return True
