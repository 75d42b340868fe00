"""A pytest session made ready in the warm process up to its collection, run in a fork.

Most of a short pytest run comes before its first test: the plugin manager, the ini and
conftest files, the fixture definitions of every plugin, configure and sessionstart. The
gates of one project ask for the same options with other test paths, under every mutation,
so the warm process makes that part once, as pytest.main makes it (pytest's own
`_prepareconfig`, `Session.from_config`, configure and sessionstart hooks, under the
patcher's profile, so no function that ran here is patched later), and each fork runs the
rest of pytest's own session on its copy (`Prepared.run`, `_main` and the tail of
`wrap_session`): the collection of its own test paths, with the code as it is now, the test
loop, sessionfinish and unconfigure, on the fork's descriptors, JUnit file, cache folder and
environment.

pytest reads the test paths before the collection in two places, and both depend only on
the folders the paths are in (their anchors): the root folder and ini file (the paths'
common folder) and the conftest files loaded first (those of each anchor's folder chain,
which may add options). So a session serves the runs with the same working folder, options
and anchors (`key`).

A fork takes a prepared session only where its run is the run pytest.main would make there:
- the options are the pytest driver's own (`_FLAGS`, `-o` for the JUnit family and cache
  folder, `-p redfirst.gates.pytest_plugin`), nothing else: no option that reads per-run state at
  collection (--lf, --sw), spawns workers (-n), or prints a header (verbosity must stay
  below 0);
- every plugin is pytest's own, a conftest under the root, redfirst's, one that implements no hook
  that runs while a session is made (PREP_HOOKS: its fixtures and test-time hooks run in the
  fork), or one in KNOWN_PLUGINS whose condition the options meet;
- making it left no thread and no process running in the warm process;
- every environment variable read while it was made holds the same value in the fork, and
  what making it set in the environment is set in the fork too;
- no module the fork patches (patcher) is one the project code that ran while it was made
  could reach (`reached`: the modules of that code, and every module under the root their
  namespaces name, transitively): that code may have read the module's values (a default, a
  signature) without calling what changed, and kept them in the session. Then the fork runs
  pytest itself, where that code runs again on the patched module.
At most KEEP are kept, the oldest unconfigured when another is made.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from redfirst.gates import read_hook
from redfirst.gates.drivers.pytest_warm import reaper
from redfirst.gates.drivers.pytest_warm.imported import under
from redfirst.gates.drivers.pytest_warm.preconfig import BUILT_IN, _main_keywords, _Recording

KEEP = 8

# Options a prepared session may be made with: the pytest driver's own (redfirst.gates.drivers.pytest.pytest_argv).
_FLAGS = frozenset({"-q", "-rfE", "--tb=short", "-x"})
_INI = ("junit_family=", "cache_dir=")
JUNIT = "--junitxml="
CACHE_DIR = "cache_dir="

# Hooks that run while a session is made (or that pytest.main would call and a prepared session
# does not): a third-party plugin implementing one may keep per-run state there, or change the run.
PREP_HOOKS = frozenset({"pytest_cmdline_main", "pytest_cmdline_parse", "pytest_cmdline_preparse",
                        "pytest_load_initial_conftests", "pytest_configure", "pytest_sessionstart",
                        "pytest_plugin_registered", "pytest_addhooks"})

# Third-party plugins that implement such hooks, read here: what they do there for the options of
# this run (a reason it is not a plain run, else "").
KNOWN_PLUGINS: Mapping[str, Callable[[Any], str]] = MappingProxyType({
    # Settings profile and markers from the options, the same in every run.
    "hypothesispytest": lambda config: "",
    # Act only with -n/--dist (workers: processes, refused anyway) or --looponfail.
    "xdist": lambda config: "" if not getattr(config.option, "numprocesses", None)
    and getattr(config.option, "dist", "no") == "no" else "pytest-xdist distributes this run",
    "xdist.looponfail": lambda config: "--looponfail" if getattr(config.option, "looponfail", False) else "",
})


def key(cwd: str, args: Sequence[str]) -> tuple[str, ...] | None:
    """The session these arguments run in this folder: its options (the JUnit path and cache
    folder aside) and the anchors of its test paths; None when an option is not the driver's
    own."""
    out = [cwd]
    anchors: set[str] = set()
    it = iter(args)
    for arg in it:
        if arg.startswith(JUNIT):
            out.append(JUNIT)
        elif arg in _FLAGS:
            out.append(arg)
        elif arg == "-o":
            value = next(it, "")
            if not value.startswith(_INI):
                return None
            # A fresh cache folder per run (the driver's): the fork points the cache at its own.
            out += [arg, CACHE_DIR if value.startswith(CACHE_DIR) else value]
        elif arg == "-p":
            value = next(it, "")
            if value != "redfirst.gates.pytest_plugin":
                return None
            out += [arg, value]
        elif arg.startswith("-") or not arg:
            return None
        else:
            anchors.add(_anchor(cwd, arg))
    return (*out, "--", *sorted(anchors))


def _anchor(cwd: str, arg: str) -> str:
    """The folder pytest starts from for a test path: the path itself for a folder, else the
    folder it is in (`tests/test_a.py::T::t` -> tests/)."""
    path = os.path.normpath(os.path.join(cwd, arg.split("::")[0]))
    return path + os.sep if os.path.isdir(path) else os.path.dirname(path)


def test_paths(args: Sequence[str]) -> list[str]:
    """The positional arguments (test paths and node ids) of the driver's own options."""
    out, it = [], iter(args)
    for arg in it:
        if arg in ("-o", "-p"):
            next(it, "")
        elif not arg.startswith("-"):
            out.append(arg)
    return out


