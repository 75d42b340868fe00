"""pytest's plugin manager with its built-in plugins registered, built once in the warm
process and inherited unused by every fork: `pytest.main` builds the same object at the
start of every run (a third of a short run's cost, the same for mutmut's in-fork runs).

A fork takes it only where it is what `get_config(args, plugins)` would build there:
that reads the `-p no:NAME` arguments (so: none with `-p`), the working folder (set to
the fork's), and environment variables in the built-in plugins' option hooks (PYTEST_DEBUG,
TOX_ENV_DIR in pytest 9): every variable read while it was built must hold the same value
in the fork's environment, else the fork builds its own."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

# The attribute naming the process that built a prebuilt config (a run can tell it was handed one).
BUILT_IN = "redfirst_built_in"


class _Recording(MutableMapping[str, str]):
    """os.environ, noting every variable looked up (and whether it was set)."""

    def __init__(self, env: MutableMapping[str, str]) -> None:
        self.env = env
        self.read: dict[str, str | None] = {}

    def __getitem__(self, key: str) -> str:
        self.read[key] = self.env.get(key)
        return self.env[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read[key] = self.env.get(key)
        return key in self.env

    def __setitem__(self, key: str, value: str) -> None:
        self.env[key] = value

    def __delitem__(self, key: str) -> None:
        del self.env[key]

    def __iter__(self) -> Iterator[str]:
        # Every variable may be seen: the built object may depend on any of them.
        for key in self.env:
            self.read[key] = self.env.get(key)
            yield key

    def __len__(self) -> int:
        return len(self.env)


class Prebuilt:
    def __init__(self, config: Any, read: Mapping[str, str | None], extra: Mapping[str, Any] | None = None) -> None:
        self.config = config
        self.read = dict(read)
        self.extra = dict(extra or {})      # the keywords it was built with; a call with others builds its own

    @classmethod
    def build(cls) -> Prebuilt | None:
        """In the warm process, after warm-up: what get_config() builds with no arguments;
        None when it cannot be built (the fork's own pytest reports why)."""
        import _pytest.config

        extra = _main_keywords(_pytest.config.get_config)
        if extra is None:
            return None
        recording = _Recording(os.environ)
        saved = os.environ
        # Replaced, not cleared: the lookups pytest makes while building are noted.
        os.environ = recording  # type: ignore[assignment]  # noqa: B003
        try:
            config = _pytest.config.get_config(None, **extra)
        except Exception:
            return None
        finally:
            os.environ = saved  # noqa: B003
        setattr(config, BUILT_IN, os.getpid())
        return cls(config, recording.read, extra)

    def usable(self, args: Sequence[str], env: Mapping[str, str]) -> bool:
        """Whether get_config(args) in this environment builds the same object."""
        return not any(a.startswith("-p") for a in args) and all(env.get(k) == v for k, v in self.read.items())

    def install(self) -> None:
        """In the fork, once: the next get_config (the one pytest.main makes) returns the
        prebuilt object, with the invocation's arguments, plugins and folder."""
        import _pytest.config

        original = _pytest.config.get_config
        config, built_with = self.config, self.extra

        def get_config(args: Any = None, plugins: Any = None, **extra: Any) -> Any:
            _pytest.config.get_config = original
            if extra != built_with:       # a call the prebuilt object was not made for
                return original(args, plugins, **extra)
            config.invocation_params = _pytest.config.Config.InvocationParams(
                args=args or (), plugins=plugins, dir=pathlib.Path.cwd())
            return config

        _pytest.config.get_config = get_config


def _main_keywords(get_config: Any) -> dict[str, Any] | None:
    """The keywords `pytest.main` passes to this get_config beyond (args, plugins): none before pytest 9.2,
    `prog="pytest.main()"` since; None for a shape not known here (every fork then builds its own). A guess
    that is wrong costs only the speed-up: install() hands the prebuilt object to that same call alone."""
    import inspect

    try:
        names = list(inspect.signature(get_config).parameters)
    except (TypeError, ValueError):
        return None
    if names == ["args", "plugins"]:
        return {}
    if names == ["args", "plugins", "prog"]:
        return {"prog": "pytest.main()"}
    return None
