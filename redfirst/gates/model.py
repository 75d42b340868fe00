"""A gate as loaded from its file: plain frozen data, validated before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Source:
    """Where a thing was declared, for messages that name file and line."""

    file: Path
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Requires:
    device: str = "cpu"              # cpu | cuda
    gpus: int = 0                    # GPUs to lease (1 by default when device is cuda)
    select: str | None = None        # lease selector (DESIGN section 4)
    whole_box: bool = False          # timing gates lease the whole box


@dataclass(frozen=True)
class DriverSpec:
    type: str                        # command | pytest | python | cuda-graph
    run: tuple[str, ...] | str       # argv, or a string run by `sh -c`
    format: str = "none"
    timeout: float = 600.0
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = "."
    options: tuple[tuple[str, Any], ...] = ()   # driver-specific keys (cuda-graph: variants, shapes, ...)

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)

    def words(self) -> list[str]:
        """`run` as a list of words: the argv, or the string split on whitespace (the targets
        and options of a pytest-family gate, the names a command gives)."""
        return self.run.split() if isinstance(self.run, str) else list(self.run)


@dataclass(frozen=True)
class Bound:
    """`equals` / `min` / `max`, each an expression over `values` (redfirst.gates.expr); for a
    counter, `combine`: how the values of a counter recorded more than once combine (None: they
    must agree)."""

    equals: str | None = None
    min: str | None = None
    max: str | None = None
    combine: str | None = None


@dataclass(frozen=True)
class TensorCheck:
    reference: str
    candidate: str
    min_values: int = 1
    # `close` only; None in bit_exact checks
    rtol: float | None = None
    atol: float | None = None
    max_ulp: int | None = None


@dataclass(frozen=True)
class Assertions:
    exit: int = 0
    cases: Bound = field(default_factory=lambda: Bound(min="1"))
    assertions: Bound | None = None  # None: the implicit floor applies where the format reports them
    failed: int = 0
    counters: tuple[tuple[str, Bound], ...] = ()
    bit_exact: tuple[TensorCheck, ...] = ()
    close: tuple[TensorCheck, ...] = ()


@dataclass(frozen=True)
class ValueSpec:
    """A named number: a literal, a key of a JSON/YAML file, or an evidence counter."""

    literal: float | int | None = None
    file: str | None = None
    key: str | None = None
    evidence: str | None = None


@dataclass(frozen=True)
class Gate:
    id: str
    driver: DriverSpec
    source: Source
    claim: str | None = None
    kind: str | None = None
    requires: Requires = field(default_factory=Requires)
    build: tuple[str, ...] | str | None = None
    build_timeout: float = 1800.0
    build_dir: str | None = None       # the build's outputs (mutate keeps them per worker)
    values: tuple[tuple[str, ValueSpec], ...] = ()
    asserts: Assertions = field(default_factory=Assertions)
    exit_only: str | None = None
    document: str = ""               # the gate's own YAML text as loaded, kept in every record

    @property
    def value_specs(self) -> dict[str, ValueSpec]:
        return dict(self.values)
