"""Every variant of every registry honours its Protocol: the attributes the Protocol declares are
there with the declared types, and each method it declares is callable with its signature
(parameter names, kinds and defaults), so a caller never needs getattr or a variant's name."""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from redfirst.checkers.base import Checker
from redfirst.checkers.registry import REGISTRY as CHECKERS
from redfirst.gates import drivers, parsers
from redfirst.leases import backends
from redfirst.mutations import workspaces


def _fields(protocol: type) -> dict[str, Any]:
    """The data attributes a Protocol declares, with their types."""
    hints = typing.get_type_hints(protocol, vars(importlib.import_module(protocol.__module__)))
    return {name: hint for name, hint in hints.items() if not callable(getattr(protocol, name, None))}


def _methods(protocol: type) -> dict[str, Callable[..., Any]]:
    return {name: fn for name, fn in vars(protocol).items() if inspect.isfunction(fn) and not name.startswith("_")}


def _matches(value: Any, hint: Any) -> bool:
    """isinstance against a type hint, looking one level into containers."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is None:
        return isinstance(value, hint)
    if not isinstance(value, origin):
        return False
    args = typing.get_args(hint)
    if isinstance(value, Mapping):
        return all(_matches(k, args[0]) and _matches(v, args[1]) for k, v in value.items())
    if isinstance(value, (set, frozenset, list)):
        return all(_matches(v, args[0]) for v in value)
    return True


def _shape(fn: Callable[..., Any]) -> list[tuple[str, Any, bool]]:
    params = list(inspect.signature(fn).parameters.values())
    if params and params[0].name == "self":
        params = params[1:]
    return [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in params]


def _variants() -> list[Any]:
    """(registry, key, protocol, implementation, instance?) for every variant of every registry."""
    out = []
    for name in drivers.REGISTRY:
        out.append(pytest.param(drivers.Driver, drivers.get(name), True, id=f"driver-{name}"))
    for name in parsers.REGISTRY:
        out.append(pytest.param(parsers.Parser, parsers.get(name), True, id=f"parser-{name}"))
    for name, target in backends._REGISTRY.items():
        module, _, cls = target.partition(":")
        out.append(pytest.param(backends.Backend, getattr(importlib.import_module(module), cls), False,
                                id=f"lease-backend-{name}"))
    for name, checker in CHECKERS.items():
        out.append(pytest.param(Checker, checker, True, id=f"checker-{name}"))
    for name, module_name in workspaces.REGISTRY.items():
        module = importlib.import_module(f"redfirst.mutations.workspaces.{module_name}")
        returned = inspect.signature(module.open_workspace).return_annotation
        cls = getattr(module, returned) if isinstance(returned, str) else returned
        out.append(pytest.param(workspaces.Workspace, cls, False, id=f"workspace-{name}"))
    return out


@pytest.mark.parametrize(("protocol", "variant", "instance"), _variants())
def test_each_variant_honours_its_protocol(protocol: type, variant: Any, instance: bool) -> None:
    declared_types = typing.get_type_hints(variant) if isinstance(variant, type) else {}
    for name, hint in _fields(protocol).items():
        if isinstance(variant, type) and not hasattr(variant, name):
            # a class built with a config or a folder: its constructor sets the attribute
            if name in declared_types:
                assert declared_types[name] == hint, f"{variant!r}.{name}: {declared_types[name]} is not {hint}"
            else:
                init = inspect.getsource(variant.__init__)
                assert f"self.{name} =" in init, f"{variant!r} has no attribute {name!r}"
            continue
        assert hasattr(variant, name), f"{variant!r} has no attribute {name!r}"
        value = getattr(variant, name)
        assert _matches(value, hint), f"{variant!r}.{name} = {value!r} is not a {hint}"
    for name, fn in _methods(protocol).items():
        assert callable(getattr(variant, name, None)), f"{variant!r} has no method {name!r}"
        own = getattr(variant, name)
        # a module's function and a bound method take no self, a class's function and the Protocol's do
        assert _shape(own) == _shape(fn), \
            f"{variant!r}.{name}{inspect.signature(own)} is not the Protocol's {name}{inspect.signature(fn)}"


def test_a_variant_missing_a_protocol_method_is_caught() -> None:
    # The control: the check above fails for a driver that lacks what the grader calls.
    class Half:
        name = "half"
        default_format = "none"
        option_keys: frozenset[str] = frozenset()
        counts_format = None
        runner = None
        unserved = None

    with pytest.raises(AssertionError, match="no method"):
        test_each_variant_honours_its_protocol(drivers.Driver, Half(), True)


def test_a_wrong_attribute_type_is_caught() -> None:
    class Wrong:
        name = "wrong"
        reports_assertions = "yes"
        exit_meanings: dict[int, str] = {}

    with pytest.raises(AssertionError, match="reports_assertions"):
        test_each_variant_honours_its_protocol(parsers.Parser, Wrong(), True)


def test_grade_names_no_driver_and_no_format() -> None:
    import re

    text = Path(importlib.import_module("redfirst.gates.grade").__file__ or "").read_text()
    names = "|".join(re.escape(n) for n in (*drivers.REGISTRY, *parsers.REGISTRY))
    assert not re.findall(rf'"({names})"', text)
    assert "importlib" not in text and "getattr" not in text
    assert not hasattr(parsers, "REPORTS_ASSERTIONS")


_VALID = {"variants": "[a]", "shapes": "[[1]]", "warmup": "1", "replays": "1", "repeat_eager": "2",
          "preload": "[m]", "capture": "torch", "dtype": "float32", "max_ulp": "1", "ranks": "{world_size: 1}"}


def _foreign_keys() -> list[Any]:
    out = []
    for name in drivers.REGISTRY:
        for key in sorted(drivers.get(name).option_keys):
            other = next(n for n in drivers.REGISTRY if key not in drivers.get(n).option_keys)
            out.append(pytest.param(key, name, other, id=f"{key}-of-{name}-under-{other}"))
    return out


@pytest.mark.parametrize(("key", "owner", "other"), _foreign_keys())
def test_a_driver_key_under_another_driver_is_refused_naming_its_driver(tmp_path: Path, key: str, owner: str,
                                                                       other: str) -> None:
    from redfirst.gates import loader
    from redfirst.gates.config import Project

    run = "m:f" if other in ("python", "cuda-graph") else "true"
    value = _VALID.get(key, "x")    # a value the schema accepts: only whose key it is may be wrong
    text = f"gate: g\ndriver: {{type: {other}, run: {run!r}, {key}: {value}}}\n"
    with pytest.raises(loader.LoadError) as caught:
        loader.gate_from_document(text, tmp_path / "g.yaml", Project(tmp_path, None))
    assert any(f"driver key {key!r} is only for driver {owner}" in p for p in caught.value.problems), \
        caught.value.problems
