"""Runs a Python check script as its policy tree holds it, over the head's files as data.

Not imported by redfirst: `script` passes this file's text to `python -I -B -c` with the arguments
POLICY_DIR HEAD_DIR SCRIPT [ARGS...]. POLICY_DIR is an export of the policy tree's (the merge
base's) Python files; HEAD_DIR is the judged working tree. What a caller may rely on:

- The script's code is POLICY_DIR/SCRIPT, run as `__main__` with `__file__` and `sys.argv[0]` at
  HEAD_DIR/SCRIPT, so a script that finds the repository from its own file reads the head's data.
- Every module imported from a folder inside HEAD_DIR (the script's folder, one the script puts on
  `sys.path`, `''`) is the policy tree's source at the same path, with `__file__` in HEAD_DIR; a
  module the policy tree lacks there is not found there (the search goes on, e.g. to the standard
  library). `importlib.util.spec_from_file_location` on a path in HEAD_DIR loads the same way.
- No bytecode cache is read or written: a `.pyc` committed in the head never runs.
- `-I`: PYTHONPATH, PYTHONSTARTUP and the user site are ignored.

Files the script opens are the head's (its data); programs it starts are not covered.
Plain Python 3.8 and the standard library only: it runs under the script's own interpreter."""

import importlib.machinery as _machinery
import importlib.util as _util
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

    class PolicySource(_machinery.SourceFileLoader):
        """Named at the head path, read from the policy tree; never through a bytecode cache."""

        def get_data(self, path):
            return super().get_data(to_policy(path) or path)

        def path_stats(self, path):
            raise OSError("no bytecode: the policy tree's source is what runs")

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
                return _original_spec(spec.name, origin, loader=PolicySource(spec.name, origin),
                                      submodule_search_locations=heads)
            if locations is not None:
                spec.submodule_search_locations = heads
            return spec

    def hook(entry):
        mapped = to_policy(entry)
        if mapped is None:
            raise ImportError("not a folder of the judged tree")
        return HeadEntry(entry, mapped)

    _original_spec = _util.spec_from_file_location

    def spec_from_file_location(name, location=None, *args, **kwargs):
        mapped = to_policy(_os.fspath(location)) if location is not None else None
        if mapped is not None and not args and kwargs.get("loader") is None and \
                _os.fspath(location).endswith(tuple(_machinery.SOURCE_SUFFIXES)):
            head_path = to_head(mapped)
            kwargs["loader"] = PolicySource(name, head_path)
            return _original_spec(name, head_path, **kwargs)
        return _original_spec(name, location, *args, **kwargs)

    _util.spec_from_file_location = spec_from_file_location
    _sys.dont_write_bytecode = True
    _sys.path_hooks.insert(0, hook)
    _sys.path_importer_cache.clear()
    head_script = _os.path.join(head_dir, script)
    _sys.path[:] = [p for p in _sys.path if p not in ("", _os.getcwd())]
    _sys.path.insert(0, _os.path.dirname(head_script))
    with open(_os.path.join(policy_dir, script), "rb") as fh:
        code = compile(fh.read(), head_script, "exec", dont_inherit=True)
    _sys.argv[:] = [head_script, *_sys.argv[4:]]
    main = _types.ModuleType("__main__")
    main.__file__ = head_script
    _sys.modules["__main__"] = main
    exec(code, main.__dict__)


if __name__ == "__main__":
    _bootstrap()