def with_tests(args: Sequence[str], tests: Sequence[str]) -> list[str]:
    """The driver's own options of `args` with `tests` for its test paths."""
    out, it = [], iter(args)
    for arg in it:
        if arg in ("-o", "-p"):
            out += [arg, next(it, "")]
        elif arg.startswith("-"):
            out.append(arg)
    return [*out, *tests]


def junit_path(args: Sequence[str]) -> str | None:
    return next((a[len(JUNIT):] for a in args if a.startswith(JUNIT)), None)


def cache_dir(args: Sequence[str]) -> str | None:
    return next((b[len(CACHE_DIR):] for a, b in zip(args, args[1:], strict=False)
                 if a == "-o" and b.startswith(CACHE_DIR)), None)


def with_plugin_objects(args: Sequence[str]) -> tuple[list[str], list[Any]]:
    """The arguments and plugins pytest.main is called with: `-p redfirst.gates.pytest_plugin` handed over
    imported (`-p NAME` makes pytest search every installed distribution's entry points for NAME
    first, on every run)."""
    args = list(args)
    plugins: list[Any] = []
    if "redfirst.gates.pytest_plugin" in args and args[args.index("redfirst.gates.pytest_plugin") - 1] == "-p":
        import redfirst.gates.pytest_plugin
        del args[args.index("redfirst.gates.pytest_plugin") - 1:args.index("redfirst.gates.pytest_plugin") + 1]
        plugins.append(redfirst.gates.pytest_plugin)
    return args, plugins


class _Environment(_Recording):
    """The environment a session is made in: what it read before setting it itself, and what it set
    or removed (a conftest's `os.environ[...] = ...` at configure), which each fork sets again."""

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self.written: dict[str, str | None] = {}

    def __getitem__(self, key: str) -> str:
        if key in self.read or key in self.written:
            return self.env[key]
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if key in self.read or key in self.written:
            return key in self.env
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        for key in list(self.env):
            if key not in self.read and key not in self.written:
                self.read[key] = self.env.get(key)
            yield key

    def __setitem__(self, key: str, value: str) -> None:
        self.written[key] = value
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.written[key] = None
        super().__delitem__(key)

    def copy(self) -> dict[str, str]:
        return dict(self.items())


