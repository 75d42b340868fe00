"""Child side of driver `python`: import `module:function`, call it, record the call."""

from __future__ import annotations

import importlib
import os
import sys

from redfirst.gates import evidence, read_hook
from redfirst.gates.drivers.python import CANNOT_LOAD, KIND


def main(argv: list[str]) -> int:
    read_hook.start()
    try:
        return _call(argv)
    finally:
        read_hook.report()


def _call(argv: list[str]) -> int:
    target = argv[0]
    module_name, _, function_name = target.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except ModuleNotFoundError as e:
        if e.name is None or not (module_name == e.name or module_name.startswith(e.name + ".")):
            raise     # the target imports; something it imports does not: the program's own failure
        print(f"gates: {target}: module not found: {e.name} (imported from {os.getcwd()}); a src layout "
              f"needs PYTHONPATH=src in the gate's driver env, or `pip install -e .`", file=sys.stderr)
        return CANNOT_LOAD
    except (ImportError, AttributeError) as e:
        print(f"gates: cannot load {target}: {e}", file=sys.stderr)
        return CANNOT_LOAD
    result = function()
    evidence.observation(KIND, function=target, returned=type(result).__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
