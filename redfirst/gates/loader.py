"""Gate files -> `Gate` records. Every file is validated before anything runs; every
problem names file and line; one bad file stops the whole run (exit 2)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from redfirst.gates import drivers, parsers
from redfirst.gates.config import Project
from redfirst.gates.model import Assertions, Bound, DriverSpec, Gate, Requires, Source, TensorCheck, ValueSpec
from redfirst.yamlsrc import Document, Problem, YamlError, load_file, load_text, validate

GATE_SUFFIXES = (".yaml", ".yml")
# Longest timeout a gate may declare (about 31 years): beyond it a number is a typo, and
# Python's waits overflow.
MAX_SECONDS = 10**9
MAX_NUMBER = 2**64
# Drivers that grade their own structured observations (never exit-only).
_OBSERVING_DRIVERS = {"cuda-graph"}


# Keys every driver takes under `driver:`; the rest are one driver's `option_keys`.
_COMMON_DRIVER_KEYS = frozenset({"type", "run", "format", "timeout", "env", "cwd"})


@cache
def _option_owners() -> dict[str, str]:
    """Driver key -> the driver that declares it (imports every driver: only when a gate names one)."""
    return {key: name for name in drivers.REGISTRY for key in drivers.get(name).option_keys}


class LoadError(Exception):
    """Gate files that cannot be run; `.problems` lists "file:line: message" strings."""

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        self.problems = [str(p) for p in problems]
        super().__init__("\n".join(self.problems))


@cache
def schema() -> dict[str, Any]:
    text = resources.files("redfirst.gates").joinpath("schema/gate.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def gate_files(project: Project) -> list[Path]:
    files: list[Path] = []
    for folder in project.gate_paths:
        if folder.is_file():
            files.append(folder)
        elif folder.is_dir():
            # Not `is_file()`: a dangling symlink is a gate file that cannot be read, never one left out.
            files.extend(sorted(p for p in folder.rglob("*") if p.suffix in GATE_SUFFIXES and not p.is_dir()))
    return files


def missing_gate_folders(project: Project) -> list[Problem]:
    """A problem for each folder `redfirst.yaml` names under `gates: paths:` that does not exist,
    at the line naming it: a misspelt folder is said, never read as a project with no gate."""
    config = project.config
    paths = project.section("gates").get("paths")
    if config is None or not isinstance(paths, list):
        return []
    problems = []
    for i, path in enumerate(paths):
        if isinstance(path, str) and path.strip() and not (project.root / path).exists():
            line = config.line_of(("gates", "paths", i))
            problems.append(Problem(config.file, line, f"gate folder `{path.rstrip('/')}/` from "
                                                       f"{config.file.name}:{line} does not exist"))
    return problems


def is_gate_document(data: Any) -> bool:
    """A YAML document whose top level is a gate, or a list holding one: a mapping with
    `gate:` (or `driver:`, so a misspelt `gate:` key is reported, not ignored)."""
    def gate_like(item: Any) -> bool:
        return isinstance(item, dict) and ("gate" in item or "driver" in item)

    if isinstance(data, list):
        return any(gate_like(item) for item in data)
    return gate_like(data)


def load_gates(project: Project, files: Iterable[Path] | None = None) -> list[Gate]:
    """Load and check every gate file; LoadError with all problems if any is wrong."""
    problems: list[Problem] = [] if files is not None else missing_gate_folders(project)
    gates: list[Gate] = []
    chosen = list(files) if files is not None else gate_files(project)
    for file in chosen:
        try:
            doc = load_file(file)
        except YamlError as e:
            problems.extend(e.problems)
            continue
        file_problems = validate(doc, schema()) if doc.data is not None else [Problem(file, 1, "empty gate file")]
        if file_problems:
            problems.extend(file_problems)
            continue
        items = doc.data if isinstance(doc.data, list) else [doc.data]
        for index, item in enumerate(items):
            prefix: tuple[str | int, ...] = (index,) if isinstance(doc.data, list) else ()
            gate, gate_problems = _build(project, doc, item, prefix)
            problems.extend(gate_problems)
            if gate is not None and not gate_problems:
                gates.append(gate)
    seen: dict[str, Gate] = {}
    for gate in gates:
        if gate.id in seen:
            problems.append(Problem(gate.source.file, gate.source.line,
                                    f"gate id {gate.id!r} is also declared at {seen[gate.id].source}"))
        seen[gate.id] = gate
    if problems:
        raise LoadError(problems)
    return gates


def gate_from_document(text: str, file: Path, project: Project) -> Gate:
    """The gate of a stored record, rebuilt from the YAML it ran with (for `gates regrade`)."""
    try:
        doc = load_text(text, file)
    except YamlError as e:
        raise LoadError(e.problems) from None
    problems = validate(doc, schema()) if doc.data is not None else [Problem(file, 1, "empty gate document")]
    if problems or not isinstance(doc.data, dict):
        raise LoadError(problems or [Problem(file, 1, "a record holds exactly one gate")])
    gate, problems = _build(project, doc, doc.data, (), check_paths=False)
    if problems or gate is None:
        raise LoadError(problems)
    return gate


def _argv(value: Any) -> tuple[str, ...] | str:
    return value if isinstance(value, str) else tuple(value)


def _bound(value: Any) -> Bound:
    """A bound from its mapping, or from a bare number (`cases: 3`; JSON Schema's integer takes 3.0 too)."""
    if isinstance(value, int | float):
        return Bound(equals=str(value))
    return Bound(**{k: str(v) for k, v in value.items()})


def _expressions(bound: Any) -> dict[str, Any]:
    """A bound's expressions (`combine` is a word, not one)."""
    return {k: v for k, v in bound.items() if k != "combine"} if isinstance(bound, dict) else {}


def _yaml_of(doc: Document, item: Any, is_list: bool) -> str:
    if not is_list:
        return doc.text
    import yaml

    return yaml.safe_dump(item, sort_keys=False)


def _build(project: Project, doc: Document, item: dict[str, Any], prefix: tuple[str | int, ...],
           check_paths: bool = True) -> tuple[Gate | None, list[Problem]]:
    problems: list[Problem] = []

    def at(*path: str | int) -> int:
        return doc.line_of((*prefix, *path))

    def problem(message: str, *path: str | int) -> None:
        problems.append(Problem(doc.file, at(*path), f"gate {item['gate']!r}: {message}"))

    d = item["driver"]
    dtype = d["type"]
    declared = drivers.get(dtype)
    fmt = d.get("format", declared.default_format)
    # A driver that reads its own counts accepts only that format or its runner's.
    if declared.counts_format and "format" in d and d["format"] not in (declared.counts_format, declared.runner):
        problem(f"driver {dtype} reports through format {declared.counts_format}; format {d['format']!r} does not "
                "apply", "driver", "format")
    # A key another driver declares is that driver's: here it is a typo or the wrong driver.
    foreign = set(d) - declared.option_keys - _COMMON_DRIVER_KEYS
    owners = _option_owners() if foreign else {}
    for key in sorted(foreign & set(owners)):
        problem(f"driver key {key!r} is only for driver {owners[key]}", "driver", key)
    if dtype == "cuda-graph" and ("variants" not in d or "shapes" not in d):
        problem("driver cuda-graph needs `variants` and `shapes`", "driver")
    if dtype == "python" and (not isinstance(d["run"], str) or ":" not in d["run"]):
        problem("driver python runs `module:function` (a string)", "driver", "run")
    if dtype == "cuda-graph" and (not isinstance(d["run"], str) or ":" not in d["run"]):
        problem("driver cuda-graph runs a factory `module:function` (a string)", "driver", "run")
    if "junit" in d and "junit" not in declared.option_keys:
        pass    # reported above as another driver's key
    elif "junit" in d and fmt != "junit":
        problem(f"`junit: {d['junit']}` is read only with `format: junit` (format is {fmt!r})", "driver", "junit")
    elif dtype == "command" and fmt == "junit" and "junit" not in d:
        problem("format junit needs `junit: <path of the report the program writes>`", "driver", "format")
    elif "junit" in d and not _under(project.root, d.get("cwd", "."), d["junit"]):
        problem(f"junit report {d['junit']!r} must be a relative path under the root", "driver", "junit")
    # A chained comparison: false for NaN and infinity, and exact for an int too large for a float.
    if "timeout" in d and not 0 < d["timeout"] <= MAX_SECONDS:
        problem(f"timeout must be a finite number of seconds, at most {MAX_SECONDS}", "driver", "timeout")
    if "build_timeout" in item and not 0 < item["build_timeout"] <= MAX_SECONDS:
        problem(f"build_timeout must be a finite number of seconds, at most {MAX_SECONDS}", "build_timeout")

    a = item.get("assert", {})
    counts_format = declared.counts_format or fmt
    known = parsers.get(counts_format) if counts_format in parsers.REGISTRY else None
    # ctest reads its tests' doctest/Catch2 counts for a declared floor, with no implicit one
    reports_assertions = known is not None and (known.reports_assertions or
                                                getattr(known, "assertions_when_declared", False))
    counts_cases = counts_format != "none"
    if "assertions" in a and not reports_assertions:
        problem(f"format {fmt!r} does not report assertions; remove `assertions` or use a format that does",
                "assert", "assertions")
    if "cases" in a and not counts_cases:
        problem("format 'none' reports no cases; declare the output `format` or remove `cases`", "assert", "cases")

    values = item.get("values", {})
    names = set(values)
    for name, spec in values.items():
        if isinstance(spec, dict) and "file" in spec and not _under(project.root, ".", spec["file"]):
            problem(f"values.{name}: file {spec['file']!r} must be a relative path under the root (it travels "
                    "with the record, so regrading reads the same bytes)", "values", name)
        if isinstance(spec, (int, float)) and not -MAX_NUMBER <= spec <= MAX_NUMBER:
            problem(f"values.{name} must be a finite number within ±2**64", "values", name)
    for counter, bound in a.get("counters", {}).items():
        if isinstance(bound, dict) and not _expressions(bound):
            problem(f"counters.{counter}: `combine` alone checks nothing: give `equals`, `min` or `max`",
                    "assert", "counters", counter)
        if isinstance(bound, dict):
            for key, text in _expressions(bound).items():
                mirrors = [n for n in _names(str(text)) if values.get(n) == {"evidence": counter}]
                if mirrors:
                    problem(f"counters.{counter}.{key}: {mirrors[0]!r} is counter {counter!r} itself; a counter "
                            "compared with itself proves nothing", "assert", "counters", counter, key)
    for key in ("cases", "assertions"):
        bound = a.get(key)
        # a bare number is the bound itself (JSON Schema's integer takes 1.0 as well as 1)
        ceiling = bound if isinstance(bound, int | float) or not isinstance(bound, dict) \
            else bound.get("max", bound.get("equals"))
        if isinstance(ceiling, (int, float)) and ceiling < 1:
            problem(f"{key} at most {ceiling}: 0 executed is never GREEN, so this gate can never pass",
                    "assert", key)
    expressions: list[tuple[str, tuple[str | int, ...]]] = []
    for key in ("cases", "assertions"):
        if key in a and isinstance(a[key], dict):
            expressions += [(str(v), ("assert", key, k)) for k, v in a[key].items()]
    for counter, bound in a.get("counters", {}).items():
        if isinstance(bound, dict):
            expressions += [(str(v), ("assert", "counters", counter, k)) for k, v in _expressions(bound).items()]
    for text, path in expressions:
        reason = _check_expression(text, names) or _check_constant(text, whole=path[1] != "counters")
        if reason:
            problem(f"{'.'.join(map(str, path))}: {reason}", *path)

    for kind in ("bit_exact", "close"):
        for i, pair in enumerate(a.get(kind, [])):
            if pair["reference"] == pair["candidate"]:
                problem(f"{kind}[{i}]: reference and candidate name the same data {pair['reference']!r}; "
                        "a comparison of a tensor with itself proves nothing", "assert", kind, i)
            if kind == "close" and not any(k in pair for k in ("rtol", "atol", "max_ulp")):
                problem(f"close[{i}]: declare rtol, atol or max_ulp", "assert", kind, i)

    evidence_asserts = any(a.get(k) for k in ("counters", "bit_exact", "close"))
    exit_only = item.get("exit_only")
    if not (counts_cases or evidence_asserts or dtype in _OBSERVING_DRIVERS or exit_only):
        problem("every assertion of this gate could hold on exit status alone (format 'none', no counters, "
                "bit_exact or close); declare an output `format`, evidence assertions, or "
                "`exit_only: \"<why exit status is enough>\"`", "driver")

    req = item.get("requires", {})
    simulated = dtype == "cuda-graph" and isinstance(d.get("ranks"), dict) and d["ranks"].get("backend") == "sim"
    device = req.get("device", "cuda" if dtype == "cuda-graph" and not simulated else "cpu")
    if dtype == "cuda-graph" and device != ("cpu" if simulated else "cuda"):
        problem("driver cuda-graph needs `requires: {device: cuda}` (`{device: cpu}` with `ranks: {backend: sim}`)",
                "requires", "device")
    ranks = d.get("ranks") if dtype == "cuda-graph" else None
    if simulated and d.get("dtype") == "bfloat16":
        problem("the simulated backend computes in float32 or float16, not bfloat16 (numpy has no bfloat16)",
                "driver", "dtype")
    if isinstance(ranks, dict) and ranks.get("world_size", 1) % ranks.get("tp_size", ranks.get("world_size", 1)):
        problem(f"ranks: tp_size {ranks.get('tp_size')} does not divide world_size {ranks.get('world_size', 1)}",
                "driver", "ranks")
    if req.get("select"):
        reason = _check_selector(req["select"])
        if reason:
            problem(f"requires.select: {reason}", "requires", "select")
    requires = Requires(
        device=device,
        gpus=req.get("gpus", (int(ranks.get("world_size", 1)) if isinstance(ranks, dict) else 1)
                     if device == "cuda" else 0),
        select=req.get("select"),
        whole_box=req.get("whole_box", False),
    )
    common = {"type", "run", "format", "timeout", "env", "cwd"}
    driver = DriverSpec(
        type=dtype,
        run=_argv(d["run"]),
        format=fmt,
        timeout=float(d.get("timeout", 600)),
        env=tuple(sorted((str(k), _env_value(v)) for k, v in d.get("env", {}).items())),
        cwd=d.get("cwd", "."),
        options=tuple(sorted((k, _freeze(v)) for k, v in d.items() if k not in common)),
    )
    if check_paths and not (project.root / driver.cwd).resolve().is_dir():
        problem(f"cwd {driver.cwd!r} is not a folder under the root {project.root}", "driver", "cwd")
    asserts = Assertions(
        exit=a.get("exit", 0),
        cases=_bound(a["cases"]) if "cases" in a else Bound(min="1"),
        assertions=_bound(a["assertions"]) if "assertions" in a else None,
        failed=a.get("failed", 0),
        counters=tuple((k, _bound(v)) for k, v in a.get("counters", {}).items()),
        bit_exact=tuple(TensorCheck(p["reference"], p["candidate"], p.get("min_values", 1))
                        for p in a.get("bit_exact", [])),
        close=tuple(TensorCheck(p["reference"], p["candidate"], p.get("min_values", 1), p.get("rtol"),
                                p.get("atol"), p.get("max_ulp")) for p in a.get("close", [])),
    )
    gate = Gate(
        id=item["gate"],
        driver=driver,
        source=Source(doc.file, at()),
        claim=item.get("claim"),
        kind=item.get("kind"),
        requires=requires,
        build=_argv(item["build"]) if "build" in item else None,
        build_timeout=float(item.get("build_timeout", 1800)),
        build_dir=item.get("build_dir"),
        values=tuple((k, _value(v)) for k, v in values.items()),
        asserts=asserts,
        exit_only=exit_only,
        document=_yaml_of(doc, item, bool(prefix)),
    )
    return gate, problems


def _env_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _freeze(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):   # a mapping option (cuda-graph `ranks`): sorted (key, value) pairs
        return tuple(sorted((str(k), _freeze(x)) for k, x in v.items()))
    return v


def _value(v: Any) -> ValueSpec:
    if isinstance(v, (int, float)):
        return ValueSpec(literal=v)
    if "evidence" in v:
        return ValueSpec(evidence=v["evidence"])
    return ValueSpec(file=v["file"], key=v["key"])


def _under(root: Path, cwd: str, path: str) -> bool:
    if Path(path).is_absolute():
        return False
    return (root / cwd / path).resolve().is_relative_to(root.resolve())


def _check_selector(text: str) -> str | None:
    try:
        from redfirst.leases.selector import parse
    except ImportError:  # leases not installed: the lease itself will refuse it
        return None
    try:
        parse(text)
    except ValueError as e:
        return str(e)
    return None


def _names(text: str) -> list[str]:
    from redfirst.gates import expr

    try:
        return list(expr.parse(text).names)
    except expr.ExprError:
        return []


def _check_constant(text: str, whole: bool) -> str | None:
    """A bound without names is known at load: it must be a finite number in range, and a whole
    one for cases and assertions (counts of executed things)."""
    from redfirst.gates import expr

    try:
        parsed = expr.parse(text)
        if parsed.names:
            return None
        value = parsed.evaluate({})
    except expr.ExprError as e:
        return f"bad expression {text!r}: {e}"
    if not -MAX_NUMBER <= value <= MAX_NUMBER:
        return f"{text!r} is not a finite number within ±2**64"
    if whole and value != int(value):
        return f"{text!r} is not a whole number (cases and assertions are counted)"
    return None


def _check_expression(text: str, names: set[str]) -> str | None:
    from redfirst.gates import expr

    try:
        parsed = expr.parse(text)
    except expr.ExprError as e:
        return f"bad expression {text!r}: {e}"
    unknown = sorted(set(parsed.names) - names)
    if unknown:
        return f"expression {text!r} uses {', '.join(unknown)}, not declared under `values:`"
    return None