class Prepared:
    """One session made ready up to its first test."""

    def __init__(self, config: Any, session: Any, read: Mapping[str, str | None], written: Mapping[str, str | None],
                 path: Sequence[str]) -> None:
        self.config = config
        self.session = session
        self.read = dict(read)            # variable -> its value (None: unset) while it was made
        self.written = dict(written)      # what making it set (None: removed) in the environment
        self.path = list(path)            # sys.path once made (pytest's `pythonpath` ini option)
        # Module files under the root the project code run while it was made could reach (None: not known).
        self.reaches: frozenset[str] | None = None

    @classmethod
    def make(cls, args: Sequence[str], plugins: Sequence[Any], cwd: str, env: Mapping[str, str],
             root: Path) -> Prepared | str:
        """In the warm process: the session pytest.main would run with these arguments, made up
        to its collection; else why not (the fork then runs pytest.main itself)."""
        import _pytest.config
        from _pytest.main import Session

        extra = _main_keywords(_pytest.config.get_config)
        if extra is None:
            return "a pytest whose get_config this version of redfirst does not know"
        try:
            _internals()
        except (ImportError, AttributeError) as e:
            return f"a pytest whose internals this version of redfirst does not know ({e})"
        threads, children = threading.active_count(), set(reaper.children(os.getpid()))
        saved_env, saved_cwd, saved_path = os.environ, os.getcwd(), list(sys.path)
        # Where the run reports what it read is the fork's own (Prepared.run starts the report there).
        recording = _Environment({k: v for k, v in env.items() if k != read_hook.ENV})
        os.environ = recording  # type: ignore[assignment]  # noqa: B003
        config = session = None
        why = ""
        try:
            os.chdir(cwd)
            sys.path[0] = cwd
            recording["PYTEST_VERSION"] = _pytest.__version__
            config = _pytest.config._prepareconfig(list(args), list(plugins), **extra)
            session = Session.from_config(config)
            config._do_configure()
            config.hook.pytest_sessionstart(session=session)
            why = _unfit(config, root)
            if not why and os.path.realpath(os.getcwd()) != os.path.realpath(cwd):
                # a conftest's chdir at configure: the fork starts in the request's folder again
                why = "making it changed the working folder"
        except BaseException as e:   # a usage error, a broken conftest: pytest.main in the fork says it
            why = f"making it raised {type(e).__name__}"
        finally:
            os.environ = saved_env  # noqa: B003
            os.chdir(saved_cwd)
            path, sys.path[:] = list(sys.path), saved_path
        if not why and threading.active_count() > threads:
            why = "making it started a thread"
        if not why and set(reaper.children(os.getpid())) - children:
            why = "making it started a process"
        if why:
            if config is not None:
                _unconfigure(config)
            return why
        assert config is not None and session is not None
        capman = config.pluginmanager.get_plugin("capturemanager")
        if capman is not None:
            # Each fork captures on its own descriptors (started there, as pytest starts it).
            capman.stop_global_capturing()
        setattr(config, BUILT_IN, os.getpid())      # built here, run in the forks (as a Prebuilt is)
        read = {k: v for k, v in recording.read.items() if k != read_hook.ENV}
        written = {k: v for k, v in recording.written.items() if k != "PYTEST_VERSION"}
        return cls(config, session, read, written, path)

    def usable(self, env: Mapping[str, str]) -> bool:
        return all(env.get(k) == v for k, v in self.read.items())

    def untouched(self, changed: Iterable[str]) -> bool:
        """Whether no changed file (a module the fork patches) is one the project code that ran
        while this session was made could reach."""
        files = {p for f in changed for p in (os.path.abspath(f), os.path.realpath(f))}
        return not files or (self.reaches is not None and not files & self.reaches)

    def run(self, args: Sequence[str], plugins: Sequence[Any], ahead: Ahead | None = None,
            watch: Callable[[Callable[[], None]], None] | None = None) -> int:
        """In the fork, on its descriptors 0-2, folder and environment: the rest of pytest's
        session for these arguments (`_main` from its collection, then the tail of
        wrap_session); its exit status, as pytest.main's. `ahead`: the collection was made
        already, by `collect_ahead` in this process (a standby, standby.py). `watch`: runs the
        collection (the caller profiles it)."""
        import faulthandler

        import _pytest.config

        junitxml, UsageError, fault_handler_stderr_fd_key, ExitCode, Failed, Exit, print_usage_error = _internals()

        # What a cold run's plugin does at its first hook: this run's read report starts here. What the
        # warm process read before (its imports, this session's making) is in the fork's noted reads.
        read_hook.start()
        config, session = self.config, self.session
        junit, cache = junit_path(args), cache_dir(args)
        if ahead is None:
            self._set_up(args, plugins)
        else:
            config.invocation_params = _pytest.config.Config.InvocationParams(
                args=tuple(args), plugins=tuple(plugins), dir=config.invocation_params.dir)
            self._set_environment()
        if fault_handler_stderr_fd_key in config.stash:
            # The copy of stderr faulthandler writes a crash to is the fork's stderr.
            os.dup2(2, config.stash[fault_handler_stderr_fd_key])
            faulthandler.enable(file=config.stash[fault_handler_stderr_fd_key])
        xml = config.stash.get(junitxml.xml_key, None)
        if xml is not None and junit is not None:
            xml.logfile = os.path.normpath(os.path.abspath(junit))
            xml.pytest_sessionstart()
            if ahead is not None:
                xml.suite_start = ahead.earlier(xml.suite_start)
        if cache is not None and getattr(config, "cache", None) is not None:
            # The run's own (empty) cache folder, as pytest.main would use: a test's `cache`
            # fixture must not read what an earlier run of this session wrote.
            config.cache._cachedir = config.rootpath / cache
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if ahead is None:
            self._start_capture_and_clock()
        elif reporter is not None:
            # Its clock, as pytest.main's, started before the collection.
            reporter._session_start = ahead.earlier(reporter._session_start)
        status: int = ExitCode.OK
        try:
            try:
                if ahead is None and watch is not None:
                    watch(lambda: config.hook.pytest_collection(session=session))
                elif ahead is None:
                    config.hook.pytest_collection(session=session)
                config.hook.pytest_runtestloop(session=session)
                status = (ExitCode.TESTS_FAILED if session.testsfailed else
                          ExitCode.NO_TESTS_COLLECTED if session.testscollected == 0 else ExitCode.OK)
            except UsageError as e:
                status = ExitCode.USAGE_ERROR
                print_usage_error(e, sys.stderr)
            except Failed:
                status = ExitCode.TESTS_FAILED
            except (KeyboardInterrupt, Exit):
                import _pytest._code

                excinfo = _pytest._code.ExceptionInfo.from_current()
                status = ExitCode.INTERRUPTED
                if isinstance(excinfo.value, Exit) and excinfo.value.returncode is not None:
                    status = excinfo.value.returncode
                config.hook.pytest_keyboard_interrupt(excinfo=excinfo)
            except BaseException:
                import _pytest._code

                status = ExitCode.INTERNAL_ERROR
                excinfo = _pytest._code.ExceptionInfo.from_current()
                try:
                    config.notify_exception(excinfo, config.option)
                except Exit as exc:
                    if exc.returncode is not None:
                        status = exc.returncode
                    sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
            session.exitstatus = status
        finally:
            os.chdir(session.startpath)
            try:
                config.hook.pytest_sessionfinish(session=session, exitstatus=session.exitstatus)
            except Exit as exc:
                if exc.returncode is not None:
                    session.exitstatus = exc.returncode
                sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
            config._ensure_unconfigure()
        return int(session.exitstatus)

    def _set_up(self, args: Sequence[str], plugins: Sequence[Any]) -> None:
        """What the run sets before its collection: its test paths and arguments, environment
        and import path."""
        import _pytest.config

        config = self.config
        paths = test_paths(args)
        if paths:
            config.args = list(paths)
        config.invocation_params = _pytest.config.Config.InvocationParams(
            args=tuple(args), plugins=tuple(plugins), dir=config.invocation_params.dir)
        self._set_environment()
        cwd = sys.path[0]
        sys.path[:] = [cwd, *self.path[1:]]

    def _set_environment(self) -> None:
        import _pytest

        os.environ["PYTEST_VERSION"] = _pytest.__version__
        for name, value in self.written.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _start_capture_and_clock(self) -> None:
        config = self.config
        capman = config.pluginmanager.get_plugin("capturemanager")
        if capman is not None:
            capman.start_global_capturing()
            capman.suspend_global_capture()
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.pytest_sessionstart(self.session)     # its clock starts here (no header below verbosity 0)

    def collect_ahead(self, args: Sequence[str], plugins: Sequence[Any],
                      watch: Callable[[Callable[[], None]], None] | None = None) -> Ahead | str:
        """In a standby (standby.py), before its run is asked for: the run's set-up up to the end
        of its collection, as `run` makes it, on the standby's own descriptors; what `run` needs
        to go on from there, or why it cannot (the collection raised: the standby is dropped, and
        the fork made instead collects again). `watch`: runs the collection (the caller profiles
        it: server.Server.probe_union)."""
        import time

        started = time.perf_counter()
        self._set_up(args, plugins)
        self._start_capture_and_clock()
        try:
            collect = functools.partial(self.config.hook.pytest_collection, session=self.session)
            if watch is not None:
                watch(collect)
            else:
                collect()
        except BaseException as e:
            return f"its collection raised {type(e).__name__}"
        return Ahead(time.perf_counter() - started)


