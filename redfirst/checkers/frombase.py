"""Runs a Python check script as its policy tree holds it, over the head's files as data.

Not imported by redfirst: `script` passes this file's text to `python -I -B -c` with the arguments
POLICY_DIR HEAD_DIR SCRIPT [ARGS...]. POLICY_DIR is a full export of the policy tree (the merge
base); HEAD_DIR is the judged working tree. One rule, `_code_path`: whatever the script reads from
HEAD_DIR *as code* is read at the same path in POLICY_DIR (absent there: not found). What a caller
may rely on:

- The script's code is POLICY_DIR/SCRIPT, run as `__main__` with `__file__` and `sys.argv[0]` at
  HEAD_DIR/SCRIPT, so a script that finds the repository from its own file reads the head's data.
- Code reads are every route Python turns a file into code by: the import system's finders (a
  folder inside HEAD_DIR is searched as POLICY_DIR's copy; a module the policy tree lacks there is
  not found there, and the search goes on, e.g. to the standard library), any file loader (source,
  bytecode, extension; made by hand, `spec_from_file_location`, `module_from_spec`), `io.open_code`
  (`runpy.run_path`), and text handed to `compile`/`exec`/`eval` that equals a file of HEAD_DIR
  the script opened (`exec(open(p).read())`): that file's policy text is compiled instead.
- No bytecode cache inside HEAD_DIR is read or written: a `.pyc` committed in the head never runs.
- `-I`: PYTHONPATH, PYTHONSTARTUP and the user site are ignored.

Other files the script opens are the head's (its data); programs it starts are not covered.
Plain Python 3.8 and the standard library only: it runs under the script's own interpreter."""

import _io
import builtins as _builtins
import importlib._bootstrap_external as _external
import importlib.machinery as _machinery
import importlib.util as _util
import io as _io_module
import os as _os
import sys as _sys
import types as _types


def _bootstrap():
    policy_dir, head_dir = (_os.path.realpath(p) for p in _sys.argv[1:3])
    script = _sys.argv[3]
    sep = _os.sep

    def inside(path, root):
        return path == root or path.startswith(root + sep)

    def to_policy(path):
        real = _os.path.realpath(path or _os.getcwd())
        return policy_dir + real[len(head_dir):] if inside(real, head_dir) else None

    def to_head(path):
        return head_dir + path[len(policy_dir):] if inside(path, policy_dir) else path

    def _code_path(path):
        """The file to read as code for `path`: its policy copy when it lies in HEAD_DIR (which
        may not exist: then the code is not found), else `path` itself."""
        if isinstance(path, int):
            return path
        text = _os.fsdecode(_os.fspath(path))
        return to_policy(text) or path

    original_get_data = _external.FileLoader.get_data
    original_path_stats = _external.SourceFileLoader.path_stats
    original_create = _external.ExtensionFileLoader.create_module
    original_open_code = _io.open_code

    def get_data(self, path):
        return original_get_data(self, _code_path(path))

    def path_stats(self, path):
        if to_policy(path) is not None:
            raise OSError("no bytecode: the policy tree's source is what runs")
        return original_path_stats(self, path)

    def create_module(self, spec):
        mapped = to_policy(spec.origin) if spec.origin else None
        if mapped is not None:
            spec = _machinery.ModuleSpec(spec.name, self, origin=mapped)
        return original_create(self, spec)

    def open_code(path):
        return original_open_code(_code_path(path))

    _external.FileLoader.get_data = get_data  # type: ignore[method-assign]
    _external.SourceFileLoader.path_stats = path_stats  # type: ignore[method-assign]
    _external.ExtensionFileLoader.create_module = create_module  # type: ignore[method-assign]
    _io.open_code = _io_module.open_code = open_code

    opened: dict = {}  # the head files the script opened (as keys, in order)

    def audit(event, args):
        if event == "open" and isinstance(args[0], (str, bytes)) and to_policy(_os.fsdecode(args[0])):
            opened.setdefault(_os.path.realpath(_os.fsdecode(args[0])), None)

    def as_code(source):
        """Text equal to a head file the script opened is that file's code: its policy text."""
        if not isinstance(source, (str, bytes, bytearray)) or not opened:
            return source
        raw = source if not isinstance(source, str) else source.encode("utf-8", "surrogateescape")
        for path in list(opened):
            try:  # a file of another size cannot hold this text (CRLF at most doubles it): never read
                if not len(raw) <= _os.path.getsize(path) <= 2 * len(raw):
                    continue
                with open(path, "rb") as fh:
                    head = fh.read()
            except OSError:
                continue
            if raw not in (head, head.replace(b"\r\n", b"\n")):
                continue
            with open(to_policy(path), "rb") as fh:  # absent from the policy tree: not found
                policy = fh.read()
            return policy.decode("utf-8", "surrogateescape") if isinstance(source, str) else policy
        return source

    original_compile, original_exec, original_eval = _builtins.compile, _builtins.exec, _builtins.eval

    def compile(source, *args, **kwargs):
        return original_compile(as_code(source), *args, **kwargs)

    def scoped(run):
        def call(source, globals=None, locals=None, *args, **kwargs):
            if globals is None:
                frame = _sys._getframe(1)
                globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
            return run(as_code(source), globals, locals, *args, **kwargs)
        return call

    _builtins.compile, _builtins.exec, _builtins.eval = compile, scoped(original_exec), scoped(original_eval)
    _sys.addaudithook(audit)

    loaders = [(_machinery.SourceFileLoader, _machinery.SOURCE_SUFFIXES),
               (_machinery.ExtensionFileLoader, _machinery.EXTENSION_SUFFIXES)]

    class HeadEntry:
        """The path-entry finder for a folder inside HEAD_DIR: looks in the policy tree's copy."""

        def __init__(self, entry, mapped):
            self.entry = entry
            self.inner = _machinery.FileFinder(mapped, *loaders)

        def invalidate_caches(self):
            self.inner.invalidate_caches()

        def find_spec(self, name, target=None):
            spec = self.inner.find_spec(name, target)
            if spec is None:
                return None
            locations = spec.submodule_search_locations
            heads = None if locations is None else [to_head(p) for p in locations]
            if isinstance(spec.loader, _machinery.SourceFileLoader):
                origin = to_head(spec.origin)
                return _util.spec_from_file_location(spec.name, origin, submodule_search_locations=heads)
            if locations is not None:
                spec.submodule_search_locations = heads
            return spec

    def hook(entry):
        mapped = to_policy(entry)
        if mapped is None or not _os.path.isdir(to_head(mapped)):
            raise ImportError("not a folder of the judged tree")  # a file: runpy runs it as one
        return HeadEntry(entry, mapped)

    _sys.dont_write_bytecode = True
    _sys.path_hooks.insert(0, hook)
    _sys.path_importer_cache.clear()
    head_script = _os.path.join(head_dir, script)
    _sys.path[:] = [p for p in _sys.path if p not in ("", _os.getcwd())]
    _sys.path.insert(0, _os.path.dirname(head_script))
    with open(_os.path.join(policy_dir, script), "rb") as fh:
        code = original_compile(fh.read(), head_script, "exec", dont_inherit=True)
    _sys.argv[:] = [head_script, *_sys.argv[4:]]
    main = _types.ModuleType("__main__")
    main.__file__ = head_script
    _sys.modules["__main__"] = main
    original_exec(code, main.__dict__)


if __name__ == "__main__":
    _bootstrap()