class Ahead:
    """A collection made ahead of its run (Prepared.collect_ahead): how long it took, which the
    clocks pytest reports from (the terminal summary's, JUnit's) count as pytest.main's would."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    @staticmethod
    def knows(instant: Any) -> bool:
        """Whether `earlier` can move this clock (pytest's timing.Instant)."""
        return all(isinstance(getattr(instant, field, None), float) for field in ("time", "perf_count"))

    def earlier(self, instant: Any) -> Any:
        """The same instant, `seconds` earlier (pytest's timing.Instant)."""
        for field in ("time", "perf_count"):
            object.__setattr__(instant, field, getattr(instant, field) - self.seconds)
        return instant


def reached(ran: Iterable[types.CodeType], root: Path) -> frozenset[str] | None:
    """The files (as imported and resolved) of the modules under the root that the project code
    in `ran` could reach: the modules that code belongs to and every module under the root their
    namespaces name (a module, or a function, class or object of one), transitively. None when
    some of that code belongs to no module known here (it may reach anything)."""
    installed = tuple(p + os.sep for p in read_hook._package_folders())
    by_file: dict[str, types.ModuleType] = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and isinstance(module, types.ModuleType):
            by_file.setdefault(os.path.abspath(file), module)

    def ours(file: str) -> bool:
        return not file.startswith(("<", *installed)) and under(Path(file), root)

    queue: list[types.ModuleType] = []
    # ('<frozen os>', '<string>': no file; made absolute, one would read as under the working folder)
    for ran_file in {os.path.abspath(c.co_filename) for c in ran if not c.co_filename.startswith("<")}:
        if ours(ran_file):
            found = by_file.get(ran_file)
            if found is None:
                return None
            queue.append(found)
    seen: set[int] = set()
    files: set[str] = set()
    while queue:
        current = queue.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        file = os.path.abspath(current.__file__ or "")
        files.update((file, os.path.realpath(file)))
        for value in list(vars(current).values()):
            if isinstance(value, types.ModuleType):
                target: Any = value
            else:
                owner = vars(value).get("__module__") if isinstance(value, type) else \
                    value.__module__ if isinstance(value, types.FunctionType) else type(value).__module__
                target = sys.modules.get(owner) if isinstance(owner, str) else None
            target_file = getattr(target, "__file__", None) if isinstance(target, types.ModuleType) else None
            if isinstance(target_file, str) and id(target) not in seen and ours(os.path.abspath(target_file)):
                queue.append(target)
    return frozenset(files)


def only_pytest(ran: Iterable[types.CodeType]) -> bool:
    """Whether all the code in `ran` is pytest's, pluggy's, the standard library's (less installed
    packages) or redfirst's own (pytests_own)."""
    own = pytests_own()
    return all(own(code) for code in ran)


def pytests_own() -> Callable[[types.CodeType], bool]:
    """Whether a code object is pytest's, pluggy's, the standard library's (less installed
    packages) or redfirst's own: none of the project's, and none of a plugin's or a package's
    (helper-19: a conftest's hook imported from an installed package lies outside the root). Code
    compiled from a string counts only where the standard library made it (dataclasses' methods,
    a namedtuple's __new__)."""
    import sysconfig

    import _pytest
    import pluggy
    import pytest

    # redfirst's folder (the `redfirst` package, shared layer included), from this file
    ours = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    folders = {os.path.dirname(os.path.abspath(m.__file__)) for m in (_pytest, pluggy, pytest) if m.__file__}
    allowed = tuple(os.path.join(f, "") for f in (*folders, ours))
    stdlib = tuple(dict.fromkeys(os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "platstdlib")))

    def own(code: types.CodeType) -> bool:
        file = code.co_filename
        if file.startswith("<frozen ") or file.startswith(allowed):
            return True
        if file == "<string>":      # dataclasses' generated methods, a namedtuple's __new__ (pytest's own)
            return code.co_qualname.startswith("__create_fn__.") or (
                code.co_name == "<lambda>" and code.co_names == ("_tuple_new",))
        return file.startswith(stdlib) and "site-packages" not in file and "dist-packages" not in file

    return own


def _internals() -> tuple[Any, ...]:
    """The pytest internals a fork's run uses, looked up when a session is made (a pytest without
    them makes none) and again in the fork."""
    from _pytest import junitxml
    from _pytest.config import Config, print_usage_error
    from _pytest.config.exceptions import UsageError
    from _pytest.faulthandler import fault_handler_stderr_fd_key
    from _pytest.main import ExitCode, Failed, Session
    from _pytest.outcomes import Exit

    for owner, name in ((junitxml, "xml_key"), (Config, "_do_configure"), (Config, "_ensure_unconfigure"),
                        (Config, "InvocationParams"), (Session, "from_config"), (junitxml.LogXML, "pytest_sessionstart")):
        getattr(owner, name)
    return junitxml, UsageError, fault_handler_stderr_fd_key, ExitCode, Failed, Exit, print_usage_error


def _unfit(config: Any, root: Path) -> str:
    """Why a fork's run of this session would not be pytest.main's, or ''."""
    if config.option.verbose >= 0:
        return "verbosity 0 or more: pytest.main prints a header"
    manager = config.pluginmanager
    for name, plugin in manager.list_name_plugin():
        if plugin is None:      # blocked (`-p no:NAME`)
            continue
        module = plugin.__name__ if isinstance(plugin, type(sys)) else type(plugin).__module__
        if module.split(".")[0] in ("_pytest", "pytest") or module == "redfirst.gates.pytest_plugin":
            continue
        file = getattr(plugin, "__file__", None)
        if file and Path(file).name == "conftest.py" and under(Path(file), root):
            continue        # the project's own: what it does while the session is made is noted (profile, env)
        if name in KNOWN_PLUGINS:
            why = KNOWN_PLUGINS[name](config)
            if why:
                return f"plugin {name}: {why}"
            continue
        hooks = sorted({caller.name for caller in manager.get_hookcallers(plugin) or ()} & PREP_HOOKS)
        if hooks:
            return f"plugin {name} ({module}) implements {', '.join(hooks)}, which run while a session is made"
    return ""


def under_root(file: str, root: Path) -> bool:
    return under(Path(file), root)


def _unconfigure(config: Any) -> None:
    try:
        config._ensure_unconfigure()
    except BaseException:  # noqa: S110  (a broken conftest's unconfigure: this session is dropped anyway)
        pass


class Sessions:
    """The prepared sessions of one warm process, newest last; at most KEEP."""

    def __init__(self) -> None:
        self.kept: OrderedDict[tuple[str, ...], Prepared] = OrderedDict()
        self.refused: dict[tuple[str, ...], str] = {}

    def get(self, k: tuple[str, ...]) -> Prepared | None:
        found = self.kept.get(k)
        if found is not None:
            self.kept.move_to_end(k)
        return found

    def add(self, k: tuple[str, ...], prepared: Prepared | str) -> Prepared | None:
        if isinstance(prepared, str):
            self.refused[k] = prepared
            return None
        self.kept[k] = prepared
        while len(self.kept) > KEEP:
            _, old = self.kept.popitem(last=False)
            _unconfigure(old.config)
        return prepared
